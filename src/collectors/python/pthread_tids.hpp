// Kernel thread ids for CPython 3.8-3.10, which record only pthread_self().
//
// pthread_self() is the address of the C library's thread descriptor, and
// the descriptor holds the kernel tid at a fixed offset (glibc's struct
// pthread: `tid`). Rather than assume glibc's offset, it is found once per
// process: the offset at which every thread's descriptor holds a distinct tid
// of that process (from /proc/PID/task). Then each sample reads it there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "collectors/process/memory.hpp"
#include "collectors/python/stack_reader.hpp"

namespace stepscope::python {

class PthreadTids {
 public:
  // Sets native_tid of `threads` from their python_thread_id. Leaves -1
  // when the offset cannot be found (a C library we do not understand).
  void fill(const ProcessMemory& memory, std::vector<PythonThreadStack>& threads);

 private:
  bool calibrate(const ProcessMemory& memory, const std::vector<PythonThreadStack>& threads);

  int64_t offset_ = -1;
  int attempts_ = 0;  // calibration is retried a few times: threads may be starting
};

}  // namespace stepscope::python
