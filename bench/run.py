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

Stdlib only.  Processes, ports, /proc, the targets, the columns and the modes live in
the package bench/burrowbench/.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # imported, not run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from burrowbench.columns import (COLUMNS, LOAD_KINDS, METRICS, QUICK_COLUMNS,  # noqa: E402
                                 SCALING_COLUMNS, SCALING_WORKERS, STEP_ERROR_LIMIT,
                                 WRK_ERROR_KINDS)
from burrowbench.common import (HERE, LOOPBACK, READY_TIMEOUT, SHARE_DOMAIN,  # noqa: E402
                                SHARE_NAME, SSHD, BenchError, Interrupted, log)
from burrowbench.context import Context  # noqa: E402
from burrowbench.modes import (MODES, BurrowWorkersMode, Mode,  # noqa: E402
                               link_encryption_supported)
from burrowbench.net import http_get_ok, wait_http  # noqa: E402
from burrowbench.procs import Procs  # noqa: E402
from burrowbench.sysinfo import (PeakSampler, loadavg, proc_status_kib,  # noqa: E402
                                 raise_nofile, run_meta, stripped_size, tree_cpu_seconds,
                                 tree_pss_kib)
from burrowbench.targets import Targets  # noqa: E402


# --------------------------------------------------------------------------
# Load generators
# --------------------------------------------------------------------------

_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def _wrk_time_ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * _TIME_UNITS[m.group(2)]


def parse_wrk(out: str) -> dict:
    res: dict = {}
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)", out, re.M)
    if m:
        res["requests"] = int(m.group(1))
        res["seconds"] = _wrk_time_ms(m.group(2) + m.group(3)) / 1e3
    m = re.search(r"^Requests/sec:\s*([\d.]+)", out, re.M)
    if not m:
        raise BenchError("no Requests/sec in wrk output:\n" + out[-2000:])
    res["rps"] = float(m.group(1))
    for pct in ("50", "99"):
        m = re.search(rf"^\s*{pct}(?:\.0+)?%\s+([\d.]+(?:us|ms|s|m|h))\s*$", out, re.M)
        if m:
            res[f"p{pct}_ms"] = _wrk_time_ms(m.group(1))
    errs = dict.fromkeys(WRK_ERROR_KINDS, 0)
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        for k, v in zip(WRK_ERROR_KINDS, m.groups()):
            errs[k] = int(v)
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errs["non2xx"] = int(m.group(1))
    res["error_detail"] = errs
    res["errors"] = sum(errs.values())
    return res


def run_wrk(ctx: "Context", mode: Mode, col: dict, port: int) -> dict:
    a = ctx.args
    argv = ["wrk", "-t", str(col["threads"]), "-c", str(col["conns"]), "-d", f"{a.duration}s",
            "--latency"]
    if col["close"]:
        argv += ["-H", "Connection: close"]
    if mode.sni:  # a name that does not resolve: connect to 127.0.0.1 anyway
        argv += ["-s", str(HERE / "wrk-loopback.lua")]
    argv.append(mode.url(port, col["file"]))
    rc, out = ctx.procs.run("wrk", argv, a.load_cpu, timeout=a.duration + 60)
    if rc != 0:
        raise BenchError(f"wrk exited {rc}:\n{out[-2000:]}")
    return parse_wrk(out)


def run_iperf(ctx: "Context", mode: Mode, col: dict, port: int) -> dict:
    a = ctx.args
    argv = ["iperf3", "-c", LOOPBACK, "-p", str(port), "-t", str(a.iperf_time),
            "-P", str(col["streams"]), "-J"]
    rc, out = ctx.procs.run("iperf3-client", argv, a.load_cpu, timeout=a.iperf_time + 60)
    try:
        data = json.loads(out[out.index("{"):]) if "{" in out else {}
    except ValueError:
        data = {}
    if rc != 0 or "error" in data or "end" not in data:
        # A broken test can leave the server stuck; start a fresh one.
        ctx.targets.restart_iperf()
        raise BenchError(f"iperf3 exited {rc}: {data.get('error') or out[-1500:]}")
    recv = data["end"]["sum_received"]
    sent = data["end"].get("sum_sent", {})
    return {"gbps": recv["bits_per_second"] / 1e9,
            "sent_gbps": sent.get("bits_per_second", 0) / 1e9,
            "retransmits": sent.get("retransmits"),
            "bytes": recv.get("bytes")}


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------

def _rss_mib(pid: int | None, field: str = "VmRSS") -> float | None:
    v = proc_status_kib(pid, field) if pid else None
    return None if v is None else v / 1024


def _measure_empty(ctx: Context, mode: Mode, metrics: dict) -> None:
    """The relay (or sshd) right after it started, before any agent: "idle relay"."""
    mpid = mode.memory_pid()
    if not mpid:
        return
    time.sleep(ctx.args.settle)
    for key, field in (("rss_empty_mib", "VmRSS"), ("rss_empty_anon_mib", "RssAnon")):
        v = _rss_mib(mpid, field)
        if v is not None:
            metrics[key] = v


