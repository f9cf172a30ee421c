"""Parses what `stepscope export` wrote, independently of the C++ code.

Usage: check_exports.py FORMAT FILE [EXPECTED_TOTAL]
Checks that a collapsed file splits into frames and counts, that a speedscope
file is well-formed and internally consistent, and that an SVG is well-formed
XML with exactly one script element. With EXPECTED_TOTAL, the collapsed counts
must add up to it.
"""
import json
import sys
import xml.etree.ElementTree as ET


def check_collapsed(path, expected_total):
    total = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            line = raw.decode("utf-8")  # must be valid UTF-8: hostile bytes are escaped
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            assert frames[0].startswith("process "), f"line {number}: {frames[0]!r}"
            assert frames[1].startswith("thread "), f"line {number}: {frames[1]!r}"
            assert int(count) > 0, f"line {number}: count {count}"
            total += int(count)
    assert total > 0, "no samples"
    if expected_total is not None:
        assert total == expected_total, f"counts add up to {total}, expected {expected_total}"


def check_speedscope(path):
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert doc["profiles"], "no profiles"
    for profile in doc["profiles"]:
        assert profile["type"] in ("sampled", "evented")
        if profile["type"] == "sampled":
            assert len(profile["samples"]) == len(profile["weights"])
            for stack in profile["samples"]:
                assert all(0 <= i < len(frames) for i in stack)
        else:
            depth = 0
            for event in profile["events"]:
                assert 0 <= event["frame"] < len(frames)
                depth += 1 if event["type"] == "O" else -1
                assert depth >= 0, "close before open"
            assert depth == 0, "unbalanced events"


def check_svg(path):
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg"), root.tag
    scripts = [e for e in root.iter() if e.tag.endswith("script")]
    assert len(scripts) == 1, f"{len(scripts)} script elements"
    rects = [e for e in root.iter() if e.tag.endswith("rect")]
    assert len(rects) > 2, "no frames drawn"


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    expected = int(sys.argv[3]) if len(sys.argv) > 3 else None
    {"collapsed": lambda p: check_collapsed(p, expected),
     "speedscope": check_speedscope, "svg": check_svg}[fmt](path)
    print(f"{fmt} ok: {path}")


if __name__ == "__main__":
    main()
