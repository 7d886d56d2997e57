"""Constants, logging and the exceptions every module of the benchmark shares."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# bench/: the templates (nginx*.conf.in), wrk-loopback.lua; its parent is the repository.
HERE = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 10.0  # seconds to wait for any process to become ready
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
CLK_TCK = os.sysconf("SC_CLK_TCK")
SHARE_DOMAIN = "burrow.localhost"  # the relay's default --domain for HTTPS share URLs
SHARE_NAME = "bench"  # the HTTPS modes' share URL: https://bench.burrow.localhost:PORT

SSHD = "/usr/sbin/sshd"  # sshd refuses to start unless run by its absolute path


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


class Interrupted(BaseException):
    """Raised from the signal handler so `finally` blocks clean up."""