def _measure_idle(ctx: Context, mode: Mode, metrics: dict) -> None:
    """Tunnels registered, no visitor yet: the relay / listener, the first agent, and every
    tunnel process together (sum of PSS, so shared pages count once)."""
    time.sleep(ctx.args.settle)
    mpid = mode.memory_pid()
    for key, field in (("rss_idle_mib", "VmRSS"), ("rss_idle_anon_mib", "RssAnon")):
        v = _rss_mib(mpid, field)
        if v is not None:
            metrics[key] = v
    agent = _rss_mib(mode.agent_pid())
    if agent is not None:
        metrics["agent_rss_idle_mib"] = agent
    if mode.tunnel:
        pss = tree_pss_kib(mode.cpu_pids())
        if pss is not None:
            metrics["rss_idle_all_mib"] = pss / 1024


def _record_iperf(mode: Mode, c: str, raw: dict, metrics: dict) -> None:
    metrics[f"{c}.gbps"] = raw["gbps"]
    if mode.tunnel and raw.get("bytes"):
        metrics[f"{c}.cpu_per_gb"] = raw["tunnel_cpu_s"] / (raw["bytes"] / 1e9)
    log(f"  {mode.name:>8} {c:<18} {raw['gbps']:8.2f} Gbit/s")


def _record_wrk(mode: Mode, c: str, raw: dict, metrics: dict) -> None:
    metrics[f"{c}.rps"] = raw["rps"]
    for k in ("p50_ms", "p99_ms"):
        if k in raw:
            metrics[f"{c}.{k}"] = raw[k]
    metrics[f"{c}.errors"] = raw["errors"]
    for k, v in raw["error_detail"].items():
        metrics[f"{c}.err_{k}"] = v
    if mode.tunnel and raw.get("requests"):
        # CPU-milliseconds per 1,000 requests == CPU-seconds per 1e6
        metrics[f"{c}.cpu_per_1k"] = raw["tunnel_cpu_s"] * 1e3 / (raw["requests"] / 1000)
    if raw.get("server_rss_max_mib") is not None:
        metrics[f"{c}.rss_mib"] = raw["server_rss_max_mib"]
    errs = f" errors {raw['errors']} {raw['error_detail']}" if raw["errors"] else ""
    log(f"  {mode.name:>8} {c:<18} {raw['rps']:12,.1f} req/s  "
        f"p99 {raw.get('p99_ms', float('nan')):.3f} ms{errs}")


def step_failure(raw: dict | None) -> str | None:
    """Why a ladder stops after this step (None: go on): more errors (socket errors and
    non-2xx) than STEP_ERROR_LIMIT of the requests, or no result at all."""
    if raw is None:
        return "the step failed"
    requests = raw.get("requests", 0)
    if requests == 0 or raw["errors"] > STEP_ERROR_LIMIT * requests:
        return f"{raw['errors']:,} errors in {requests:,} requests"
    return None


def _run_load_column(ctx: Context, mode: Mode, c: str, port: int, out: dict) -> dict | None:
    """One iperf3 or wrk column through the mode, with its tunnel CPU and the relay's (or
    listener's) largest RSS while it ran.  Returns the raw result (None if it failed)."""
    col = COLUMNS[c]
    cpu0 = tree_cpu_seconds(mode.cpu_pids())
    t1 = time.monotonic()
    try:
        with PeakSampler(mode.memory_pid() if mode.tunnel else None) as peak:
            raw = (run_wrk if col["kind"] == "wrk" else run_iperf)(ctx, mode, col, port)
    except BenchError as e:
        log(f"  {mode.name} {c}: FAILED: {e}")
        out["errors"].append(f"{c}: {e}")
        time.sleep(ctx.args.settle)
        return None
    time.sleep(ctx.args.settle)  # let short-lived children exit and be reaped
    if mode.tunnel:
        raw["tunnel_cpu_s"] = tree_cpu_seconds(mode.cpu_pids()) - cpu0
        if peak.peak_kib is not None:
            raw["server_rss_max_mib"] = peak.peak_kib / 1024
    raw["wall_s"] = round(time.monotonic() - t1, 3)
    out["columns"][c] = raw
    (_record_iperf if col["kind"] == "iperf" else _record_wrk)(mode, c, raw, out["metrics"])
    return raw


