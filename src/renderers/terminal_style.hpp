// ANSI styling for terminal output: on when writing to a terminal, off when
// piped or asked (`--color never`), so files and pipes get plain text.
// Only stepscope's own text is styled; names from a run are made printable
// (printable_utf8) before they are wrapped, so they never carry escapes.
#pragma once

#include <string>
#include <string_view>

namespace stepscope {

class TextStyle {
 public:
  explicit TextStyle(bool color) : color_(color) {}
  bool color() const { return color_; }

  std::string bold(std::string_view text) const { return wrap("1", text); }
  std::string dim(std::string_view text) const { return wrap("2", text); }
  std::string red(std::string_view text) const { return wrap("1;31", text); }
  std::string yellow(std::string_view text) const { return wrap("33", text); }
  std::string green(std::string_view text) const { return wrap("32", text); }
  std::string cyan(std::string_view text) const { return wrap("36", text); }

 private:
  std::string wrap(std::string_view code, std::string_view text) const {
    if (!color_) return std::string(text);
    std::string out = "\x1b[";
    out += code;
    out += 'm';
    out += text;
    out += "\x1b[0m";
    return out;
  }
  bool color_;
};

}  // namespace stepscope
