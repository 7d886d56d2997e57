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

# kind: "iperf" (iperf3 bulk TCP) or "wrk" (HTTP against nginx)
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
    "http1k_c1000": dict(kind="wrk", file="1k.bin", threads=2, conns=1000, close=False,
                         label="1 KiB HTTP, 1,000 conns, keep-alive"),
}
QUICK_COLUMNS = ["bulk1", "http1k_c1", "http1k_c50", "http1k_c50_close", "http1k_c1000"]

# Rows of the result table.  key -> label, unit, better ("higher"/"lower"/None),
# whether a ratio to socat makes sense, number format, and the column that
# produces it (None: per mode, not per column).
METRICS: dict[str, dict] = {}


def _metric(key, label, unit, better, fmt, column, ratio=True):
    METRICS[key] = dict(label=label, unit=unit, better=better, fmt=fmt, column=column,
                        ratio=ratio)


_metric("bulk1.gbps", "bulk TCP, 1 stream", "Gbit/s", "higher", "{:.2f}", "bulk1")
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
_metric("http1k_c1000.rps", "1 KiB HTTP, 1,000 conns, keep-alive", "req/s", "higher",
        "{:,.0f}", "http1k_c1000")
_metric("http1k_c1000.p99_ms", "1 KiB HTTP, 1,000 conns: p99 latency", "ms", "lower",
        "{:.1f}", "http1k_c1000")
_metric("http1k_c1000.errors", "1 KiB HTTP, 1,000 conns: errors", "count", "lower",
        "{:,.0f}", "http1k_c1000", ratio=False)
_metric("rss_empty_mib", "relay RSS before any agent", "MiB", "lower", "{:.2f}", None)
_metric("rss_empty_anon_mib", "relay RSS before any agent, anonymous only (RssAnon)", "MiB",
        "lower", "{:.2f}", None)
_metric("rss_idle_mib", "tunnel idle RSS, tunnels registered (relay / socat listener)", "MiB",
        "lower", "{:.2f}", None)
_metric("rss_peak_mib", "tunnel peak RSS, VmHWM (relay / socat listener)", "MiB", "lower",
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


def listening(port: int) -> bool:
    """Is something listening on 127.0.0.1:port (or 0.0.0.0:port)?  Reads
    /proc/net/tcp, so it never opens a connection to the service."""
    want = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) > 3 and parts[3] == "0A" and parts[1] in want:
                    return True
    except OSError:
        pass
    return False


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


def tree_cpu_seconds(roots: list[int]) -> float:
    """CPU seconds used so far by the process trees under roots: every live
    process's own time plus the time of children it has already reaped."""
    if not roots:
        return 0.0
    stats = _all_stats()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    todo = [r for r in roots if r in stats]
    total = 0
    while todo and len(seen) < 100000:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        _, own, reaped = stats[pid]
        total += own + reaped
        todo.extend(children.get(pid, []))
    return total / CLK_TCK


def proc_status_kib(pid: int, field: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


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
    # Targets from PRODUCT.md for this mode, as ratio-to-socat thresholds:
    # metric key -> (text, predicate on ratio).
    targets: dict[str, tuple[str, object]] = {}
    # Another mode this one is also compared with, round by round (its "/ base" column), and
    # targets as ratios to that mode.
    compare_to: str | None = None
    targets_vs: dict[str, tuple[str, object]] = {}
    http_only = False  # True: only the wrk columns (bulk TCP shows n/a)
    tls = False  # True: the load speaks HTTPS
    tls_target = False  # True: the mode reaches nginx's TLS server, not its plain one

    def __init__(self, ctx: "Context"):
        self.ctx = ctx
        self.sni: str | None = None  # host name in the URL (TLS SNI, Host), if not 127.0.0.1

    def describe(self) -> str:
        return self.description

    def runs(self, column: str) -> bool:
        return not self.http_only or COLUMNS[column]["kind"] == "wrk"

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
                                 self.ctx.args.tunnel_cpu)
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


def _at_least(x):
    return (f"≥ {x}", lambda r, x=x: r is not None and r >= x)


