"""The targets, started once for the whole run: nginx (plain, and TLS for the HTTPS modes)
and the iperf3 server."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from .common import HERE, LOOPBACK, READY_TIMEOUT, SHARE_DOMAIN, BenchError, log
from .net import free_port, listening, wait_http, wait_listening
from .procs import Proc, Procs


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


class Targets:
    def __init__(self, procs: Procs, tmp: Path, load_cpu: int, nofile: int,
                 want_http: bool, want_iperf: bool, want_tls: bool = False,
                 multi_accept: str = "on"):
        self.procs = procs
        self.tmp = tmp
        self.load_cpu = load_cpu
        self.nofile = nofile
        self.want_http = want_http
        self.want_iperf = want_iperf
        self.want_tls = want_tls  # also a TLS server block in nginx (HTTPS modes)
        self.multi_accept = multi_accept  # nginx's multi_accept, "on" or "off"
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
            "NOFILE": str(self.nofile),
            "MULTI_ACCEPT": self.multi_accept})
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
