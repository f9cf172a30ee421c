# The training loops people run, on the real libraries (pinned in requirements.txt): the
# Hugging Face Trainer with accelerate, and PyTorch Lightning's Trainer.fit. Each steps
# 12 times on 2 accumulated batches and evaluates inside training: the steps are the
# optimizer steps, their samples the training batches', and the evaluation is neither a
# step, nor data wait or forward time, nor samples; it is an "evaluation" span.
source "$(dirname "$0")/lib.sh"
programs="$STEPSCOPE_REPO/tests/integration/programs"
venv_python="$STEPSCOPE_REPO/.venv/bin/python"
export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"
if ! "$venv_python" -c 'import transformers, accelerate, lightning' 2>/dev/null; then
  echo "skipped: no transformers, accelerate or lightning in $venv_python (run scripts/setup)"
  exit 0
fi

# check RUN.db REPORT.json TOKENS_PER_STEP: the shared assertions.
check() {
  PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$@" <<'PYEOF'
import json, sys
from run_samples import open_with_samples
db = open_with_samples(sys.argv[1])  # the run format's reference decoder
steps = json.load(open(sys.argv[2]))["steps"]
tokens = None if sys.argv[3] == "-" else int(sys.argv[3])
def spans(name):
    return db.execute("SELECT s.start_ns, s.end_ns FROM spans s JOIN strings n ON n.id = s.name "
                      "WHERE n.value = ? ORDER BY s.start_ns", (name,)).fetchall()
counts = {name: len(spans(name)) for name in ("step", "data_wait", "forward", "backward", "optimizer")}
assert counts == {"step": 12, "data_wait": 24, "forward": 24, "backward": 24, "optimizer": 12}, counts
evaluations = spans("evaluation")
assert evaluations, "no evaluation span"
measured = spans("data_wait") + spans("forward")
overlap = [(e, m) for e in evaluations for m in measured if m[0] < e[1] and e[0] < m[1]]
assert not overlap, "evaluation inside a data wait or forward: %s" % overlap[:3]
per_step = steps["per_step"]
assert sum(p["samples"] for p in per_step) == 96, [p["samples"] for p in per_step]
# A loader that fetches a batch ahead (accelerate) gives the first step one batch more
# and the last one less; every other step has its own two.
assert all(p["samples"] == 8 and p["tokens"] == tokens for p in per_step[1:-1]), per_step
for p in per_step:  # the phases, closure or not, add up to the step
    phases = sum(p[k] for k in ("data_wait_ns", "forward_ns", "backward_ns", "optimizer_ns", "other_ns"))
    assert abs(phases - p["time_ns"]) <= 1000, p
print("evaluation spans:", len(evaluations), "samples per step:", [p["samples"] for p in per_step])
PYEOF
}

expect_status 0 "$STEPSCOPE" record -o "$WORK/hf.db" -- "$venv_python" "$programs/hf_trainer.py"
[ "$(tail -n 1 "$WORK/stdout")" = '{"steps": 12, "evaluations": 2, "samples_per_step": 8, "tokens_per_step": 128}' ] \
  || fail "the Trainer did not run as planned: $(tail -n 1 "$WORK/stdout")"
expect_status 0 "$STEPSCOPE" report "$WORK/hf.db" --json -o "$WORK/hf.json"
check "$WORK/hf.db" "$WORK/hf.json" 128 || fail "Hugging Face Trainer"

expect_status 0 "$STEPSCOPE" record -o "$WORK/lightning.db" -- "$venv_python" "$programs/lightning_fit.py"
[ "$(tail -n 1 "$WORK/stdout")" = '{"steps": 12, "samples_per_step": 8}' ] \
  || fail "Lightning did not run as planned: $(tail -n 1 "$WORK/stdout")"
expect_status 0 "$STEPSCOPE" report "$WORK/lightning.db" --json -o "$WORK/lightning.json"
check "$WORK/lightning.db" "$WORK/lightning.json" - || fail "Lightning"
# Automatic optimization runs the step's last batch's forward and backward inside
# optimizer.step(closure): they nest in the optimizer span, and count as themselves.
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/lightning.db" <<'PYEOF' || fail "Lightning's closure: forward and backward not inside optimizer.step"
import sys
from run_samples import open_with_samples
db = open_with_samples(sys.argv[1])
nested = db.execute("""SELECT COUNT(*) FROM spans o JOIN spans f ON f.start_ns >= o.start_ns AND f.end_ns <= o.end_ns
                       WHERE o.kind = 5 AND f.kind IN (3, 4)""").fetchone()[0]
assert nested == 24, nested
PYEOF
echo "1 passed, 0 failed"
