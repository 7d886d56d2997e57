#!/usr/bin/env python3
"""Checks that the linker placed burrow's functions in the order of cmake/burrow.order.

    symbol_order_check.py BURROW_BINARY ORDER_FILE

The functions the roles run must sit together at the start of the binary's text: each listed
function the binary has must lie within the span their sizes add up to (plus a little for
alignment), measured from the lowest of them. Fails when the link ignored the file (another
linker, the option lost), and when fewer than half of the listed names are left in the binary
(the file is stale: rerun scripts/symbol-order.py).
"""
import subprocess
import sys


def main():
    binary, order_file = sys.argv[1], sys.argv[2]
    wanted = [line.strip() for line in open(order_file)
              if line.strip() and not line.startswith("#")]
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    where = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            where.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
    found = [where[n] for n in wanted if n in where]
    print(f"{len(found)} of {len(wanted)} listed functions are in {binary}")
    if len(found) < len(wanted) // 2:
        print("most listed functions are gone: rerun scripts/symbol-order.py")
        return 1
    # Distinct functions only: aliases (a constructor's C1 and C2) share their code.
    spans = sorted(set(found))
    start = spans[0][0]
    total = sum(size for _, size in spans)
    # Functions are aligned to 16 bytes, and sections in between (a caller's cold part) may sit
    # among them; allow a quarter more than their sizes add up to.
    bound = start + total + total // 4 + 4096
    outside = [a for a, _ in spans if a >= bound]
    print(f"{total} bytes of listed code from {start:#x}; {len(outside)} functions beyond "
          f"{bound:#x}")
    if len(outside) > len(spans) // 50:
        print("the listed functions are scattered: the link did not follow the order file")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
