# The wheel (scripts/build-wheel) installed the way its users install it: `pip install` into a
# fresh virtual environment, no source tree, no build folder. In a venv of each of pyenv's
# CPython 3.8 to 3.13: `import stepscope` outside record, then record, report, export, dump
# and monitor from the venv's bin, then `pip uninstall` leaves the venv as it was. As a
# throwaway non-root uid (setpriv) with Debian's Python, which that uid can run (pyenv's
# Pythons live in root's home): the same, pip included, and a PyTorch training loop with the
# project's pinned torch, whose report is the development build's byte for byte. The wheel's
# ELF files need no GLIBC symbol version above 2.28.
source "$(dirname "$0")/lib.sh"

# (ls fails when there is none: under pipefail that must not end the script before it skips)
wheel=${STEPSCOPE_WHEEL:-$({ ls "$STEPSCOPE_REPO"/dist/stepscope-*-py3-none-manylinux_2_28_x86_64.whl 2>/dev/null ||
  true; } | sort -V | tail -1)}
if [ -z "$wheel" ]; then
  [ -z "${STEPSCOPE_REQUIRE_WHEEL:-}" ] || fail "no wheel in $STEPSCOPE_REPO/dist (scripts/build-wheel makes it)"
  skip_test "no wheel in $STEPSCOPE_REPO/dist (scripts/build-wheel makes it)"
fi
# Nothing of the source tree or the development build may help the installed stepscope; and
# Python writes its bytecode caches, as it does for users, into the folders pip must remove.
unset STEPSCOPE_PYTHON_DIR STEPSCOPE_HTTP_LIB STEPSCOPE_CUPTI_LIB PYTHONDONTWRITEBYTECODE
chmod 755 "$WORK"
cp "$STEPSCOPE_REPO/tests/integration/programs/wheel_loop.py" "$wheel" "$WORK/"
loop=$WORK/wheel_loop.py
wheel=$WORK/$(basename "$wheel")

