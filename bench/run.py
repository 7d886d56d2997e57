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

Stdlib only.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 10.0  # seconds to wait for any process to become ready
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
CLK_TCK = os.sysconf("SC_CLK_TCK")
SHARE_DOMAIN = "burrow.localhost"  # the relay's default --domain for HTTPS share URLs
SHARE_NAME = "bench"  # the HTTPS modes' share URL: https://bench.burrow.localhost:PORT


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


class Interrupted(BaseException):
    """Raised from the signal handler so `finally` blocks clean up."""


# --------------------------------------------------------------------------
# Workloads ("columns" of the benchmark)
# --------------------------------------------------------------------------

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
_metric("bulk8.gbps", "bulk TCP, 8 streams", "Gbit/s", "higher", "{:.2f}", "bulk8")
_metric("http1k_c1.rps", "1 KiB HTTP, 1 conn, keep-alive", "req/s", "higher", "{:,.0f}",
        "http1k_c1")
_metric("http1k_c1.p50_ms", "1 KiB HTTP, 1 conn: p50 latency", "ms", "lower", "{:.3f}",
        "http1k_c1")
_metric("http1k_c50.rps", "1 KiB HTTP, 50 conns, keep-alive", "req/s", "higher", "{:,.0f}",
        "http1k_c50")
_metric("http1k_c50.cpu_per_1k", "tunnel CPU per 1,000 req (1 KiB, 50 keep-alive)",
        "CPU-ms", "lower", "{:.1f}", "http1k_c50")
_metric("http1k_c50_close.rps", "1 KiB HTTP, 50 conns, new conn each", "req/s", "higher",
        "{:,.0f}", "http1k_c50_close")
_metric("http1m_c50.rps", "1 MiB HTTP, 50 conns, keep-alive", "req/s", "higher", "{:,.1f}",
        "http1m_c50")


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


# --------------------------------------------------------------------------
# Process management
# --------------------------------------------------------------------------

class Proc:
    """A child process in its own process group; stdout+stderr go to a log
    file and are scanned line by line by a reader thread."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, env=env)
        self.pid = self.popen.pid
        self._thread = threading.Thread(target=self._reader, daemon=True)
        self._thread.start()

    def _reader(self) -> None:
        # Keep draining until EOF so a chatty child never blocks on a full pipe.
        with open(self.log_path, "w", encoding="utf-8", errors="replace") as f:
            for raw in self.popen.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                f.write(line + "\n")
                f.flush()
                with self._cond:
                    if len(self.lines) < 10000:
                        self.lines.append(line)
                    self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = READY_TIMEOUT) -> re.Match:
        """Wait for an output line matching pattern (regex); raise on timeout/exit."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                while seen < len(self.lines):
                    m = rx.search(self.lines[seen])
                    seen += 1
                    if m:
                        return m
                if self._eof:
                    raise BenchError(f"{self.name} exited (rc={self.popen.poll()}) before "
                                     f"printing /{pattern}/; see {self.log_path}:\n"
                                     + self.tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"{self.name} did not print /{pattern}/ within "
                                     f"{timeout:.0f} s; see {self.log_path}:\n" + self.tail())
                self._cond.wait(min(left, 0.2))

    def wait_count(self, pattern: str, n: int, timeout: float) -> None:
        """Wait until n distinct values of the regex's group 1 have been printed (each on a
        line of its own); raise on timeout or exit."""
        rx = re.compile(pattern)
        found: set[str] = set()
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                while seen < len(self.lines):
                    m = rx.search(self.lines[seen])
                    seen += 1
                    if m:
                        found.add(m.group(1))
                if len(found) >= n:
                    return
                if self._eof:
                    raise BenchError(f"{self.name} exited (rc={self.popen.poll()}) after "
                                     f"{len(found)} of {n} lines /{pattern}/; see "
                                     f"{self.log_path}:\n" + self.tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"{self.name} printed {len(found)} of {n} lines "
                                     f"/{pattern}/ within {timeout:.0f} s; see "
                                     f"{self.log_path}:\n" + self.tail())
                self._cond.wait(min(left, 0.05))

    def tail(self, n: int = 15) -> str:
        with self._cond:
            return "\n".join("    " + l for l in self.lines[-n:])

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL it after STOP_GRACE seconds."""
        if self.alive():
            _killpg(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) ignored SIGTERM for {STOP_GRACE:.0f} s; "
                    "SIGKILL")
        # Also reap whatever is left in the group (e.g. socat's forked children).
        _killpg(self.pid, signal.SIGKILL)
        try:
            self.popen.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            log(f"{self.name} (pid {self.pid}) did not die after SIGKILL")
        self._thread.join(timeout=2)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Procs:
    """Starts processes with CPU pinning and remembers them for cleanup."""

    def __init__(self, logdir: Path, pin: bool, setpriv: str | None):
        self.logdir = logdir
        self.pin = pin
        self.setpriv = setpriv
        self.live: list[Proc] = []
        self._n = 0

    def wrap(self, argv: list[str], cpu: int | None) -> list[str]:
        prefix: list[str] = []
        if self.setpriv:
            prefix += [self.setpriv, "--pdeathsig", "KILL"]
        if self.pin and cpu is not None:
            prefix += ["taskset", "-c", str(cpu)]
        return prefix + argv

    def start(self, name: str, argv: list[str], cpu: int | None, env=None) -> Proc:
        self._n += 1
        path = self.logdir / f"{self._n:03d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.log"
        full = self.wrap(argv, cpu)
        p = Proc(name, full, path, env=env)
        self.live.append(p)
        return p

    def stop(self, p: Proc) -> None:
        p.stop()
        if p in self.live:
            self.live.remove(p)

    def run(self, name: str, argv: list[str], cpu: int | None, timeout: float
            ) -> tuple[int, str]:
        """Run a load generator to completion (bounded by timeout); returns rc, output."""
        p = self.start(name, argv, cpu)
        try:
            p.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"{name} exceeded {timeout:.0f} s; stopping it")
        finally:
            self.stop(p)
        try:
            out = p.log_path.read_text(errors="replace")
        except OSError:
            out = ""
        return p.popen.returncode, out

    def stop_all(self) -> None:
        for p in list(reversed(self.live)):
            try:
                self.stop(p)
            except Exception as e:  # keep cleaning up
                log(f"cleanup of {p.name} failed: {e}")


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _loopback_listeners() -> dict[int, str]:
    """Port -> socket inode of every TCP socket listening on 127.0.0.1 or 0.0.0.0.  Reads
    /proc/net/tcp, so it never opens a connection to the service."""
    out: dict[int, str] = {}
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) > 9 and parts[3] == "0A":
                    addr, _, port = parts[1].partition(":")
                    if addr in ("0100007F", "00000000"):
                        out[int(port, 16)] = parts[9]
    except OSError:
        pass
    return out


def listening(port: int) -> bool:
    """Is something listening on 127.0.0.1:port (or 0.0.0.0:port)?"""
    return port in _loopback_listeners()


def pid_listening_on(port: int) -> int | None:
    """The process holding the listening socket on 127.0.0.1:port (e.g. the sshd session that
    carries an `ssh -R` forward), found through the socket's inode in /proc/*/fd."""
    inode = _loopback_listeners().get(port)
    if not inode:
        return None
    want = f"socket:[{inode}]"
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{d}/fd"):
                if os.readlink(f"/proc/{d}/fd/{fd}") == want:
                    return int(d)
        except OSError:
            continue
    return None


