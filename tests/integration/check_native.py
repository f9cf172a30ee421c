"""Checks of `record --native` on a collapsed profile (export --format collapsed).

Usage: check_native.py COLLAPSED TARGET PATTERN...
Prints {"target_samples": N, "ordered": F, "native_frames": K}: N samples
have a frame matching the regular expression TARGET, a share F of them hold
frames matching every PATTERN in that order (outermost first), and K
distinct frames are native (`function (library.so...)`); when some are not in
order, "unordered": the heaviest such stack (its innermost 12 frames), which
says what went wrong when a check fails."""
import json
import re
import sys


def frames_of(line):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    return stack.split(";"), int(count)


def in_order(frames, patterns):
    at = 0
    for frame in frames:
        if at < len(patterns) and patterns[at].search(frame):
            at += 1
    return at == len(patterns)


def main():
    path, target, *patterns = sys.argv[1:]
    target_re = re.compile(target)
    pattern_res = [re.compile(p) for p in patterns]
    native = re.compile(r" \([^():]*\.so[^():]*\)$")
    targeted = ordered = 0
    native_frames = set()
    unordered = (0, [])
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            frames, count = frames_of(line)
            native_frames.update(frame for frame in frames if native.search(frame))
            if not any(target_re.search(frame) for frame in frames):
                continue
            targeted += count
            if in_order(frames, pattern_res):
                ordered += count
            elif count > unordered[0]:
                unordered = (count, frames)
    share = ordered / targeted if targeted else 0.0
    result = {"target_samples": targeted, "ordered": round(share, 3), "native_frames": len(native_frames)}
    if unordered[1]:
        result["unordered"] = "%d: %s" % (unordered[0], ";".join(unordered[1][-12:]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
