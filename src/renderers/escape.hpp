// Escaping shared by every renderer.
//
// Names, files and commands come from traces and from other processes'
// memory, so they are arbitrary bytes: invalid UTF-8, control characters,
// quotes, markup. Every output format writes them through one of these
// functions, so a hostile name can neither break the syntax of a file nor
// reach a terminal or a browser as anything but inert text.
#pragma once

#include <string>
#include <string_view>

namespace stepscope {

// `text` made printable: valid UTF-8 passes through; each byte of an invalid
// sequence becomes the four ASCII characters \xNN (uppercase hex), and so do
// ASCII control characters (below 0x20, and 0x7F), C1 control characters
// (U+0080..U+009F) and the noncharacters U+FFFE and U+FFFF (XML forbids
// them). A backslash itself is kept, so the result is for people to read,
// not to decode.
std::string printable_utf8(std::string_view text);

// printable_utf8(text) cut to at most `max_chars` bytes, ending in "..." when
// cut: for terminal tables, which must not carry a program's control sequences.
std::string printable_shortened(std::string_view text, size_t max_chars);

// Appends printable_utf8(text) to `out`; the ASCII characters listed in
// `also_escape` are written as \xNN too. Escaping the backslash this way
// makes the result decodable (collapsed stacks escape ";\\").
void append_printable_utf8(std::string& out, std::string_view text,
                           std::string_view also_escape = {});

// Appends printable_utf8(text) as a quoted JSON string. `<`, `>` and `&`
// are written as \u003c, \u003e and \u0026 so the JSON can be embedded in an
// HTML <script> element without ever closing it.
void append_json_string(std::string& out, std::string_view text);

// Appends printable_utf8(text) escaped for XML text and attribute values
// (either quote style): & < > " ' become entities.
void append_xml_text(std::string& out, std::string_view text);

}  // namespace stepscope
