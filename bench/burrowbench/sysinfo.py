"""What /proc says about processes (CPU time, RSS, PSS) and about the machine, tool versions,
binary sizes and the run's metadata."""

from __future__ import annotations

import datetime as _dt
import os
import re
import resource
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .common import CLK_TCK, HERE, SSHD, log

if TYPE_CHECKING:
    from .context import Context


def all_stats() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, own utime+stime, reaped children cutime+cstime) in ticks."""
    out: dict[int, tuple[int, int, int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rfind(")") + 2:].split()
        # rest[0] is field 3 (state); ppid is field 4, utime..cstime are 14..17.
        try:
            out[int(d)] = (int(rest[1]), int(rest[11]) + int(rest[12]),
                           int(rest[13]) + int(rest[14]))
        except (IndexError, ValueError):
            continue
    return out


def tree_pids(roots: list[int], stats: dict[int, tuple[int, int, int]]) -> list[int]:
    """Every live process under roots (roots included), from an all_stats() snapshot."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    todo = [r for r in roots if r in stats]
    while todo and len(seen) < 100000:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, []))
    return sorted(seen)


def tree_cpu_seconds(roots: list[int]) -> float:
    """CPU seconds used so far by the process trees under roots: every live
    process's own time plus the time of children it has already reaped."""
    if not roots:
        return 0.0
    stats = all_stats()
    total = sum(stats[pid][1] + stats[pid][2] for pid in tree_pids(roots, stats))
    return total / CLK_TCK


def tree_switches(roots: list[int]) -> int:
    """Context switches so far (voluntary and not) of every thread of the live processes under
    roots; a process that has exited no longer counts."""
    if not roots:
        return 0
    total = 0
    for pid in tree_pids(roots, all_stats()):
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    for line in f:
                        if "ctxt_switches:" in line:
                            total += int(line.split()[-1])
            except (OSError, ValueError):
                continue
    return total


def cpu_ticks() -> dict[int, tuple[int, int, int]]:
    """CPU number -> (busy, steal, all) ticks so far, from /proc/stat.  Busy is user, nice,
    system, irq and softirq (the loopback's TCP work runs as softirq on the sending CPU);
    steal is time the hypervisor gave the virtual CPU to someone else."""
    out: dict[int, tuple[int, int, int]] = {}
    try:
        with open("/proc/stat") as f:
            lines = f.readlines()
    except OSError:
        return out
    for line in lines:
        m = re.match(r"cpu(\d+)\s+(.*)", line)
        if not m:
            continue
        v = [int(x) for x in m.group(2).split()[:8]] + [0] * 8
        user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
        busy = user + nice + system + irq + softirq
        out[int(m.group(1))] = (busy, steal, busy + idle + iowait + steal)
    return out


def cpu_busy(before: dict[int, tuple[int, int, int]], after: dict[int, tuple[int, int, int]],
             cpu: int) -> tuple[float, float] | None:
    """(busy, steal) shares of one CPU between two cpu_ticks() snapshots, or None."""
    if cpu not in before or cpu not in after:
        return None
    busy, steal, total = (a - b for a, b in zip(after[cpu], before[cpu]))
    if total <= 0:
        return None
    return busy / total, steal / total


