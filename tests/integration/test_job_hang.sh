# A hung data-parallel job (DDP, gloo) on two torchrun "nodes" of 127.0.0.1,
# each under its own `record`: `dump --json -o` of each node while it hangs,
# then `report` of the dumps names the collective, the ranks that entered it,
# the missing rank and where it is instead. The Flight Recorder's view is
# checked against torch's own analyzer (fr_trace) on the same dumps. Also:
# the same hang without stepscope's hooks (stacks only), ranks that wait in
# different collectives, a rank that died before init_process_group, three
# ranks under one record (dump gives the verdict itself), and bad input.
source "$(dirname "$0")/lib.sh"
require_venv_torch
torchrun="$STEPSCOPE_REPO/.venv/bin/torchrun"
job="$STEPSCOPE_REPO/tests/integration/programs/hung_job.py"
check="$STEPSCOPE_REPO/tests/integration/check_job_hang.py"
cd "$WORK"

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

stop_job() {  # the job's ranks are killed (torchrun starts them with -u); their torchrun and record then end
  pkill -9 -f -- "-u $job $WORK/$1/" 2>/dev/null || true
  local pid
  for pid in $(cat "$WORK/$1"/pid* 2>/dev/null); do wait "$pid" 2>/dev/null || true; done
}
trap 'pkill -9 -f -- "hung_job.py $WORK/" 2>/dev/null || true; rm -rf "$WORK"' EXIT

# start_nodes NAME NPROC RECORD ARGS...: the job on two nodes (NPROC=1) or on
# one node of three ranks (NPROC=3), under `record` when RECORD is 1.
start_nodes() {
  local name=$1 nproc=$2 record=$3 port node nodes=2
  shift 3
  [ "$nproc" -eq 1 ] || nodes=1
  port=$(free_port)
  mkdir -p "$name/ready"
  for node in $(seq 0 $((nodes - 1))); do
    local launch=("$torchrun" --nnodes "$nodes" --node-rank "$node" --nproc-per-node "$nproc" --master-addr 127.0.0.1
                  --master-port "$port" "$job" "$WORK/$name/ready" "$@")
    if [ "$record" -eq 1 ]; then launch=("$STEPSCOPE" record -o "$name/node$node.db" -- "${launch[@]}"); fi
    "${launch[@]}" > "$name/node$node.out" 2>&1 &
    echo $! > "$name/pid$node"
  done
}

# wait_ready NAME COUNT: every rank reached the point of no return; then a
# moment for the others to enter the collective.
wait_ready() {
  for _ in $(seq 600); do
    [ "$(ls "$1/ready" | wc -l)" -ge "$2" ] && { sleep 3; return; }
    sleep 0.1
  done
  fail "$1: the ranks did not get there: $(cat "$1"/node*.out)"
}

dump_nodes() {  # dump_nodes NAME: NAME/dump0.json, NAME/dump1.json
  local node
  for node in 0 1; do
    expect_status 0 "$STEPSCOPE" dump --pid "$(cat "$1/pid$node")" --json -o "$1/dump$node.json"
  done
}

# 1. Rank 1 blocks in wait_for_lock() at step 5; rank 0 waits in DDP's all-reduce.
start_nodes hang 1 1 --hang-rank 1 --at-step 5
wait_ready hang 2
dump_nodes hang
expect_status 0 "$STEPSCOPE" dump --pid "$(cat hang/pid0)"
grep -qE "^Process [0-9]+ \(rank 0 of 2\): " "$WORK/stdout" || fail "text dump: no rank: $(cat "$WORK/stdout")"
grep -q "^Flight Recorder: [0-9]* collectives kept" "$WORK/stdout" || fail "text dump: no Flight Recorder"
! grep -q "^Verdict" "$WORK/stdout" || fail "a node without every rank gave a verdict"
stop_job hang
expect_status 0 "$STEPSCOPE" report hang/dump0.json hang/dump1.json --json -o hang.json
"$PY" "$check" hang.json --source flight_recorder --collective gloo:all_reduce --group 0 --entered 0 --missing 1 \
  --missing-in wait_for_lock || fail "the hang's report"
"$PY" "$check" hang.json --torch-analyzer hang/dump0.json hang/dump1.json || fail "against torch's analyzer"
expect_status 0 "$STEPSCOPE" report hang/dump0.json hang/dump1.json
grep -q "^Verdict: Rank 1 never entered gloo:all_reduce #[0-9]* of process group 0" "$WORK/stdout" ||
  fail "the verdict: $(cat "$WORK/stdout")"