def wait_listening(port: int, what: str, timeout: float = READY_TIMEOUT,
                   proc: Proc | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if listening(port):
            return
        if proc is not None and not proc.alive():
            raise BenchError(f"{what} exited (rc={proc.popen.returncode}):\n{proc.tail()}")
        time.sleep(0.05)
    raise BenchError(f"{what}: nothing listening on {LOOPBACK}:{port} after {timeout:.0f} s")


def _connect(port: int, timeout: float, tls: bool, sni: str | None) -> socket.socket:
    """A connection to 127.0.0.1:port; with tls, a TLS client (SNI sni, no certificate
    checks: the load generator does not check either)."""
    s = socket.create_connection((LOOPBACK, port), timeout=timeout)
    if not tls:
        return s
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        return ctx.wrap_socket(s, server_hostname=sni)
    except BaseException:
        s.close()
        raise


def http_get_ok(port: int, path: str, timeout: float = 2.0, tls: bool = False,
                sni: str | None = None) -> bool:
    """One HTTP/1.0 GET (over TLS with tls); True if the status is 200 and the whole body
    arrives."""
    try:
        with _connect(port, timeout, tls, sni) as s:
            s.settimeout(timeout)
            s.sendall(f"GET {path} HTTP/1.0\r\nHost: {sni or 'bench'}\r\n\r\n".encode())
            data = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and len(data) < 4 << 20:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.0 200"):
            return False
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        return m is None or int(m.group(1)) == len(body)
    except OSError:
        return False


def wait_http(port: int, path: str, what: str, timeout: float = READY_TIMEOUT,
              tls: bool = False, sni: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if http_get_ok(port, path, timeout=max(0.2, min(2.0, deadline - time.monotonic())),
                       tls=tls, sni=sni):
            return
        time.sleep(0.1)
    raise BenchError(f"{what}: GET {path} via {LOOPBACK}:{port} did not succeed "
                     f"within {timeout:.0f} s")


def fill_template(name: str, values: dict[str, str]) -> str:
    """bench/NAME with every @KEY@ replaced; raises if a placeholder is left."""
    text = (HERE / name).read_text()
    for k, v in values.items():
        text = text.replace(f"@{k}@", v)
    if "@" in re.sub(r"#.*", "", text):
        raise BenchError(f"unfilled placeholder left in {name}")
    return text


def self_signed_cert(cert: Path, key: Path, name: str) -> None:
    """A self-signed ECDSA P-256 certificate for name (the key type burrow's relay CA uses
    for share URLs), made with the openssl CLI."""
    argv = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-days", "2", "-subj", f"/CN={name}", "-addext",
            f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(cert)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError(f"openssl req exited {r.returncode}:\n{r.stderr[-1500:]}")


def _all_stats() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, own utime+stime, reaped children cutime+cstime) in ticks."""
    out: dict[int, tuple[int, int, int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rfind(")") + 2:].split()
        # rest[0] is field 3 (state); ppid is field 4, utime..cstime are 14..17.
        try:
            out[int(d)] = (int(rest[1]), int(rest[11]) + int(rest[12]),
                           int(rest[13]) + int(rest[14]))
        except (IndexError, ValueError):
            continue
    return out


def _tree_pids(roots: list[int], stats: dict[int, tuple[int, int, int]]) -> list[int]:
    """Every live process under roots (roots included), from an _all_stats() snapshot."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    todo = [r for r in roots if r in stats]
    while todo and len(seen) < 100000:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, []))
    return sorted(seen)


def tree_cpu_seconds(roots: list[int]) -> float:
    """CPU seconds used so far by the process trees under roots: every live
    process's own time plus the time of children it has already reaped."""
    if not roots:
        return 0.0
    stats = _all_stats()
    total = sum(stats[pid][1] + stats[pid][2] for pid in _tree_pids(roots, stats))
    return total / CLK_TCK


