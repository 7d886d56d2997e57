#!/usr/bin/env python3
"""Side-by-side loopback benchmark: direct vs socat vs burrow (and more modes later).

One command runs every selected workload through every selected mode, in
interleaved rounds, and writes a Markdown table plus JSON:

    python3 bench/run.py --burrow build/burrow --rounds 3 --out docs/benchmarks.md

Tunnel processes are pinned to one core (--tunnel-cpu, default 0); nginx, the
iperf3 server and client and wrk are pinned to another (--load-cpu, default 1).
Everything listens on 127.0.0.1 only.  Every process this script starts runs in
its own process group and is stopped (SIGTERM, then SIGKILL) on exit, on error
and on Ctrl-C; with util-linux `setpriv` available the children also get
SIGKILL if this script itself dies.

Stdlib only.  This file parses the arguments and runs main(); the rest lives in the
package bench/burrowbench/ (its __init__.py lists the modules).  See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # imported, not run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from burrowbench.columns import COLUMNS, QUICK_COLUMNS, SCALING_COLUMNS  # noqa: E402
from burrowbench.common import BenchError, Interrupted, log  # noqa: E402
from burrowbench.context import Context  # noqa: E402
from burrowbench.modes import MODES  # noqa: E402
from burrowbench.preflight import drop_unavailable_modes, missing_tools  # noqa: E402
from burrowbench.procs import Procs  # noqa: E402
from burrowbench.report import write_outputs  # noqa: E402
from burrowbench.scaling import run_scaling  # noqa: E402
from burrowbench.sysinfo import raise_nofile, run_meta, stripped_size  # noqa: E402
from burrowbench.targets import Targets  # noqa: E402
from burrowbench.rounds import run_rounds  # noqa: E402


def _column_list(p: argparse.ArgumentParser, text: str) -> list[str]:
    """Comma-separated column names, in the order of COLUMNS (a ladder's first step before
    its second, the restart and the many tunnels last)."""
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    for c in chosen:
        if c not in COLUMNS:
            p.error(f"unknown column {c!r}; known: {', '.join(COLUMNS)}")
    return [c for c in COLUMNS if c in chosen]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Loopback benchmark: direct vs socat vs burrow (plain and end to end), "
                    "interleaved rounds.")
    p.add_argument("--burrow", help="path to the burrow binary (needed for burrow mode)")
    p.add_argument("--modes", default=None,
                   help=f"comma-separated, from {','.join(MODES)} "
                        "(default: all; burrow only with --burrow)")
    p.add_argument("--columns", default=None,
                   help=f"comma-separated workloads, from {','.join(COLUMNS)} (default: all; "
                        "--quick: " + ",".join(QUICK_COLUMNS) + ")")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 3; --quick: 1)")
    p.add_argument("--duration", type=int, default=None,
                   help="wrk -d seconds (default 5; --quick: 2)")
    p.add_argument("--iperf-time", type=int, default=None,
                   help="iperf3 -t seconds (default 5; --quick: 2)")
    p.add_argument("--quick", action="store_true",
                   help="short smoke run: 1 round, 2 s each, fewer columns")
    p.add_argument("--out", help="Markdown output path (the table is printed either way)")
    p.add_argument("--json", help="JSON output path (default: --out with .json suffix)")
    p.add_argument("--tunnel-cpu", type=int, default=0, help="CPU for tunnel processes")
    p.add_argument("--load-cpu", type=int, default=1,
                   help="CPU for nginx, iperf3 and wrk")
    p.add_argument("--no-pin", action="store_true", help="do not use taskset")
    p.add_argument("--settle", type=float, default=0.5,
                   help="seconds to wait between workloads, before waiting for quiet CPUs "
                        "(default 0.5)")
    # socat's own backlog of 5 overflows at 50 connections and costs it 1 s SYN retries, which
    # would flatter every tunnel compared with it; 1024 keeps the comparison fair.
    p.add_argument("--socat-backlog", type=int, default=1024,
                   help="backlog=N on socat's TCP-LISTEN (default 1024; 0: socat's own, 5)")
    # nginx's default accepts one waiting connection per pass of its event loop; a tunnel that
    # connects to it while hundreds of connections are busy then waits seconds in its listen
    # queue (wrk timeouts at 1,000 connections). "on" takes every waiting one at each wake-up.
    p.add_argument("--nginx-multi-accept", choices=["on", "off"], default="on",
                   help="nginx's multi_accept (default on; off: nginx's default, one accept per "
                        "pass of its event loop)")
    p.add_argument("--burrow-relay-args", default="",
                   help="extra arguments for `burrow relay` (shell-quoted string)")
    p.add_argument("--burrow-agent-args", default="",
                   help="extra arguments for the agents, `burrow tcp` and `burrow http` "
                        "(shell-quoted string)")
    p.add_argument("--scaling", action="store_true",
                   help="also the unpinned run: the relay with --workers 1 and 2, nothing "
                        "pinned, on --scaling-columns (needs --burrow)")
    p.add_argument("--scaling-columns", default=",".join(SCALING_COLUMNS),
                   help="workloads of the unpinned run (default: %(default)s)")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (logs)")
    a = p.parse_args(argv)
    a.rounds = a.rounds if a.rounds is not None else (1 if a.quick else 3)
    a.duration = a.duration if a.duration is not None else (2 if a.quick else 5)
    a.iperf_time = a.iperf_time if a.iperf_time is not None else (2 if a.quick else 5)
    a.modes_given = a.modes is not None
    if a.modes is None:
        a.modes = ",".join(m for m in MODES if not m.startswith("burrow") or a.burrow)
    a.mode_list = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in a.mode_list:
        if m not in MODES:
            p.error(f"unknown mode {m!r}; known: {', '.join(MODES)}")
    if len(set(a.mode_list)) != len(a.mode_list):
        p.error("a mode is listed twice")
    if a.columns is None:
        a.column_list = list(QUICK_COLUMNS if a.quick else COLUMNS)
    else:
        a.column_list = _column_list(p, a.columns)
    a.scaling_column_list = _column_list(p, a.scaling_columns) if a.scaling else []
    if a.scaling and not a.burrow:
        p.error("--scaling needs --burrow PATH")
    if not (1 <= a.rounds <= 50):
        p.error("--rounds must be 1..50")
    if not (1 <= a.duration <= 600) or not (1 <= a.iperf_time <= 600):
        p.error("--duration and --iperf-time must be 1..600")
    if any(m.startswith("burrow") for m in a.mode_list) or a.scaling:
        if not a.burrow:
            p.error("burrow mode needs --burrow PATH")
        a.burrow = str(Path(a.burrow).resolve())
        if not os.access(a.burrow, os.X_OK):
            p.error(f"{a.burrow} is not an executable")
    if a.json is None and a.out:
        a.json = str(Path(a.out).with_suffix(".json"))
    return a


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python3 " + shlex.join(sys.argv if argv is None else ["bench/run.py"] + argv)
    why = drop_unavailable_modes(args)
    if why:
        log(why)
        return 2
    for tool in missing_tools(args):
        log(f"missing tool: {tool}")
        return 2
    ncpu = len(os.sched_getaffinity(0))
    pin = not args.no_pin
    if pin and max(args.tunnel_cpu, args.load_cpu) not in os.sched_getaffinity(0) \
            and max(args.tunnel_cpu, args.load_cpu) >= (os.cpu_count() or 1):
        log(f"CPU {max(args.tunnel_cpu, args.load_cpu)} does not exist; use --no-pin or "
            "--tunnel-cpu/--load-cpu")
        return 2
    nofile = raise_nofile(65536)  # inherited by every child
    if nofile < 4096:
        log(f"warning: RLIMIT_NOFILE is only {nofile}; the 1,000-connection column may fail")

    tmp = Path(tempfile.mkdtemp(prefix="burrow-bench-"))
    logdir = tmp / "logs"
    logdir.mkdir()
    setpriv = shutil.which("setpriv")
    procs = Procs(logdir, pin, setpriv)
    ctx = Context(args, procs, tmp)

    def on_signal(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM,
                                                     signal.SIGHUP)}
    started = time.monotonic()
    rc = 0
    try:
        if args.burrow:
            ctx.burrow_stripped_bytes = stripped_size(args.burrow, tmp)
        meta = run_meta(ctx, command, ncpu, nofile)
        log(f"modes {args.mode_list}, columns {args.column_list}, rounds {args.rounds}"
            + (f", scaling {args.scaling_column_list}" if args.scaling else "")
            + f", logs in {logdir}")
        all_columns = args.column_list + args.scaling_column_list
        want_http = any(COLUMNS[c]["kind"] != "iperf" for c in all_columns)
        want_iperf = any(COLUMNS[c]["kind"] == "iperf" for c in all_columns)
        want_tls = want_http and any(MODES[m].tls_target for m in args.mode_list)
        ctx.targets = Targets(procs, tmp, args.load_cpu, nofile, want_http, want_iperf,
                              want_tls, args.nginx_multi_accept)
        ctx.targets.start()
        ctx.modes = {m: MODES[m](ctx) for m in args.mode_list}
        rounds = run_rounds(ctx)
        scaling = run_scaling(ctx, args.scaling_column_list) if args.scaling else []
        write_outputs(ctx, meta, rounds, scaling, started)
        if any(res["errors"] for r in rounds + scaling for res in r["results"].values()):
            rc = 1
    except Interrupted as e:
        log(f"interrupted ({e}); cleaning up")
        rc = 130
    except BenchError as e:
        log(f"error: {e}")
        rc = 1
    finally:
        # Ignore further signals while cleaning up, so a second Ctrl-C cannot
        # leave processes behind.
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        procs.stop_all()
        for s, h in old.items():
            signal.signal(s, h)
        if args.keep_tmp or rc not in (0, 130):
            log(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        log(f"done in {time.monotonic() - started:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
