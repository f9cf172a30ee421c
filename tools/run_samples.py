#!/usr/bin/env python3
"""The samples of a stepscope run file, decoded from its sample blocks (schema 3).

A reference decoder of the layout docs/run-format.md describes, and a way to
query samples with SQL as files of schema 1 and 2 allowed:

    python3 tools/run_samples.py RUN.db "SELECT state, COUNT(*) FROM samples GROUP BY state"

loads the samples into a temporary table `samples(id, ts_ns, pid, tid, stack,
state, gil)` beside the file's own tables and prints the query's rows as
sqlite3 does (columns separated by |). Files of schema 1 and 2 are queried
as they are. As a module: `samples(connection)` yields the rows.

    python3 tools/run_samples.py --schema-2 RUN.db OUT.db

writes a copy of the run in schema 2 (a row per sample), as stepscope wrote
runs before: the tests and bench/run_storage.py compare the two.
"""
import itertools
import os
import sqlite3
import sys
import zlib

GIL_BIT = 4


def _varints(data, offset):
    """Yields (value, offset after it) for each LEB128 varint from offset on."""
    while offset < len(data):
        value, shift = 0, 0
        while True:
            byte = data[offset]
            offset += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        yield value, offset


def _unzigzag(value):
    return (value >> 1) ^ -(value & 1)


def _wrap(value):
    """A sum of differences, wrapped to int64 as the writer's unsigned arithmetic does."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _running_sums(deltas):
    """Each value from its difference to the previous one (wrapping is modular: once, at the end, is enough)."""
    return [_wrap(total) for total in itertools.accumulate(deltas)]


def decode_block(data, count):
    """The block's samples as (ts_ns, pid, tid, stack, state, gil) tuples."""
    header = _varints(data, 0)
    raw_size, start = next(header)
    raw = zlib.decompress(data[start:])
    assert len(raw) == raw_size, "a block's size does not match its header"
    values = _varints(raw, 0)
    columns = [[_unzigzag(next(values)[0]) for _ in range(count)] for _ in range(4)]
    flags = raw[len(raw) - count:]
    ts, pid, stack = (_running_sums(columns[c]) for c in (0, 1, 3))
    tid = [_wrap(p + d) for p, d in zip(pid, columns[2])]
    return [(ts[i], pid[i], tid[i], stack[i], flags[i] & ~GIL_BIT, int(bool(flags[i] & GIL_BIT)))
            for i in range(count)]


def samples(db):
    """Every sample of the run open as `db` (an sqlite3 connection), in id order, id first."""
    for first, count, data in db.execute("SELECT first_sample, count, data FROM sample_blocks ORDER BY id"):
        for i, sample in enumerate(decode_block(data, count)):
            yield (first + i,) + sample


def has_sample_blocks(db):
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sample_blocks'").fetchone() is not None


def open_with_samples(path):
    """A read-only connection to the run where `samples` is a table, in every schema."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if has_sample_blocks(db):
        db.execute("CREATE TEMP TABLE samples(id INTEGER PRIMARY KEY, ts_ns INTEGER, pid INTEGER, tid INTEGER,"
                   " stack INTEGER, state INTEGER, gil INTEGER)")
        db.executemany("INSERT INTO temp.samples VALUES (?, ?, ?, ?, ?, ?, ?)", samples(db))
    return db


def write_schema_two(path, out):
    """Copies the run at `path` to `out` with its samples as rows, in schema 2."""
    if os.path.exists(out):
        os.remove(out)
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    source.execute("VACUUM INTO ?", (out,))
    source.close()
    db = sqlite3.connect(out)
    rows = list(samples(db))
    db.executescript("""
        CREATE TABLE samples(id INTEGER PRIMARY KEY, ts_ns INTEGER NOT NULL, pid INTEGER NOT NULL,
                             tid INTEGER NOT NULL, stack INTEGER NOT NULL, state INTEGER NOT NULL,
                             gil INTEGER NOT NULL);
        DROP TABLE sample_blocks; DROP TABLE row_ranges;
        UPDATE meta SET value = '2' WHERE key = 'schema_version';""")
    db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.execute("VACUUM")
    db.close()


def main(argv):
    if len(argv) == 4 and argv[1] == "--schema-2":
        return write_schema_two(argv[2], argv[3])
    if len(argv) != 3:
        sys.exit(f"usage: {argv[0]} RUN.db SQL | --schema-2 RUN.db OUT.db")
    db = open_with_samples(argv[1])
    for row in db.execute(argv[2]):
        print("|".join("" if v is None else str(v) for v in row))


if __name__ == "__main__":
    main(sys.argv)
