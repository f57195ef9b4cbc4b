#!/usr/bin/env python3
"""Guest instructions per kernel function, from insns.so's block counts.

usage: insns.py SYSTEM_MAP COUNTS [BASE] [--per N] [--top K]

COUNTS (and BASE) are files written by bench/kernel/insns.so. With BASE, the
output is COUNTS minus BASE: two guest runs that differ only in the number of
calls measured (N more in COUNTS) give the instructions each call adds, per
function, once divided by N (--per). Functions are named by System.map; a
block outside every text symbol (user space, the vDSO) counts as "[user]".
"""

import bisect
import sys
from collections import defaultdict


def symbols(path):
    """Sorted start addresses of the text symbols and their names."""
    syms = []
    with open(path, encoding="ascii", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def fold(path, starts, names):
    """Instructions executed per function in one counts file."""
    per = defaultdict(int)
    with open(path, encoding="ascii") as f:
        for line in f:
            vaddr, insns, execs = line.split()
            addr = int(vaddr, 16)
            if addr < 0xFFFF800000000000:
                name = "[user]"
            else:
                i = bisect.bisect_right(starts, addr) - 1
                name = names[i] if i >= 0 else "[unknown]"
            per[name] += int(insns) * int(execs)
    return per


def main(argv):
    per, top, args = 1, 60, []
    it = iter(argv)
    for a in it:
        if a == "--per":
            per = int(next(it))
        elif a == "--top":
            top = int(next(it))
        else:
            args.append(a)
    if len(args) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[2])
    starts, names = symbols(args[0])
    counts = fold(args[1], starts, names)
    if len(args) == 3:
        for name, n in fold(args[2], starts, names).items():
            counts[name] -= n
    total = sum(counts.values())
    rows = sorted(counts.items(), key=lambda kv: -abs(kv[1]))[:top]
    print(f"{total / per:12.1f}  total")
    for name, n in rows:
        print(f"{n / per:12.1f}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
