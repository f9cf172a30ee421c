// Instruction offset -> line number, decoded from a code object's line table
// exactly as the interpreter's own PyCode_Addr2Line does it, for each of the
// three formats CPython has used since 3.8.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "collectors/python/layout.hpp"

namespace stepscope::python {

class LineTable {
 public:
  LineTable() = default;

  // Decodes `table` (the bytes of co_lnotab or co_linetable) of a code object
  // starting at line `first_line`. Malformed input (the bytes come from
  // another process) ends the table early instead of failing.
  LineTable(LineTableFormat format, std::string_view table, int first_line);

  // The line of the instruction at byte offset `offset`, or -1 for an
  // instruction that has no line (3.10+) or an offset past the table's end.
  int line_at(int offset) const;

 private:
  // The line of the byte range starting at `start` and ending where the next
  // range starts (or at end_).
  struct Range {
    int start;
    int line;
  };

  void decode_lnotab(std::string_view table);
  void decode_linetable_310(std::string_view table);
  void decode_locations_311(std::string_view table);

  std::vector<Range> ranges_;
  int first_line_ = 0;
  int end_ = 0;  // offsets from here on have no line (-1)
};

}  // namespace stepscope::python
