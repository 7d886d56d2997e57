"""The HTTPS modes: wrk over TLS straight to nginx, and burrow's HTTPS share URLs (blind,
inspect, passthrough)."""

from __future__ import annotations

from ..columns import at_least
from ..common import SHARE_DOMAIN, SHARE_NAME
from ..net import wait_listening
from .base import DirectMode
from .burrow import BurrowMode


class HttpsDirectMode(DirectMode):
    name = "https-direct"
    description = ("wrk over HTTPS straight to nginx's TLS server (TLS 1.3, self-signed "
                   "ECDSA P-256): what TLS itself costs; HTTP only")
    http_only = True
    tls = True
    tls_target = True
    compare_to = "direct"


class BurrowHttpsBlindMode(BurrowMode):
    """burrow relay + `burrow http` agent: an HTTPS share URL whose TLS ends at the agent."""

    name = "burrow-https-blind"
    description = ("burrow relay + `burrow http --mode blind` agent: wrk speaks HTTPS to the "
                   f"relay's HTTPS listener with SNI {SHARE_NAME}.{SHARE_DOMAIN}, TLS 1.3 ends at "
                   "the agent (certificate from the relay's CA) and the agent speaks HTTP/1.1 "
                   "to nginx; the visitor's TLS crosses the link as sealed frames, not "
                   "encrypted again; HTTP only")
    share_mode = "blind"
    http_only = True
    tls = True
    targets: dict = {}
    abs_checks: dict = {}
    supports_many = False
    compare_to = "burrow"
    # The HTTPS share URL issue, as ratios to the plain TCP tunnel in the same round.
    targets_vs = {
        "http1k_c50.rps": at_least(0.9),
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
                   "TLS bytes on to nginx's TLS server (TLS ends at nginx, on the load CPU), "
                   "as sealed frames on the link; HTTP only")
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
    targets_vs = {"http1k_c50.rps": at_least(0.5)}
