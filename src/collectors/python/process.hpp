// A CPython process whose threads' stacks we can sample.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "collectors/process/memory.hpp"
#include "collectors/python/layout.hpp"
#include "collectors/python/pthread_tids.hpp"
#include "collectors/python/stack_reader.hpp"

namespace stepscope {

class PythonProcess {
 public:
  // nullptr with `why_not` set when `pid` is not a supported Python (no
  // libpython or python executable mapped: decided from /proc/PID/maps
  // alone, without reading its memory; an unsupported version; no
  // _PyRuntime). Throws InputError when there is no such process, or when
  // reading its memory is refused (the message says why and how to fix it).
  static std::unique_ptr<PythonProcess> attach(pid_t pid, std::string* why_not);

  PythonProcess(const PythonProcess&) = delete;
  PythonProcess& operator=(const PythonProcess&) = delete;

  const std::string& version() const { return version_; }  // "3.11.7"
  pid_t pid() const { return memory_.pid(); }
  // Where the interpreter was found, e.g. "/usr/lib/libpython3.11.so.1.0".
  const std::string& image_path() const { return image_path_; }

  // Reads every thread's stack into `out` (reusing its storage). False on a
  // torn or unreadable read, an error sample: `out` is then empty and
  // last_error() says what failed. The frames' strings stay valid until the
  // next call. With `activity`, the stacks of threads that have not run
  // since the last call are kept rather than read (StackReader::read).
  bool sample(std::vector<PythonThreadStack>& out, python::ThreadActivity* activity = nullptr);
  const std::string& last_error() const { return last_error_; }
  // Whether the last sample failed because the process has no memory left
  // (it is exiting): no torn read, and no error sample.
  bool memory_gone() const { return reader_.memory_gone(); }
  // process_vm_readv calls made so far (for benchmarks and tests).
  uint64_t memory_reads() const { return memory_.system_calls(); }
  // Stacks kept without reading them (the sampler counts them in the run).
  uint64_t stacks_kept_still() const { return reader_.stacks_kept_still(); }
  // Stacks torn at a generator, and those kept torn (StackReader::torn_stacks).
  uint64_t torn_stacks() const { return reader_.torn_stacks(); }
  uint64_t torn_stacks_unjoined() const { return reader_.torn_stacks_unjoined(); }

 private:
  PythonProcess(pid_t pid, std::string version, std::string image_path,
                const python::PythonLayout& layout, uint64_t runtime, uint64_t code_type);

  ProcessMemory memory_;
  std::string version_;
  std::string image_path_;
  python::PythonLayout layout_;
  python::StackReader reader_;
  python::PthreadTids pthread_tids_;
  std::string last_error_;
};

}  // namespace stepscope
