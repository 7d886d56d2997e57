"""The Mode interface, and the modes without a tunnel of their own (direct) or with a
plain TCP relay (socat, and two of them in a chain)."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from ..columns import COLUMNS
from ..common import LOOPBACK
from ..net import free_port, wait_listening
from ..procs import Proc
from ..sysinfo import installed_size

if TYPE_CHECKING:
    from ..context import Context
    from ..targets import Targets


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
    forks_per_connection = False  # True: the processes that carry the bytes exit with them

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


class DirectMode(Mode):
    name = "direct"
    description = "load generator talks straight to the target"
    tunnel = False

    def start(self, target_port: int) -> int:
        return target_port


class SocatMode(Mode):
    name = "socat"
    description = "socat TCP-LISTEN:P,fork,reuseaddr,bind=127.0.0.1 TCP:127.0.0.1:target"
    forks_per_connection = True

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
        return {"socat": installed_size(shutil.which("socat"))}


class SocatChainMode(SocatMode):
    """Two socats on the tunnel CPU, the first forwarding to the second: the shape of a relay
    and an agent (two processes, one hop more than socat), with nothing else to do.  A
    reference like direct: what any tunnel built of a relay and an agent can reach here."""

    name = "socat-chain"
    description = ("two socats as above on the tunnel CPU, the first forwarding to the second, "
                   "the second to the target: the shape of a relay and an agent (two "
                   "processes, one hop more than socat) with no framing and no encryption; a "
                   "reference, not a tunnel")

    def describe(self) -> str:
        return self.description

    def start(self, target_port: int) -> int:
        inner = super().start(target_port)
        outer = super().start(inner)
        # The listener the load reaches comes first: its RSS is the one reported.
        self.procs.insert(0, self.procs.pop())
        return outer