def _run_restart(ctx: Context, mode: Mode, port: int, out: dict) -> None:
    """The relay restarted under idle, registered tunnels: seconds from just before the new
    relay is spawned to the first GET that works through the tunnel (one try every 5 ms,
    each with a 0.5 s deadline).  The agents redial on their own, with their backoff."""
    stop_s, t0 = mode.restart_server()
    deadline = t0 + READY_TIMEOUT
    tries = 0
    while True:
        tries += 1
        if http_get_ok(port, "/1k.bin", timeout=0.5, tls=mode.tls, sni=mode.sni):
            took = time.monotonic() - t0
            break
        if time.monotonic() > deadline:
            raise BenchError(f"restart: no working GET through the tunnel within "
                             f"{READY_TIMEOUT:.0f} s of the relay's start")
        time.sleep(0.005)
    mode.after_restart()
    out["columns"]["restart"] = {"restart_s": took, "old_relay_exit_s": round(stop_s, 3),
                                 "tries": tries}
    out["metrics"]["restart_s"] = took
    log(f"  {mode.name:>8} {'restart':<18} {took:8.3f} s to the first working request "
        f"(old relay took {stop_s:.3f} s to exit; {tries} tries)")


def _run_many(ctx: Context, mode: Mode, c: str, target_port: int, out: dict) -> None:
    n = COLUMNS[c]["count"]
    raw = mode.register_many(target_port, n)
    out["columns"][c] = raw
    for k, v in raw.items():
        if v is not None:
            out["metrics"][f"{c}.{k}"] = v
    agent = "n/a" if raw["agent_mib"] is None else f"{raw['agent_mib']:.2f} MiB"
    log(f"  {mode.name:>8} {c:<18} {raw['register_s']:8.3f} s; server +"
        f"{raw['server_growth_mib']:.2f} MiB; agent {agent}")


def run_mode_round(ctx: Context, mode: Mode, columns: list[str]) -> dict:
    """Start the mode's tunnels, run every column through them, stop them.
    Returns {"metrics": {...}, "columns": {col: raw}, "skipped": {col: why},
    "errors": [...]}."""
    t = ctx.targets
    assert t is not None
    out: dict = {"metrics": {}, "columns": {}, "skipped": {}, "errors": []}
    metrics = out["metrics"]
    skipped = [c for c in columns if not mode.runs(c)]
    if skipped:
        log(f"  {mode.name}: skipping {', '.join(skipped)} (not for this mode)")
        columns = [c for c in columns if mode.runs(c)]
    need_iperf = any(COLUMNS[c]["kind"] == "iperf" for c in columns)
    need_http = not all(COLUMNS[c]["kind"] == "iperf" for c in columns)
    sizes = mode.binaries()
    if sizes and all(sizes.values()):
        metrics["binary_mib"] = sum(sizes.values()) / 2**20
    try:
        t0 = time.monotonic()
        mode.setup()
        _measure_empty(ctx, mode, metrics)
        http_port = mode.start(mode.http_target(t)) if need_http else 0
        iperf_port = mode.start(t.iperf_port) if need_iperf else 0
        out["registered_s"] = round(time.monotonic() - t0, 3)
        _measure_idle(ctx, mode, metrics)
        if need_http:
            wait_http(http_port, "/1k.bin", f"{mode.name} -> nginx", tls=mode.tls,
                      sni=mode.sni)
        step_failed: dict[str, str] = {}  # ladder step -> why the next step is not run
        for c in (c for c in columns if COLUMNS[c]["kind"] in LOAD_KINDS):
            col = COLUMNS[c]
            if col.get("after") in step_failed:
                out["skipped"][c] = (f"stopped at {COLUMNS[col['after']]['conns']:,}: "
                                     f"{step_failed[col['after']]}")
                log(f"  {mode.name:>8} {c:<18} {out['skipped'][c]}")
                continue
            port = http_port if col["kind"] == "wrk" else iperf_port
            raw = _run_load_column(ctx, mode, c, port, out)
            if any(COLUMNS[x].get("after") == c for x in columns) and step_failure(raw):
                step_failed[c] = step_failure(raw)
        peak = _rss_mib(mode.memory_pid(), "VmHWM")  # before a restart starts a fresh relay
        if peak is not None:
            metrics["rss_peak_mib"] = peak
        for c in (c for c in columns if COLUMNS[c]["kind"] not in LOAD_KINDS):
            try:
                if COLUMNS[c]["kind"] == "restart":
                    _run_restart(ctx, mode, http_port, out)
                else:
                    _run_many(ctx, mode, c, mode.http_target(t), out)
            except BenchError as e:
                log(f"  {mode.name} {c}: FAILED: {e}")
                out["errors"].append(f"{c}: {e}")
    except BenchError as e:
        log(f"  {mode.name}: FAILED: {e}")
        out["errors"].append(str(e))
    finally:
        mode.stop()
    return out


def per_round_ratio(rounds: list[dict], m: str, base: str, k: str) -> float | None:
    """Median over rounds of m's value over base's value in the same round."""
    rs = []
    for r in rounds:
        a = r["results"].get(m, {}).get("metrics", {}).get(k)
        b = r["results"].get(base, {}).get("metrics", {}).get(k)
        if a is not None and b:
            rs.append(a / b)
    return statistics.median(rs) if rs else None


