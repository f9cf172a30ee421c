#!/usr/bin/env python3
"""The samples, counter values, spans, frames and stacks of a stepscope run
file, decoded from its blocks (samples from schema 3 on, counter values from
schema 4 on, spans from schema 5 on, frames and stacks from schema 6 on).

A reference decoder of the layout docs/run-format.md describes, and a way to
query them with SQL as files of older schemas allowed:

    python3 tools/run_samples.py RUN.db "SELECT state, COUNT(*) FROM samples GROUP BY state"

loads them into temporary tables `samples(id, ts_ns, pid, tid, stack, state,
gil)`, `counter_values(id, track, ts_ns, value)` and `spans(id, start_ns,
end_ns, pid, tid, kind, name, correlation, bytes, detail)`, `frames(id,
function, file, line, kind)` and `stacks(id, parent, frame)` beside the
file's own tables and prints the query's rows as sqlite3 does (columns
separated by |). Tables a file of an older schema has are queried as they
are. As a module: `samples(connection)`, `counter_values(connection)`,
`spans(connection)`, `frames(connection)` and `stacks(connection)` yield the
rows, `open_with_samples(path)` gives a connection with all five tables.

    python3 tools/run_samples.py --schema-5 RUN.db OUT.db
    python3 tools/run_samples.py --schema-4 RUN.db OUT.db
    python3 tools/run_samples.py --schema-3 RUN.db OUT.db
    python3 tools/run_samples.py --schema-2 RUN.db OUT.db

write a copy of the run in schema 5 (a row per frame and per stack), 4 (a row
per span too), 3 (a row per counter value too) or 2 (a row per sample too),
as stepscope wrote runs before: the tests and benchmarks compare them.
"""
import itertools
import os
import sqlite3
import struct
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


def _block_columns(data, count, varint_columns):
    """A block's raw columns, its first `varint_columns` columns of `count` values each, unzigzagged, and the
    offset after them."""
    header = _varints(data, 0)
    raw_size, start = next(header)
    raw = zlib.decompress(data[start:])
    assert len(raw) == raw_size, "a block's size does not match its header"
    values, columns, end = _varints(raw, 0), [], 0
    for _ in range(varint_columns):
        column = []
        for _ in range(count):
            value, end = next(values)
            column.append(_unzigzag(value))
        columns.append(column)
    return raw, columns, end


def decode_block(data, count):
    """The block's samples as (ts_ns, pid, tid, stack, state, gil) tuples."""
    raw, columns, _ = _block_columns(data, count, 4)
    flags = raw[len(raw) - count:]
    ts, pid, stack = (_running_sums(columns[c]) for c in (0, 1, 3))
    tid = [_wrap(p + d) for p, d in zip(pid, columns[2])]
    return [(ts[i], pid[i], tid[i], stack[i], flags[i] & ~GIL_BIT, int(bool(flags[i] & GIL_BIT)))
            for i in range(count)]


def decode_counter_block(data, count):
    """The block's counter values as (track, ts_ns, value) tuples."""
    raw, columns, _ = _block_columns(data, count, 2)
    track, ts = (_running_sums(column) for column in columns)
    words = struct.unpack_from(f"<{count}Q", raw, len(raw) - 8 * count)
    previous, out = {}, []
    for i in range(count):
        bits = words[i] ^ previous.get(track[i], 0)  # XORed with the track's previous value in the block
        previous[track[i]] = bits
        out.append((track[i], ts[i], struct.unpack("<d", struct.pack("<Q", bits))[0]))
    return out


def decode_span_block(data, count):
    """The block's spans as (start_ns, end_ns, pid, tid, kind, name, correlation, bytes, detail) tuples."""
    # Start (differences), duration, pid (differences), tid less pid; a byte of kind each; then name,
    # correlation (differences, zigzagged), bytes (zigzagged) and detail.
    raw, (start, duration, pid, tid), end = _block_columns(data, count, 4)
    kinds = raw[end:end + count]
    rest = _varints(raw, end + count)
    name, correlation, size, detail = ([next(rest)[0] for _ in range(count)] for _ in range(4))
    start, pid = _running_sums(start), _running_sums(pid)
    correlation = _running_sums(_unzigzag(v) for v in correlation)
    return [(start[i], _wrap(start[i] + duration[i]), pid[i], _wrap(pid[i] + tid[i]), kinds[i], name[i],
             correlation[i], _unzigzag(size[i]), detail[i]) for i in range(count)]


