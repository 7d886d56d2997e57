"""Checks before a run: tools the selected modes need, and modes this machine or binary
cannot run."""

from __future__ import annotations

import shutil

from .common import SSHD, log
from .modes import MODES, link_encryption_supported


def missing_tools(args) -> list[str]:
    """Tools the selected modes and columns need that are not installed."""
    modes = args.mode_list
    uses_socat = bool({"socat", "socat-chain"} & set(modes))
    tools = ["nginx", "wrk", "iperf3"] + (["socat"] if uses_socat else []) \
        + (["openssl"] if any(MODES[m].tls_target for m in modes) else []) \
        + ([] if args.no_pin else ["taskset"]) \
        + (["ssh", "ssh-keygen", SSHD] if "ssh-r" in modes else []) \
        + (["strip"] if args.burrow else [])
    return [t for t in tools if not shutil.which(t)]


def drop_unavailable_modes(args) -> str | None:
    """ssh-r without OpenSSH and burrow-plain with a binary that has no --link-encryption:
    left out of the default mode list (said in the log), an error if asked for by name."""
    unavailable = {}
    if "ssh-r" in args.mode_list and not all(shutil.which(t) for t in ("ssh", "ssh-keygen",
                                                                          SSHD)):
        unavailable["ssh-r"] = f"OpenSSH (ssh, ssh-keygen, {SSHD}) is not installed"
    if "burrow-plain" in args.mode_list and not link_encryption_supported(args.burrow):
        unavailable["burrow-plain"] = (f"{args.burrow} has no --link-encryption (neither "
                                       "`burrow relay --help` nor `burrow tcp --help` "
                                       "mentions it)")
    for m, why in unavailable.items():
        if args.modes_given:
            return f"mode {m}: {why}"
        log(f"leaving out mode {m}: {why}")
        args.mode_list.remove(m)
    return None
