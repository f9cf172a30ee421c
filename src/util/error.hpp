// Errors about input that came from outside (a file, a trace, another
// process, an argument). The message names what and where; the CLI prints it
// and exits with status 2, the status DESIGN.md reserves for bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace stepscope {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace stepscope