def summarize_vs(rounds: list[dict], modes: list[str]) -> dict:
    """For modes with compare_to: medians of the per-round ratios to that mode."""
    rel: dict = {}
    for m in modes:
        base = MODES[m].compare_to
        if not base or base not in modes:
            continue
        rel[m] = {}
        for k in METRICS:
            v = per_round_ratio(rounds, m, base, k)
            if v is not None:
                rel[m][k] = v
    return rel


def summarize(rounds: list[dict], modes: list[str]) -> tuple[dict, dict]:
    """Medians over rounds per mode, and medians of the per-round ratios to socat."""
    med: dict = {m: {} for m in modes}
    ratio: dict = {m: {} for m in modes}
    keys = sorted({k for r in rounds for m in modes
                   for k in r["results"].get(m, {}).get("metrics", {})})
    for m in modes:
        for k in keys:
            vals = [r["results"][m]["metrics"][k] for r in rounds
                    if k in r["results"].get(m, {}).get("metrics", {})]
            if vals:
                med[m][k] = statistics.median(vals)
            if "socat" in modes:
                rs = []
                for r in rounds:
                    a = r["results"].get(m, {}).get("metrics", {}).get(k)
                    b = r["results"].get("socat", {}).get("metrics", {}).get(k)
                    if a is not None and b:
                        rs.append(a / b)
                if rs:
                    ratio[m][k] = statistics.median(rs)
    return med, ratio


def fmt_val(key: str, v) -> str:
    if v is None:
        return "n/a"
    return METRICS[key]["fmt"].format(v)


def stopped_rounds(rounds: list[dict], m: str, column: str | None) -> list[str]:
    """Why column was skipped for mode m ("stopped at 100: ..."), one entry per round."""
    if column is None:
        return []
    return [r["results"][m]["skipped"][column] for r in rounds
            if column in r["results"].get(m, {}).get("skipped", {})]


def value_cell(key: str, m: str, med: dict, stopped: list[str], n_rounds: int) -> str:
    """A mode's median, with the error kinds of an error count, or why the step never ran."""
    v = med[m].get(key)
    if v is None and stopped:
        return stopped[0].split(":")[0]  # "stopped at 100"
    cell = fmt_val(key, v)
    if key.endswith(".errors") and v is not None:
        detail = [med[m].get(key.replace(".errors", f".err_{k}")) for k in WRK_ERROR_KINDS]
        if any(detail):
            cell += " (" + ", ".join(f"{k} {d:g}" for k, d in zip(WRK_ERROR_KINDS, detail)
                                     if d) + ")"
    if stopped:
        cell += f" ({stopped[0].split(':')[0]} in {len(stopped)} of {n_rounds} rounds)"
    return cell


def target_cell(mo: Mode, key: str, med: dict, ratio_of_mode: dict, vs_of_mode: dict,
                stopped: list[str]) -> str:
    """The target text with ✓/✗: a ratio (to socat, or to compare_to for targets_vs) or an
    absolute check of the median.  A step stopped by the error ladder fails its targets."""
    vs = not mo.targets
    tgt = (mo.targets_vs if vs else mo.targets).get(key)
    if not tgt:
        return ""
    text, pred = tgt
    ok = None
    base = vs_of_mode if vs else ratio_of_mode
    if stopped:
        ok = False
    elif pred is not None and key in base:
        ok = pred(base[key])
    elif pred is None and key in mo.abs_checks and key in med:
        ok = mo.abs_checks[key](med[key])
    return text + ("" if ok is None else (" ✓" if ok else " ✗"))