# The run of each node still reads as before.
expect_status 0 "$STEPSCOPE" report hang/node0.db --json -o /dev/null

# 2. The same without stepscope (no hooks, no Flight Recorder): from the stacks alone.
start_nodes plain 1 0 --hang-rank 1 --at-step 5
wait_ready plain 2
dump_nodes plain
stop_job plain
expect_status 0 "$STEPSCOPE" report plain/dump0.json plain/dump1.json --json -o plain.json
"$PY" "$check" plain.json --source stacks --collective backward --entered 0 --missing 1 --missing-in wait_for_lock ||
  fail "the hang from stacks alone"

# 3. Rank 0 calls one all_reduce of a second group; rank 1 goes on into the default group's next one.
start_nodes mismatch 1 1 --extra-rank 0 --at-step 5
wait_ready mismatch 2
dump_nodes mismatch
stop_job mismatch
expect_status 0 "$STEPSCOPE" report mismatch/dump0.json mismatch/dump1.json --json -o mismatch.json
# Each rank is missing from the other's collective: two findings, as torch's analyzer finds two.
"$PY" "$check" mismatch.json --source flight_recorder --collective gloo:all_reduce --findings 2 \
  --evidence "called collectives in a different order" || fail "the mismatch's report"
"$PY" "$check" mismatch.json --torch-analyzer mismatch/dump0.json mismatch/dump1.json ||
  fail "the mismatch against torch's analyzer"

# 4. Rank 1 raises before init_process_group: its node's record ends, with the rank's exit in its run.
start_nodes crash 1 1 --crash-rank 1
wait "$(cat crash/pid1)" && fail "the crashing node's record exited 0"
wait_ready crash 2
expect_status 0 "$STEPSCOPE" dump --pid "$(cat crash/pid0)" --json -o crash/dump0.json
stop_job crash
expect_status 0 "$STEPSCOPE" report crash/dump0.json crash/node1.db --json -o crash.json
"$PY" "$check" crash.json --source stacks --collective init_process_group --entered 0 --missing 1 \
  --missing-exited 1 --missing-exception "ValueError: rank 1 cannot read its shard" || fail "the crash's report"
# Without node 1's run, rank 1 is unknown, not missing: no verdict says more than the dumps show.
expect_status 0 "$STEPSCOPE" report crash/dump0.json --json -o crash-alone.json
"$PY" "$check" crash-alone.json --source stacks --collective init_process_group --entered 0 --unknown 1 ||
  fail "a rank in none of the dumps"

# 5. Three ranks on one node under one record: dump of the tree gives the verdict itself.
start_nodes three 3 1 --hang-rank 1 --at-step 5
wait_ready three 3
expect_status 0 "$STEPSCOPE" dump --pid "$(cat three/pid0)" --json -o three/dump.json
grep -q "^Verdict: Rank 1 never entered gloo:all_reduce #[0-9]* of process group 0 (default_pg); ranks 0, 2 wait" \
  "$WORK/stdout" || fail "dump of the whole job: $(cat "$WORK/stdout")"
stop_job three
expect_status 0 "$STEPSCOPE" report three/dump.json --json -o three.json
"$PY" "$check" three.json --source flight_recorder --collective gloo:all_reduce --group 0 --entered 0 2 --missing 1 \
  --missing-in wait_for_lock || fail "three ranks under one record"

# Bad input: dumps of two jobs, a rank in two dumps, a dump cut short, a dump beside a trace.
expect_status 2 "$STEPSCOPE" report hang/dump0.json three/dump.json
expect_stderr_contains "dumps of different jobs: hang/dump0.json is of job"
expect_status 2 "$STEPSCOPE" report hang/dump0.json hang/dump0.json
expect_stderr_contains "rank 0 is in hang/dump0.json and in hang/dump0.json"
head -c 2000 hang/dump1.json > cut.json
expect_status 2 "$STEPSCOPE" report hang/dump0.json cut.json
expect_stderr_contains "cut.json: not a whole stepscope dump (cut short"
echo '{"traceEvents": []}' > trace.json
expect_status 2 "$STEPSCOPE" report hang/dump0.json trace.json
expect_stderr_contains "trace.json"
expect_status 2 "$STEPSCOPE" report hang/dump0.json --html x.html
expect_stderr_contains "--html: a report over dumps is text or JSON"
echo "ok"
