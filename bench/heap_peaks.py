#!/usr/bin/env python3
"""Shortens heaptrack_print's peak report (--print-peaks) for bench/profile.sh --tool heaptrack.

For each allocation function among the top peak consumers: what it held at the heap's peak, and
for each of its call sites the amount, the number of calls and the first frames of our own code
(burrow::) above it, which say whose memory it is. Then heaptrack's totals.

    python3 bench/heap_peaks.py PRINT_OUTPUT [FRAMES]
"""
import re
import sys

PEAK = re.compile(r"^(\S+) peak memory consumed over (\d+) calls from$")
SITE = re.compile(r"^(\S+) consumed over (\d+) calls from:$")
OTHERS = re.compile(r"^  and (\S+) from (\d+) other places$")
TOTALS = ("calls to allocation functions", "peak heap memory consumption",
          "peak RSS (including heaptrack overhead)")


def main():
    path = sys.argv[1]
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    out, in_peaks, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("PEAK MEMORY CONSUMERS"):
            in_peaks = True
        elif in_peaks and re.match(r"^[A-Z][A-Z ]+$", line):
            in_peaks = False
        elif in_peaks and (m := PEAK.match(line)):
            where = lines[i + 1].strip() if i + 1 < len(lines) else "?"
            out.append(f"{m.group(1):>8} in {m.group(2)} calls: {short(where)}")
        elif in_peaks and (m := SITE.match(line)):
            ours, j = [], i + 1
            while j < len(lines) and lines[j].startswith("    ") and len(ours) < frames:
                frame = lines[j].strip()
                if frame.startswith("burrow::"):
                    ours.append(short(frame))
                j += 1
            out.append(f"{'':>8}   {m.group(1)} in {m.group(2)} calls from "
                       + (" < ".join(ours) if ours else "(no frame of ours)"))
        elif in_peaks and (m := OTHERS.match(line)):
            out.append(f"{'':>8}   {m.group(1)} from {m.group(2)} other places")
        elif line.startswith(TOTALS):
            out.append(line)
        i += 1
    print("\n".join(out) if out else "(no peak report in " + path + ")")


def short(frame):
    """A frame without its argument list and template arguments, for one line."""
    frame = re.sub(r"\(.*", "", frame.replace("(anonymous namespace)", "{anon}"))
    while True:
        shorter = re.sub(r"<[^<>]*>", "", frame)
        if shorter == frame:
            return frame
        frame = shorter


if __name__ == "__main__":
    main()
