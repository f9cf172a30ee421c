# Cross-compiling for manylinux_2_28: zig's clang with glibc 2.28's symbols and LLVM's libc++
# linked statically, so the binary runs on any x86-64 Linux with glibc 2.28 or later
# (RHEL 8, Ubuntu 20.04, Debian 10). scripts/build-wheel writes the wrappers zcc and zc++
# (`zig cc -target x86_64-linux-gnu.2.28`) and builds every C and C++ library into
# STEPSCOPE_WHEEL_PREFIX first: nothing is taken from the build machine's /usr.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER "$ENV{STEPSCOPE_WHEEL_BIN}/zcc")
set(CMAKE_CXX_COMPILER "$ENV{STEPSCOPE_WHEEL_BIN}/zc++")
set(CMAKE_AR "$ENV{STEPSCOPE_WHEEL_BIN}/zar")
set(CMAKE_RANLIB "$ENV{STEPSCOPE_WHEEL_BIN}/zranlib")

set(CMAKE_FIND_ROOT_PATH "$ENV{STEPSCOPE_WHEEL_PREFIX}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # protoc and tools run on the build machine
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
