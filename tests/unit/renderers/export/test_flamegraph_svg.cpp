#include "renderers/export/flamegraph_svg.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyses/profile.hpp"
#include "renderers/escape.hpp"
#include "run/frame_label.hpp"
#include "run_fixtures.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

// ---- a minimal XML reader: enough to prove the SVG well-formed ----

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // entities decoded
  std::string text;                               // direct text and CDATA, decoded
  std::vector<XmlElement> children;

  const std::string& attribute(const std::string& key) const { return attributes.at(key); }
  const XmlElement& child(const std::string& child_name) const {
    for (const XmlElement& c : children) {
      if (c.name == child_name) return c;
    }
    throw std::runtime_error("no <" + child_name + "> in <" + name + ">");
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string_view text) : text_(text) {}

  XmlElement document() {
    if (!fixtures::valid_utf8(text_)) fail("not UTF-8");
    for (char c : text_) {
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 && c != '\n' && c != '\r' && c != '\t') fail("control character");
    }
    if (starts_with("<?xml")) skip_past("?>");
    skip_space();
    XmlElement root = element();
    skip_space();
    if (at_ < text_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(what + " at byte " + std::to_string(at_));
  }
  bool starts_with(std::string_view prefix) const { return text_.substr(at_).starts_with(prefix); }
  void expect(std::string_view token) {
    if (!starts_with(token)) fail("expected '" + std::string(token) + "'");
    at_ += token.size();
  }
  void skip_past(std::string_view token) {
    size_t found = text_.find(token, at_);
    if (found == std::string_view::npos) fail("unterminated, no '" + std::string(token) + "'");
    at_ = found + token.size();
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  std::string name() {
    size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) ||
                                  text_[at_] == '-' || text_[at_] == '_' || text_[at_] == ':')) {
      ++at_;
    }
    if (at_ == start) fail("expected a name");
    return std::string(text_.substr(start, at_ - start));
  }

  std::string decode(std::string_view raw) {
    static const std::map<std::string, std::string, std::less<>> kEntities = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '<') fail("raw '<' in text or attribute");
      if (raw[i] != '&') {
        out.push_back(raw[i]);
        continue;
      }
      size_t end = raw.find(';', i);
      if (end == std::string_view::npos) fail("unterminated entity");
      std::string_view entity = raw.substr(i + 1, end - i - 1);
      auto known = kEntities.find(entity);
      if (known != kEntities.end()) {
        out += known->second;
      } else if (entity == "#160") {
        out += "\xc2\xa0";
      } else {
        fail("unknown entity &" + std::string(entity) + ";");
      }
      i = end;
    }
    return out;
  }

  void attributes(XmlElement& element) {
    while (true) {
      skip_space();
      if (starts_with("/>") || starts_with(">")) return;
      std::string key = name();
      expect("=");
      char quote = at_ < text_.size() ? text_[at_] : '\0';
      if (quote != '"' && quote != '\'') fail("unquoted attribute");
      ++at_;
      size_t end = text_.find(quote, at_);
      if (end == std::string_view::npos) fail("unterminated attribute");
      std::string value = decode(text_.substr(at_, end - at_));
      at_ = end + 1;
      if (!element.attributes.emplace(key, value).second) fail("duplicate attribute " + key);
    }
  }

  XmlElement element() {
    expect("<");
    XmlElement element;
    element.name = name();
    attributes(element);
    if (starts_with("/>")) {
      at_ += 2;
      return element;
    }
    expect(">");
    while (true) {
      if (at_ >= text_.size()) fail("unclosed <" + element.name + ">");
      if (starts_with("<![CDATA[")) {
        at_ += 9;
        size_t end = text_.find("]]>", at_);
        if (end == std::string_view::npos) fail("unterminated CDATA");
        element.text += text_.substr(at_, end - at_);
        at_ = end + 3;
      } else if (starts_with("<!--")) {
        skip_past("-->");
      } else if (starts_with("</")) {
        at_ += 2;
        if (name() != element.name) fail("mismatched close of <" + element.name + ">");
        skip_space();
        expect(">");
        return element;
      } else if (starts_with("<")) {
        element.children.push_back(this->element());
      } else {
        size_t end = text_.find('<', at_);
        if (end == std::string_view::npos) end = text_.size();
        std::string_view raw = text_.substr(at_, end - at_);
        if (raw.find("]]>") != std::string_view::npos) fail("']]>' in text");
        element.text += decode(raw);
        at_ = end;
      }
    }
  }

  std::string_view text_;
  size_t at_ = 0;
};

