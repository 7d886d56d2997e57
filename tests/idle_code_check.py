#!/usr/bin/env python3
"""Checks that an idle relay's code stays where cmake/burrow.order put it.

    idle_code_check.py BURROW_BINARY ORDER_FILE

Starts `burrow relay` on 127.0.0.1 with a fresh state directory, waits for it to be ready and
then for a few of its housekeeping ticks, and reads which pages of the binary's code are in its
page table (/proc/PID/pagemap). The kernel maps code in windows of 64 KiB around each page that
runs, so every page of code the relay ran, and its neighbours, shows. Pages of the text far from
the functions the order file lists for an idle relay (the groups headed "the C runtime..." and
"an idle relay...") mean the relay now runs code the file does not list: new start-up code since
scripts/symbol-order.py last ran, whose windows each add to every relay's resident memory. Fails then, naming the functions found there;
rerun the script. The other executable sections (.init, .plt) are left out: the linker puts them
after the text, and they run in every process.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

WINDOW = 64 * 1024  # the kernel's fault-around
PAGE = os.sysconf("SC_PAGE_SIZE")
READY_DEADLINE = 30  # seconds
IDLE = 3  # seconds of housekeeping after the relay is ready
ALLOWED_PAGES = 2 * WINDOW // PAGE  # two windows' worth of stray pages
# The headings of the groups an idle relay runs (scripts/symbol-order.py, GROUPS).
IDLE_RELAY_GROUPS = ("# the C runtime", "# an idle relay")


def listed_for_idle_relay(order_file):
    """The names in the order file's groups for an idle relay (each headed by a comment line)."""
    names, wanted = [], False
    for line in open(order_file):
        line = line.strip()
        if line.startswith("#"):
            wanted = line.startswith(IDLE_RELAY_GROUPS)
        elif line and wanted:
            names.append(line)
    return names


def elf(binary):
    """(functions by name: (vaddr, size), the executable segment's (offset, vaddr),
    [(offset, size)] of executable sections other than .text)."""
    where = {}
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            where.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
    segs = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True,
                          check=True).stdout
    load = [l.split() for l in segs.splitlines() if l.strip().startswith("LOAD")]
    exe = next(s for s in load if "E" in "".join(s[6:-1]))
    secs = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True,
                          check=True).stdout
    others = []
    for m in re.finditer(r"\]\s+(\S+)\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S+\s+"
                         r"(\S*X\S*)", secs):
        if m.group(1) != ".text":
            others.append((int(m.group(2), 16), int(m.group(3), 16)))
    return where, (int(exe[1], 16), int(exe[2], 16)), others


def resident_code_pages(pid, binary):
    """File offsets of the binary's code pages present in the process's page table."""
    real = os.path.realpath(binary)
    pages = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            f = line.split()
            if len(f) < 6 or f[5] != real or not f[1].startswith("r-x"):
                continue
            lo, hi = (int(v, 16) for v in f[0].split("-"))
            offset = int(f[2], 16)
            for addr in range(lo, hi, PAGE):
                pagemap.seek(addr // PAGE * 8)
                if struct.unpack("Q", pagemap.read(8))[0] >> 63:
                    pages.append(offset + addr - lo)
    return pages


def main():
    binary, order_file = sys.argv[1], sys.argv[2]
    names = listed_for_idle_relay(order_file)
    where, (seg_offset, seg_vaddr), others = elf(binary)
    spans = [where[n] for n in names if n in where]
    if not names:
        print(f"{order_file} has no groups for an idle relay: rerun scripts/symbol-order.py")
        return 1
    if len(spans) < len(names) // 2:
        print(f"{len(spans)} of the {len(names)} functions listed for an idle relay are in "
              f"{binary}: rerun scripts/symbol-order.py")
        return 1
    to_offset = seg_offset - seg_vaddr
    lo = min(a for a, _ in spans) + to_offset
    hi = max(a + s for a, s in spans) + to_offset
    print(f"{len(spans)} functions listed for an idle relay, file offsets {lo:#x}-{hi:#x} "
          f"({(hi - lo) // 1024} KiB)")

    work = tempfile.mkdtemp(prefix="burrow-idle-code.")
    log = open(os.path.join(work, "relay.log"), "w+")
    relay = subprocess.Popen([binary, "relay", "--state-dir", os.path.join(work, "state"),
                              "--listen", "127.0.0.1:0", "--public-bind", "127.0.0.1",
                              "--port-range", "0", "--https-listen", "127.0.0.1:0",
                              "--http-listen", "127.0.0.1:0"],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_DEADLINE
        while "relay ready" not in open(log.name).read():
            if relay.poll() is not None or time.monotonic() > deadline:
                print("the relay did not get ready:\n" + open(log.name).read())
                return 1
            time.sleep(0.1)
        time.sleep(IDLE)
        pages = resident_code_pages(relay.pid, binary)
    finally:
        relay.terminate()
        try:
            relay.wait(READY_DEADLINE)
        except subprocess.TimeoutExpired:
            relay.kill()
            relay.wait()
        shutil.rmtree(work)

    def near(page, start, end):
        return start - WINDOW <= page < end + WINDOW

    stray = [p for p in pages
             if not near(p, lo, hi) and not any(near(p, o, o + s) for o, s in others)]
    print(f"{len(pages)} pages of code resident in the idle relay, {len(stray)} of them away "
          f"from the listed functions and the other executable sections (allowed: "
          f"{ALLOWED_PAGES})")
    if len(stray) > ALLOWED_PAGES:
        by_offset = sorted((a + to_offset, s, n) for n, (a, s) in where.items())
        for p in stray[:40]:
            inside = [n for a, s, n in by_offset if a < p + PAGE and a + s > p]
            print(f"  {p:#x}: {inside[0][:100] if inside else '?'}")
        print("the idle relay runs code cmake/burrow.order does not list: rerun "
              "scripts/symbol-order.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