class BurrowMode(Mode):
    """burrow relay + one `burrow tcp` agent per target (encrypted link)."""

    name = "burrow"
    description = "burrow relay + `burrow tcp` agent (TLS 1.3 link)"
    # PRODUCT.md "Targets", encrypted link, as ratios to socat.
    targets = {
        "bulk1.gbps": _at_least(0.65),
        "bulk8.gbps": _at_least(0.65),
        "http1k_c1.rps": _at_least(0.8),
        "http1k_c50.rps": _at_least(1.5),
        "http1k_c50_close.rps": _at_least(4.0),
        "http1m_c50.rps": _at_least(0.65),
        "http1k_c1000.rps": _at_least(1.6),
        "http1k_c1000.errors": ("0", None),
        "http1k_c1000.p99_ms": ("< 200 ms", None),
        "rss_empty_mib": ("< 4 MiB", None),
    }
    # Absolute checks (value, not ratio) for the rows above with predicate None.
    abs_checks = {
        "http1k_c1000.errors": lambda v: v == 0,
        "http1k_c1000.p99_ms": lambda v: v < 200,
        "rss_empty_mib": lambda v: v < 4,
    }

    RX_RELAY_PORT = r"agents connect to 127\.0\.0\.1:(\d+)"
    RX_FINGERPRINT = r"relay fingerprint: (sha256:[0-9a-f]{64})"
    RX_PUBLIC = r"public at 127\.0\.0\.1:(\d+)"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.relay: Proc | None = None
        self.agents: list[Proc] = []
        self.relay_port = 0
        self.fingerprint = ""
        self.token = ""
        self._n = 0

    def setup(self) -> None:
        binary = self.ctx.args.burrow
        if not binary:
            raise BenchError("burrow mode needs --burrow PATH")
        self._n += 1
        base = self.base_dir()
        state = base / "state"
        base.mkdir(parents=True, exist_ok=True)
        argv = [binary, "relay", "--state-dir", str(state), "--listen", f"{LOOPBACK}:0",
                "--https-listen", f"{LOOPBACK}:0", "--http-listen", f"{LOOPBACK}:0",
                "--public-bind", LOOPBACK, "--port-range", "0",
                # Every visitor of the benchmark comes from one address, at thousands of new
                # connections a second: the per-source limits are off, as docs/security.md says
                # to do for a load test (socat and sshd have none).
                "--source-connections", "0", "--source-rate", "0"]
        argv += shlex.split(self.ctx.args.burrow_relay_args or "")
        self.relay = self.ctx.procs.start("burrow-relay", argv, self.ctx.args.tunnel_cpu)
        self.relay_port = int(self.relay.wait_for(self.RX_RELAY_PORT).group(1))
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

    def start_agent(self, target_port: int, *args: str) -> Proc:
        """`burrow ARGS... --relay ... --token ... --relay-pin ...` on the tunnel CPU."""
        assert self.relay is not None
        argv = [self.ctx.args.burrow, *args, "--relay", f"{LOOPBACK}:{self.relay_port}",
                "--token", self.token, "--relay-pin", self.fingerprint]
        argv += shlex.split(self.ctx.args.burrow_agent_args or "")
        a = self.ctx.procs.start(f"burrow-agent-{target_port}", argv, self.ctx.args.tunnel_cpu)
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


class BurrowE2eeMode(BurrowMode):
    """burrow relay + `burrow tcp` agent (end to end) + `burrow connect` on the load's side."""

    name = "burrow-e2ee"
    description = ("burrow relay + `burrow tcp` agent + `burrow connect --listen`, TLS 1.3 "
                   "between connect and the agent inside the relay's TLS 1.3 links; connect "
                   "pinned to the tunnel CPU too")
    resume = True
    targets: dict = {}
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
        c = self.ctx.procs.start(f"burrow-connect-{target_port}", argv, self.ctx.args.tunnel_cpu)
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


MODES: dict[str, type[Mode]] = {m.name: m for m in (
    DirectMode, HttpsDirectMode, SocatMode, BurrowMode, BurrowE2eeMode, BurrowE2eeNoResumeMode,
    BurrowHttpsBlindMode, BurrowHttpsInspectMode, BurrowHttpsPassthroughMode)}


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