// ---- rendering and reading back ----

std::string render(const Run& run, const FlamegraphOptions& options = {}) {
  std::ostringstream out;
  write_flamegraph_svg(run, build_profile(run), out, options);
  return out.str();
}

void collect(const XmlElement& element, const std::string& name, std::vector<const XmlElement*>& found) {
  if (element.name == name) found.push_back(&element);
  for (const XmlElement& child : element.children) collect(child, name, found);
}

struct DrawnFrame {
  std::vector<std::string> path;  // names from "all" down
  int64_t value = 0;
  size_t last = 0;
  int parent = -1;
  double x = 0, y = 0, width = 0;
  std::string title, label;
};

std::vector<DrawnFrame> frames_of(const XmlElement& svg) {
  const XmlElement* group = nullptr;
  for (const XmlElement& child : svg.children) {
    if (child.name == "g" && child.attributes.count("id") && child.attribute("id") == "frames") {
      group = &child;
    }
  }
  if (group == nullptr) throw std::runtime_error("no frames group");
  std::vector<DrawnFrame> frames;
  for (const XmlElement& g : group->children) {
    DrawnFrame& frame = frames.emplace_back();
    size_t index = frames.size() - 1;
    frame.value = std::stoll(g.attribute("data-v"));
    frame.last = std::stoul(g.attribute("data-last"));
    EXPECT_GE(frame.last, index);
    const XmlElement& rect = g.child("rect");
    frame.x = std::stod(rect.attribute("x"));
    frame.y = std::stod(rect.attribute("y"));
    frame.width = std::stod(rect.attribute("width"));
    frame.title = g.child("title").text;
    frame.label = g.child("text").text;
    // The parent is the nearest earlier frame whose subtree holds this one.
    for (int j = static_cast<int>(index) - 1; j >= 0; --j) {
      if (frames[static_cast<size_t>(j)].last >= index) {
        frame.parent = j;
        break;
      }
    }
    if (frame.parent >= 0) frame.path = frames[static_cast<size_t>(frame.parent)].path;
    frame.path.push_back(g.attribute("data-name"));
  }
  return frames;
}

using Path = std::vector<std::string>;

// Every prefix of every stack, as the graph should draw it.
std::map<Path, int64_t> expected_paths(const Run& run, const Profile& profile) {
  std::map<Path, int64_t> paths;
  for (const ThreadProfile& thread : profile.threads) {
    for (const StackWeight& stack : thread.stacks) {
      Path path = {"all"};
      paths[path] += stack.weight_ns;
      path.push_back(printable_utf8(process_label(run, thread.pid)));
      paths[path] += stack.weight_ns;
      path.push_back(printable_utf8(thread_label(run, thread.pid, thread.tid)));
      paths[path] += stack.weight_ns;
      for (FrameId frame : profile.stacks().frames(stack.stack)) {
        path.push_back(printable_utf8(frame_label(run.strings, profile.frames().get(frame))));
        paths[path] += stack.weight_ns;
      }
    }
  }
  return paths;
}

constexpr double kFullWidth = 1200 - 2 * 10;

TEST(FlamegraphSvg, IsWellFormedWithOneConstantScript) {
  std::string text = render(fixtures::sampled_run());
  XmlElement svg = XmlReader(text).document();
  EXPECT_EQ(svg.name, "svg");
  EXPECT_EQ(svg.attribute("xmlns"), "http://www.w3.org/2000/svg");
  std::vector<const XmlElement*> scripts;
  collect(svg, "script", scripts);
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_EQ(scripts[0]->text.find("alert(1)"), std::string::npos);
  EXPECT_EQ(scripts[0]->text.find("MainThread"), std::string::npos);
  // The one "<script" in the file is the script element itself.
  EXPECT_EQ(text.find("<script"), text.rfind("<script"));
  EXPECT_EQ(text.find("alert(1)</"), std::string::npos);
  EXPECT_EQ(text.find("]]>"), text.rfind("]]>"));  // only the CDATA end
}

