"""The burrow modes over TCP: relay plus `burrow tcp` agents (encrypted link, link without
encryption, end to end with `burrow connect`) and the unpinned --workers variant."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from ..columns import LADDER_ABSOLUTE, MANY_TIMEOUT, RELAY_ABSOLUTE, at_least, mode_targets
from ..common import LOOPBACK, READY_TIMEOUT, BenchError
from ..net import free_port, wait_listening
from ..procs import Proc
from ..sysinfo import cmd_version, proc_status_kib
from .base import Mode


class BurrowMode(Mode):
    """burrow relay + one `burrow tcp` agent per target (encrypted link)."""

    name = "burrow"
    description = "burrow relay + `burrow tcp` agent (TLS 1.3 link)"
    # Issue 6 "Targets", encrypted link (the default), as ratios to socat.
    targets, abs_checks = mode_targets(
        {"bulk1.gbps": 0.65, "bulk8.gbps": 0.65, "http1k_c1.rps": 0.8, "http1k_c50.rps": 1.5,
         "http1k_c50_close.rps": 4.0, "http1m_c50.rps": 0.65, "http1k_c1000.rps": 1.6},
        LADDER_ABSOLUTE, RELAY_ABSOLUTE)
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
    targets, abs_checks = mode_targets(
        {"bulk1.gbps": 1.0, "bulk8.gbps": 1.0, "http1k_c1.rps": 0.85, "http1k_c50.rps": 1.55,
         "http1k_c50_close.rps": 4.5, "http1m_c50.rps": 1.0, "http1k_c1000.rps": 1.6},
        LADDER_ABSOLUTE)


class BurrowE2eeMode(BurrowMode):
    """burrow relay + `burrow tcp` agent (end to end) + `burrow connect` on the load's side."""

    name = "burrow-e2ee"
    description = ("burrow relay + `burrow tcp` agent + `burrow connect --listen`: one TLS 1.3 "
                   "session between connect and the agent keys each connection's stream (session "
                   "keys, the default), its records carried as sealed frames next to the TLS 1.3 "
                   "links' own records (the default); connect pinned to the tunnel CPU too")
    session_keys = True
    targets: dict = {}
    abs_checks: dict = {}
    supports_many = False
    compare_to = "burrow"
    # Issue 3, as ratios to the plain tunnel in the same round.
    targets_vs = {
        "bulk1.gbps": at_least(0.5),
        "http1k_c50.rps": at_least(0.8),
    }
    RX_E2EE = r"reachable end to end as (\S+) \(certificate (sha256:[0-9a-f]{64})\)"
    RX_LISTEN = r"listening on 127\.0\.0\.1:(\d+) for "

    def start(self, target_port: int) -> int:
        a = self.start_agent(target_port, "tcp", str(target_port), "--state-dir",
                             str(self.agent_state(target_port)))
        m = a.wait_for(self.RX_E2EE)
        argv = [self.ctx.args.burrow, "connect", m.group(1), "--relay",
                f"{LOOPBACK}:{self.relay_port}", "--relay-pin", self.fingerprint,
                "--pin", m.group(2), "--listen", f"{LOOPBACK}:0"]
        if not self.session_keys:  # the default is on; a build from before has no such flag
            argv += ["--session-keys", "false"]
        c = self.ctx.procs.start(f"burrow-connect-{target_port}", argv, self.tunnel_cpu)
        self.agents.append(c)  # stopped and measured with the agents
        port = int(c.wait_for(self.RX_LISTEN).group(1))
        wait_listening(port, "burrow connect", proc=c)
        return port


class BurrowE2eeHandshakeMode(BurrowE2eeMode):
    """As burrow-e2ee with a TLS handshake per connection: what session keys buy."""

    name = "burrow-e2ee-handshake"
    description = ("as burrow-e2ee with `burrow connect --session-keys false`: a TLS 1.3 "
                   "handshake (resumed) per connection, on its own records (ALPN burrow-e2ee/2)")
    session_keys = False
    compare_to = "burrow-e2ee"
    targets_vs: dict = {}


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