def render_table(ctx: Context, modes: list[str], columns: list[str], med: dict,
                 ratio: dict, rounds: list[dict]) -> str:
    mode_objs = {m: ctx.modes[m] for m in modes}
    show_ratio = "socat" in modes
    rel = summarize_vs(rounds, modes)
    target_modes = [m for m in modes if mode_objs[m].targets or
                    (m in rel and mode_objs[m].targets_vs)]
    head = ["workload", "unit"]
    for m in modes:
        head.append(m)
        if show_ratio and m != "socat":
            head.append(f"{m} / socat")
        if m in rel:
            head.append(f"{m} / {mode_objs[m].compare_to}")
    for m in target_modes:
        head.append(f"{m} target" + (f" (vs {mode_objs[m].compare_to})"
                                     if not mode_objs[m].targets else ""))
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(
        ["---", "---"] + ["---:"] * (len(head) - 2 - len(target_modes))
        + ["---"] * len(target_modes)) + "|"]
    for key, meta in METRICS.items():
        if meta["column"] is not None and meta["column"] not in columns:
            continue
        stopped = {m: stopped_rounds(rounds, m, meta["column"]) for m in modes}
        if not any(key in med[m] or stopped[m] for m in modes):
            continue
        label = meta["label"]
        if meta["better"]:
            label += " (higher is better)" if meta["better"] == "higher" else " (lower is better)"
        row = [label, meta["unit"]]
        for m in modes:
            row.append(value_cell(key, m, med, stopped[m], len(rounds)))
            if show_ratio and m != "socat":
                r = ratio[m].get(key) if meta["ratio"] else None
                row.append("n/a" if r is None else f"{r:.2f}")
            if m in rel:
                r = rel[m].get(key) if meta["ratio"] else None
                row.append("n/a" if r is None else f"{r:.2f}")
        for m in target_modes:
            row.append(target_cell(mode_objs[m], key, med[m], ratio[m], rel.get(m, {}),
                                   stopped[m]))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_markdown(ctx: Context, meta: dict, table: str, rounds: list[dict],
                    modes: list[str], chart_md: str, scaling_md: str) -> str:
    a = ctx.args
    md = [
        "# Burrow benchmarks",
        "",
        "Command:",
        "",
        "```",
        meta["command"],
        "```",
        "",
        f"- date: {meta['date']}",
        f"- nproc: {meta['nproc']} (cpu_count {meta['cpu_count']})",
        f"- CPU: {meta['cpu_model']}",
        f"- kernel: {meta['kernel']}",
        f"- burrow: {meta['versions'].get('burrow') or 'n/a'}; git {meta['git'] or 'n/a'}",
        f"- tools: {'; '.join(f'{k}: {v}' for k, v in meta['versions'].items() if k != 'burrow')}",
        f"- rounds: {a.rounds}, wrk -d {a.duration}s, iperf3 -t {a.iperf_time}; "
        f"tunnel processes pinned to CPU {a.tunnel_cpu}, nginx/iperf3/wrk to CPU {a.load_cpu}"
        + ("" if ctx.procs.pin else " (pinning DISABLED)"),
        f"- RLIMIT_NOFILE for children: {meta['nofile']}",
        f"- load average (1/5/15 min) at start: {meta['loadavg_start']}; "
        f"at end: {meta['loadavg_end']}",
        "",
        "**These numbers are noisy.** They come from one small, shared machine "
        f"({meta['nproc']} cores, other work running), all on 127.0.0.1. Each value is the "
        "median over rounds; the modes run interleaved (the order rotates every round) and each "
        "ratio is computed against socat *within* a round, then the median of those ratios "
        "is taken. Compare ratios, not absolute values, and re-run before drawing conclusions "
        "from small differences.",
        "",
        "Modes:",
        "",
    ]
    for m in modes:
        md.append(f"- `{m}`: {ctx.modes[m].describe()}")
    md += ["", binary_sizes_line(meta), "", table, "", chart_md, ""]
    notes = []
    for r in rounds:
        for m in modes:
            res = r["results"].get(m, {})
            for e in res.get("errors", []):
                notes.append(f"- round {r['round']}, {m}: {e.splitlines()[0]}")
            for c, why in res.get("skipped", {}).items():
                notes.append(f"- round {r['round']}, {m}, {c}: {why}")
            for c, raw in res.get("columns", {}).items():
                # The ladders' error counts are rows of the table already.
                if COLUMNS[c]["kind"] == "wrk" and raw.get("errors") and \
                        f"{c}.errors" not in METRICS:
                    notes.append(f"- round {r['round']}, {m}, {c}: wrk errors "
                                 f"{raw['error_detail']}")
    if notes:
        md += ["Problems seen during the run:", ""] + notes + [""]
    md += ["Per-round order: " + "; ".join(
        f"{r['round']}: {', '.join(r['order'])}" for r in rounds), ""]
    md += ["How the numbers are taken (bench/README.md has the details):", "",
           "- CPU per 1,000 requests and per GB: user+system time of the tunnel's processes "
           "(socat and its forked children; burrow relay and agents; sshd, its session "
           "processes and ssh) during the 1 KiB / 50 keep-alive column, per 1,000 requests "
           "wrk completed, and during the 1-stream bulk column, per 10^9 bytes iperf3 "
           "received.",
           "- Memory: VmRSS of the burrow relay (ssh-r: the sshd listener) before any agent "
           "connects; VmRSS when idle (tunnels registered, before any visitor) and VmHWM after "
           "the load columns, of the relay, the socat listener (its forked children not "
           "included) or the sshd session process that holds the forward; the largest VmRSS "
           "of that process sampled every 20 ms during the 1,000 keep-alive column; the first "
           "agent's (ssh client's) VmRSS when idle with one tunnel; the sum of PSS over every "
           "tunnel process when idle.",
           f"- Ladders: the 1,000-connection step of a kind runs only if the 100-connection "
           f"step had at most {STEP_ERROR_LIMIT:.0%} errors (wrk socket errors and non-2xx "
           "responses per completed request), else it shows \"stopped at 100\" and fails "
           "its targets.",
           "- Relay restart: with the tunnels registered and idle, SIGTERM to the relay, wait "
           "for its exit, start it again with the same ports and state directory; the time "
           "runs from just before the new relay is spawned to the first successful GET "
           "through the tunnel (one try every 5 ms). The agents redial on their own with "
           "their backoff (first delay 50-100 ms, doubling), which is part of this figure.",
           "- 200 tunnels: one `burrow up` agent with 200 `[[service]]` tables (ssh-r: one "
           "ssh with 200 `-R`), from its start until all 200 public ports are announced "
           "(ssh-r: listening); relay VmRSS after minus before (ssh-r: PSS of sshd's process "
           "tree); the agent's (ssh's) VmRSS.",
           "- HTTP-only modes (https-direct and the HTTPS share URL modes) skip the bulk TCP "
           "columns, which show n/a; wrk reaches "
           f"https://{SHARE_NAME}.{SHARE_DOMAIN}:PORT on 127.0.0.1 through "
           "bench/wrk-loopback.lua, so the name is the TLS SNI and the Host header.", ""]
    if scaling_md:
        md += [scaling_md, ""]
    return "\n".join(md)


