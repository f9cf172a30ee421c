"""Reads what the hooks recorded with plain SQL (through tools/run_samples.py, the run
format's reference decoder), independently of stepscope's C++.

  check_steps.py RUN.db count           -> number of step spans
  check_steps.py RUN.db kinds           -> JSON {span kind number: count}
  check_steps.py RUN.db meta KEY        -> a metadata value ('' when absent)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from run_samples import open_with_samples  # noqa: E402


def main():
    path, command, *args = sys.argv[1:]
    db = open_with_samples(path)
    if command == "count":
        print(db.execute("SELECT COUNT(*) FROM spans WHERE kind = 1").fetchone()[0])
    elif command == "kinds":
        print(json.dumps(dict(db.execute("SELECT kind, COUNT(*) FROM spans GROUP BY kind").fetchall())))
    elif command == "meta":
        row = db.execute("SELECT value FROM metadata WHERE key = ?", (args[0],)).fetchone()
        print(row[0] if row else "")


if __name__ == "__main__":
    main()
