#!/usr/bin/env python3
"""How many bytes of user stack snapshot give the caller of each system call
of a library (default: the C library of this machine).

At a `syscall` instruction, the caller of the function that makes it is the
return address at CFA - 8, where the CFA is given by the function's CFI
(`.eh_frame`). When the CFA is rsp + N, a snapshot of N bytes from sp holds
that return address: this is what `--user-stacks deferred,SIZE` must hold for
frame-pointer code to get the caller of a frameless wrapper. A CFA computed
from rbp means the function keeps a frame pointer: the kernel's walk finds
its caller without a snapshot.

usage: bench/snapshot_sizes.py [LIBRARY]   (needs objdump and readelf)
"""

import bisect
import re
import subprocess
import sys
from collections import Counter

FDE = re.compile(r"^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")
ROW = re.compile(r"^([0-9a-f]{8,16}) (\S+)")
SIZES = (8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 4096)


def syscall_sites(lib):
    """(address, function) of every syscall instruction of lib."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib], capture_output=True, text=True,
                         check=True).stdout
    fn, sites = "?", []
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            fn = m.group(2).split("@")[0]
        elif "\tsyscall" in line:
            sites.append((int(line.split(":")[0], 16), fn))
    return sites


def fdes(lib):
    """[(start, end, [(address, CFA rule)])] of lib's .eh_frame, sorted."""
    # readelf exits 1 for warnings about sections other than .eh_frame
    out = subprocess.run(["readelf", "--debug-dump=frames-interp", lib], capture_output=True,
                         text=True).stdout
    table, cur = [], None
    for line in out.splitlines():
        m = FDE.match(line)
        if m:
            cur = (int(m.group(1), 16), int(m.group(2), 16), [])
            table.append(cur)
            continue
        m = ROW.match(line)
        if m and cur is not None:
            cur[2].append((int(m.group(1), 16), m.group(2)))
    table.sort()
    return table


def needed(sites, table):
    """Per site: bytes of snapshot needed (int), 'fp' (CFA from rbp) or None (no CFI)."""
    starts = [f[0] for f in table]
    res = []
    for addr, fn in sites:
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or not table[i][0] <= addr < table[i][1]:
            res.append((fn, None))
            continue
        cfa = "rsp+8"  # the CIE's initial rule on x86_64
        for loc, rule in table[i][2]:
            if loc <= addr:
                cfa = rule
        m = re.fullmatch(r"rsp\+(\d+)", cfa)
        res.append((fn, int(m.group(1)) if m else "fp" if cfa.startswith("rbp") else None))
    return res


def main():
    lib = sys.argv[1] if len(sys.argv) > 1 else "/lib/x86_64-linux-gnu/libc.so.6"
    res = needed(syscall_sites(lib), fdes(lib))
    n = len(res)
    fp = sum(1 for _, v in res if v == "fp")
    other = sum(1 for _, v in res if v is None)
    sized = Counter(v for _, v in res if isinstance(v, int))
    print(f"{lib}: {n} syscall instructions; {fp} in functions with a frame pointer, {other} without CFI")
    print("| snapshot | syscall sites whose caller it holds | functions still missing (first 6) |")
    print("|---|---|---|")
    for size in SIZES:
        ok = fp + sum(c for v, c in sized.items() if v <= size)
        missing = sorted({fn for fn, v in res if isinstance(v, int) and v > size})
        print(f"| {size} B | {ok} of {n} ({100 * ok / n:.0f} %) | {', '.join(missing[:6])} |")


if __name__ == "__main__":
    main()
