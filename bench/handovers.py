#!/usr/bin/env python3
"""Hand-overs between processes, from `perf sched timehist -w` (bench/profile.sh --tool sched).

For each pair (waker -> wakee) seen at least 100 times: the median time from the waker's
switch-in to the wake-up it issues (its work before handing over), how long the waker runs on
after it, and how long the wakee waits from the wake-up until it runs (on its own CPU: the
waker's remaining run; across CPUs: how fast an idle CPU wakes).

    bench/handovers.py TIMEHIST.txt [PID=ROLE ...]

PID=ROLE names processes (e.g. the relay and the agent, which share the name `burrow`); the
others go by their command name.  Threads count as their process.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict

TASK = re.compile(r"(\S+?)\[(\d+)(?:/(\d+))?\]$")
MIN_SEEN = 100


def role_of(task: str, roles: dict[str, str]) -> str:
    m = TASK.match(task)
    if not m:
        return task
    return roles.get(m.group(3) or m.group(2), m.group(1))


def handovers(lines, roles):
    """(waker, wakee) -> (before, after, wait) lists of seconds, by role; the events are
    matched by thread, so two processes of one name (two socats) stay apart."""
    before, after, wait = defaultdict(list), defaultdict(list), defaultdict(list)
    woken: dict[str, tuple[str, float]] = {}  # wakee thread -> (waker thread, time)
    issued: dict[str, list[tuple[str, float]]] = defaultdict(list)  # wakes in the current run
    for line in lines:
        f = line.split()
        if len(f) < 3 or not f[0][:1].isdigit():
            continue
        t, who = float(f[0]), f[2]
        if "awakened:" in f:
            woken[f[-1]] = (who, t)
            issued[who].append((f[-1], t))
            continue
        try:  # a run line: ... wait time, sch delay, run time (ms)
            ran = float(f[-1]) / 1000
        except ValueError:
            continue
        switched_in = t - ran
        if who in woken:
            waker, tw = woken.pop(who)
            if tw <= switched_in:
                wait[(role_of(waker, roles), role_of(who, roles))].append(switched_in - tw)
        for wakee, tw in issued.pop(who, []):
            pair = (role_of(who, roles), role_of(wakee, roles))
            before[pair].append(tw - switched_in)
            after[pair].append(t - tw)
    return before, after, wait


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    roles = dict(a.split("=", 1) for a in argv[2:])
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        before, after, wait = handovers(f, roles)

    def us(v):
        return f"{1e6 * statistics.median(v):6.1f}" if v else "   n/a"

    print(f"{'waker -> wakee':<22} {'seen':>7} {'work before (µs)':>17} "
          f"{'runs on (µs)':>13} {'wakee waits (µs)':>17}")
    for k in sorted(before, key=lambda k: -len(before[k])):
        if len(before[k]) < MIN_SEEN:
            continue
        print(f"{k[0] + ' -> ' + k[1]:<22} {len(before[k]):>7} {us(before[k]):>17} "
              f"{us(after[k]):>13} {us(wait.get(k, [])):>17}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
