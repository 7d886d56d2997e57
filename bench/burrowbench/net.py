"""Loopback ports: free ones, who listens where (from /proc/net/tcp), readiness waits and a
small HTTP(S) GET."""

from __future__ import annotations

import os
import re
import socket
import ssl
import time

from .common import LOOPBACK, READY_TIMEOUT, BenchError
from .procs import Proc


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def loopback_listeners() -> dict[int, str]:
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
    return port in loopback_listeners()


def pid_listening_on(port: int) -> int | None:
    """The process holding the listening socket on 127.0.0.1:port (e.g. the sshd session that
    carries an `ssh -R` forward), found through the socket's inode in /proc/*/fd."""
    inode = loopback_listeners().get(port)
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