TEST(FlamegraphSvg, ScriptIsTheSameWhateverTheNames) {
  auto script_of = [](const stepscope::Run& run) {
    std::vector<const XmlElement*> scripts;
    XmlElement svg = XmlReader(render(run)).document();
    collect(svg, "script", scripts);
    return scripts.at(0)->text;
  };
  EXPECT_EQ(script_of(fixtures::sampled_run()), script_of(fixtures::span_run()));
}

TEST(FlamegraphSvg, DrawsEveryStackPrefixOnceWithItsWeight) {
  stepscope::Run run = fixtures::sampled_run();
  Profile profile = build_profile(run);
  std::vector<DrawnFrame> frames = frames_of(XmlReader(render(run)).document());
  std::map<Path, int64_t> drawn;
  for (const DrawnFrame& frame : frames) {
    EXPECT_TRUE(drawn.emplace(frame.path, frame.value).second) << frame.path.back();
  }
  EXPECT_EQ(drawn, expected_paths(run, profile));
  EXPECT_EQ(frames.size(), 1u + 2u + 3u + 14u);  // all, processes, threads, stack frames
  EXPECT_EQ(frames[0].value, 25 * fixtures::kSamplePeriodNs);
}

TEST(FlamegraphSvg, WidthsAreProportionalAndChildrenNestInParents) {
  std::vector<DrawnFrame> frames = frames_of(XmlReader(render(fixtures::sampled_run())).document());
  const double total = static_cast<double>(frames[0].value);
  EXPECT_NEAR(frames[0].width, kFullWidth, 0.01);
  std::map<int, double> next_child_x;
  for (const DrawnFrame& frame : frames) {
    EXPECT_NEAR(frame.width, static_cast<double>(frame.value) / total * kFullWidth, 0.01)
        << frame.path.back();
    if (frame.parent < 0) continue;
    const DrawnFrame& parent = frames[static_cast<size_t>(frame.parent)];
    EXPECT_NEAR(frame.y, parent.y - 16, 1e-9);  // the root is at the bottom
    // Siblings are laid side by side from the parent's left edge.
    double expected_x = next_child_x.count(frame.parent) ? next_child_x[frame.parent] : parent.x;
    EXPECT_NEAR(frame.x, expected_x, 0.02) << frame.path.back();
    next_child_x[frame.parent] = frame.x + frame.width;
    EXPECT_LE(frame.x + frame.width, parent.x + parent.width + 0.02);
  }
}

TEST(FlamegraphSvg, TitlesGiveSamplesAndPercent) {
  std::vector<DrawnFrame> frames = frames_of(XmlReader(render(fixtures::sampled_run())).document());
  std::set<std::string> titles;
  for (const DrawnFrame& frame : frames) titles.insert(frame.title);
  EXPECT_TRUE(titles.count("all (25 samples, 100.00%)"));
  EXPECT_TRUE(titles.count("thread 100 \"MainThread\" (12 samples, 48.00%)"));
  EXPECT_TRUE(titles.count("<script>alert(1)</script> (evil]]>.py:7) (1 sample, 4.00%)"));
  EXPECT_TRUE(titles.count("bad\\xFF\\xFE (4 samples, 16.00%)"));
}

TEST(FlamegraphSvg, LabelsFitTheirFrames) {
  std::vector<DrawnFrame> frames = frames_of(XmlReader(render(fixtures::sampled_run())).document());
  const double char_width = 12 * 0.59;
  size_t truncated = 0;
  for (const DrawnFrame& frame : frames) {
    const std::string& name = frame.path.back();
    if (frame.label == name || frame.label.empty()) continue;
    ASSERT_GE(frame.label.size(), 2u);
    EXPECT_TRUE(frame.label.ends_with("..")) << frame.label;
    std::string kept = frame.label.substr(0, frame.label.size() - 2);
    EXPECT_TRUE(name.starts_with(kept)) << frame.label;
    EXPECT_TRUE(fixtures::valid_utf8(kept));
    EXPECT_LE(static_cast<double>(frame.label.size()) * char_width, frame.width);
    ++truncated;
  }
  EXPECT_GT(truncated, 0u);
}

