"""ssh-r: OpenSSH's reverse tunnel, a private sshd and one `ssh -N -R` client per target."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from ..columns import MANY_TIMEOUT
from ..common import LOOPBACK, SSHD, BenchError, log
from ..net import free_port, loopback_listeners, pid_listening_on, wait_listening
from ..procs import Proc, kill_leftovers
from ..sysinfo import all_stats, installed_size, proc_status_kib, tree_pids, tree_pss_kib
from .base import Mode


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
        sessions = tree_pids([self.sshd.pid], all_stats())[1:] if self.sshd else []
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
        return {"sshd": installed_size(SSHD), "ssh": installed_size(shutil.which("ssh"))}

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
            while not ports <= loopback_listeners().keys():
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
