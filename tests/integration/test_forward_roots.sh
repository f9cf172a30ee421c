# The forward phase from the classes of outermost module calls: every step's forward
# spans are its outermost calls (the model and the loss module, then also a module of
# a class first called at step 100, found at a later discovery step), the hooks leave
# nothing on the modules (pickle, deepcopy, TorchScript), and uninstall() gives torch
# back as it was.
source "$(dirname "$0")/lib.sh"
require_venv_torch

expect_status 0 "$STEPSCOPE" record -o "$WORK/roots.db" -- "$venv_python" \
  "$STEPSCOPE_REPO/tests/integration/programs/forward_roots.py" restore
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/roots.db" "$(tail -n 1 "$WORK/stdout")" <<'PYEOF' || fail "forward spans or torch's state are wrong"
import json, sys
from run_samples import open_with_samples
db = open_with_samples(sys.argv[1])  # the run format's reference decoder
facts = json.loads(sys.argv[2])
print(facts)
assert facts["wrapped"] == ["Aux", "MSELoss", "Sequential"], facts
assert not facts["pickle_mentions_stepscope"] and facts["copy_runs"] and facts["scripts"], facts
assert facts["after_uninstall"] == {"wrapped": [], "global_module_hooks": 0, "optimizer_hooks": 0,
                                    "backward_wrapped": False, "gc_callbacks": 0, "next_wrapped": False,
                                    "scaler_wrapped": False}, facts
dropped = db.execute("SELECT value FROM metadata WHERE key = 'hooks_dropped_records'").fetchone()
assert dropped is None or dropped[0] == "0", "records dropped: %s" % dropped
steps = db.execute("SELECT start_ns, end_ns FROM spans WHERE kind = 1 ORDER BY start_ns").fetchall()
assert len(steps) == 305, len(steps)
forwards = [db.execute("SELECT COUNT(*) FROM spans WHERE kind = 3 AND start_ns >= ? AND end_ns <= ?",
                       step).fetchone()[0] for step in steps]
print("forward spans per step:", "".join(map(str, forwards)))
assert forwards[:100] == [2] * 100, forwards[:100]
# Aux runs from step 100: found at a discovery step at most 151 steps later, counted from then on.
found = forwards.index(3)
assert 100 <= found <= 251 and forwards[found:300] == [3] * (300 - found), (found, forwards[100:300])
# Reinstalled: the model and the loss, no Aux; the first of these steps also holds the
# copy's forward, which ran before the uninstall.
assert forwards[300:] == [3, 2, 2, 2, 2], forwards[300:]
PYEOF
# torch.compile: the hooks add no graph break (Dynamo would trace them inside the
# compiled region), and every step's forward is the compiled module's call.
expect_status 0 "$STEPSCOPE" record -o "$WORK/compiled.db" -- "$venv_python" \
  "$STEPSCOPE_REPO/tests/integration/programs/compiled_model.py"
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/compiled.db" "$(tail -n 1 "$WORK/stdout")" <<'PYEOF' || fail "torch.compile under the hooks"
import json, sys
from run_samples import open_with_samples
db = open_with_samples(sys.argv[1])
assert json.loads(sys.argv[2]) == {"graph_breaks": 0}, sys.argv[2]
kinds = dict(db.execute("SELECT kind, COUNT(*) FROM spans WHERE kind IN (1, 3) GROUP BY kind").fetchall())
assert kinds == {1: 30, 3: 30}, kinds
PYEOF
echo "1 passed, 0 failed"
