"""The workloads ("columns" of the benchmark), the rows of the result table (METRICS) and
the targets modes are checked against."""

from __future__ import annotations

# kind: "iperf" (iperf3 bulk TCP), "wrk" (HTTP against nginx), "restart" (the relay restarted
# under idle tunnels) or "tunnels" (one agent registering `count` tunnels).  A wrk column with
# `after` is the second step of a ladder: it is skipped ("stopped at N") when the step it comes
# after had more than STEP_ERROR_LIMIT errors per request in the same mode and round.
COLUMNS: dict[str, dict] = {
    "bulk1": dict(kind="iperf", streams=1, label="bulk TCP, 1 stream"),
    "bulk8": dict(kind="iperf", streams=8, label="bulk TCP, 8 streams"),
    "http1k_c1": dict(kind="wrk", file="1k.bin", threads=1, conns=1, close=False,
                      label="1 KiB HTTP, 1 conn, keep-alive"),
    "http1k_c50": dict(kind="wrk", file="1k.bin", threads=2, conns=50, close=False,
                       label="1 KiB HTTP, 50 conns, keep-alive"),
    "http1k_c50_close": dict(kind="wrk", file="1k.bin", threads=2, conns=50, close=True,
                             label="1 KiB HTTP, 50 conns, new conn each"),
    "http1m_c50": dict(kind="wrk", file="1m.bin", threads=2, conns=50, close=False,
                       label="1 MiB HTTP, 50 conns, keep-alive"),
    "http1k_c100": dict(kind="wrk", file="1k.bin", threads=2, conns=100, close=False,
                        label="1 KiB HTTP, 100 conns, keep-alive"),
    "http1k_c100_close": dict(kind="wrk", file="1k.bin", threads=2, conns=100, close=True,
                              label="1 KiB HTTP, 100 conns, new conn each"),
    "http1k_c1000": dict(kind="wrk", file="1k.bin", threads=2, conns=1000, close=False,
                         after="http1k_c100", label="1 KiB HTTP, 1,000 conns, keep-alive"),
    "http1k_c1000_close": dict(kind="wrk", file="1k.bin", threads=2, conns=1000, close=True,
                               after="http1k_c100_close",
                               label="1 KiB HTTP, 1,000 conns, new conn each"),
    "restart": dict(kind="restart", label="relay restart to the first working request"),
    "tunnels200": dict(kind="tunnels", count=200, label="200 tunnels registered by one agent"),
}
QUICK_COLUMNS = ["bulk1", "http1k_c1", "http1k_c50", "http1k_c50_close", "http1k_c1000", "restart",
                 "tunnels200"]
LOAD_KINDS = ("iperf", "wrk")  # columns that put load through the tunnel
STEP_ERROR_LIMIT = 0.01  # errors per request above which a ladder of connection counts stops
# The unpinned run (--scaling): the relay with 1 and with 2 worker threads, nothing pinned.
SCALING_COLUMNS = ["http1k_c1000", "bulk8"]
SCALING_WORKERS = [1, 2]

# Rows of the result table.  key -> label, unit, better ("higher"/"lower"/None),
# whether a ratio to socat makes sense, number format, and the column that
# produces it (None: per mode, not per column).
METRICS: dict[str, dict] = {}


def _metric(key, label, unit, better, fmt, column, ratio=True):
    METRICS[key] = dict(label=label, unit=unit, better=better, fmt=fmt, column=column,
                        ratio=ratio)


_metric("bulk1.gbps", "bulk TCP, 1 stream", "Gbit/s", "higher", "{:.2f}", "bulk1")
_metric("bulk1.cpu_per_gb", "tunnel CPU per GB moved (bulk TCP, 1 stream)", "CPU-s/GB", "lower",
        "{:.2f}", "bulk1")
_metric("bulk1.switches_per_mb", "tunnel context switches per MB moved (bulk TCP, 1 stream)",
        "per MB", "lower", "{:.1f}", "bulk1", ratio=False)
_metric("bulk8.gbps", "bulk TCP, 8 streams", "Gbit/s", "higher", "{:.2f}", "bulk8")
_metric("http1k_c1.rps", "1 KiB HTTP, 1 conn, keep-alive", "req/s", "higher", "{:,.0f}",
        "http1k_c1")
_metric("http1k_c1.p50_ms", "1 KiB HTTP, 1 conn: p50 latency", "ms", "lower", "{:.3f}",
        "http1k_c1")
_metric("http1k_c50.rps", "1 KiB HTTP, 50 conns, keep-alive", "req/s", "higher", "{:,.0f}",
        "http1k_c50")
_metric("http1k_c50.cpu_per_1k", "tunnel CPU per 1,000 req (1 KiB, 50 keep-alive)",
        "CPU-ms", "lower", "{:.1f}", "http1k_c50")
for _role in ("tunnel", "load"):
    _metric(f"http1k_c50.{_role}_cpu_busy_pct", f"{_role} CPU busy (1 KiB, 50 keep-alive)", "%",
            None, "{:.0f}", "http1k_c50", ratio=False)
_metric("http1k_c50_close.rps", "1 KiB HTTP, 50 conns, new conn each", "req/s", "higher",
        "{:,.0f}", "http1k_c50_close")
_metric("http1m_c50.rps", "1 MiB HTTP, 50 conns, keep-alive", "req/s", "higher", "{:,.1f}",
        "http1m_c50")
