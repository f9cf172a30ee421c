#include "renderers/escape.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <random>
#include <string>

#include "run_fixtures.hpp"

namespace stepscope {
namespace {

using fixtures::valid_utf8;

TEST(PrintableUtf8, KeepsValidUtf8AndPlainAscii) {
  EXPECT_EQ(printable_utf8(""), "");
  EXPECT_EQ(printable_utf8("train (train.py:10) ;\\\"<>"), "train (train.py:10) ;\\\"<>");
  const std::string text = "donn\xc3\xa9""es \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xc2\xa0";
  EXPECT_EQ(printable_utf8(text), text);
}

TEST(PrintableShortened, CutsAtCharacterBoundariesWithAnEllipsis) {
  EXPECT_EQ(printable_shortened("short", 10), "short");
  EXPECT_EQ(printable_shortened("abcdefghijkl", 8), "abcde...");
  // "é" is two bytes: a cut that would split it keeps it whole or drops it.
  EXPECT_EQ(printable_shortened("abcd\xc3\xa9" "fghij", 8), "abcd...");
  EXPECT_EQ(printable_shortened("a\x1b[31mred", 20), "a\\x1B[31mred");
}

TEST(PrintableUtf8, EscapesEachByteOfInvalidSequences) {
  EXPECT_EQ(printable_utf8("\xff\xfe"), "\\xFF\\xFE");
  EXPECT_EQ(printable_utf8("\xc0\xaf"), "\\xC0\\xAF");                // overlong '/'
  EXPECT_EQ(printable_utf8("\xed\xa0\x80"), "\\xED\\xA0\\x80");       // a surrogate
  EXPECT_EQ(printable_utf8("\xf4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(printable_utf8("ab\xe6\x97"), "ab\\xE6\\x97");             // cut short at the end
  EXPECT_EQ(printable_utf8("\x80x"), "\\x80x");                        // stray continuation
}

TEST(PrintableUtf8, ResynchronizesAfterAnInvalidByte) {
  EXPECT_EQ(printable_utf8("\xe6\x97" "A"), "\\xE6\\x97A");
  EXPECT_EQ(printable_utf8("\xff\xe6\x97\xa5"), "\\xFF\xe6\x97\xa5");
}

TEST(PrintableUtf8, EscapesControlCharacters) {
  EXPECT_EQ(printable_utf8(std::string("a\nb\tc\x7f\0d", 8)), "a\\x0Ab\\x09c\\x7F\\x00d");
  EXPECT_EQ(printable_utf8("\x1b[31m"), "\\x1B[31m");
  EXPECT_EQ(printable_utf8("\xc2\x9b"), "\\xC2\\x9B");      // C1 control (CSI)
  EXPECT_EQ(printable_utf8("\xef\xbf\xbe"), "\\xEF\\xBF\\xBE");  // U+FFFE, not an XML char
}

TEST(AppendPrintableUtf8, AppendsAndEscapesTheCharactersAsked) {
  std::string out = "kept;";
  append_printable_utf8(out, "a;b\\c\xff", ";\\");
  EXPECT_EQ(out, "kept;a\\x3Bb\\x5Cc\\xFF");
}

TEST(AppendJsonString, QuotesAndEscapesForJsonInsideHtml) {
  std::string out = "[";
  append_json_string(out, "a\"b\\c</script>&");
  EXPECT_EQ(out, "[\"a\\\"b\\\\c\\u003c/script\\u003e\\u0026\"");
}

TEST(AppendJsonString, WritesInvalidBytesAsReadableEscapes) {
  std::string out;
  append_json_string(out, "\xff\n");
  EXPECT_EQ(out, "\"\\\\xFF\\\\x0A\"");
}

TEST(AppendXmlText, EscapesMarkupAndQuotes) {
  std::string out = "<t>";
  append_xml_text(out, "<a href=\"x\">&'</a>]]>\xff");
  EXPECT_EQ(out, "<t>&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;]]&gt;\\xFF");
}

// Whatever the bytes, the JSON parses and decodes to the printable text.
TEST(AppendJsonString, RandomBytesRoundTripThroughAJsonParser) {
  std::mt19937 random(42);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 40);
  simdjson::dom::parser parser;
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    for (int n = length(random); n > 0; --n) text.push_back(static_cast<char>(byte(random)));
    std::string printable = printable_utf8(text);
    ASSERT_TRUE(valid_utf8(printable));
    for (char c : printable) ASSERT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7F);
    std::string json;
    append_json_string(json, text);
    ASSERT_EQ(json.find('<'), std::string::npos);
    simdjson::dom::element element;
    ASSERT_EQ(parser.parse(json).get(element), simdjson::SUCCESS) << json;
    std::string_view decoded;
    ASSERT_EQ(element.get_string().get(decoded), simdjson::SUCCESS);
    ASSERT_EQ(decoded, printable);
  }
}

}  // namespace
}  // namespace stepscope
