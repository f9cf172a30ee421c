// What the process does when a mapped file shrinks under it: the kernel
// raises SIGBUS on the next touch of a page past the new end, which would
// otherwise end stepscope with "Bus error" and a core dump. stepscope maps the
// traces it imports (MappedFile) and elfutils maps the ELF files of the
// programs it samples; either can be rewritten in place while it reads.
#pragma once

namespace stepscope {

// Makes SIGBUS print one line that says what happened and exit with status 2,
// the status of bad input. For a program's main(): the disposition is the
// whole process's. Never fails (a refused sigaction leaves the default).
void exit_cleanly_on_bus_error() noexcept;

}  // namespace stepscope
