"""The state of one run that the modes and workloads share."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .procs import Procs

if TYPE_CHECKING:
    from .modes.base import Mode
    from .targets import Targets


class Context:
    def __init__(self, args, procs: Procs, tmp: Path):
        self.args = args
        self.procs = procs
        self.tmp = tmp
        self.targets: Targets | None = None
        self.modes: dict[str, Mode] = {}
        self.burrow_stripped_bytes = 0  # `strip -o` of --burrow, measured once per run