"$PY" - "$wheel" <<'PYEOF' || fail "the wheel needs a newer glibc than 2.28"
import re, subprocess, sys, tempfile, zipfile
with tempfile.TemporaryDirectory() as out, zipfile.ZipFile(sys.argv[1]) as whl:
    elves = [n for n in whl.namelist() if n.endswith(("/stepscope", ".so"))]
    assert any(n.endswith("/scripts/stepscope") for n in elves), elves
    for name in elves:
        path = whl.extract(name, out)
        symbols = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
        newest = max((tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_([0-9.]+)", symbols)), default=())
        print(f"{name}: GLIBC_{'.'.join(map(str, newest))}")
        assert newest <= (2, 28), name
PYEOF

# Commands run as the throwaway uid when this test runs as root, else as ourselves; $user and
# $self are the prefixes (each execs the command, so a background one's $! is its pid).
user_home=$WORK/home
mkdir -p "$user_home"
if [ "$(id -u)" -eq 0 ]; then
  uid=$((40000 + $$ % 20000))
  chown "$uid:$uid" "$user_home"
  # A uid with no passwd entry: USER answers getpass.getuser(), which torch asks.
  user="setpriv --reuid=$uid --regid=$uid --clear-groups env HOME=$user_home USER=throwaway"
else
  user="env HOME=$user_home"
fi
self=env

# exercise AS VENV: what a user runs after installing, with VENV's own bin, run by AS.
exercise() {
  local as=$1 venv=$2 bin=$2/bin out=$2/out
  $as mkdir -p "$out"
  [ "$($as "$bin/python" -c 'import stepscope; stepscope.step(); print("no-op")')" = no-op ] ||
    fail "$venv: import stepscope outside record"
  $as "$bin/stepscope" record -o "$out/run.db" -- "$bin/python" "$loop" 30 > "$out/record.txt" 2>&1 ||
    fail "$venv: record: $(tail -5 "$out/record.txt")"
  # Under record the hooks' copy of the package is imported: the wheel's, not a source tree's.
  grep -q "^30 steps; stepscope from $venv/lib/stepscope/python/stepscope$" "$out/record.txt" ||
    fail "$venv: the loop under record: $(tail -3 "$out/record.txt")"
  $as "$bin/stepscope" report --json -o "$out/report.json" "$out/run.db" || fail "$venv: report"
  [ "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"]["count"])' "$out/report.json")" = 30 ] ||
    fail "$venv: steps of the recorded loop"
  $as "$bin/stepscope" export --format svg -o "$out/flame.svg" "$out/run.db" || fail "$venv: export"
  grep -q "work (" "$out/flame.svg" || fail "$venv: the flame graph lacks the loop's function"
  $as "$bin/stepscope" monitor --count 1 > "$out/monitor.txt" || fail "$venv: monitor"
  grep -q "^Mem " "$out/monitor.txt" || fail "$venv: monitor printed $(head -3 "$out/monitor.txt")"
  $as "$bin/python" "$loop" 1 "$out/ready" &
  local pid=$!
  wait_for_file "$out/ready"
  $as "$bin/stepscope" dump --pid "$pid" > "$out/dump.txt" 2>&1 || { kill "$pid"; fail "$venv: dump"; }
  kill "$pid"; wait "$pid" 2>/dev/null || true
  grep -q "wheel_loop.py" "$out/dump.txt" || fail "$venv: dump: $(head -5 "$out/dump.txt")"
  rm -rf "$out"
}

# install_and_exercise AS PYTHON VENV: a fresh venv, the wheel installed with no index, the
# commands, and after `pip uninstall` the venv's files as they were before the install.
install_and_exercise() {
  local as=$1 python=$2 venv=$3
  $as "$python" -m venv "$venv" || fail "$python: venv"
  (cd "$venv" && find . | sort) > "$WORK/before"
  $as "$venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$wheel" ||
    fail "$python: pip install"
  exercise "$as" "$venv"
  $as "$venv/bin/python" -m pip uninstall -q -y stepscope || fail "$python: pip uninstall"
  (cd "$venv" && find . | sort) > "$WORK/after"
  diff "$WORK/before" "$WORK/after" > "$WORK/left" || fail "$python: pip uninstall left $(head -5 "$WORK/left")"
  echo "$python: installed, exercised and uninstalled"
}

mapfile -t pythons < <(python_interpreters | grep -v '^/usr/bin/python3$')
[ "${#pythons[@]}" -gt 0 ] || echo "part skipped: no pyenv CPython 3.8-3.13"
for python in "${pythons[@]}"; do
  install_and_exercise "$self" "$python" "$WORK/venv-$(basename "$python")"
done

# The throwaway uid: Debian's Python, and a venv that also sees the project's torch.
install_and_exercise "$user" /usr/bin/python3 "$user_home/venv"
require_venv_torch
unset STEPSCOPE_PYTHON_DIR
venv=$user_home/torch-venv
$user /usr/bin/python3 -m venv "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' | $user tee "$site/project-torch.pth" >/dev/null
$user "$venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$wheel" || fail "torch venv: pip install"

# What a non-root user may not read is refused with the reason: another user's process, and,
# where Yama restricts ptrace, a process of its own that is not its descendant.
if [ "$(id -u)" -eq 0 ]; then
  /usr/bin/python3 -c 'import time; time.sleep(30)' &
  root_python=$!
  expect_status 2 $user "$venv/bin/stepscope" dump --pid "$root_python"
  expect_stderr_contains "belongs to uid 0 and stepscope runs as uid $uid"
  kill "$root_python"
fi
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
$user "$venv/bin/python" "$loop" 1 "$user_home/ready" &
mine=$!
wait_for_file "$user_home/ready"
if [ "$scope" -ge 1 ]; then
  expect_status 2 $user "$venv/bin/stepscope" dump --pid "$mine"
  expect_stderr_contains "kernel.yama.ptrace_scope is $scope"
else
  echo "part skipped: Yama does not restrict ptrace here (kernel.yama.ptrace_scope $scope), so dump reads any own process"
fi
kill "$mine"

$user "$venv/bin/stepscope" record -o "$user_home/lm.db" -- "$venv/bin/python" \
  "$STEPSCOPE_REPO/examples/train_lm.py" --steps 12 --num-workers 1 > "$WORK/lm.txt" 2>&1 ||
  fail "record of the torch loop: $(tail -5 "$WORK/lm.txt")"
$user "$venv/bin/stepscope" report --json -o "$user_home/lm.json" "$user_home/lm.db" || fail "report of the torch loop"
"$PY" - "$user_home/lm.json" <<'PYEOF' || fail "the torch loop's steps"
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
assert steps["count"] == 12, steps["count"]
assert {"forward", "backward", "optimizer"} <= set(steps["phases"]), steps["phases"]
# The GPU collector's library was found beside the binary (there is no GPU here to use it).
gpu = json.load(open(sys.argv[1]))["metadata"]["gpu"]
assert "libstepscope-cupti.so does not exist" not in gpu, gpu
PYEOF
# So was the HTTP library: an MLflow server that is not there is a refused connection.
expect_status 2 $user "$venv/bin/stepscope" mlflow --tracking-uri http://127.0.0.1:9 "$user_home/lm.db"
grep -q "libstepscope-http.so" "$WORK/stderr" && fail "the wheel's HTTP library: $(cat "$WORK/stderr")"
# The wheel's build (zig, libc++, its own static libraries) computes what the development
# build computes: the same report and profile, byte for byte.
for args in "report --json" "export --format collapsed --idle"; do
  $user "$venv/bin/stepscope" $args "$user_home/lm.db" > "$WORK/wheel.out" || fail "wheel: $args"
  "$STEPSCOPE" $args "$user_home/lm.db" > "$WORK/build.out" || fail "build: $args"
  cmp -s "$WORK/wheel.out" "$WORK/build.out" ||
    fail "$args differs between the wheel and the build: $(diff "$WORK/build.out" "$WORK/wheel.out" | head -c 600)"
done
echo "wheel install: ok"