def binary_sizes_line(meta: dict) -> str:
    sizes = meta.get("binary_sizes", {})
    if not sizes:
        return ""
    return "Binary sizes: " + "; ".join(f"{k} {v / 2**20:.2f} MiB" for k, v in sizes.items()) \
        + " (shared libraries such as libcrypto not included)."


# --------------------------------------------------------------------------
# The unpinned run (--scaling): how the relay scales with cores
# --------------------------------------------------------------------------

def run_scaling(ctx: Context, columns: list[str]) -> list[dict]:
    """Interleaved rounds of the relay with 1 and with 2 worker threads, relay and agent not
    pinned; nginx, iperf3 and wrk stay on the load CPU."""
    modes = [BurrowWorkersMode(ctx, n) for n in SCALING_WORKERS]
    rounds = []
    for i in range(ctx.args.rounds):
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        log(f"scaling round {i + 1}/{ctx.args.rounds}: {', '.join(m.name for m in order)}")
        rounds.append({"round": i + 1, "order": [m.name for m in order],
                       "results": {m.name: run_mode_round(ctx, m, columns) for m in order}})
    return rounds


SCALING_METRICS = ["http1k_c1000.rps", "http1k_c1000.p99_ms", "http1k_c1000.errors",
                   "http1k_c1000.cpu_per_1k", "bulk8.gbps"]


def summarize_scaling(rounds: list[dict]) -> dict:
    """Per workers setting the medians, and the per-round ratio of 2 workers to 1."""
    names = [f"burrow-workers{n}" for n in SCALING_WORKERS]
    med, _ = summarize(rounds, names)
    ratio = {k: per_round_ratio(rounds, names[-1], names[0], k) for k in SCALING_METRICS}
    return {"median": med, "ratio": {k: v for k, v in ratio.items() if v is not None}}


