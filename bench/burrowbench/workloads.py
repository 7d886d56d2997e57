"""The load generators (wrk, iperf3) and the columns of one mode: a load column, the relay
restart, many tunnels, and the memory measured around them (rounds.py puts them in order)."""

from __future__ import annotations

import json
import re
import time

from .columns import COLUMNS, STEP_ERROR_LIMIT, WRK_ERROR_KINDS
from .common import HERE, LOOPBACK, READY_TIMEOUT, BenchError, log
from .context import Context
from .modes import Mode
from .net import http_get_ok
from .sysinfo import (PeakSampler, all_stats, cpu_busy, cpu_ticks, proc_status_kib, pss_kib,
                      tree_cpu_seconds, tree_pids, tree_pss_kib, tree_switches)

# After a load, the next one waits until every CPU is under QUIET_BUSY busy over QUIET_SAMPLE s
# and the mode's forked children are gone, for at most QUIET_TIMEOUT s (see wait_quiet).
QUIET_BUSY = 0.10
QUIET_SAMPLE = 0.2
QUIET_TIMEOUT = 20.0

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


def rss_mib(pid: int | None, field: str = "VmRSS") -> float | None:
    v = proc_status_kib(pid, field) if pid else None
    return None if v is None else v / 1024


def measure_empty(ctx: Context, mode: Mode, metrics: dict) -> None:
    """The relay (or sshd) right after it started, before any agent: "idle relay"."""
    mpid = mode.memory_pid()
    if not mpid:
        return
    time.sleep(ctx.args.settle)
    for key, field in (("rss_empty_mib", "VmRSS"), ("rss_empty_anon_mib", "RssAnon")):
        v = rss_mib(mpid, field)
        if v is not None:
            metrics[key] = v
    pss = pss_kib(mpid)  # the idle relay's memory line: RssAnon and PSS
    if pss is not None:
        metrics["pss_empty_mib"] = pss / 1024


def measure_idle(ctx: Context, mode: Mode, metrics: dict) -> None:
    """Tunnels registered, no visitor yet: the relay / listener, the first agent, and every
    tunnel process together (sum of PSS, so shared pages count once)."""
    time.sleep(ctx.args.settle)
    mpid = mode.memory_pid()
    for key, field in (("rss_idle_mib", "VmRSS"), ("rss_idle_anon_mib", "RssAnon")):
        v = rss_mib(mpid, field)
        if v is not None:
            metrics[key] = v
    agent = rss_mib(mode.agent_pid())
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
        if not mode.forks_per_connection:  # socat's child has exited, and its count with it
            metrics[f"{c}.switches_per_mb"] = raw["tunnel_switches"] / (raw["bytes"] / 1e6)
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
    if raw.get("agent_rss_max_mib") is not None:
        metrics[f"{c}.agent_rss_mib"] = raw["agent_rss_max_mib"]
    errs = f" errors {raw['errors']} {raw['error_detail']}" if raw["errors"] else ""
    log(f"  {mode.name:>8} {c:<18} {raw['rps']:12,.1f} req/s  "
        f"p99 {raw.get('p99_ms', float('nan')):.3f} ms{errs}")


def _record_cpu_shares(ctx: Context, c: str, ticks0: dict, ticks1: dict, raw: dict,
                       metrics: dict) -> None:
    """How busy the tunnel CPU and the load CPU were while the load ran (from /proc/stat, so
    everything on them counts: the processes, the kernel's loopback work, other tenants): a
    load CPU near 100 % means nginx and the load generator, not the tunnel, set the rate."""
    shares = {}
    for role, cpu in (("tunnel", ctx.args.tunnel_cpu), ("load", ctx.args.load_cpu)):
        got = cpu_busy(ticks0, ticks1, cpu)
        if got is None:
            continue
        shares[role] = {"cpu": cpu, "busy": round(got[0], 4), "steal": round(got[1], 4)}
        metrics[f"{c}.{role}_cpu_busy_pct"] = 100 * got[0]
    raw["cpu_shares"] = shares


def step_failure(raw: dict | None) -> str | None:
    """Why a ladder stops after this step (None: go on): more errors (socket errors and
    non-2xx) than STEP_ERROR_LIMIT of the requests, or no result at all."""
    if raw is None:
        return "the step failed"
    requests = raw.get("requests", 0)
    if requests == 0 or raw["errors"] > STEP_ERROR_LIMIT * requests:
        return f"{raw['errors']:,} errors in {requests:,} requests"
    return None