def run_mode_round(ctx: Context, mode: Mode, columns: list[str]) -> dict:
    """Start the mode's tunnels, run every column through them, stop them.
    Returns {"metrics": {...}, "columns": {col: raw}, "errors": [...]}."""
    t = ctx.targets
    assert t is not None
    out: dict = {"metrics": {}, "columns": {}, "errors": []}
    metrics = out["metrics"]
    skipped = [c for c in columns if not mode.runs(c)]
    if skipped:
        log(f"  {mode.name}: skipping {', '.join(skipped)} (HTTP only)")
        columns = [c for c in columns if mode.runs(c)]
    need_http = any(COLUMNS[c]["kind"] == "wrk" for c in columns)
    need_iperf = any(COLUMNS[c]["kind"] == "iperf" for c in columns)
    try:
        t0 = time.monotonic()
        mode.setup()
        mpid = mode.memory_pid()
        if mpid:  # e.g. the relay before any agent: the "idle relay" figure
            time.sleep(ctx.args.settle)
            rss = proc_status_kib(mpid, "VmRSS")
            if rss is not None:
                metrics["rss_empty_mib"] = rss / 1024
            anon = proc_status_kib(mpid, "RssAnon")
            if anon is not None:
                metrics["rss_empty_anon_mib"] = anon / 1024
        http_port = mode.start(mode.http_target(t)) if need_http else 0
        iperf_port = mode.start(t.iperf_port) if need_iperf else 0
        out["registered_s"] = round(time.monotonic() - t0, 3)
        # Idle memory: tunnels registered, no visitor connection yet.
        time.sleep(ctx.args.settle)
        mpid = mode.memory_pid()
        if mpid:
            rss = proc_status_kib(mpid, "VmRSS")
            if rss is not None:
                metrics["rss_idle_mib"] = rss / 1024
            anon = proc_status_kib(mpid, "RssAnon")
            if anon is not None:
                metrics["rss_idle_anon_mib"] = anon / 1024
        if need_http:
            wait_http(http_port, "/1k.bin", f"{mode.name} -> nginx", tls=mode.tls,
                      sni=mode.sni)
        for c in columns:
            col = COLUMNS[c]
            port = http_port if col["kind"] == "wrk" else iperf_port
            cpu0 = tree_cpu_seconds(mode.cpu_pids())
            t1 = time.monotonic()
            try:
                raw = (run_wrk if col["kind"] == "wrk" else run_iperf)(ctx, mode, col, port)
            except BenchError as e:
                log(f"  {mode.name} {c}: FAILED: {e}")
                out["errors"].append(f"{c}: {e}")
                time.sleep(ctx.args.settle)
                continue
            time.sleep(ctx.args.settle)  # let short-lived children exit and be reaped
            if mode.tunnel:
                raw["tunnel_cpu_s"] = tree_cpu_seconds(mode.cpu_pids()) - cpu0
            raw["wall_s"] = round(time.monotonic() - t1, 3)
            out["columns"][c] = raw
            if col["kind"] == "iperf":
                metrics[f"{c}.gbps"] = raw["gbps"]
                log(f"  {mode.name:>8} {c:<18} {raw['gbps']:8.2f} Gbit/s")
            else:
                metrics[f"{c}.rps"] = raw["rps"]
                for k in ("p50_ms", "p99_ms"):
                    if k in raw:
                        metrics[f"{c}.{k}"] = raw[k]
                metrics[f"{c}.errors"] = raw["errors"]
                for k, v in raw["error_detail"].items():
                    metrics[f"{c}.err_{k}"] = v
                if mode.tunnel and raw.get("requests"):
                    # CPU-milliseconds per 1,000 requests == CPU-seconds per 1e6
                    metrics[f"{c}.cpu_per_1k"] = raw["tunnel_cpu_s"] * 1e3 / (
                        raw["requests"] / 1000)
                errs = f" errors {raw['errors']} {raw['error_detail']}" if raw["errors"] else ""
                log(f"  {mode.name:>8} {c:<18} {raw['rps']:12,.1f} req/s  "
                    f"p99 {raw.get('p99_ms', float('nan')):.3f} ms{errs}")
        mpid = mode.memory_pid()
        if mpid:
            hwm = proc_status_kib(mpid, "VmHWM")
            if hwm is not None:
                metrics["rss_peak_mib"] = hwm / 1024
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