def render_scaling(summary: dict, columns: list[str]) -> str:
    names = [f"burrow-workers{n}" for n in SCALING_WORKERS]
    head = ["workload", "unit"] + [f"relay `--workers {n}`" for n in SCALING_WORKERS] \
        + [f"{SCALING_WORKERS[-1]} / {SCALING_WORKERS[0]}"]
    lines = [
        "## Unpinned: how the relay scales with cores",
        "",
        "Relay and agent without taskset (free to use every core, next to nginx, iperf3 and "
        "wrk, which stay pinned to the load CPU), the relay with `--workers 1` and with "
        f"`--workers {SCALING_WORKERS[-1]}`, in interleaved rounds; the last column is the "
        "median of the per-round ratios. Not comparable with the pinned table above.",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|" + "---:|" * (len(head) - 2),
    ]
    for key in SCALING_METRICS:
        meta = METRICS.get(key) or {"label": "tunnel CPU per 1,000 req (1 KiB, 1,000 "
                                             "keep-alive)", "unit": "CPU-ms", "fmt": "{:.1f}"}
        if key.split(".")[0] not in columns:
            continue
        cells = [meta["label"], meta["unit"]]
        for n in names:
            v = summary["median"].get(n, {}).get(key)
            cells.append("n/a" if v is None else meta["fmt"].format(v))
        r = summary["ratio"].get(key)
        cells.append("n/a" if r is None or key.endswith(".errors") else f"{r:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The chart (gnuplot, from the JSON document)
# --------------------------------------------------------------------------

# Rows of the chart: throughput metrics whose ratio to socat is the comparison.
CHART_METRICS = ["bulk1.gbps", "bulk8.gbps", "http1k_c1.rps", "http1k_c50.rps",
                 "http1k_c50_close.rps", "http1m_c50.rps", "http1k_c100.rps",
                 "http1k_c100_close.rps", "http1k_c1000.rps", "http1k_c1000_close.rps"]
CHART_LABELS = {"bulk1.gbps": "bulk 1", "bulk8.gbps": "bulk 8", "http1k_c1.rps": "1K c1",
                "http1k_c50.rps": "1K c50", "http1k_c50_close.rps": "1K c50 new",
                "http1m_c50.rps": "1M c50", "http1k_c100.rps": "1K c100",
                "http1k_c100_close.rps": "1K c100 new", "http1k_c1000.rps": "1K c1000",
                "http1k_c1000_close.rps": "1K c1000 new"}
TARGET_MARKED = ["burrow", "burrow-plain"]  # modes whose ratio targets the chart marks


def chart_data(doc: dict) -> tuple[list[str], list[str], list[list[str]]]:
    """(modes, target modes, rows) of the chart: per metric the ratio of each mode to socat,
    then each marked mode's target ("NaN" where there is none)."""
    ratio = doc["ratio_to_socat"]
    rows_keys = [k for k in CHART_METRICS
                 if any(k in ratio.get(m, {}) for m in doc["modes"] if m != "socat")]
    modes = [m for m in doc["modes"]
             if m != "socat" and any(k in ratio.get(m, {}) for k in rows_keys)]
    marked = [m for m in TARGET_MARKED if m in doc["modes"]]
    rows = []
    for k in rows_keys:
        row = [f'"{CHART_LABELS[k]}"']
        row += [f"{ratio[m][k]:.4f}" if k in ratio.get(m, {}) else "NaN" for m in modes]
        for m in marked:
            tgt = MODES[m].targets.get(k)
            row.append(tgt[0].removeprefix("≥ ") if tgt and tgt[1] is not None else "NaN")
        rows.append(row)
    return modes, marked, rows


CHART_GAP = 1  # empty bar widths between clusters


def bar_offset(j: int, n: int) -> float:
    """x offset from its cluster's centre of bar j of n in a gnuplot clustered histogram."""
    return (j - (n - 1) / 2) / (n + CHART_GAP)


def gnuplot_script(data: Path, png: Path, modes: list[str], marked: list[str],
                   terminal: str) -> str:
    n = len(modes)
    plots = [f"'{data}' using {i + 2}:xtic(1) title '{m}'" for i, m in enumerate(modes)]
    points = ["pt 7 ps 1.6 lc rgb 'black'", "pt 9 ps 1.8 lc rgb '#cc0000'"]
    for j, m in enumerate(marked):  # each target over its own mode's bar
        if m in modes:
            off = bar_offset(modes.index(m), n)
            plots.append(f"'{data}' using ($0{off:+.4f}):{n + 2 + j} with points "
                         f"{points[j % 2]} title '{m} target'")
    plots.append("1 with lines dt 2 lw 2 lc rgb 'gray40' title 'socat = 1'")
    return "\n".join([
        f"set terminal {terminal} size 1400,650 font ',10'",
        f"set output '{png}'",
        "set datafile missing 'NaN'",
        "set title 'Throughput relative to socat (same round, median of rounds; log scale)'",
        "set ylabel 'ratio to socat'",
        "set logscale y",
        "set yrange [0.05:20]",
        "set grid ytics",
        "set style data histograms",
        f"set style histogram clustered gap {CHART_GAP}",
        "set style fill solid 0.85 border -1",
        "set boxwidth 0.9",
        "set xtics nomirror",
        "set key outside right top vertical",
        "plot " + ", \\\n     ".join(plots),
        ""])


def write_chart(doc: dict, png: Path, tmp: Path) -> str | None:
    """Grouped bars of each mode's ratio to socat per column, the targets as points, drawn by
    gnuplot (pngcairo, else png).  Returns None if written, else gnuplot's complaint."""
    modes, marked, rows = chart_data(doc)
    data = tmp / "chart.dat"
    data.write_text("\n".join(" ".join(r) for r in rows) + "\n")
    script = tmp / "chart.gp"
    err = ""
    for terminal in ("pngcairo", "png"):
        script.write_text(gnuplot_script(data, png, modes, marked, terminal))
        try:
            r = subprocess.run(["gnuplot", str(script)], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "gnuplot did not finish within 60 s"
        if r.returncode == 0 and png.is_file() and png.stat().st_size > 0:
            return None
        err = r.stderr.strip()[-500:]
    return f"gnuplot failed: {err}"


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
                   help="seconds to wait between workloads (default 0.5)")
    # socat's own backlog of 5 overflows at 50 connections and costs it 1 s SYN retries, which
    # would flatter every tunnel compared with it; 1024 keeps the comparison fair.
    p.add_argument("--socat-backlog", type=int, default=1024,
                   help="backlog=N on socat's TCP-LISTEN (default 1024; 0: socat's own, 5)")
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


def missing_tools(args) -> list[str]:
    """Tools the selected modes and columns need that are not installed."""
    modes = args.mode_list
    tools = ["nginx", "wrk", "iperf3"] + (["socat"] if "socat" in modes else []) \
        + (["openssl"] if any(MODES[m].tls_target for m in modes) else []) \
        + ([] if args.no_pin else ["taskset"]) \
        + (["ssh", "ssh-keygen", SSHD] if "ssh-r" in modes else []) \
        + (["strip"] if args.burrow else [])
    return [t for t in tools if not shutil.which(t)]


def drop_unavailable_modes(args) -> str | None:
    """ssh-r without OpenSSH and burrow-plain with a binary that has no --link-encryption:
    left out of the default mode list (said in the log), an error if asked for by name."""
    unavailable = {}
    if "ssh-r" in args.mode_list and not all(shutil.which(t) for t in ("ssh", "ssh-keygen",
                                                                          SSHD)):
        unavailable["ssh-r"] = f"OpenSSH (ssh, ssh-keygen, {SSHD}) is not installed"
    if "burrow-plain" in args.mode_list and not link_encryption_supported(args.burrow):
        unavailable["burrow-plain"] = (f"{args.burrow} has no --link-encryption (neither "
                                       "`burrow relay --help` nor `burrow tcp --help` "
                                       "mentions it)")
    for m, why in unavailable.items():
        if args.modes_given:
            return f"mode {m}: {why}"
        log(f"leaving out mode {m}: {why}")
        args.mode_list.remove(m)
    return None


def run_rounds(ctx: Context) -> list[dict]:
    args = ctx.args
    n = len(args.mode_list)
    rounds = []
    for i in range(args.rounds):
        order = args.mode_list[i % n:] + args.mode_list[:i % n]
        log(f"round {i + 1}/{args.rounds}: {', '.join(order)}")
        rnd = {"round": i + 1, "order": order, "results": {}}
        for m in order:
            rnd["results"][m] = run_mode_round(ctx, ctx.modes[m], args.column_list)
        rounds.append(rnd)
    return rounds


def chart_markdown(ctx: Context, doc: dict) -> str:
    """Writes the PNG next to --out (same name, .png) and returns its Markdown.  Without
    gnuplot, or if it fails, says so loudly; the Markdown and JSON are written anyway."""
    if not ctx.args.out:
        return ""
    png = Path(ctx.args.out).with_suffix(".png")
    modes, _, rows = chart_data(doc)
    if not modes or not rows:
        log("no chart: no throughput ratio to socat to draw (needs socat, another mode and a "
            "throughput column)")
        return ""
    why = ("gnuplot is not installed (apt-get install gnuplot-nox; scripts/setup.sh does)"
           if not shutil.which("gnuplot") else write_chart(doc, png, ctx.tmp))
    if why:
        for line in ("=" * 70, f"WARNING: NO CHART WRITTEN: {why}", "=" * 70):
            log(line)
        return f"**No chart: {why}.**"
    log(f"wrote {png}")
    return (f"![Throughput of each mode relative to socat, with the targets]({png.name})\n\n"
            "The chart: each mode's median ratio to socat per throughput column (log scale; "
            "socat is the dashed line at 1), and the issue's targets for `burrow` and "
            "`burrow-plain` as points over their bars; drawn by gnuplot from the JSON.")


def write_outputs(ctx: Context, meta: dict, rounds: list[dict], scaling: list[dict],
                  started: float) -> None:
    args = ctx.args
    meta["loadavg_end"] = loadavg()
    med, ratio = summarize(rounds, args.mode_list)
    doc = {**meta, "config": {k: v for k, v in vars(args).items()},
           "modes": args.mode_list, "columns": args.column_list,
           "metrics": {k: dict(v) for k, v in METRICS.items()},
           "median": med, "ratio_to_socat": ratio,
           "ratio_to_compared_mode": summarize_vs(rounds, args.mode_list), "rounds": rounds}
    scaling_md = ""
    if scaling:
        doc["scaling"] = {"columns": args.scaling_column_list, "rounds": scaling,
                          **summarize_scaling(scaling)}
        scaling_md = render_scaling(doc["scaling"], args.scaling_column_list)
    doc["elapsed_s"] = round(time.monotonic() - started, 1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
        log(f"wrote {args.json}")
    table = render_table(ctx, args.mode_list, args.column_list, med, ratio, rounds)
    md = render_markdown(ctx, meta, table, rounds, args.mode_list, chart_markdown(ctx, doc),
                         scaling_md)
    print(md)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(md)
        log(f"wrote {args.out}")


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
                              want_tls)
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