for _role in ("tunnel", "load"):
    _metric(f"http1m_c50.{_role}_cpu_busy_pct", f"{_role} CPU busy (1 MiB, 50 keep-alive)", "%",
            None, "{:.0f}", "http1m_c50", ratio=False)


def _ladder_metrics(column: str, what: str) -> None:
    """req/s, p99 and errors of one step of the 100 / 1,000 connection ladders."""
    _metric(f"{column}.rps", f"1 KiB HTTP, {what}", "req/s", "higher", "{:,.0f}", column)
    _metric(f"{column}.p99_ms", f"1 KiB HTTP, {what}: p99 latency", "ms", "lower", "{:.1f}",
            column)
    _metric(f"{column}.errors", f"1 KiB HTTP, {what}: errors", "count", "lower", "{:,.0f}",
            column, ratio=False)


_ladder_metrics("http1k_c100", "100 conns, keep-alive")
_ladder_metrics("http1k_c100_close", "100 conns, new conn each")
_ladder_metrics("http1k_c1000", "1,000 conns, keep-alive")
_metric("http1k_c1000.rss_mib", "relay RSS at 1,000 keep-alive conns (max of samples; "
        "relay / socat listener / sshd session)", "MiB", "lower", "{:.2f}", "http1k_c1000")
_metric("http1k_c1000.agent_rss_mib", "agent RSS at 1,000 keep-alive conns (max of samples; "
        "burrow's agent / the ssh client), where blind and end-to-end TLS ends", "MiB", "lower",
        "{:.2f}", "http1k_c1000")
_ladder_metrics("http1k_c1000_close", "1,000 conns, new conn each")
_metric("restart_s", "relay restart to the first working request", "s", "lower", "{:.3f}",
        "restart", ratio=False)
_metric("tunnels200.register_s", "200 tunnels: agent start to all public", "s", "lower",
        "{:.3f}", "tunnels200", ratio=False)
_metric("tunnels200.server_growth_mib", "200 tunnels: relay RSS growth (ssh-r: PSS of sshd's "
        "processes)", "MiB", "lower", "{:.2f}", "tunnels200", ratio=False)
_metric("tunnels200.agent_mib", "200 tunnels: agent RSS (ssh-r: the ssh client)", "MiB",
        "lower", "{:.2f}", "tunnels200", ratio=False)
_metric("rss_empty_mib", "relay RSS before any agent (ssh-r: sshd before any client)", "MiB",
        "lower", "{:.2f}", None)
_metric("rss_empty_anon_mib", "relay RSS before any agent, anonymous only (RssAnon)", "MiB",
        "lower", "{:.2f}", None)
_metric("pss_empty_mib", "relay PSS before any agent (its share of the pages it maps)", "MiB",
        "lower", "{:.2f}", None)
_metric("agent_rss_idle_mib", "agent RSS, idle with one tunnel (ssh-r: the ssh client)", "MiB",
        "lower", "{:.2f}", None)
_metric("rss_idle_mib", "tunnel idle RSS, tunnels registered (relay / socat listener / sshd "
        "session)", "MiB", "lower", "{:.2f}", None)
_metric("rss_idle_all_mib", "all tunnel processes idle, tunnels registered: sum of PSS", "MiB",
        "lower", "{:.2f}", None)
_metric("rss_peak_mib", "tunnel peak RSS, VmHWM (relay / socat listener / sshd session)", "MiB",
        "lower", "{:.2f}", None)
_metric("binary_mib", "binary size (burrow stripped; ssh-r: sshd + ssh)", "MiB", "lower",
        "{:.2f}", None)

WRK_ERROR_KINDS = ["connect", "read", "write", "timeout", "non2xx"]

MANY_TIMEOUT = 30.0  # seconds for one agent to register the "tunnels" column's tunnels


# Targets (issue 6): a mode's `targets` and `abs_checks` are built from these.
def at_least(x):
    return (f"≥ {x}", lambda r, x=x: r is not None and r >= x)


def _absolute(text: str, check) -> tuple[tuple[str, None], object]:
    """A target on the value itself (not a ratio): (targets entry, abs_checks entry)."""
    return (text, None), check


# The targets for the HTTP ladders, both link modes: the value itself, not a ratio.
LADDER_ABSOLUTE = {
    "http1k_c1000.errors": _absolute("0", lambda v: v == 0),
    "http1k_c1000.p99_ms": _absolute("< 200 ms", lambda v: v < 200),
    "http1k_c1000_close.errors": _absolute("0", lambda v: v == 0),
}
# The targets for the relay itself (restart, many tunnels, memory, size).
RELAY_ABSOLUTE = {
    "restart_s": _absolute("< 0.1 s", lambda v: v < 0.1),
    "tunnels200.register_s": _absolute("< 0.5 s", lambda v: v < 0.5),
    "tunnels200.server_growth_mib": _absolute("< 10 MiB", lambda v: v < 10),
    "rss_empty_mib": _absolute("< 4 MiB", lambda v: v < 4),
    "http1k_c1000.rss_mib": _absolute("< 24 MiB", lambda v: v < 24),
    "binary_mib": _absolute("< 5 MiB", lambda v: v < 5),
}


def mode_targets(ratios: dict[str, float], *absolute: dict) -> tuple[dict, dict]:
    """(targets, abs_checks) of a mode: ratio-to-socat floors plus absolute checks."""
    targets: dict = {k: at_least(x) for k, x in ratios.items()}
    checks: dict = {}
    for group in absolute:
        for k, (entry, check) in group.items():
            targets[k] = entry
            checks[k] = check
    return targets, checks
