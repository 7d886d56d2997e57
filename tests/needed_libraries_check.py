#!/usr/bin/env python3
"""Checks which shared libraries the release binary loads at every start, and how it relocates.

    needed_libraries_check.py BURROW_BINARY [--packed-relocations]

Each library the binary names (DT_NEEDED) is mapped into every burrow process, and the pages the
loader and start-up touch stay resident (docs/performance.md, "Two shared libraries fewer"). Only
OpenSSL and the C library may be named: libm came with toml++'s formatter (one log10) and
libxcrypt is opened only when --basic-auth checks a hash. With --packed-relocations the binary must
also carry its relative relocations packed (DT_RELR, lld 15's -z pack-relative-relocs) and no
more than a few hundred unpacked ones.
"""
import re
import subprocess
import sys

ALLOWED = {"libssl.so.3", "libcrypto.so.3", "libc.so.6", "ld-linux-x86-64.so.2"}
MAX_UNPACKED = 400  # R_X86_64_RELATIVE left in .rela.dyn (thousands when unpacked)


def main():
    binary = sys.argv[1]
    packed = "--packed-relocations" in sys.argv[2:]
    dynamic = subprocess.run(["readelf", "-dW", binary], capture_output=True, text=True,
                             check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    print(f"{binary} loads: {', '.join(sorted(needed))}")
    failed = False
    if needed - ALLOWED:
        print(f"FAIL: it also loads {', '.join(sorted(needed - ALLOWED))}: every burrow process "
              "maps it; open it where it is used (dlopen) or drop what calls it")
        failed = True
    if packed:
        relocs = subprocess.run(["readelf", "-rW", binary], capture_output=True, text=True,
                                check=True).stdout
        relative = relocs.count("R_X86_64_RELATIVE")
        print(f"DT_RELR {'present' if '(RELR)' in dynamic else 'absent'}, "
              f"{relative} relative relocations unpacked")
        if "(RELR)" not in dynamic or relative > MAX_UNPACKED:
            print("FAIL: relative relocations are not packed (-z pack-relative-relocs, lld 15)")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
