#!/usr/bin/env bash
# Builds the importer and its two-thread tests (test_trace_event_pipeline.cpp)
# with ThreadSanitizer and runs them: run_tsan_import.sh BUILD_DIR. Not part of
# ctest (a TSan build of the importer takes a minute; run it after changing
# trace_event_pipeline.* or the flow binding's threads). Exits non-zero on a
# failed test or any ThreadSanitizer report.
set -euo pipefail
build=${1:?usage: run_tsan_import.sh BUILD_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$build"
cd "$root"
g++ -std=c++20 -O1 -g -fsanitize=thread -Isrc -Itests/unit \
    src/importers/*.cpp src/util/byte_stream.cpp src/util/gzip_decoder.cpp src/util/mapped_file.cpp src/util/file_bytes.cpp src/run/run.cpp src/run/string_table.cpp src/run/stack_tree.cpp \
    tests/unit/importers/test_trace_event_pipeline.cpp \
    -o "$build/test_import_tsan" -lgtest -lgtest_main -lfmt -lsimdjson -lz -lisal -pthread
TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$build/test_import_tsan"
