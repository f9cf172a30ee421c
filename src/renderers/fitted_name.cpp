#include "renderers/fitted_name.hpp"

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

// Where the parameter list that `name` ends with opens: the '(' matching
// its last ')', right after a name or template ("f<int>(", not "HtoD (").
std::string_view::size_type parameter_list_start(std::string_view name) {
  if (name.empty() || name.back() != ')') return std::string_view::npos;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') {
      ++depth;
    } else if (name[i] == '(' && --depth == 0) {
      return i > 0 && name[i - 1] != ' ' ? i : std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The head and the tail of `shown` around "...", at most `max_chars` bytes in
// all: the tail holds a signature's template arguments, and the file of a
// Python function ("forward (/.../models/llama/modeling_llama.py)").
std::string cut_middle(const std::string& shown, size_t max_chars) {
  constexpr std::string_view kCut = "...";
  if (shown.size() <= max_chars) return shown;
  if (max_chars <= 2 * kCut.size()) return printable_shortened(shown, max_chars);
  size_t tail = (max_chars - kCut.size()) / 2;
  size_t head = max_chars - kCut.size() - tail;
  while (head > 0 && is_continuation(shown[head])) --head;
  size_t tail_start = shown.size() - tail;
  while (tail_start < shown.size() && is_continuation(shown[tail_start])) ++tail_start;
  return shown.substr(0, head) + std::string(kCut) + shown.substr(tail_start);
}

}  // namespace

std::string fitted_name(std::string_view name, size_t max_chars) {
  constexpr std::string_view kElided = "(...)";
  auto open = name.size() > max_chars ? parameter_list_start(name) : std::string_view::npos;
  if (open == std::string_view::npos || name.size() - open <= kElided.size()) {
    return cut_middle(printable_utf8(name), max_chars);
  }
  return cut_middle(printable_utf8(std::string(name.substr(0, open)) + std::string(kElided)), max_chars);
}

}  // namespace stepscope
