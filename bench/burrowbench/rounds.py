"""Rounds: every mode's tunnels up together, each column run through every mode in turn.

A mode's figure for a column is compared with socat's from the same round.  When a round ran
one mode's columns after another's, the two runs of a column were minutes apart, and a spell
in which this machine ran slower (it has them, see docs/performance.md) could land on one and
not the other.  Running each column through every mode before the next column puts them
seconds apart."""

from __future__ import annotations

import time

from .columns import COLUMNS, LOAD_KINDS
from .common import BenchError, log
from .context import Context
from .modes import Mode
from .net import wait_http
from .workloads import (measure_empty, measure_idle, rss_mib, run_load_column, run_many,
                        run_restart, step_failure)


class ModeRound:
    """One mode's part of a round: open() starts its tunnels and measures its memory,
    run_load(column) runs one load column through them, close() runs the columns that change
    the tunnels (relay restart, many tunnels) and stops everything.  `out` is
    {"metrics": {...}, "columns": {col: raw}, "skipped": {col: why}, "errors": [...]}."""

    def __init__(self, ctx: Context, mode: Mode, columns: list[str]):
        self.ctx = ctx
        self.mode = mode
        self.out: dict = {"metrics": {}, "columns": {}, "skipped": {}, "errors": []}
        skipped = [c for c in columns if not mode.runs(c)]
        if skipped:
            log(f"  {mode.name}: skipping {', '.join(skipped)} (not for this mode)")
        self.columns = [c for c in columns if mode.runs(c)]
        self.loads = [c for c in self.columns if COLUMNS[c]["kind"] in LOAD_KINDS]
        self.http_port = 0
        self.iperf_port = 0
        self.up = False
        self.step_failed: dict[str, str] = {}  # ladder step -> why the next step is not run

    def _fail(self, what: str, e: BenchError) -> None:
        log(f"  {self.mode.name}{' ' + what if what else ''}: FAILED: {e}")
        self.out["errors"].append(f"{what}: {e}" if what else str(e))

    def open(self) -> bool:
        mode, metrics = self.mode, self.out["metrics"]
        t = self.ctx.targets
        assert t is not None
        need_iperf = any(COLUMNS[c]["kind"] == "iperf" for c in self.columns)
        need_http = not all(COLUMNS[c]["kind"] == "iperf" for c in self.columns)
        sizes = mode.binaries()
        if sizes and all(sizes.values()):
            metrics["binary_mib"] = sum(sizes.values()) / 2**20
        try:
            t0 = time.monotonic()
            mode.setup()
            measure_empty(self.ctx, mode, metrics)
            self.http_port = mode.start(mode.http_target(t)) if need_http else 0
            self.iperf_port = mode.start(t.iperf_port) if need_iperf else 0
            self.out["registered_s"] = round(time.monotonic() - t0, 3)
            measure_idle(self.ctx, mode, metrics)
            if need_http:
                wait_http(self.http_port, "/1k.bin", f"{mode.name} -> nginx", tls=mode.tls,
                          sni=mode.sni)
            self.up = True
        except BenchError as e:
            self._fail("", e)
            self.stop()
        return self.up

    def run_load(self, c: str) -> None:
        if not self.up or c not in self.loads:
            return
        col = COLUMNS[c]
        if col.get("after") in self.step_failed:
            self.out["skipped"][c] = (f"stopped at {COLUMNS[col['after']]['conns']:,}: "
                                      f"{self.step_failed[col['after']]}")
            log(f"  {self.mode.name:>8} {c:<18} {self.out['skipped'][c]}")
            return
        port = self.http_port if col["kind"] == "wrk" else self.iperf_port
        raw = run_load_column(self.ctx, self.mode, c, port, self.out)
        if any(COLUMNS[x].get("after") == c for x in self.loads) and step_failure(raw):
            self.step_failed[c] = step_failure(raw)

    def close(self) -> None:
        if not self.up:
            return
        try:
            peak = rss_mib(self.mode.memory_pid(), "VmHWM")  # before a restart's fresh relay
            if peak is not None:
                self.out["metrics"]["rss_peak_mib"] = peak
            for c in (c for c in self.columns if c not in self.loads):
                try:
                    if COLUMNS[c]["kind"] == "restart":
                        run_restart(self.ctx, self.mode, self.http_port, self.out)
                    else:
                        run_many(self.ctx, self.mode, c, self.mode.http_target(self.ctx.targets),
                                  self.out)
                except BenchError as e:
                    self._fail(c, e)
        finally:
            self.stop()

    def stop(self) -> None:
        self.up = False
        self.mode.stop()


def run_round(ctx: Context, modes: list[Mode], columns: list[str]) -> dict:
    """One round: every mode's tunnels started (in the given order), each load column run
    through every mode before the next column, then each mode's restart and many-tunnels
    columns and its stop.  Returns {mode name: ModeRound.out}."""
    loads = [c for c in columns if COLUMNS[c]["kind"] in LOAD_KINDS]
    runs = [ModeRound(ctx, m, columns) for m in modes]
    try:
        for r in runs:
            r.open()
        for c in loads:
            for r in runs:
                r.run_load(c)
        for r in runs:
            r.close()
    finally:
        for r in runs:
            r.stop()
    return {r.mode.name: r.out for r in runs}


def run_rounds(ctx: Context) -> list[dict]:
    """args.rounds rounds of run_round over the selected modes; the order rotates every
    round."""
    args = ctx.args
    n = len(args.mode_list)
    rounds = []
    for i in range(args.rounds):
        order = args.mode_list[i % n:] + args.mode_list[:i % n]
        log(f"round {i + 1}/{args.rounds}: {', '.join(order)}")
        results = run_round(ctx, [ctx.modes[m] for m in order], args.column_list)
        rounds.append({"round": i + 1, "order": order, "results": results})
    return rounds
