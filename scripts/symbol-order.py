#!/usr/bin/env python3
"""Writes cmake/burrow.order: the functions of `burrow` that its roles run, for the linker.

The release build links `burrow` with lld and this file (`--symbol-ordering-file`), so the code a
relay, an agent and `burrow connect` run sits together at the start of the binary's text, and the
rest (other commands, error paths, code no role reached here) after it. The kernel maps a
program's code into its resident memory in 64 KiB windows around each page it runs; with the
running code scattered over 3 MiB, nearly all of it was resident (`docs/performance.md`, "The
binary's code, in the order it runs").

How: each role runs under valgrind's callgrind (`--demangle=no`) on 127.0.0.1:

1. a relay that starts with a fresh state directory and idles for a few seconds, where its
   profile is cut (`callgrind_control --dump`); then three agents (`burrow tcp --no-e2ee`,
   `burrow tcp`, `burrow http`) that register, idle and stop before any visitor, and the relay's
   idle seconds with their tunnels and its stop;
2. a relay with HTTPS share URLs; agents for a public TCP port (`burrow tcp --no-e2ee`), end to end
   (`burrow tcp`) with `burrow connect`, and HTTPS share URLs in blind and inspect modes; curl
   requests through each.

The file lists, each function once and in groups under comment lines (see arrange()): the C
runtime's start, what an idle relay runs that no idle agent does, what both run, what only idle
agents run, what a relay with idle tunnels adds, then what traffic adds. Names that no longer
exist are ignored by the linker, so an old file only costs memory, never correctness; the test
`idle_relay_code_listed` (tests/idle_code_check.py) fails when an idle relay runs code the file
does not list. Rerun this then, and after large changes, on a fresh release build:

    python3 scripts/symbol-order.py [--burrow build/release/burrow] [--out cmake/burrow.order]
                                    [--keep]

--keep leaves callgrind's files and the roles' logs in the work directory.
Needs valgrind and curl (apt install valgrind curl). Takes about half a minute.
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
        self.argv = argv
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

    def dump(self):
        """Cuts the profile here: what ran so far goes to OUT.1, the rest to OUT at exit."""
        subprocess.run(["callgrind_control", "--dump", str(self.p.pid)], check=True,
                       stdout=subprocess.DEVNULL, timeout=DEADLINE)
        until = time.monotonic() + DEADLINE
        while not os.path.exists(self.out + ".1"):
            if time.monotonic() > until:
                sys.exit(f"{self.name}: callgrind wrote no {self.out}.1")
            time.sleep(0.2)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def start_relay(relay):
    """Waits for the relay's start; returns an agent's flags, its token and the HTTPS port."""
    port = relay.wait_for(r"agents connect to 127\.0\.0\.1:(\d+)")
    pin = relay.wait_for(r"relay fingerprint: (\S+)")
    https = relay.wait_for(r"share URLs \S+ served on 127\.0\.0\.1:(\d+)")
    state = re.search(r"--state-dir (\S+)", " ".join(relay.argv)).group(1)
    token = {"BURROW_TOKEN": open(state + "/agent.token").read().strip()}
    return ["--relay", "127.0.0.1:" + port, "--relay-pin", pin], token, https


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
    # Addresses without a symbol and callgrind's own pseudo-functions cannot be ordered; a
    # function in a cycle of recursion is named again with a suffix ('2).
    names = [re.sub(r"'\d+$", "", n) for n in names]
    return [n for n in names if not n.startswith("0x") and " " not in n and "(" not in n]


# What runs before main() and at exit, in the C runtime's own objects (crt1.o: _start; crtbegin.o:
# the rest), which callgrind shows as "(below main)" and unnamed addresses. Each holds a section
# of its own that the linker would put after every listed function.
RUNTIME = ("_start", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
           "frame_dummy")
# The runs of roles that start and then sit idle, and of roles that carry traffic.
IDLE = ("relay-start", "idle-tcp", "idle-e2e", "idle-http", "relay-tunnels")
AGENTS = ("idle-tcp", "idle-e2e", "idle-http")
BUSY = ("relay", "agent-tcp", "agent-e2e", "agent-blind", "agent-inspect", "connect")


# The headings of arrange()'s groups, as comment lines in the file (the linker skips them).
# tests/idle_code_check.py finds an idle relay's code by the headings that start with "the C
# runtime" and "an idle relay".
GROUPS = ("the C runtime's start and exit",
          "an idle relay: its start and housekeeping",
          "an idle relay and idle agents",
          "idle agents",
          "a relay with idle tunnels",
          "traffic")


def arrange(runs):
    """Every function that ran, each once, for the linker: a list of (heading, functions).

    The code an idle process runs sits at the start, and each idle role's in as few places as
    possible: the C runtime's start first, then what of the relay's start no idle agent runs,
    what it shares with idle agents (the most widely shared first), what only idle agents run
    (likewise), and what the relay runs once tunnels are registered; each group in the order the
    functions were first seen. An idle relay then touches one stretch of code, and an idle agent
    the stretch after the relay's own. What only traffic runs follows, in run order.
    """
    roles, seen = {fn: set() for fn in RUNTIME}, []
    for name in IDLE:
        for fn in runs[name]:
            if fn not in roles:
                roles[fn] = set()
                seen.append(fn)
            roles[fn].add(name)

    def group(fn):
        r = roles[fn]
        relay = "relay-start" in r
        agents = len(r & set(AGENTS))
        first = 1 if relay and not agents else 2 if relay else 3 if agents else 4
        return first, -agents, sorted(r)

    groups = [list(RUNTIME), [], [], [], [], []]
    for fn in sorted(seen, key=group):
        groups[group(fn)[0]].append(fn)
    for name in BUSY:
        for fn in runs[name]:
            if fn not in roles:
                roles[fn] = set()
                groups[-1].append(fn)
    return list(zip(GROUPS, groups))


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
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "curl"):
        if not shutil.which(tool):
            sys.exit(f"needs {tool}: apt install {tool}")
    bin_ = os.path.abspath(args.burrow)
    work = tempfile.mkdtemp(prefix="burrow-order.")
    os.makedirs(os.path.join(work, "site"))
    with open(os.path.join(work, "site", "index.html"), "w") as f:
        f.write("x" * 1024)
    web = str(serve(os.path.join(work, "site")))
    relay_args = ["--listen", "127.0.0.1:0", "--public-bind", "127.0.0.1", "--port-range", "0",
                  "--https-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"]
    procs = []
    try:
        # 1. A fresh relay's start and a few of its housekeeping ticks (its profile is cut there:
        #    relay-start); then agents of each kind that register, idle and stop before any
        #    visitor, and the relay's idle ticks with their tunnels and its stop (relay-tunnels).
        relay = Proc(work, "relay-start", [bin_, "relay", "--state-dir", work + "/s1", *relay_args])
        procs.append(relay)
        common, token, https = start_relay(relay)
        time.sleep(3)
        relay.dump()

        def agent(name, *argv):
            p = Proc(work, name, [bin_, *argv, *common, "--state-dir", work + "/" + name], token)
            procs.append(p)
            return p

        idle = [agent("idle-tcp", "tcp", web, "--no-e2ee", "--name", "quiet"),
                agent("idle-e2e", "tcp", web, "--name", "quiet-e2e"),
                agent("idle-http", "http", web, "--name", "quiet-http")]
        for p in idle:
            p.wait_for(r"is public at (\S+)|reachable end to end as")
        time.sleep(3)
        for p in reversed(procs):
            p.stop()
        procs.clear()

        # 2. A relay with every kind of visitor, through every kind of agent.
        relay = Proc(work, "relay", [bin_, "relay", "--state-dir", work + "/s2", *relay_args])
        procs.append(relay)
        common, token, https = start_relay(relay)
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

    suffix = "/" + os.path.basename(bin_)
    files = {"relay-start": "relay-start.cg.1", "relay-tunnels": "relay-start.cg"}
    runs = {name: functions(os.path.join(work, files.get(name, name + ".cg")), suffix)
            for name in IDLE + BUSY}
    groups = arrange(runs)
    with open(args.out, "w") as f:
        f.write("# The functions burrow's roles run, in the order the linker places them\n"
                "# (scripts/symbol-order.py wrote this; lld --symbol-ordering-file).\n")
        for heading, names in groups:
            f.write(f"# {heading}\n" + "".join(n + "\n" for n in names))
    print(f"{sum(len(names) for _, names in groups)} functions -> {args.out}")
    if args.keep:
        print(f"callgrind's files and the roles' logs are in {work}")
        return
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
