#!/usr/bin/env bash
# Builds the fuzz targets with clang and fuzzes one for a bounded time:
# run_fuzz.sh BUILD_DIR [SECONDS [TARGET]], TARGET chrome_trace (the default),
# hook_datagram or run_blocks, its seeds in corpus/TARGET. Exits 77 (ctest: skipped)
# without clang or libFuzzer. New inputs go to BUILD_DIR/corpus_TARGET, never
# to the seed corpus in the repository; a crash leaves BUILD_DIR/TARGET-crash-*
# to reproduce with: BUILD_DIR/fuzz_TARGET BUILD_DIR/TARGET-crash-...
set -euo pipefail
build=${1:?usage: run_fuzz.sh BUILD_DIR [SECONDS [TARGET]]}
seconds=${2:-60}
target=${3:-chrome_trace}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v clang++ >/dev/null; then
    echo "clang++ not installed: skipping the fuzz run" >&2
    exit 77
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
    CXX=clang++ cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
if ! cmake --build "$build" >"$build.log" 2>&1; then
    if grep -q "libclang_rt.fuzzer.*No such file\|cannot find -l.*fuzzer\|unsupported option.*fsanitize=fuzzer" "$build.log"; then
        echo "libFuzzer runtime not installed: skipping the fuzz run" >&2
        exit 77
    fi
    cat "$build.log" >&2
    exit 1
fi
[ -d "$here/corpus/$target" ] || { echo "no fuzz target $target (corpus/$target)" >&2; exit 2; }
mkdir -p "$build/corpus_$target"
cd "$build"
# -rss_limit_mb: the importer must not balloon on any input; -timeout: nor hang
# (generous: a loaded CI machine can stall a process for seconds; a real
# hang exceeds any bound). -error_exitcode: libFuzzer's default, 77, is the
# status ctest reads as "skipped", which hid every crash from the suite.
"./fuzz_$target" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=1024 -max_len=65536 -error_exitcode=1 \
    -artifact_prefix="$build/$target-" -print_final_stats=1 "$build/corpus_$target" "$here/corpus/$target"