def tree_size(mode: Mode) -> int:
    """How many processes the mode's trees hold now (socat's and sshd's children included)."""
    roots = mode.cpu_pids()
    return len(tree_pids(roots, all_stats())) if roots else 0


def wait_quiet(ctx: Context, mode: Mode, c: str, procs_before: int) -> float:
    """Waits, after a load, until what it left behind has finished, so that the next workload
    (often another mode's) does not run beside it: the mode's process trees back to their size
    before the load, and every CPU under QUIET_BUSY busy over QUIET_SAMPLE s. socat forks a
    child per connection, which exits after its connection: at 1,000 connections, on a host
    where a system call costs 1.1 us, they kept the tunnel CPU busy 3 to 5 s after wrk ended,
    and the mode run next lost its first seconds to them. Waits at most QUIET_TIMEOUT s, with
    a log line when it gives up; returns the seconds waited."""
    t0 = time.monotonic()
    time.sleep(ctx.args.settle)
    while time.monotonic() - t0 < QUIET_TIMEOUT:
        before = cpu_ticks()
        time.sleep(QUIET_SAMPLE)
        after = cpu_ticks()
        if tree_size(mode) > procs_before:
            continue
        busy = [cpu_busy(before, after, cpu) for cpu in after]
        if all(b is None or b[0] < QUIET_BUSY for b in busy):
            return time.monotonic() - t0
    log(f"  {mode.name} {c}: not quiet {QUIET_TIMEOUT:.0f} s after the load; going on")
    return time.monotonic() - t0


def run_load_column(ctx: Context, mode: Mode, c: str, port: int, out: dict) -> dict | None:
    """One iperf3 or wrk column through the mode, with its tunnel CPU and the largest RSS of
    the relay (or listener) and of the first agent while it ran.  Returns the raw result (None
    if it failed)."""
    col = COLUMNS[c]
    procs0 = tree_size(mode)
    cpu0 = tree_cpu_seconds(mode.cpu_pids())
    switches0 = tree_switches(mode.cpu_pids())
    t1 = time.monotonic()
    ticks0 = cpu_ticks()
    try:
        with PeakSampler(mode.memory_pid() if mode.tunnel else None) as peak, \
                PeakSampler(mode.agent_pid() if mode.tunnel else None) as agent_peak:
            raw = (run_wrk if col["kind"] == "wrk" else run_iperf)(ctx, mode, col, port)
        ticks1 = cpu_ticks()
    except BenchError as e:
        log(f"  {mode.name} {c}: FAILED: {e}")
        out["errors"].append(f"{c}: {e}")
        wait_quiet(ctx, mode, c, procs0)
        return None
    # The mode's CPU counts its children's exits: after the wait, so they are all in.
    quiet_s = wait_quiet(ctx, mode, c, procs0)
    if mode.tunnel:
        raw["tunnel_cpu_s"] = tree_cpu_seconds(mode.cpu_pids()) - cpu0
        raw["tunnel_switches"] = tree_switches(mode.cpu_pids()) - switches0
        if peak.peak_kib is not None:
            raw["server_rss_max_mib"] = peak.peak_kib / 1024
        if agent_peak.peak_kib is not None:
            raw["agent_rss_max_mib"] = agent_peak.peak_kib / 1024
    raw["wall_s"] = round(time.monotonic() - t1, 3)
    raw["quiet_wait_s"] = round(quiet_s, 3)
    if not ctx.args.no_pin:
        _record_cpu_shares(ctx, c, ticks0, ticks1, raw, out["metrics"])
    out["columns"][c] = raw
    (_record_iperf if col["kind"] == "iperf" else _record_wrk)(mode, c, raw, out["metrics"])
    return raw


def run_restart(ctx: Context, mode: Mode, port: int, out: dict) -> None:
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


def run_many(ctx: Context, mode: Mode, c: str, target_port: int, out: dict) -> None:
    n = COLUMNS[c]["count"]
    raw = mode.register_many(target_port, n)
    out["columns"][c] = raw
    for k, v in raw.items():
        if v is not None:
            out["metrics"][f"{c}.{k}"] = v
    agent = "n/a" if raw["agent_mib"] is None else f"{raw['agent_mib']:.2f} MiB"
    log(f"  {mode.name:>8} {c:<18} {raw['register_s']:8.3f} s; server +"
        f"{raw['server_growth_mib']:.2f} MiB; agent {agent}")
