# record's contract around the program's life: exit statuses, a target that
# dies mid-recording, a recorder that is killed, attach mode and its errors.
source "$(dirname "$0")/lib.sh"
check="$STEPSCOPE_REPO/tests/integration/check_record.py"
python=$(python_interpreters | sed -n 1p)  # sed reads all: head could exit first, and pipefail end the test silently
busy='import time
def work():
    end = time.monotonic() + 0.7
    while time.monotonic() < end: pass
work()'

# The command's exit status becomes record's, and is kept in the run.
expect_status 3 "$STEPSCOPE" record -o "$WORK/exit.db" -- "$python" -c "$busy
raise SystemExit(3)"
"$PY" "$check" "$WORK/exit.db" has work > /dev/null || fail "no samples of work before the exit"
[ "$(sqlite3 "$WORK/exit.db" 'SELECT exit_status FROM processes ORDER BY id LIMIT 1')" = 3 ] \
  || fail "exit status 3 not recorded"

# A child that exits while its parent has not reaped it yet (a zombie for a
# second) keeps its exit status, as a shell reports it, and so does one
# killed by a signal.
expect_status 0 "$STEPSCOPE" record -o "$WORK/children.db" -- "$python" -c "$busy
import os, signal, time
def child(then):
    if os.fork() == 0:
        work()
        then()
    return
child(lambda: os._exit(7))
child(lambda: os.kill(os.getpid(), signal.SIGKILL))
time.sleep(1.5)
os.wait(); os.wait()"
statuses=$(sqlite3 "$WORK/children.db" 'SELECT exit_status FROM processes WHERE id > 0 AND exit_status >= 0 ORDER BY exit_status' | tr '\n' ' ')
[ "$statuses" = "7 137 " ] || fail "the children's exit statuses are '$statuses', expected 7 and 137"

# Children their parent reaps soon after they exit, as torchrun's agent does
# (it polls its ranks every 0.1 s): each is a zombie for 30 ms only, less
# than the sampler's scans take to notice it, and the exit watch reads each
# status all the same.
expect_status 0 "$STEPSCOPE" record -o "$WORK/reaped.db" -- "$python" -c "import os, time
pids = []
for status in (4, 5, 6):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.2 * status - 0.5)
        os._exit(status)
    pids.append(pid)
for pid in pids:
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # a zombie now, not reaped
    time.sleep(0.03)
    os.waitpid(pid, 0)"
statuses=$(sqlite3 "$WORK/reaped.db" 'SELECT exit_status FROM processes WHERE id > 0 ORDER BY exit_status' | tr '\n' ' ')
[ "$statuses" = "4 5 6 " ] || fail "the promptly reaped children's exit statuses are '$statuses', expected 4, 5 and 6"

# A target killed mid-recording leaves a valid run with its samples.
expect_status 137 "$STEPSCOPE" record -o "$WORK/killed.db" -- "$python" -c "$busy
import os, signal
os.kill(os.getpid(), signal.SIGKILL)"
"$PY" "$check" "$WORK/killed.db" has work > /dev/null || fail "samples lost when the target was killed"
expect_status 0 "$STEPSCOPE" export "$WORK/killed.db" --format collapsed -o "$WORK/killed.txt"

# A shell that execs Python (same pid, new program), and one that starts
# Python as its child: both are found and sampled.
expect_status 0 "$STEPSCOPE" record -o "$WORK/exec.db" -- bash -c "sleep 0.3; exec '$python' -c '$busy'"
"$PY" "$check" "$WORK/exec.db" has work > /dev/null || fail "the exec'd Python was not sampled"
expect_status 0 "$STEPSCOPE" record -o "$WORK/wrapped.db" -- bash -c "'$python' -c '$busy'; true"
"$PY" "$check" "$WORK/wrapped.db" has work > /dev/null || fail "Python under a shell was not sampled"

# A command that does not exist: a clear error, status 2.
expect_status 2 "$STEPSCOPE" record -o "$WORK/none.db" -- /no/such/program
expect_stderr_contains "/no/such/program"

# SIGTERM to the recorder reaches the program, which ends the recording.
"$STEPSCOPE" record -o "$WORK/term.db" -- "$python" -c 'import time
while True: time.sleep(0.01)' > /dev/null 2>&1 &
recorder=$!
sleep 1.5
kill -TERM "$recorder"
status=0; wait "$recorder" || status=$?
[ "$status" -eq 143 ] || fail "recorder exited $status after SIGTERM, expected 143 (the program's)"

# A recorder killed with SIGKILL leaves a readable file holding what it committed.
"$STEPSCOPE" record -o "$WORK/sigkill.db" -- "$python" -c "import time
def wait_here():
    open('$WORK/sigkill.ready', 'w').close()
    time.sleep(30)
wait_here()" > /dev/null 2>&1 &
recorder=$!
wait_for_file "$WORK/sigkill.ready"
sleep 1.5  # past the next commit
kill -KILL "$recorder"
wait "$recorder" 2>/dev/null || true
pkill -f 'def wait_here' || true
expect_status 0 "$STEPSCOPE" export "$WORK/sigkill.db" --format collapsed --idle -o "$WORK/sigkill.txt"
grep -q wait_here "$WORK/sigkill.txt" || fail "a killed recorder lost its committed samples"

# Attach mode: --pid with --duration; the target is left running.
"$python" -c "def attached_loop():
    open('$WORK/attach.ready', 'w').close()
    while True: sum(range(1000))
attached_loop()" &
target=$!
wait_for_file "$WORK/attach.ready"
expect_status 0 "$STEPSCOPE" record -o "$WORK/attach.db" --pid "$target" --duration 1
kill -0 "$target" || fail "attaching killed the target"
# Without --duration, an attached recording ends on SIGINT (Ctrl-C), with status 0.
"$STEPSCOPE" record -o "$WORK/attach-int.db" --pid "$target" 2> "$WORK/attach-int.err" &
recorder=$!
sleep 1.5
kill -INT "$recorder"
status=0; wait "$recorder" || status=$?
[ "$status" -eq 0 ] || fail "attached record exited $status on SIGINT: $(cat "$WORK/attach-int.err")"
kill -0 "$target" || fail "SIGINT to the recorder reached the attached target"
kill "$target"; wait "$target" 2>/dev/null || true
"$PY" "$check" "$WORK/attach.db" has attached_loop > /dev/null || fail "attach recorded nothing"

# Attach errors: no such pid, and a process that is not Python.
expect_status 2 "$STEPSCOPE" record -o "$WORK/x.db" --pid 999999999 --duration 1
expect_stderr_contains "no process with pid 999999999"
sleep 30 &
sleeper=$!
expect_status 2 "$STEPSCOPE" record -o "$WORK/x.db" --pid "$sleeper" --duration 1
expect_stderr_contains "is not a Python process"
kill "$sleeper"
[ ! -e "$WORK/x.db" ] || fail "a failed attach created a run file"

# Usage errors.
expect_status 2 "$STEPSCOPE" record -o "$WORK/x.db"
expect_status 2 "$STEPSCOPE" record -o "$WORK/x.db" --rate 0 -- true
echo "1 passed, 0 failed"
