"""Checks `report --json` of a job's runs against the runs themselves.

  check_job_ranks.py REPORT.json WAITED_FOR RUN.db...

WAITED_FOR: the ranks the others wait for, comma-separated ("" for none).
Each rank's collective wait is computed again here from its run's samples,
independently of stepscope: the samples of the rank's step thread inside its
steady steps (the first steps // 10, 1 to 10, are warm-up) that are idle and
either inside its backward phase spans or with a frame of torch.distributed's
distributed_c10d.py in their stack, over all its samples there.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from run_samples import open_with_samples  # noqa: E402

STEP, BACKWARD, IDLE = 1, 4, 2


def collective_wait(run, pid):
    db = open_with_samples(run)  # the run format's reference decoder
    steps = db.execute("SELECT start_ns, end_ns, tid FROM spans WHERE kind = ? AND pid = ? ORDER BY end_ns",
                       (STEP, pid)).fetchall()
    warmup = min(max(len(steps) // 10, 1), 10) if len(steps) >= 2 else 0
    steady = steps[warmup:]
    backward = db.execute("SELECT start_ns, end_ns FROM spans WHERE kind = ? AND pid = ?", (BACKWARD, pid)).fetchall()
    in_c10d = {r[0] for r in db.execute("""
        WITH RECURSIVE up(id, at) AS (SELECT id, id FROM stacks UNION ALL
                                      SELECT up.id, s.parent FROM up JOIN stacks s ON s.id = up.at WHERE up.at != 0)
        SELECT DISTINCT up.id FROM up JOIN stacks s ON s.id = up.at JOIN frames f ON f.id = s.frame
        JOIN strings n ON n.id = f.file WHERE n.value LIKE '%torch/distributed/distributed_c10d.py'""")}
    total = waiting = 0
    for ts, tid, state, stack in db.execute("SELECT ts_ns, tid, state, stack FROM samples WHERE pid = ?", (pid,)):
        if not any(a <= ts < b and t == tid for a, b, t in steady):
            continue
        total += 1
        if state == IDLE and (any(a <= ts < b for a, b in backward) or stack in in_c10d):
            waiting += 1
    return waiting / total


def main():
    report = json.load(open(sys.argv[1]))
    want = [int(r) for r in sys.argv[2].split(",") if r]
    runs = sys.argv[3:]
    steps = report["steps"]
    ranks = steps["ranks"]
    print([(r["rank"], r["host"], r["node_rank"], r["source"], round(r["collective_wait_fraction"], 3),
            r["data_wait_fraction"], r["waited_for"]) for r in ranks])
    assert [r["rank"] for r in ranks] == sorted(r["rank"] for r in ranks), ranks
    assert steps["straggler_ranks"] == want, (steps["straggler_ranks"], want)
    for r in ranks:
        run = next(p for p in runs if p.endswith(Path(r["source"]).name))
        mine = collective_wait(run, r["pid"])
        assert abs(r["collective_wait_fraction"] - mine) < 1e-9, (r["rank"], r["collective_wait_fraction"], mine)
        assert r["waited_for"] == (r["rank"] in want), r
    ids = [f["id"] for f in report["diagnosis"]]
    if not want:
        assert "rank_straggler" not in ids, ids
        return
    finding = report["diagnosis"][ids.index("rank_straggler")]
    assert finding["title"].startswith("The other ranks wait "), finding["title"]
    assert f"rank {want[0]}" in finding["title"], finding["title"]
    # The straggler's own findings come first, titled with its name.
    first = report["diagnosis"][0]
    assert first["title"].startswith(f"Rank {want[0]}, the others wait for it. "), first["title"]


if __name__ == "__main__":
    main()