def decode_frame_block(data, count):
    """The block's frames as (function, file, line, kind) tuples."""
    raw, (function, file, line), end = _block_columns(data, count, 3)
    function, file = _running_sums(function), _running_sums(file)
    return [(function[i], file[i], line[i], raw[end + i]) for i in range(count)]


def decode_stack_block(data, count, first):
    """The block's stacks, the first of them stack `first`, as (parent, frame) tuples."""
    raw, _, _ = _block_columns(data, count, 0)
    values = _varints(raw, 0)
    back = [next(values)[0] for _ in range(count)]  # how far back the parent is: not zigzagged
    frame = _running_sums(_unzigzag(next(values)[0]) for _ in range(count))
    return [(first + i - back[i], frame[i]) for i in range(count)]


def _block_rows(db, table, first_column, decode, with_first=False):
    """Each block's rows, id first; `with_first`: the decoder is told the block's first id too."""
    for first, count, data in db.execute(f"SELECT {first_column}, count, data FROM {table} ORDER BY id"):
        rows = decode(data, count, first) if with_first else decode(data, count)
        for i, row in enumerate(rows):
            yield (first + i,) + row


def counter_values(db):
    """Every counter value of the run open as `db` (schema 4 on), in id order, id first."""
    return _block_rows(db, "counter_blocks", "first_value", decode_counter_block)


def samples(db):
    """Every sample of the run open as `db` (an sqlite3 connection), in id order, id first."""
    return _block_rows(db, "sample_blocks", "first_sample", decode_block)


def spans(db):
    """Every span of the run open as `db` (schema 5 on), in id order, id first."""
    return _block_rows(db, "span_blocks", "first_span", decode_span_block)


def frames(db):
    """Every frame of the run open as `db` (schema 6 on), in id order, id first."""
    return _block_rows(db, "frame_blocks", "first_frame", decode_frame_block)


def stacks(db):
    """Every stack of the run open as `db` (schema 6 on) but the root, in id order, id first."""
    return _block_rows(db, "stack_blocks", "first_stack", decode_stack_block, with_first=True)


def _has_table(db, name):
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def has_sample_blocks(db):
    return _has_table(db, "sample_blocks")


SAMPLES_TABLE = "samples(id INTEGER PRIMARY KEY, ts_ns INTEGER, pid INTEGER, tid INTEGER, stack INTEGER," \
                " state INTEGER, gil INTEGER)"
COUNTER_VALUES_TABLE = "counter_values(id INTEGER PRIMARY KEY, track INTEGER, ts_ns INTEGER, value REAL)"
FRAMES_TABLE = "frames(id INTEGER PRIMARY KEY, function INTEGER NOT NULL, file INTEGER NOT NULL," \
               " line INTEGER NOT NULL, kind INTEGER NOT NULL)"
STACKS_TABLE = "stacks(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL, frame INTEGER NOT NULL)"
SPANS_TABLE = "spans(id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL," \
              " pid INTEGER NOT NULL, tid INTEGER NOT NULL, kind INTEGER NOT NULL, name INTEGER NOT NULL," \
              " correlation INTEGER NOT NULL, bytes INTEGER NOT NULL, detail INTEGER NOT NULL)"


