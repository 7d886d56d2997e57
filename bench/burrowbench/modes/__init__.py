"""How the load reaches the target.  Add a mode by subclassing Mode and registering it in
MODES."""

from __future__ import annotations

from .base import DirectMode, Mode, SocatChainMode, SocatMode
from .burrow import (BurrowE2eeMode, BurrowE2eeHandshakeMode, BurrowMode, BurrowPlainMode,
                     BurrowWorkersMode, link_encryption_supported)
from .https import (BurrowHttpsBlindMode, BurrowHttpsInspectMode, BurrowHttpsPassthroughMode,
                    HttpsDirectMode)
from .ssh import SshReverseMode

MODES: dict[str, type[Mode]] = {m.name: m for m in (
    DirectMode, HttpsDirectMode, SocatMode, SocatChainMode, SshReverseMode, BurrowMode,
    BurrowPlainMode, BurrowE2eeMode, BurrowE2eeHandshakeMode, BurrowHttpsBlindMode,
    BurrowHttpsInspectMode, BurrowHttpsPassthroughMode)}

__all__ = ["MODES", "Mode", "DirectMode", "HttpsDirectMode", "SocatMode", "SocatChainMode",
           "SshReverseMode", "BurrowMode", "BurrowPlainMode", "BurrowE2eeMode",
           "BurrowE2eeHandshakeMode", "BurrowHttpsBlindMode", "BurrowHttpsInspectMode",
           "BurrowHttpsPassthroughMode", "BurrowWorkersMode", "link_encryption_supported"]
