# A data-parallel job (DDP, gloo) on two torchrun "nodes" of 127.0.0.1, each
# under its own `record` with one -o for both: report of the two runs lists
# both ranks with where they ran, the rank the others wait for, and its own
# cause first; a balanced job has none; three ranks under one record give the
# same. Each rank's collective wait is computed again by check_job_ranks.py.
source "$(dirname "$0")/lib.sh"
require_venv_torch
torchrun="$STEPSCOPE_REPO/.venv/bin/torchrun"
job="$STEPSCOPE_REPO/tests/integration/programs/ddp_job.py"
check="$STEPSCOPE_REPO/tests/integration/check_job_ranks.py"
cd "$WORK"

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# two_nodes NAME ARGS...: the job on two nodes of one rank each, recorded
# into NAME/job-NAME-node{0,1}.db through the placeholders.
two_nodes() {
  local name=$1 port pids=() node
  shift
  port=$(free_port)
  mkdir -p "$name"
  for node in 0 1; do
    "$STEPSCOPE" record -o "$name/{job}-node{node_rank}.db" -- "$torchrun" --nnodes 2 --node-rank "$node" \
      --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$port" --rdzv-id "job-$name" "$job" "$@" \
      > "$name/node$node.out" 2>&1 &
    pids+=($!)
  done
  for node in 0 1; do wait "${pids[$node]}" || fail "$name: node $node failed: $(cat "$name/node$node.out")"; done
}

# Rank 1's Dataset takes 2 ms an item against 0.5: rank 0 waits for it in DDP's all-reduce.
two_nodes straggler --steps 40 --item-ms 0.5 --slow-rank 1 --slow-item-ms 2
runs=(straggler/job-straggler-node0.db straggler/job-straggler-node1.db)
for node in 0 1; do
  [ -f "${runs[$node]}" ] || fail "-o placeholders: no ${runs[$node]} in $(ls straggler)"
  [ "$(sqlite3 "${runs[$node]}" "SELECT value FROM metadata WHERE key = 'node_rank'")" = "$node" ] || fail "node_rank"
  [ "$(sqlite3 "${runs[$node]}" "SELECT value FROM metadata WHERE key = 'job'")" = job-straggler ] || fail "job id"
  # The rank as the recorder read it in the process's environment, beside the hooks' own. A
  # child the rank forks (ctypes.util.find_library runs `ldconfig -p`) has it too until its
  # exec is seen, which a child that short-lived may end before: seen once in a full run.
  ranks=$(sqlite3 "${runs[$node]}" "SELECT DISTINCT value FROM metadata WHERE key LIKE 'process.%.rank'")
  [ "$ranks" = "$node" ] || fail "node $node: process ranks from the environment: '$ranks'"
done
expect_status 0 "$STEPSCOPE" report "${runs[@]}" --json -o straggler.json
"$PY" "$check" straggler.json 1 "${runs[@]}" || fail "the straggler job's ranks"
expect_status 0 "$STEPSCOPE" report "${runs[@]}"
grep -q "^Verdict: Rank 1, the others wait for it. Input-bound" "$WORK/stdout" \
  || fail "the verdict: $(grep Verdict "$WORK/stdout")"
grep -qE "^ +1 +[^ ]+ +1 .*<- waited for$" "$WORK/stdout" || fail "the ranks table: $(cat "$WORK/stdout")"
# The HTML report's table of ranks, in Debian's Chromium.
expect_status 0 "$STEPSCOPE" report "${runs[@]}" --html job.html
node "$STEPSCOPE_REPO/tests/integration/report_html_check.mjs" job.html --sections verdict,steps,ranks \
  --text "waited for" --text "collective wait" > html.json || fail "the HTML report's ranks"
# A directory of the job's runs is the same job.
expect_status 0 "$STEPSCOPE" report straggler --json -o directory.json
"$PY" "$check" directory.json 1 "${runs[@]}" || fail "the job's directory"

# export --format perfetto of the job: one timeline in wall-clock time, each node's processes
# apart and named after their host and node; each run's steps keep their own length.
expect_status 0 "$STEPSCOPE" export "${runs[@]}" --format perfetto -o job.perfetto.json
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - job.perfetto.json "${runs[@]}" <<'PYEOF' || fail "the job's Perfetto timeline"
import json, sys
from run_samples import open_with_samples
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
for node, run in enumerate(sys.argv[2:]):
    db = open_with_samples(run)  # the run format's reference decoder
    meta = dict(db.execute("SELECT key, value FROM metadata"))
    offset = int(meta["start_unix_ns"]) - int(meta["start_clock_ns"])
    steps = db.execute("SELECT pid, start_ns, end_ns FROM spans WHERE kind = 1 ORDER BY start_ns").fetchall()
    pid = steps[0][0] + (node + 1) * 10_000_000
    assert names[pid].startswith(f"{meta['host']} node {node}: "), names[pid]
    mine = sorted((e["ts"], e["dur"]) for e in events if e.get("ph") == "X" and e["pid"] == pid and e["name"] == "step")
    want = [((start + offset) / 1000, (end - start) / 1000) for _, start, end in steps]
    assert len(mine) == len(want), (len(mine), len(want))
    assert all(abs(a - c) < 0.002 and abs(b - d) < 0.002 for (a, b), (c, d) in zip(mine, want)), (mine[:2], want[:2])
# The two nodes ran at once: their first steps lie within seconds of each other on the wall clock.
firsts = sorted(min(e["ts"] for e in events if e.get("ph") == "X" and e["name"] == "step" and e["pid"] // 10_000_000 == n)
                for n in (1, 2))
assert firsts[1] - firsts[0] < 30e6, firsts
PYEOF
expect_status 2 "$STEPSCOPE" export "${runs[@]}" --format svg -o job.svg
expect_stderr_contains "several runs go only into one Perfetto timeline"

# Both ranks load alike: no rank holds the other up.
two_nodes balanced --steps 100 --item-ms 1  # more steps: a descheduled rank averages out
expect_status 0 "$STEPSCOPE" report balanced/job-balanced-node0.db balanced/job-balanced-node1.db --json -o balanced.json
"$PY" "$check" balanced.json "" balanced/*.db || fail "the balanced job"

# Three ranks on one node under one record: the same rule on one run.
port=$(free_port)
expect_status 0 "$STEPSCOPE" record -o three.db -- "$torchrun" --nproc-per-node 3 --master-addr 127.0.0.1 \
  --master-port "$port" "$job" --steps 30 --item-ms 0.5 --slow-rank 2 --slow-item-ms 3
expect_status 0 "$STEPSCOPE" report three.db --json -o three.json
"$PY" "$check" three.json 2 three.db || fail "three ranks under one record"

# Bad input: a placeholder with nothing to fill it.
expect_status 2 env -u NODE_RANK -u SLURM_NODEID -u GROUP_RANK -u PET_NODE_RANK "$STEPSCOPE" record -o 'x{node_rank}.db' -- true
expect_stderr_contains "{node_rank}: no node rank here"
expect_status 2 "$STEPSCOPE" record -o 'x{rank}.db' -- true
expect_stderr_contains "unknown placeholder {rank}"
echo "1 passed, 0 failed"
