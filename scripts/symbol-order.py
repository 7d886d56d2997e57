#!/usr/bin/env python3
"""Writes cmake/burrow.order: the functions of `burrow` that its roles run, for the linker.

The release build links `burrow` with lld and this file (`--symbol-ordering-file`), so the code a
relay, an agent and `burrow connect` run sits together at the start of the binary's text, and the
rest (other commands, error paths, code no role reached here) after it. The kernel maps a
program's code into its resident memory in 64 KiB windows around each page it runs; with the
running code scattered over 3 MiB, nearly all of it was resident (`docs/performance.md`, "The
binary's code, in the order it runs").

How: each role runs under valgrind's callgrind (`--demangle=no`) on loopback with real traffic:

1. a relay that starts with a fresh state directory, idles for a few seconds and stops;
2. a relay with HTTPS share URLs; agents for a public TCP port (`burrow tcp --no-e2ee`), end to end
   (`burrow tcp`) with `burrow connect`, and HTTPS share URLs in blind and inspect modes; curl
   requests through each.

The file lists the relay's start first, then the rest of the relay, the agents and connect, each
function once. Names that no longer exist are ignored by the linker, so an old file only costs
memory, never correctness; rerun this after large changes:

    python3 scripts/symbol-order.py [--burrow build/release/burrow] [--out cmake/burrow.order]

Needs valgrind and curl (apt install valgrind curl). Takes a few minutes.
"""
import argparse
import functools
import http.server
import os
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEADLINE = 180  # seconds for any one process to start or stop under valgrind


class Proc:
    """A burrow role under callgrind; its output goes to a file we poll for lines."""

    def __init__(self, work, name, argv, env=None):
        self.name = name
        self.log = os.path.join(work, name + ".log")
        self.out = os.path.join(work, name + ".cg")
        cmd = ["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + self.out]
        with open(self.log, "w") as log:
            self.p = subprocess.Popen(cmd + argv, stdout=log, stderr=subprocess.STDOUT,
                                      env={**os.environ, **(env or {})})

    def wait_for(self, regex):
        rx = re.compile(regex)
        until = time.monotonic() + DEADLINE
        while time.monotonic() < until:
            with open(self.log, errors="replace") as f:
                for line in f:
                    m = rx.search(line)
                    if m:
                        return m.group(1) if m.groups() else line
            if self.p.poll() is not None:
                break
            time.sleep(0.2)
        sys.exit(f"{self.name}: no line matching {regex!r}; its output:\n" + open(self.log).read())

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def functions(path, suffix):
    """Names of the functions of the object ending in `suffix` that ran, in the file's order."""
    names, obs, fns, cur = [], {}, {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"^(c?)ob=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            callee, n, name = m.groups()
            if name:
                obs[n] = name
            if not callee:
                cur = obs.get(n, "")
            continue
        m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            callee, n, name = m.groups()
            if name:
                fns[n] = name
            if not callee and cur and cur.endswith(suffix):
                names.append(fns[n])
    # Addresses without a symbol and callgrind's own pseudo-functions cannot be ordered.
    return [n for n in names if not n.startswith("0x") and " " not in n and "(" not in n]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory):
    handler = functools.partial(QuietHandler, directory=directory)
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def curl(*args):
    subprocess.run(["curl", "-sS", "--max-time", "60", "-o", "/dev/null", *args], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--burrow", default=os.path.join(ROOT, "build/release/burrow"))
    ap.add_argument("--out", default=os.path.join(ROOT, "cmake/burrow.order"))
    args = ap.parse_args()
    for tool in ("valgrind", "curl"):
        if not shutil.which(tool):
            sys.exit(f"needs {tool}: apt install {tool}")
    bin_ = os.path.abspath(args.burrow)
    work = tempfile.mkdtemp(prefix="burrow-order.")
    os.makedirs(os.path.join(work, "site"))
    with open(os.path.join(work, "site", "index.html"), "w") as f:
        f.write("x" * 1024)
    web = str(serve(os.path.join(work, "site")))
    relay_args = ["--listen", "127.0.0.1:0", "--public-bind", "127.0.0.1", "--port-range", "0"]
    procs = []
    try:
        # 1. A fresh relay's start, a few of its housekeeping ticks, and its stop.
        start = Proc(work, "relay-start", [bin_, "relay", "--state-dir", work + "/s1"] + relay_args)
        start.wait_for(r"relay ready")
        time.sleep(3)
        start.stop()

        # 2. A relay with every kind of visitor, through every kind of agent.
        relay = Proc(work, "relay", [bin_, "relay", "--state-dir", work + "/s2", *relay_args,
                                     "--https-listen", "127.0.0.1:0"])
        procs.append(relay)
        port = relay.wait_for(r"agents connect to 127\.0\.0\.1:(\d+)")
        pin = relay.wait_for(r"relay fingerprint: (\S+)")
        https = relay.wait_for(r"share URLs \S+ served on 127\.0\.0\.1:(\d+)")
        token = {"BURROW_TOKEN": open(work + "/s2/agent.token").read().strip()}
        common = ["--relay", "127.0.0.1:" + port, "--relay-pin", pin]

        def agent(name, *argv):
            p = Proc(work, name, [bin_, *argv, *common, "--state-dir", work + "/" + name], token)
            procs.append(p)
            return p

        public = agent("agent-tcp", "tcp", web, "--no-e2ee", "--name", "plain")
        public_port = public.wait_for(r"^tcp \S+ is public at 127\.0\.0\.1:(\d+)")
        e2e = agent("agent-e2e", "tcp", web, "--name", "web")
        agent_pin = e2e.wait_for(r"reachable end to end as web \(certificate ([^)]+)")
        blind = agent("agent-blind", "http", web, "--name", "blind")
        blind.wait_for(r"is public at (\S+)")
        inspect = agent("agent-inspect", "http", web, "--name", "look", "--mode", "inspect")
        inspect.wait_for(r"is public at (\S+)")
        connect = Proc(work, "connect", [bin_, "connect", "web", *common, "--pin", agent_pin,
                                         "--listen", "127.0.0.1:0"])
        procs.append(connect)
        local = connect.wait_for(r"listening on (\S+)")
        for _ in range(3):
            curl(f"http://127.0.0.1:{public_port}/")
            curl(f"http://{local}/")
            for name in ("blind", "look"):
                curl("-k", "--resolve", f"{name}.burrow.localhost:{https}:127.0.0.1",
                     f"https://{name}.burrow.localhost:{https}/")
        time.sleep(2)
    finally:
        for p in reversed(procs):
            p.stop()

    order, seen = [], set()
    for name in ("relay-start", "relay", "agent-tcp", "agent-e2e", "agent-blind", "agent-inspect",
                 "connect"):
        for fn in functions(os.path.join(work, name + ".cg"), "/" + os.path.basename(bin_)):
            if fn not in seen:
                seen.add(fn)
                order.append(fn)
    with open(args.out, "w") as f:
        f.write("# The functions burrow's roles run, in the order the linker places them\n"
                "# (scripts/symbol-order.py wrote this; lld --symbol-ordering-file).\n")
        f.write("\n".join(order) + "\n")
    print(f"{len(order)} functions -> {args.out}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