def open_with_samples(path):
    """A read-only connection to the run where `samples`, `counter_values`, `spans`, `frames` and `stacks` are
    tables, in every schema."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if has_sample_blocks(db):
        db.execute(f"CREATE TEMP TABLE {SAMPLES_TABLE}")
        db.executemany("INSERT INTO temp.samples VALUES (?, ?, ?, ?, ?, ?, ?)", samples(db))
    if _has_table(db, "counter_blocks"):
        db.execute(f"CREATE TEMP TABLE {COUNTER_VALUES_TABLE}")
        db.executemany("INSERT INTO temp.counter_values VALUES (?, ?, ?, ?)", counter_values(db))
    if _has_table(db, "span_blocks"):
        db.execute(f"CREATE TEMP TABLE {SPANS_TABLE}")
        db.executemany("INSERT INTO temp.spans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", spans(db))
    if _has_table(db, "frame_blocks"):
        db.execute(f"CREATE TEMP TABLE {FRAMES_TABLE}")
        db.executemany("INSERT INTO temp.frames VALUES (?, ?, ?, ?, ?)", frames(db))
        db.execute(f"CREATE TEMP TABLE {STACKS_TABLE}")
        db.executemany("INSERT INTO temp.stacks VALUES (?, ?, ?)", stacks(db))
    return db


def _copy(path, out):
    if os.path.exists(out):
        os.remove(out)
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    source.execute("VACUUM INTO ?", (out,))
    source.close()
    return sqlite3.connect(out)


def _counter_values_as_rows(db):
    """Schema 4 to 3: the counter blocks become rows, and a run of them in row_ranges per block."""
    if not _has_table(db, "counter_blocks"):
        return
    blocks = db.execute("SELECT first_value, count, start_ns, end_ns FROM counter_blocks ORDER BY id").fetchall()
    rows = list(counter_values(db))
    db.executescript("""
        CREATE TABLE counter_values(id INTEGER PRIMARY KEY, track INTEGER NOT NULL, ts_ns INTEGER NOT NULL,
                                    value REAL NOT NULL);
        DROP TABLE counter_blocks;
        UPDATE meta SET value = '3' WHERE key = 'schema_version';""")
    db.executemany("INSERT INTO counter_values VALUES (?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO row_ranges(rows, first_id, count, low, high, latest_ns)"
                   " VALUES ('counter_values', ?, ?, ?, ?, ?)",
                   [(first, count, start, end, end) for first, count, start, end in blocks])


def _frames_and_stacks_as_rows(db):
    """Schema 6 to 5: the frame and stack blocks become rows."""
    if not _has_table(db, "frame_blocks"):
        return
    frame_rows, stack_rows = list(frames(db)), list(stacks(db))
    db.executescript(f"""
        CREATE TABLE {FRAMES_TABLE};
        CREATE TABLE {STACKS_TABLE};
        DROP TABLE frame_blocks; DROP TABLE stack_blocks;
        UPDATE meta SET value = '5' WHERE key = 'schema_version';""")
    db.executemany("INSERT INTO frames VALUES (?, ?, ?, ?, ?)", frame_rows)
    db.executemany("INSERT INTO stacks VALUES (?, ?, ?)", stack_rows)


def _spans_as_rows(db):
    """Schema 5 to 4: the span blocks become rows, and a run of them in row_ranges per block."""
    if not _has_table(db, "span_blocks"):
        return
    blocks = db.execute("SELECT first_span, count, start_ns, end_ns, latest_end_ns FROM span_blocks"
                        " ORDER BY id").fetchall()
    rows = list(spans(db))
    db.executescript(f"""
        CREATE TABLE {SPANS_TABLE};
        DROP TABLE span_blocks;
        UPDATE meta SET value = '4' WHERE key = 'schema_version';""")
    db.executemany("INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO row_ranges(rows, first_id, count, low, high, latest_ns) VALUES ('spans', ?, ?, ?, ?, ?)",
                   blocks)


def write_schema_five(path, out):
    """Copies the run at `path` to `out` with its frames and stacks as rows, in schema 5."""
    db = _copy(path, out)
    _frames_and_stacks_as_rows(db)
    db.commit()
    db.execute("VACUUM")
    db.close()


def write_schema_four(path, out):
    """Copies the run at `path` to `out` with its spans (and frames and stacks) as rows, in schema 4."""
    db = _copy(path, out)
    _frames_and_stacks_as_rows(db)
    _spans_as_rows(db)
    db.commit()
    db.execute("VACUUM")
    db.close()


def write_schema_three(path, out):
    """Copies the run at `path` to `out` with its spans and counter values as rows, in schema 3."""
    db = _copy(path, out)
    _frames_and_stacks_as_rows(db)
    _spans_as_rows(db)
    _counter_values_as_rows(db)
    db.commit()
    db.execute("VACUUM")
    db.close()


def write_schema_two(path, out):
    """Copies the run at `path` to `out` with its samples, spans and counter values as rows, in schema 2."""
    db = _copy(path, out)
    _frames_and_stacks_as_rows(db)
    _spans_as_rows(db)
    _counter_values_as_rows(db)
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
    writers = {"--schema-2": write_schema_two, "--schema-3": write_schema_three, "--schema-4": write_schema_four,
               "--schema-5": write_schema_five}
    if len(argv) == 4 and argv[1] in writers:
        return writers[argv[1]](argv[2], argv[3])
    if len(argv) != 3:
        sys.exit(f"usage: {argv[0]} RUN.db SQL | --schema-2|--schema-3|--schema-4|--schema-5 RUN.db OUT.db")
    db = open_with_samples(argv[1])
    try:
        for row in db.execute(argv[2]):
            print("|".join("" if v is None else str(v) for v in row))
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that stopped early (`| head`, `| grep -q`), as sqlite3 allows
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main(sys.argv)