def pss_kib(pid: int) -> float | None:
    """Proportional set size: the process's private pages plus its share of pages it shares
    with others (libraries, the binary), so a sum over processes counts each page once."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def tree_pss_kib(roots: list[int]) -> float | None:
    """Sum of PSS over every process in the trees under roots."""
    pids = tree_pids(roots, all_stats()) if roots else []
    vals = [v for v in (pss_kib(p) for p in pids) if v is not None]
    return sum(vals) if vals else None


def proc_status_kib(pid: int, field: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


class PeakSampler:
    """Samples one process's VmRSS every `interval` seconds while a column runs (a `with`
    block); .peak_kib is the largest sample.  VmHWM would also count earlier columns."""

    def __init__(self, pid: int | None, interval: float = 0.02):
        self.pid = pid
        self.interval = interval
        self.peak_kib: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            v = proc_status_kib(self.pid, "VmRSS") if self.pid else None
            if v is not None and (self.peak_kib is None or v > self.peak_kib):
                self.peak_kib = v
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def raise_nofile(want: int = 65536) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as e:
            log(f"could not raise RLIMIT_NOFILE to {target}: {e}")
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def cmd_version(argv: list[str], pick: str = r".") -> str:
    """First line of `argv`'s output matching the regex pick ("" on failure)."""
    try:
        r = subprocess.run(argv, capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (r.stdout + r.stderr).decode("utf-8", "replace")
    for line in text.splitlines():
        if re.search(pick, line):
            return line.strip()[:120]
    return ""


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def syscall_ns(n: int = 200_000) -> float:
    """What one system call costs here: `getppid` against a builtin that makes none, best of 3.

    Burrow and socat differ most in system calls per request, so this decides how their ratios
    read, and it differs by machine: a virtual machine whose kernel entries go through the host
    pays far more per call."""
    best = float("inf")
    call, none = os.getppid, abs
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        t1 = time.perf_counter()
        for _ in range(n):
            none(1)
        t2 = time.perf_counter()
        best = min(best, ((t1 - t0) - (t2 - t1)) / n * 1e9)
    return max(best, 0.0)


def wakeups(ctx: Context) -> dict[str, float | None]:
    """Pipe round trips with both processes on the tunnel CPU, and across to the load CPU."""
    a, b = ctx.args.tunnel_cpu, ctx.args.load_cpu
    out = {"same_cpu": wakeup_round_trip_us(a, a), "cross_cpu": wakeup_round_trip_us(a, b)}
    return {k: (round(v, 1) if v is not None else None) for k, v in out.items()}


def wakeup_round_trip_us(cpu_a: int, cpu_b: int, n: int = 20_000) -> float | None:
    """Microseconds for one byte to go to a process on cpu_b and back over pipes, each side
    blocked in read() until it comes: two wake-ups, best of 3.

    One request at a time through a tunnel is a chain of such wake-ups (wrk and nginx on one CPU,
    the tunnel on the other); where waking a CPU that has gone idle is slow, as on a virtual
    machine, the cross-CPU figure, not the tunnel's own work, sets that column."""
    try:
        saved = os.sched_getaffinity(0)
    except OSError:
        return None
    best = float("inf")
    for _ in range(3):
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        pid = os.fork()
        if pid == 0:  # the echo: pinned, blocking reads, then out
            try:
                os.sched_setaffinity(0, {cpu_b})
                for _ in range(n):
                    os.write(from_child, os.read(to_child, 1))
            finally:
                os._exit(0)
        try:
            os.sched_setaffinity(0, {cpu_a})
            os.write(from_parent, b"x")  # the child is up and pinned once this comes back
            os.read(to_parent, 1)
            t0 = time.perf_counter()
            for _ in range(n - 1):
                os.write(from_parent, b"x")
                os.read(to_parent, 1)
            best = min(best, (time.perf_counter() - t0) / (n - 1) * 1e6)
        except OSError:
            return None
        finally:
            os.sched_setaffinity(0, saved)
            os.waitpid(pid, 0)
            for fd in (to_child, from_parent, to_parent, from_child):
                os.close(fd)
    return best


def meltdown_mitigation() -> str:
    try:
        with open("/sys/devices/system/cpu/vulnerabilities/meltdown") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def installed_size(path: str | None) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0


def stripped_size(binary: str, tmp: Path) -> int:
    """Size in bytes of `strip -o` of the binary (0 if strip fails)."""
    out = tmp / "burrow.stripped"
    r = subprocess.run(["strip", "-o", str(out), binary], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        log(f"strip failed: {r.stderr.strip()[-300:]}")
        return 0
    size = out.stat().st_size
    out.unlink()
    return size


def binary_sizes(ctx: Context) -> dict[str, int]:
    sizes: dict[str, int] = {}
    if ctx.args.burrow:
        if ctx.burrow_stripped_bytes:
            sizes["burrow (stripped)"] = ctx.burrow_stripped_bytes
        sizes["burrow (as built)"] = installed_size(ctx.args.burrow)
    for name, path in (("socat", shutil.which("socat")), ("sshd", SSHD),
                       ("ssh", shutil.which("ssh"))):
        if path and os.path.exists(path):
            sizes[name] = installed_size(path)
    return sizes


def run_meta(ctx: Context, command: str, ncpu: int, nofile: int) -> dict:
    args = ctx.args
    versions = {
        "nginx": cmd_version(["nginx", "-v"]),
        "wrk": re.sub(r"\s+Copyright.*", "", cmd_version(["wrk", "-v"])),
        "iperf3": re.sub(r"\s+\(cJSON.*", "", cmd_version(["iperf3", "-v"])),
        "socat": re.sub(r"\s+on .*", "", cmd_version(["socat", "-V"], r"^socat version")),
    }
    if "ssh-r" in args.mode_list:
        versions["openssh"] = cmd_version(["ssh", "-V"], r"OpenSSH")
    if args.burrow:
        versions["burrow"] = cmd_version([args.burrow, "--version"])
    git = ""
    try:
        r = subprocess.run(["git", "-C", str(HERE.parent), "describe", "--always",
                            "--dirty"], capture_output=True, timeout=5, text=True)
        git = r.stdout.strip() or "(no commit yet)"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {
        "command": command,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "nproc": ncpu, "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
        "kernel": os.uname().release, "versions": versions, "git": git,
        "nofile": nofile, "loadavg_start": loadavg(), "binary_sizes": binary_sizes(ctx),
        "syscall_ns": round(syscall_ns()), "meltdown": meltdown_mitigation(),
        "wakeup_us": wakeups(ctx),
    }
