"""Child processes: each in its own process group, logged, pinned, and stopped (SIGTERM,
then SIGKILL) on exit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from .common import READY_TIMEOUT, STOP_GRACE, BenchError, log


class Proc:
    """A child process in its own process group; stdout+stderr go to a log
    file and are scanned line by line by a reader thread."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, env=env)
        self.pid = self.popen.pid
        self._thread = threading.Thread(target=self._reader, daemon=True)
        self._thread.start()

    def _reader(self) -> None:
        # Keep draining until EOF so a chatty child never blocks on a full pipe.
        with open(self.log_path, "w", encoding="utf-8", errors="replace") as f:
            for raw in self.popen.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                f.write(line + "\n")
                f.flush()
                with self._cond:
                    if len(self.lines) < 10000:
                        self.lines.append(line)
                    self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _scan(self, pattern: str, timeout: float, done, progress: str, poll: float):
        """Feed each new output line's match of pattern to done(match) until it returns a
        value (returned here); raise on timeout or exit, saying progress()."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                while seen < len(self.lines):
                    m = rx.search(self.lines[seen])
                    seen += 1
                    if m and (result := done(m)) is not None:
                        return result
                if self._eof:
                    raise BenchError(f"{self.name} exited (rc={self.popen.poll()}) having "
                                     f"printed {progress()} /{pattern}/; see "
                                     f"{self.log_path}:\n" + self.tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"{self.name} printed {progress()} /{pattern}/ within "
                                     f"{timeout:.0f} s; see {self.log_path}:\n" + self.tail())
                self._cond.wait(min(left, poll))

    def wait_for(self, pattern: str, timeout: float = READY_TIMEOUT) -> re.Match:
        """Wait for an output line matching pattern (regex); raise on timeout/exit."""
        return self._scan(pattern, timeout, lambda m: m, lambda: "no line matching", 0.2)

    def wait_count(self, pattern: str, n: int, timeout: float) -> None:
        """Wait until n distinct values of the regex's group 1 have been printed (each on a
        line of its own); raise on timeout or exit."""
        found: set[str] = set()

        def done(m):
            found.add(m.group(1))
            return True if len(found) >= n else None

        if n > 0:
            self._scan(pattern, timeout, done, lambda: f"{len(found)} of {n} lines matching", 0.05)

    def tail(self, n: int = 15) -> str:
        with self._cond:
            return "\n".join("    " + l for l in self.lines[-n:])

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL it after STOP_GRACE seconds."""
        if self.alive():
            _killpg(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) ignored SIGTERM for {STOP_GRACE:.0f} s; "
                    "SIGKILL")
        # Also reap whatever is left in the group (e.g. socat's forked children).
        _killpg(self.pid, signal.SIGKILL)
        try:
            self.popen.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            log(f"{self.name} (pid {self.pid}) did not die after SIGKILL")
        self._thread.join(timeout=2)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Procs:
    """Starts processes with CPU pinning and remembers them for cleanup."""

    def __init__(self, logdir: Path, pin: bool, setpriv: str | None):
        self.logdir = logdir
        self.pin = pin
        self.setpriv = setpriv
        self.live: list[Proc] = []
        self._n = 0

    def wrap(self, argv: list[str], cpu: int | None) -> list[str]:
        prefix: list[str] = []
        if self.setpriv:
            prefix += [self.setpriv, "--pdeathsig", "KILL"]
        if self.pin and cpu is not None:
            prefix += ["taskset", "-c", str(cpu)]
        return prefix + argv

    def start(self, name: str, argv: list[str], cpu: int | None, env=None) -> Proc:
        self._n += 1
        path = self.logdir / f"{self._n:03d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.log"
        full = self.wrap(argv, cpu)
        p = Proc(name, full, path, env=env)
        self.live.append(p)
        return p

    def stop(self, p: Proc) -> None:
        p.stop()
        if p in self.live:
            self.live.remove(p)

    def run(self, name: str, argv: list[str], cpu: int | None, timeout: float
            ) -> tuple[int, str]:
        """Run a load generator to completion (bounded by timeout); returns rc, output."""
        p = self.start(name, argv, cpu)
        try:
            p.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"{name} exceeded {timeout:.0f} s; stopping it")
        finally:
            self.stop(p)
        try:
            out = p.log_path.read_text(errors="replace")
        except OSError:
            out = ""
        return p.popen.returncode, out

    def stop_all(self) -> None:
        for p in list(reversed(self.live)):
            try:
                self.stop(p)
            except Exception as e:  # keep cleaning up
                log(f"cleanup of {p.name} failed: {e}")


def _live_comm(pid: int) -> str | None:
    """The command name of a live (not zombie) process, None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    state = stat[stat.rindex(")") + 2:].split()[0]
    return None if state == "Z" else comm


def kill_leftovers(pids: list[int], comm: str) -> None:
    """SIGKILL those of pids still alive and still named comm (a pid taken over by another
    program in the meantime is left alone), after giving them STOP_GRACE seconds."""
    def alive() -> list[int]:
        return [pid for pid in pids if _live_comm(pid) == comm]

    deadline = time.monotonic() + STOP_GRACE
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive():
        log(f"{comm} (pid {pid}) outlived its client; SIGKILL")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