def render_table(ctx: Context, modes: list[str], columns: list[str], med: dict,
                 ratio: dict, rounds: list[dict]) -> str:
    mode_objs = {m: MODES[m] for m in modes}
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
        present = [m for m in modes if key in med[m]]
        if not present:
            continue
        label = meta["label"]
        if meta["better"]:
            label += " (higher is better)" if meta["better"] == "higher" else " (lower is better)"
        row = [label, meta["unit"]]
        for m in modes:
            v = med[m].get(key)
            cell = fmt_val(key, v)
            if key.endswith(".errors") and v is not None:
                detail = [med[m].get(key.replace(".errors", f".err_{k}")) for k in
                          WRK_ERROR_KINDS]
                if any(detail):
                    cell += " (" + ", ".join(f"{k} {d:g}" for k, d in
                                             zip(WRK_ERROR_KINDS, detail) if d) + ")"
            row.append(cell)
            if show_ratio and m != "socat":
                r = ratio[m].get(key) if meta["ratio"] else None
                row.append("n/a" if r is None else f"{r:.2f}")
            if m in rel:
                r = rel[m].get(key) if meta["ratio"] else None
                row.append("n/a" if r is None else f"{r:.2f}")
        for m in target_modes:
            mo = mode_objs[m]
            vs = not mo.targets
            tgt = (mo.targets_vs if vs else mo.targets).get(key)
            if not tgt:
                row.append("")
                continue
            text, pred = tgt
            ok = None
            base = rel.get(m, {}) if vs else ratio[m]
            if pred is not None and key in base:
                ok = pred(base[key])
            elif pred is None and key in getattr(mo, "abs_checks", {}) and key in med[m]:
                ok = mo.abs_checks[key](med[m][key])
            row.append(text + ("" if ok is None else (" ✓" if ok else " ✗")))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_markdown(ctx: Context, meta: dict, table: str, rounds: list[dict],
                    modes: list[str]) -> str:
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
    md += ["", table, ""]
    notes = []
    for r in rounds:
        for m in modes:
            res = r["results"].get(m, {})
            for e in res.get("errors", []):
                notes.append(f"- round {r['round']}, {m}: {e.splitlines()[0]}")
            for c, raw in res.get("columns", {}).items():
                if COLUMNS[c]["kind"] == "wrk" and raw.get("errors") and c != "http1k_c1000":
                    notes.append(f"- round {r['round']}, {m}, {c}: wrk errors "
                                 f"{raw['error_detail']}")
    if notes:
        md += ["Problems seen during the run:", ""] + notes + [""]
    md += ["Per-round order: " + "; ".join(
        f"{r['round']}: {', '.join(r['order'])}" for r in rounds), ""]
    md += ["CPU per 1,000 requests counts user+system time of the tunnel's processes "
           "(socat and its forked children; burrow relay and agents) during the "
           "1 KiB / 50 keep-alive column. Memory is VmRSS of the burrow relay before any agent "
           "connects, VmRSS when idle (tunnels registered, before any visitor) and VmHWM "
           "after the run, of the relay or the socat listener process (socat's forked "
           "children not included). HTTP-only modes (https-direct and the HTTPS share URL "
           "modes) skip the bulk TCP columns, which show n/a; wrk reaches "
           f"https://{SHARE_NAME}.{SHARE_DOMAIN}:PORT on 127.0.0.1 through "
           "bench/wrk-loopback.lua, so the name is the TLS SNI and the Host header.", ""]
    return "\n".join(md)


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
    p.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (logs)")
    a = p.parse_args(argv)
    a.rounds = a.rounds if a.rounds is not None else (1 if a.quick else 3)
    a.duration = a.duration if a.duration is not None else (2 if a.quick else 5)
    a.iperf_time = a.iperf_time if a.iperf_time is not None else (2 if a.quick else 5)
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
        a.column_list = [c.strip() for c in a.columns.split(",") if c.strip()]
        for c in a.column_list:
            if c not in COLUMNS:
                p.error(f"unknown column {c!r}; known: {', '.join(COLUMNS)}")
    if not (1 <= a.rounds <= 50):
        p.error("--rounds must be 1..50")
    if not (1 <= a.duration <= 600) or not (1 <= a.iperf_time <= 600):
        p.error("--duration and --iperf-time must be 1..600")
    if any(m.startswith("burrow") for m in a.mode_list):
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
    for tool in ["nginx", "wrk", "iperf3"] + (["socat"] if "socat" in args.mode_list else []) \
            + (["openssl"] if any(MODES[m].tls_target for m in args.mode_list) else []) \
            + ([] if args.no_pin else ["taskset"]):
        if not shutil.which(tool):
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
    rounds: list[dict] = []
    started = time.monotonic()
    rc = 0
    try:
        versions = {
            "nginx": cmd_version(["nginx", "-v"]),
            "wrk": re.sub(r"\s+Copyright.*", "", cmd_version(["wrk", "-v"])),
            "iperf3": re.sub(r"\s+\(cJSON.*", "", cmd_version(["iperf3", "-v"])),
            "socat": re.sub(r"\s+on .*", "", cmd_version(["socat", "-V"], r"^socat version")),
        }
        if args.burrow:
            versions["burrow"] = cmd_version([args.burrow, "--version"])
        git = ""
        try:
            r = subprocess.run(["git", "-C", str(HERE.parent), "describe", "--always",
                                "--dirty"], capture_output=True, timeout=5, text=True)
            git = r.stdout.strip() or "(no commit yet)"
        except (OSError, subprocess.TimeoutExpired):
            pass
        meta = {
            "command": command,
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "nproc": ncpu, "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
            "kernel": os.uname().release, "versions": versions, "git": git,
            "nofile": nofile, "loadavg_start": loadavg(),
        }
        log(f"modes {args.mode_list}, columns {args.column_list}, rounds {args.rounds}, "
            f"logs in {logdir}")
        want_http = any(COLUMNS[c]["kind"] == "wrk" for c in args.column_list)
        want_iperf = any(COLUMNS[c]["kind"] == "iperf" for c in args.column_list)
        want_tls = want_http and any(MODES[m].tls_target for m in args.mode_list)
        ctx.targets = Targets(procs, tmp, args.load_cpu, nofile, want_http, want_iperf,
                              want_tls)
        ctx.targets.start()
        mode_objs = ctx.modes = {m: MODES[m](ctx) for m in args.mode_list}
        n = len(args.mode_list)
        for i in range(args.rounds):
            order = args.mode_list[i % n:] + args.mode_list[:i % n]
            log(f"round {i + 1}/{args.rounds}: {', '.join(order)}")
            rnd = {"round": i + 1, "order": order, "results": {}}
            for m in order:
                rnd["results"][m] = run_mode_round(ctx, mode_objs[m], args.column_list)
            rounds.append(rnd)

        meta["loadavg_end"] = loadavg()
        med, ratio = summarize(rounds, args.mode_list)
        table = render_table(ctx, args.mode_list, args.column_list, med, ratio, rounds)
        md = render_markdown(ctx, meta, table, rounds, args.mode_list)
        print(md)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(md)
            log(f"wrote {args.out}")
        if args.json:
            doc = {**meta, "config": {k: v for k, v in vars(args).items()},
                   "modes": args.mode_list, "columns": args.column_list,
                   "metrics": {k: {kk: vv for kk, vv in v.items()} for k, v in METRICS.items()},
                   "median": med, "ratio_to_socat": ratio,
                   "ratio_to_compared_mode": summarize_vs(rounds, args.mode_list), "rounds": rounds,
                   "elapsed_s": round(time.monotonic() - started, 1)}
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
            log(f"wrote {args.json}")
        if any(res["errors"] for r in rounds for res in r["results"].values()):
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