TEST(FlamegraphSvg, SkipsFramesNarrowerThanATenthOfAPixelButKeepsTheirTime) {
  stepscope::Run run = fixtures::sampled_run();
  FrameId rare = run.intern_frame("rare", "rare.py", 1);
  FrameId hot = run.intern_frame("hot", "hot.py", 1);
  int64_t ts = 0;
  fixtures::add_samples(run, 100, 100, {hot}, 20000, ts);
  fixtures::add_samples(run, 100, 100, {rare}, 1, ts);  // 1180 / 20026 px
  std::vector<DrawnFrame> frames = frames_of(XmlReader(render(run)).document());
  for (const DrawnFrame& frame : frames) {
    EXPECT_NE(frame.path.back(), "rare (rare.py:1)");
    EXPECT_GE(frame.width, 0.1);
    if (frame.path.size() == 3 && frame.path[2] == "thread 100 \"MainThread\"") {
      EXPECT_EQ(frame.value, (12 + 20001) * fixtures::kSamplePeriodNs);
    }
  }
}

TEST(FlamegraphSvg, SpanRunShowsTimes) {
  stepscope::Run run = fixtures::span_run();
  std::vector<DrawnFrame> frames = frames_of(XmlReader(render(run)).document());
  std::map<Path, int64_t> drawn;
  std::set<std::string> titles;
  for (const DrawnFrame& frame : frames) {
    drawn[frame.path] = frame.value;
    titles.insert(frame.title);
  }
  std::map<Path, int64_t> expected = expected_paths(run, build_profile(run));
  // The 400 ns span is 0.17 px wide; the zero-length one is not drawn.
  std::erase_if(expected, [](const auto& entry) { return entry.second == 0; });
  EXPECT_EQ(drawn, expected);
  EXPECT_TRUE(titles.count("step 2 (1.00 ms, 35.71%)"));
  EXPECT_TRUE(titles.count("tiny (400 ns, 0.01%)"));
}

TEST(FlamegraphSvg, EscapesTheTitle) {
  FlamegraphOptions options;
  options.title = std::string("Profile of ") + fixtures::kHostileCommand;
  std::string text = render(fixtures::sampled_run(), options);
  XmlElement svg = XmlReader(text).document();
  bool found = false;
  for (const XmlElement& child : svg.children) {
    if (child.attributes.count("id") && child.attribute("id") == "title") {
      EXPECT_EQ(child.text, printable_utf8(options.title));
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(FlamegraphSvg, EmptyRunIsAValidEmptyGraph) {
  std::string text = render(stepscope::Run());
  XmlElement svg = XmlReader(text).document();
  EXPECT_TRUE(frames_of(svg).empty());
  EXPECT_NE(text.find("No samples"), std::string::npos);
}

TEST(FlamegraphSvg, HonoursSizeOptionsAndRejectsSillyOnes) {
  FlamegraphOptions options;
  options.width_px = 800;
  options.frame_height_px = 20;
  XmlElement svg = XmlReader(render(fixtures::sampled_run(), options)).document();
  EXPECT_EQ(svg.attribute("width"), "800");
  std::vector<DrawnFrame> frames = frames_of(svg);
  EXPECT_NEAR(frames[0].width, 780, 0.01);
  EXPECT_NEAR(frames[1].y, frames[0].y - 20, 1e-9);
  options.width_px = 10;
  EXPECT_THROW(render(fixtures::sampled_run(), options), InputError);
  options.width_px = 800;
  options.frame_height_px = 0;
  EXPECT_THROW(render(fixtures::sampled_run(), options), InputError);
}

}  // namespace
}  // namespace stepscope