def pss_kib(pid: int) -> float | None:
    """Proportional set size: the process's private pages plus its share of pages it shares
    with others (libraries, the binary), so a sum over processes counts each page once."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def tree_pss_kib(roots: list[int]) -> float | None:
    """Sum of PSS over every process in the trees under roots."""
    pids = _tree_pids(roots, _all_stats()) if roots else []
    vals = [v for v in (pss_kib(p) for p in pids) if v is not None]
    return sum(vals) if vals else None


def proc_status_kib(pid: int, field: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


class PeakSampler:
    """Samples one process's VmRSS every `interval` seconds while a column runs (a `with`
    block); .peak_kib is the largest sample.  VmHWM would also count earlier columns."""

    def __init__(self, pid: int | None, interval: float = 0.02):
        self.pid = pid
        self.interval = interval
        self.peak_kib: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            v = proc_status_kib(self.pid, "VmRSS") if self.pid else None
            if v is not None and (self.peak_kib is None or v > self.peak_kib):
                self.peak_kib = v
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def raise_nofile(want: int = 65536) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as e:
            log(f"could not raise RLIMIT_NOFILE to {target}: {e}")
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def cmd_version(argv: list[str], pick: str = r".") -> str:
    """First line of `argv`'s output matching the regex pick ("" on failure)."""
    try:
        r = subprocess.run(argv, capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (r.stdout + r.stderr).decode("utf-8", "replace")
    for line in text.splitlines():
        if re.search(pick, line):
            return line.strip()[:120]
    return ""


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


# --------------------------------------------------------------------------
# Targets: nginx and the iperf3 server (started once for the whole run)
# --------------------------------------------------------------------------

class Targets:
    def __init__(self, procs: Procs, tmp: Path, load_cpu: int, nofile: int,
                 want_http: bool, want_iperf: bool, want_tls: bool = False):
        self.procs = procs
        self.tmp = tmp
        self.load_cpu = load_cpu
        self.nofile = nofile
        self.want_http = want_http
        self.want_iperf = want_iperf
        self.want_tls = want_tls  # also a TLS server block in nginx (HTTPS modes)
        self.nginx: Proc | None = None
        self.nginx_port = 0
        self.nginx_tls_port = 0
        self.iperf: Proc | None = None
        self.iperf_port = 0

    def start(self) -> None:
        if self.want_http:
            self._start_nginx()
        if self.want_iperf:
            self.iperf_port = free_port()
            self.start_iperf()

    def _start_nginx(self) -> None:
        prefix = self.tmp / "nginx"
        root = prefix / "www"
        (prefix / "tmp").mkdir(parents=True, exist_ok=True)
        root.mkdir(parents=True, exist_ok=True)
        (root / "1k.bin").write_bytes(os.urandom(1024))
        (root / "1m.bin").write_bytes(os.urandom(1 << 20))
        self.nginx_port = free_port()
        (prefix / "tls-server.conf").write_text(self._tls_server(prefix, root))
        conf = fill_template("nginx.conf.in", {
            "PREFIX": str(prefix), "ROOT": str(root), "PORT": str(self.nginx_port),
            "NOFILE": str(self.nofile)})
        conf_path = prefix / "nginx.conf"
        conf_path.write_text(conf)
        self.nginx = self.procs.start(
            "nginx", ["nginx", "-p", str(prefix), "-c", str(conf_path),
                      "-e", str(prefix / "error.log")], self.load_cpu)
        wait_listening(self.nginx_port, "nginx", proc=self.nginx)
        wait_http(self.nginx_port, "/1k.bin", "nginx")
        log(f"nginx on {LOOPBACK}:{self.nginx_port} (pid {self.nginx.pid})")
        if self.want_tls:
            wait_listening(self.nginx_tls_port, "nginx (TLS)", proc=self.nginx)
            wait_http(self.nginx_tls_port, "/1k.bin", "nginx (TLS)", tls=True)
            log(f"nginx TLS on {LOOPBACK}:{self.nginx_tls_port}")

    def _tls_server(self, prefix: Path, root: Path) -> str:
        """The TLS server block for nginx (or nothing), with a fresh self-signed cert."""
        if not self.want_tls:
            return "# no HTTPS mode selected\n"
        cert, key = prefix / "tls.crt", prefix / "tls.key"
        self_signed_cert(cert, key, "*." + SHARE_DOMAIN)
        self.nginx_tls_port = free_port()
        return fill_template("nginx-tls.conf.in", {
            "TLS_PORT": str(self.nginx_tls_port), "ROOT": str(root), "CERT": str(cert),
            "KEY": str(key)})

    def start_iperf(self) -> None:
        self.iperf = self.procs.start(
            "iperf3-server", ["iperf3", "-s", "-B", LOOPBACK, "-p", str(self.iperf_port),
                              "--forceflush"], self.load_cpu)
        self.iperf.wait_for(r"Server listening on")
        wait_listening(self.iperf_port, "iperf3 server", proc=self.iperf)
        log(f"iperf3 server on {LOOPBACK}:{self.iperf_port} (pid {self.iperf.pid})")

    def restart_iperf(self) -> None:
        if self.iperf:
            self.procs.stop(self.iperf)
        deadline = time.monotonic() + READY_TIMEOUT
        while listening(self.iperf_port) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.start_iperf()


# --------------------------------------------------------------------------
# Modes: how the load reaches the target.  Add a mode by subclassing Mode and
# registering it in MODES.
# --------------------------------------------------------------------------

class Mode:
    """A way of reaching a target port.  Lifecycle per round:
    setup() once, start(target_port) -> public_port for each target,
    then stop() (stops everything the mode started)."""

    name = "?"
    description = ""
    tunnel = True  # False: no processes of its own (CPU/memory not measured)
    pinned = True  # False: its processes run without taskset (the unpinned --scaling run)
    # Targets from PRODUCT.md for this mode, as ratio-to-socat thresholds:
    # metric key -> (text, predicate on ratio); predicate None: an absolute check (abs_checks).
    targets: dict[str, tuple[str, object]] = {}
    abs_checks: dict[str, object] = {}
    # Another mode this one is also compared with, round by round (its "/ base" column), and
    # targets as ratios to that mode.
    compare_to: str | None = None
    targets_vs: dict[str, tuple[str, object]] = {}
    http_only = False  # True: only the wrk columns (bulk TCP shows n/a)
    tls = False  # True: the load speaks HTTPS
    tls_target = False  # True: the mode reaches nginx's TLS server, not its plain one
    supports_restart = False  # the "restart" column: restart_server() exists
    supports_many = False  # the "tunnels" column: register_many() exists

    def __init__(self, ctx: "Context"):
        self.ctx = ctx
        self.sni: str | None = None  # host name in the URL (TLS SNI, Host), if not 127.0.0.1

    def describe(self) -> str:
        return self.description

    @property
    def tunnel_cpu(self) -> int | None:
        """The CPU this mode's processes are pinned to (None: not pinned)."""
        return self.ctx.args.tunnel_cpu if self.pinned else None

    def runs(self, column: str) -> bool:
        kind = COLUMNS[column]["kind"]
        if kind == "restart":
            return self.supports_restart
        if kind == "tunnels":
            return self.supports_many
        return not self.http_only or kind == "wrk"

    def http_target(self, t: "Targets") -> int:
        return t.nginx_tls_port if self.tls_target else t.nginx_port

    def url(self, port: int, path: str) -> str:
        return f"{'https' if self.tls else 'http'}://{self.sni or LOOPBACK}:{port}/{path}"

    def setup(self) -> None:
        pass

    def start(self, target_port: int) -> int:
        raise NotImplementedError

    def stop(self) -> None:
        pass

    def cpu_pids(self) -> list[int]:
        """Roots of the process trees whose CPU time is the tunnel's cost."""
        return []

    def memory_pid(self) -> int | None:
        """The process whose RSS is reported (the relay, or the listener)."""
        return None

    def agent_pid(self) -> int | None:
        """The process on the service's side of the first tunnel (burrow's agent, ssh)."""
        return None

    def binaries(self) -> dict[str, int]:
        """What the tunnel runs from: name -> size in bytes."""
        return {}

    def restart_server(self) -> tuple[float, float]:
        """Stop the relay (SIGTERM, wait for its exit) and start it again with the same
        ports and state.  Returns (seconds the old one took to exit, monotonic time just
        before the new one was spawned)."""
        raise NotImplementedError

    def after_restart(self) -> None:
        """Checks once the restarted relay works (e.g. its identity is unchanged)."""

    def register_many(self, target_port: int, n: int) -> dict:
        """One agent with n tunnels to target_port: {register_s, server_growth_mib,
        agent_mib}; the agent is stopped again."""
        raise NotImplementedError


def _installed_size(path: str | None) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0


class DirectMode(Mode):
    name = "direct"
    description = "load generator talks straight to the target"
    tunnel = False

    def start(self, target_port: int) -> int:
        return target_port


class HttpsDirectMode(DirectMode):
    name = "https-direct"
    description = ("wrk over HTTPS straight to nginx's TLS server (TLS 1.3, self-signed "
                   "ECDSA P-256): what TLS itself costs; HTTP only")
    http_only = True
    tls = True
    tls_target = True
    compare_to = "direct"


class SocatMode(Mode):
    name = "socat"
    description = "socat TCP-LISTEN:P,fork,reuseaddr,bind=127.0.0.1 TCP:127.0.0.1:target"

    def describe(self) -> str:
        b = self.ctx.args.socat_backlog
        return ("socat TCP-LISTEN:P,fork,reuseaddr,bind=127.0.0.1"
                + (f",backlog={b}" if b else "") + " TCP:127.0.0.1:target"
                + ("" if b else " (socat's default listen backlog, 5)"))

    def __init__(self, ctx):
        super().__init__(ctx)
        self.procs: list[Proc] = []

    def start(self, target_port: int) -> int:
        port = free_port()
        listen = f"TCP-LISTEN:{port},fork,reuseaddr,bind={LOOPBACK}"
        if self.ctx.args.socat_backlog:
            listen += f",backlog={self.ctx.args.socat_backlog}"
        p = self.ctx.procs.start(f"socat-{target_port}",
                                 ["socat", listen, f"TCP:{LOOPBACK}:{target_port}"],
                                 self.tunnel_cpu)
        self.procs.append(p)
        wait_listening(port, "socat", proc=p)
        return port

    def stop(self) -> None:
        for p in self.procs:
            self.ctx.procs.stop(p)
        self.procs = []

    def cpu_pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def memory_pid(self) -> int | None:
        return self.procs[0].pid if self.procs else None

    def binaries(self) -> dict[str, int]:
        return {"socat": _installed_size(shutil.which("socat"))}


SSHD = "/usr/sbin/sshd"  # sshd refuses to start unless run by its absolute path


def _live_comm(pid: int) -> str | None:
    """The command name of a live (not zombie) process, None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    state = stat[stat.rindex(")") + 2:].split()[0]
    return None if state == "Z" else comm


def kill_leftovers(pids: list[int], comm: str) -> None:
    """SIGKILL those of pids still alive and still named comm (a pid taken over by another
    program in the meantime is left alone), after giving them STOP_GRACE seconds."""
    def alive() -> list[int]:
        return [pid for pid in pids if _live_comm(pid) == comm]

    deadline = time.monotonic() + STOP_GRACE
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive():
        log(f"{comm} (pid {pid}) outlived its client; SIGKILL")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class SshReverseMode(Mode):
    """OpenSSH: a private sshd on 127.0.0.1 and one `ssh -N -R` client per target, the classic
    reverse tunnel.  Both ends are the tunnel: sshd (its per-connection children carry the
    forwards) and ssh are pinned and measured."""

    name = "ssh-r"
    supports_many = True
    RX_CIPHER = r"kex: server->client cipher: (\S+) MAC: (\S+)"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dir = ctx.tmp / "ssh"
        self.sshd: Proc | None = None
        self.sshd_port = 0
        self.clients: list[Proc] = []
        self.forward_ports: list[int] = []  # public port of each client's first forward
        self.session_pid: int | None = None
        self.cipher = ""

    def describe(self) -> str:
        cipher = self.cipher or "not probed"
        return (f"OpenSSH `ssh -N -R 127.0.0.1:P:127.0.0.1:target` to a private `{SSHD} -D` on "
                f"127.0.0.1 (ed25519 keys, default ciphers: negotiated {cipher}), one ssh "
                "connection per target; sshd, its session processes and ssh pinned to the "
                "tunnel CPU; memory rows use the sshd session process that holds the forward")

    def _write_files(self) -> None:
        """Host key, client key, authorized_keys (once per run) and an sshd_config for
        this round's port."""
        self.dir.mkdir(exist_ok=True)
        for key in ("host_ed25519", "client_ed25519"):
            if not (self.dir / key).exists():
                r = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                    f"burrow-bench-{key}", "-f", str(self.dir / key)],
                                   capture_output=True, text=True, timeout=30,
                                   stdin=subprocess.DEVNULL)
                if r.returncode != 0:
                    raise BenchError(f"ssh-keygen exited {r.returncode}: {r.stderr[-500:]}")
        (self.dir / "authorized_keys").write_text(
            (self.dir / "client_ed25519.pub").read_text())
        self.sshd_port = free_port()
        # Many forwarded connections are channels of one ssh connection, not new sessions;
        # MaxStartups and MaxSessions are raised anyway so no limit of sshd's gets in the way.
        (self.dir / "sshd_config").write_text("\n".join([
            f"ListenAddress {LOOPBACK}", f"Port {self.sshd_port}",
            f"HostKey {self.dir / 'host_ed25519'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            f"PidFile {self.dir / 'sshd.pid'}",
            "StrictModes no", "UsePAM no", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password", "GatewayPorts no", "AllowTcpForwarding yes",
            "AllowStreamLocalForwarding no", "X11Forwarding no", "PermitTTY no",
            "PrintMotd no", "UseDNS no", "MaxStartups 2000", "MaxSessions 2000",
            "ClientAliveInterval 0", "LogLevel INFO", ""]))

    def _ssh_argv(self, *extra: str) -> list[str]:
        return ["ssh", "-F", "/dev/null", "-N", "-o", "ExitOnForwardFailure=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR",
                "-i", str(self.dir / "client_ed25519"), "-p", str(self.sshd_port),
                *extra, f"root@{LOOPBACK}"]

    def setup(self) -> None:
        self._write_files()
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        self.sshd = self.ctx.procs.start(
            "sshd", [SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config")], self.tunnel_cpu)
        wait_listening(self.sshd_port, "sshd", proc=self.sshd)
        if not self.cipher:
            self._probe_cipher()

    def _probe_cipher(self) -> None:
        """Which cipher ssh and sshd agree on by default: one `ssh -v` connection (the
        measured clients run without -v, whose per-channel debug lines would cost CPU)."""
        argv = self._ssh_argv()
        argv[argv.index("LogLevel=ERROR")] = "LogLevel=DEBUG1"
        p = self.ctx.procs.start("ssh-cipher-probe", argv, None)
        try:
            m = p.wait_for(self.RX_CIPHER)
            self.cipher = m.group(1) + ("" if m.group(2) == "<implicit>" else f", {m.group(2)}")
            p.wait_for(r"Authenticated to ")
        finally:
            self.ctx.procs.stop(p)
        log(f"  ssh-r: negotiated cipher {self.cipher}")

    def _start_client(self, name: str, forwards: list[tuple[int, int]]) -> Proc:
        extra: list[str] = []
        for public, target in forwards:
            extra += ["-R", f"{LOOPBACK}:{public}:{LOOPBACK}:{target}"]
        return self.ctx.procs.start(name, self._ssh_argv(*extra), self.tunnel_cpu)

    def start(self, target_port: int) -> int:
        port = free_port()
        c = self._start_client(f"ssh-R-{target_port}", [(port, target_port)])
        self.clients.append(c)
        self.forward_ports.append(port)
        wait_listening(port, "ssh -R forward (sshd side)", proc=c)
        return port

    def stop(self) -> None:
        # sshd's per-connection children call setsid(), so stopping the listener's process
        # group leaves them; they exit when their client goes, and are killed if they do not.
        sessions = _tree_pids([self.sshd.pid], _all_stats())[1:] if self.sshd else []
        for c in self.clients:
            self.ctx.procs.stop(c)
        self.clients, self.forward_ports, self.session_pid = [], [], None
        if self.sshd:
            self.ctx.procs.stop(self.sshd)
            self.sshd = None
        kill_leftovers(sessions, "sshd")

    def cpu_pids(self) -> list[int]:
        return ([self.sshd.pid] if self.sshd else []) + [c.pid for c in self.clients]

    def memory_pid(self) -> int | None:
        if not self.forward_ports:
            return self.sshd.pid if self.sshd else None
        if self.session_pid is None:
            self.session_pid = pid_listening_on(self.forward_ports[0])
        return self.session_pid

    def agent_pid(self) -> int | None:
        return self.clients[0].pid if self.clients else None

    def binaries(self) -> dict[str, int]:
        return {"sshd": _installed_size(SSHD), "ssh": _installed_size(shutil.which("ssh"))}

    def register_many(self, target_port: int, n: int) -> dict:
        """One ssh with n `-R` forwards: time until sshd listens on all n ports."""
        assert self.sshd is not None
        ports: set[int] = set()
        while len(ports) < n:
            ports.add(free_port())
        before = tree_pss_kib([self.sshd.pid]) or 0.0
        t0 = time.monotonic()
        c = self._start_client(f"ssh-R-{n}", [(p, target_port) for p in sorted(ports)])
        try:
            deadline = t0 + MANY_TIMEOUT
            while not ports <= _loopback_listeners().keys():
                if not c.alive():
                    raise BenchError(f"ssh with {n} forwards exited "
                                     f"(rc={c.popen.returncode}):\n{c.tail()}")
                if time.monotonic() > deadline:
                    raise BenchError(f"ssh: {n} forwards not all listening after "
                                     f"{MANY_TIMEOUT:.0f} s")
                time.sleep(0.005)
            took = time.monotonic() - t0
            time.sleep(self.ctx.args.settle)
            after = tree_pss_kib([self.sshd.pid]) or 0.0
            agent = proc_status_kib(c.pid, "VmRSS")
        finally:
            self.ctx.procs.stop(c)
        return {"register_s": took, "server_growth_mib": (after - before) / 1024,
                "agent_mib": None if agent is None else agent / 1024}


MANY_TIMEOUT = 30.0  # seconds for one agent to register the "tunnels" column's tunnels


def _at_least(x):
    return (f"≥ {x}", lambda r, x=x: r is not None and r >= x)


def _absolute(text: str, check) -> tuple[tuple[str, None], object]:
    """A target on the value itself (not a ratio): (targets entry, abs_checks entry)."""
    return (text, None), check


# The issue's targets for the HTTP ladders, both link modes: the value itself, not a ratio.
_LADDER_ABSOLUTE = {
    "http1k_c1000.errors": _absolute("0", lambda v: v == 0),
    "http1k_c1000.p99_ms": _absolute("< 200 ms", lambda v: v < 200),
    "http1k_c1000_close.errors": _absolute("0", lambda v: v == 0),
}
# The issue's targets for the relay itself (restart, many tunnels, memory, size).
_RELAY_ABSOLUTE = {
    "restart_s": _absolute("< 0.1 s", lambda v: v < 0.1),
    "tunnels200.register_s": _absolute("< 0.5 s", lambda v: v < 0.5),
    "tunnels200.server_growth_mib": _absolute("< 10 MiB", lambda v: v < 10),
    "rss_empty_mib": _absolute("< 4 MiB", lambda v: v < 4),
    "http1k_c1000.rss_mib": _absolute("< 24 MiB", lambda v: v < 24),
    "binary_mib": _absolute("< 5 MiB", lambda v: v < 5),
}


def _targets(ratios: dict[str, float], *absolute: dict) -> tuple[dict, dict]:
    """(targets, abs_checks) of a mode: ratio-to-socat floors plus absolute checks."""
    targets: dict = {k: _at_least(x) for k, x in ratios.items()}
    checks: dict = {}
    for group in absolute:
        for k, (entry, check) in group.items():
            targets[k] = entry
            checks[k] = check
    return targets, checks


class BurrowMode(Mode):
    """burrow relay + one `burrow tcp` agent per target (encrypted link)."""

    name = "burrow"
    description = "burrow relay + `burrow tcp` agent (TLS 1.3 link)"
    # Issue 6 "Targets", encrypted link (the default), as ratios to socat.
    targets, abs_checks = _targets(
        {"bulk1.gbps": 0.65, "bulk8.gbps": 0.65, "http1k_c1.rps": 0.8, "http1k_c50.rps": 1.5,
         "http1k_c50_close.rps": 4.0, "http1m_c50.rps": 0.65, "http1k_c1000.rps": 1.6},
        _LADDER_ABSOLUTE, _RELAY_ABSOLUTE)
    supports_restart = True
    supports_many = True
    relay_extra: list[str] = []  # extra flags of this mode for the relay and for each agent
    agent_extra: list[str] = []

    RX_RELAY_PORT = r"agents connect to 127\.0\.0\.1:(\d+)"
    RX_FINGERPRINT = r"relay fingerprint: (sha256:[0-9a-f]{64})"
    RX_PUBLIC = r"public at 127\.0\.0\.1:(\d+)"
    # The line `burrow tcp`/`burrow up` prints on stdout for each public port (its log line
    # "service NAME: tcp ... is public at ..." does not start with "tcp").
    RX_PUBLIC_LINE = r"^tcp \S+ is public at 127\.0\.0\.1:(\d+)$"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.relay: Proc | None = None
        self.agents: list[Proc] = []
        self.relay_port = 0
        self.fingerprint = ""
        self.token = ""
        self.relay_argv: list[str] = []
        self._n = 0

    def setup(self) -> None:
        binary = self.ctx.args.burrow
        if not binary:
            raise BenchError("burrow mode needs --burrow PATH")
        self._n += 1
        base = self.base_dir()
        state = base / "state"
        base.mkdir(parents=True, exist_ok=True)
        # Fixed ports (not :0), so that the "restart" column can start the relay again on the
        # same agent, HTTPS and HTTP ports.
        self.relay_port = free_port()
        self.relay_argv = [
            binary, "relay", "--state-dir", str(state),
            "--listen", f"{LOOPBACK}:{self.relay_port}",
            "--https-listen", f"{LOOPBACK}:{free_port()}",
            "--http-listen", f"{LOOPBACK}:{free_port()}",
            "--public-bind", LOOPBACK, "--port-range", "0",
            # Every visitor of the benchmark comes from one address, at thousands of new
            # connections a second: the per-source limits are off, as docs/security.md says
            # to do for a load test (socat and sshd have none).
            "--source-connections", "0", "--source-rate", "0",
            *self.relay_extra, *shlex.split(self.ctx.args.burrow_relay_args or "")]
        self._spawn_relay()
        if int(self.relay.wait_for(self.RX_RELAY_PORT).group(1)) != self.relay_port:
            raise BenchError(f"the relay does not listen on {self.relay_port} for agents")
        self.fingerprint = self.relay.wait_for(self.RX_FINGERPRINT).group(1)
        token_file = state / "agent.token"
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if token_file.is_file() and token_file.read_text().strip():
                break
            time.sleep(0.05)
        else:
            raise BenchError(f"no agent token in {token_file} after {READY_TIMEOUT:.0f} s")
        self.token = token_file.read_text().strip()
        wait_listening(self.relay_port, "burrow relay", proc=self.relay)

    def _spawn_relay(self) -> None:
        self.relay = self.ctx.procs.start("burrow-relay", self.relay_argv, self.tunnel_cpu)

    def agent_argv(self, *args: str) -> list[str]:
        """`burrow ARGS... --relay ... --token ... --relay-pin ...` plus the mode's flags."""
        return [self.ctx.args.burrow, *args, "--relay", f"{LOOPBACK}:{self.relay_port}",
                "--token", self.token, "--relay-pin", self.fingerprint, *self.agent_extra,
                *shlex.split(self.ctx.args.burrow_agent_args or "")]

    def start_agent(self, target_port: int, *args: str) -> Proc:
        """An agent (`burrow ARGS...`, see agent_argv) on the tunnel CPU."""
        assert self.relay is not None
        a = self.ctx.procs.start(f"burrow-agent-{target_port}", self.agent_argv(*args),
                                 self.tunnel_cpu)
        self.agents.append(a)
        return a

    def agent_state(self, target_port: int) -> Path:
        return self.base_dir() / f"agent-{target_port}"

    def base_dir(self) -> Path:
        """This mode's directory for this round: no state shared between modes or rounds."""
        return self.ctx.tmp / f"{self.name}-{self._n}"

    def start(self, target_port: int) -> int:
        a = self.start_agent(target_port, "tcp", str(target_port), "--no-e2ee")
        port = int(a.wait_for(self.RX_PUBLIC).group(1))
        wait_listening(port, "burrow public port", proc=self.relay)
        return port

    def stop(self) -> None:
        for a in self.agents:
            self.ctx.procs.stop(a)
        self.agents = []
        if self.relay:
            self.ctx.procs.stop(self.relay)
            self.relay = None

    def cpu_pids(self) -> list[int]:
        return ([self.relay.pid] if self.relay else []) + [a.pid for a in self.agents]

    def memory_pid(self) -> int | None:
        return self.relay.pid if self.relay else None

    def agent_pid(self) -> int | None:
        return self.agents[0].pid if self.agents else None

    def binaries(self) -> dict[str, int]:
        return {"burrow (stripped)": self.ctx.burrow_stripped_bytes}

    def restart_server(self) -> tuple[float, float]:
        assert self.relay is not None
        t = time.monotonic()
        self.ctx.procs.stop(self.relay)  # SIGTERM, wait for the exit (SIGKILL after 5 s)
        stop_s = time.monotonic() - t
        t0 = time.monotonic()
        self._spawn_relay()
        return stop_s, t0

    def after_restart(self) -> None:
        assert self.relay is not None
        fp = self.relay.wait_for(self.RX_FINGERPRINT).group(1)
        if fp != self.fingerprint:
            raise BenchError(f"the restarted relay has another identity ({fp})")

    def register_many(self, target_port: int, n: int) -> dict:
        """`burrow up` with n tcp services on target_port: time from the agent's start until it
        printed n public ports; relay RSS before and after; the agent's RSS."""
        assert self.relay is not None
        conf = self.base_dir() / f"up-{n}.toml"
        conf.write_text("".join(f'[[service]]\nname = "bench-{i:04d}"\nlocal = {target_port}\n'
                                "e2ee = false\n\n" for i in range(n)))
        time.sleep(self.ctx.args.settle)
        before = proc_status_kib(self.relay.pid, "VmRSS") or 0.0
        t0 = time.monotonic()
        a = self.ctx.procs.start(f"burrow-up-{n}", self.agent_argv(
            "up", "--config", str(conf), "--state-dir", str(self.base_dir() / f"up-{n}")),
            self.tunnel_cpu)
        try:
            a.wait_count(self.RX_PUBLIC_LINE, n, MANY_TIMEOUT)
            took = time.monotonic() - t0
            time.sleep(self.ctx.args.settle)
            after = proc_status_kib(self.relay.pid, "VmRSS") or 0.0
            agent = proc_status_kib(a.pid, "VmRSS")
        finally:
            self.ctx.procs.stop(a)
        return {"register_s": took, "server_growth_mib": (after - before) / 1024,
                "agent_mib": None if agent is None else agent / 1024}


def link_encryption_supported(binary: str) -> bool:
    """Does this burrow binary know `--link-encryption` (relay and tcp agent)?"""
    return all("--link-encryption" in cmd_version([binary, sub, "--help"], r"--link-encryption")
               for sub in ("relay", "tcp"))


class BurrowPlainMode(BurrowMode):
    """As burrow, with the agent-relay link authenticated by TLS and then unencrypted."""

    name = "burrow-plain"
    description = ("as burrow with `--link-encryption none` on the relay (which then accepts "
                   "links without encryption) and on every agent (which asks for them): each "
                   "link is authenticated by its TLS handshake, then carries the data "
                   "unencrypted (for private networks only; never the default)")
    relay_extra = ["--link-encryption", "none"]
    agent_extra = ["--link-encryption", "none"]
    # Issue 6 "Targets", link without encryption, as ratios to socat.
    targets, abs_checks = _targets(
        {"bulk1.gbps": 1.0, "bulk8.gbps": 1.0, "http1k_c1.rps": 0.85, "http1k_c50.rps": 1.55,
         "http1k_c50_close.rps": 4.5, "http1m_c50.rps": 1.0, "http1k_c1000.rps": 1.6},
        _LADDER_ABSOLUTE)


class BurrowE2eeMode(BurrowMode):
    """burrow relay + `burrow tcp` agent (end to end) + `burrow connect` on the load's side."""

    name = "burrow-e2ee"
    description = ("burrow relay + `burrow tcp` agent + `burrow connect --listen`, TLS 1.3 "
                   "between connect and the agent inside the relay's TLS 1.3 links; connect "
                   "pinned to the tunnel CPU too")
    resume = True
    targets: dict = {}
    abs_checks: dict = {}
    supports_many = False
    compare_to = "burrow"
    # Issue 3, as ratios to the plain tunnel in the same round.
    targets_vs = {
        "bulk1.gbps": _at_least(0.5),
        "http1k_c50.rps": _at_least(0.8),
    }
    RX_E2EE = r"reachable end to end as (\S+) \(certificate (sha256:[0-9a-f]{64})\)"
    RX_LISTEN = r"listening on 127\.0\.0\.1:(\d+) for "

    def start(self, target_port: int) -> int:
        a = self.start_agent(target_port, "tcp", str(target_port), "--state-dir",
                             str(self.agent_state(target_port)))
        m = a.wait_for(self.RX_E2EE)
        argv = [self.ctx.args.burrow, "connect", m.group(1), "--relay",
                f"{LOOPBACK}:{self.relay_port}", "--relay-pin", self.fingerprint,
                "--pin", m.group(2), "--listen", f"{LOOPBACK}:0",
                "--resume", "true" if self.resume else "false"]
        c = self.ctx.procs.start(f"burrow-connect-{target_port}", argv, self.tunnel_cpu)
        self.agents.append(c)  # stopped and measured with the agents
        port = int(c.wait_for(self.RX_LISTEN).group(1))
        wait_listening(port, "burrow connect", proc=c)
        return port


class BurrowE2eeNoResumeMode(BurrowE2eeMode):
    """As burrow-e2ee, without TLS session resumption: what resumption buys."""

    name = "burrow-e2ee-noresume"
    description = "as burrow-e2ee with `burrow connect --resume false` (full handshake each time)"
    resume = False
    compare_to = "burrow-e2ee"
    targets_vs: dict = {}


class BurrowHttpsBlindMode(BurrowMode):
    """burrow relay + `burrow http` agent: an HTTPS share URL whose TLS ends at the agent."""

    name = "burrow-https-blind"
    description = ("burrow relay + `burrow http --mode blind` agent: wrk speaks HTTPS to the "
                   f"relay's HTTPS listener with SNI {SHARE_NAME}.{SHARE_DOMAIN}, TLS 1.3 ends at "
                   "the agent (certificate from the relay's CA) and the agent speaks HTTP/1.1 "
                   "to nginx; HTTP only")
    share_mode = "blind"
    http_only = True
    tls = True
    targets: dict = {}
    abs_checks: dict = {}
    supports_many = False
    compare_to = "burrow"
    # The HTTPS share URL issue, as ratios to the plain TCP tunnel in the same round.
    targets_vs = {
        "http1k_c50.rps": _at_least(0.9),
        "http1k_c50_close.rps": ("report", None),
    }
    RX_SHARE = r"is public at https://([^:/\s]+):(\d+)"

    def start(self, target_port: int) -> int:
        a = self.start_agent(target_port, "http", str(target_port), "--name", SHARE_NAME,
                             "--mode", self.share_mode, "--state-dir",
                             str(self.agent_state(target_port)))
        m = a.wait_for(self.RX_SHARE)
        self.sni = m.group(1)
        port = int(m.group(2))
        wait_listening(port, "burrow HTTPS listener", proc=self.relay)
        return port


class BurrowHttpsPassthroughMode(BurrowHttpsBlindMode):
    """As burrow-https-blind, but the agent passes the TLS bytes on to nginx's TLS server."""

    name = "burrow-https-passthrough"
    description = ("burrow relay + `burrow http --mode passthrough` agent: wrk speaks HTTPS "
                   "to the relay's HTTPS listener, which routes by SNI; the agent passes the "
                   "TLS bytes on to nginx's TLS server (TLS ends at nginx, on the load CPU); "
                   "HTTP only")
    share_mode = "passthrough"
    tls_target = True
    targets_vs: dict = {}


class BurrowHttpsInspectMode(BurrowHttpsBlindMode):
    """As burrow-https-blind, but TLS ends at the relay, which reads and logs each request."""

    name = "burrow-https-inspect"
    description = ("burrow relay + `burrow http --mode inspect` agent: TLS ends at the relay "
                   "(its *.DOMAIN certificate), which parses and logs each request and sends "
                   "HTTP/1.1 to the agent, which proxies it to nginx; HTTP only")
    share_mode = "inspect"
    compare_to = "burrow-https-blind"
    # The issue: inspect at least half of blind (a published tunnel's inspect manages a fifth).
    targets_vs = {"http1k_c50.rps": _at_least(0.5)}


class BurrowWorkersMode(BurrowMode):
    """The unpinned run (--scaling): relay and agent without taskset, the relay with a given
    number of worker threads.  Not a mode of the main table."""

    pinned = False
    targets: dict = {}
    abs_checks: dict = {}
    supports_restart = False
    supports_many = False

    def __init__(self, ctx, workers: int):
        super().__init__(ctx)
        self.workers = workers
        self.name = f"burrow-workers{workers}"
        self.relay_extra = ["--workers", str(workers)]
        self.description = (f"burrow relay `--workers {workers}` + `burrow tcp` agent, neither "
                            "pinned (nginx, iperf3 and wrk stay on the load CPU)")


MODES: dict[str, type[Mode]] = {m.name: m for m in (
    DirectMode, HttpsDirectMode, SocatMode, SshReverseMode, BurrowMode, BurrowPlainMode,
    BurrowE2eeMode, BurrowE2eeNoResumeMode, BurrowHttpsBlindMode, BurrowHttpsInspectMode,
    BurrowHttpsPassthroughMode)}


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

class Context:
    def __init__(self, args, procs: Procs, tmp: Path):
        self.args = args
        self.procs = procs
        self.tmp = tmp
        self.targets: Targets | None = None
        self.modes: dict[str, Mode] = {}
        self.burrow_stripped_bytes = 0  # `strip -o` of --burrow, measured once per run


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


def stripped_size(binary: str, tmp: Path) -> int:
    """Size in bytes of `strip -o` of the binary (0 if strip fails)."""
    out = tmp / "burrow.stripped"
    r = subprocess.run(["strip", "-o", str(out), binary], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        log(f"strip failed: {r.stderr.strip()[-300:]}")
        return 0
    size = out.stat().st_size
    out.unlink()
    return size


def binary_sizes(ctx: Context) -> dict[str, int]:
    sizes: dict[str, int] = {}
    if ctx.args.burrow:
        if ctx.burrow_stripped_bytes:
            sizes["burrow (stripped)"] = ctx.burrow_stripped_bytes
        sizes["burrow (as built)"] = _installed_size(ctx.args.burrow)
    for name, path in (("socat", shutil.which("socat")), ("sshd", SSHD),
                       ("ssh", shutil.which("ssh"))):
        if path and os.path.exists(path):
            sizes[name] = _installed_size(path)
    return sizes


def run_meta(ctx: Context, command: str, ncpu: int, nofile: int) -> dict:
    args = ctx.args
    versions = {
        "nginx": cmd_version(["nginx", "-v"]),
        "wrk": re.sub(r"\s+Copyright.*", "", cmd_version(["wrk", "-v"])),
        "iperf3": re.sub(r"\s+\(cJSON.*", "", cmd_version(["iperf3", "-v"])),
        "socat": re.sub(r"\s+on .*", "", cmd_version(["socat", "-V"], r"^socat version")),
    }
    if "ssh-r" in args.mode_list:
        versions["openssh"] = cmd_version(["ssh", "-V"], r"OpenSSH")
    if args.burrow:
        versions["burrow"] = cmd_version([args.burrow, "--version"])
    git = ""
    try:
        r = subprocess.run(["git", "-C", str(HERE.parent), "describe", "--always",
                            "--dirty"], capture_output=True, timeout=5, text=True)
        git = r.stdout.strip() or "(no commit yet)"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {
        "command": command,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "nproc": ncpu, "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
        "kernel": os.uname().release, "versions": versions, "git": git,
        "nofile": nofile, "loadavg_start": loadavg(), "binary_sizes": binary_sizes(ctx),
    }


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
