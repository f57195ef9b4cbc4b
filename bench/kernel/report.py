#!/usr/bin/env python3
"""Tables of bench/kernel.sh from what the benchmark guest wrote (bench/kernel/init).

usage: report.py DATA_LOG N

Medians over the rounds of ns per kernel entry and ring-buffer bytes per entry,
then the ratios of deferred to synchronous stacks; with snapshot modes
(snapSIZE), their table against deferred and sync. With
profile lines (P), the function profiler's table instead.
"""
import re
import statistics
import sys
from collections import Counter, defaultdict

MODES = ("none", "events", "sync", "deferred")


def snap_size(mode):
    """Bytes of user_stack_snapshot_size of a snapshot mode (snap512, snap2k), else None."""
    m = re.fullmatch(r"snap(\d+)(k?)", mode)
    return int(m.group(1)) * (1024 if m.group(2) else 1) if m else None


def parse(path):
    runs = defaultdict(list)  # (depth, events, mode) -> [(ns, bytes)]
    frames = defaultdict(Counter)  # (depth, mode) -> Counter(frames per stack entry)
    snaplen = defaultdict(Counter)  # (depth, mode) -> Counter(bytes per snapshot entry)
    prof = defaultdict(list)
    first = defaultdict(list)  # (binary, depth, mode) -> [(ns, bytes, records)]
    samples = defaultdict(list)  # (binary, depth) -> [user_unwind_mapping line]
    head, done, errors = "", False, []
    for line in open(path, errors="replace"):
        f = line.split()
        if not f:
            continue
        if f[0] == "S":
            head = " ".join(f[1:])
        elif f[0] == "E":
            errors.append(" ".join(f[1:]))
        elif f[0] == "D":
            done = True
        elif f[0] == "F" and len(f) == 5:
            frames[(int(f[1]), f[2])][int(f[3])] += int(f[4])
        elif f[0] == "L" and len(f) == 5:
            snaplen[(int(f[1]), f[2])][int(f[3])] += int(f[4])
        elif f[0] == "R" and len(f) >= 6:
            kv = dict(x.split("=", 1) for x in f[5:] if "=" in x)
            if int(kv["overrun"]) != 0:
                errors.append(f"ring buffer overrun, the buffer is too small: {line.strip()}")
            runs[(int(f[2]), int(f[3]), f[4])].append((float(kv["ns"]), int(kv["bytes"])))
        elif f[0] == "P":
            prof[(int(f[1]), f[2])].append(f[3:])
        elif f[0] == "X" and len(f) >= 5:
            kv = dict(x.split("=", 1) for x in f[4:] if "=" in x)
            first[(f[1], int(f[2]), f[3])].append((float(kv["ns"]), int(kv["bytes"]), int(kv["records"])))
        elif f[0] == "M" and len(f) >= 4:
            samples[(f[1], int(f[2]))].append(" ".join(f[3:]))
    return head, done, errors, runs, frames, prof, first, samples, snaplen


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return (max(xs) - min(xs)) / statistics.median(xs) if xs and statistics.median(xs) else 0.0


def bench_tables(runs, frames, n):
    depths = sorted({k[0] for k in runs})
    evs = sorted({k[1] for k in runs})
    rounds = max((len(v) for v in runs.values()), default=0)
    ns = {k: med([x[0] for x in v]) for k, v in runs.items()}
    by = {k: med([x[1] for x in v]) / n for k, v in runs.items()}
    fr = {k: c.most_common(1)[0][0] for k, c in frames.items()}
    out = []
    out.append(f"ns / ring-buffer bytes per kernel entry (getppid), median of {rounds} interleaved rounds")
    out.append("")
    out.append("| user stack depth (frames: sync entry / deferred entry) | events per entry "
               "| no tracing | events only | + sync userstacktrace | + deferred |")
    out.append("|---|---|---|---|---|---|")
    for d in depths:
        for e in evs:
            # a run of some modes only (BENCH_MODES) leaves the others' cells empty
            none = ns.get((d, e, "none"))
            row = [f"{d} ({fr.get((d, 'sync'), '?')} / {fr.get((d, 'deferred'), '?')})", str(e),
                   "-" if none is None else f"{none:.0f}"]
            for m in MODES[1:]:
                k = (d, e, m)
                row.append(f"{ns[k]:.0f} / {by[k]:.0f} B" if k in ns else "-")
            out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("Ratios of the medians above (deferred / sync):")
    out.append("")
    out.append("| depth | events | (a) ns per entry | added ns over events only | "
               "(b) ns per delivered frame, sync / deferred | (b) ratio | (c) bytes per entry |")
    out.append("|---|---|---|---|---|---|---|")
    for d in depths:
        fs, fd = fr.get((d, "sync")), fr.get((d, "deferred"))
        for e in evs:
            if any((d, e, m) not in ns for m in ("sync", "deferred", "events")):
                continue
            s, df, ev = ns[(d, e, "sync")], ns[(d, e, "deferred")], ns[(d, e, "events")]
            add_s, add_d = s - ev, df - ev
            # frames written into the ring buffer per kernel entry: one synchronous stack per
            # event, one deferred stack per entry
            pf_s = add_s / (e * fs) if fs else float("nan")
            pf_d = add_d / fd if fd else float("nan")
            out.append(f"| {d} | {e} | {df / s:.2f} | {add_d / add_s:.2f} | {pf_s:.0f} / {pf_d:.0f} | "
                       f"{pf_d / pf_s:.2f} | {by[(d, e, 'deferred')] / by[(d, e, 'sync')]:.2f} |")
    if any(k[2] == "maps" for k in runs):
        out.append("")
        out.append("Mapping records (userstacktrace_maps) on top of deferred: ns / bytes per entry, "
                   "and what they add")
        out.append("")
        out.append("| depth | events | + deferred | + deferred + maps | added ns | added bytes | "
                   "added bytes in all |")
        out.append("|---|---|---|---|---|---|---|")
        for d in depths:
            for e in evs:
                k, km = (d, e, "deferred"), (d, e, "maps")
                if km not in ns:
                    continue
                out.append(f"| {d} | {e} | {ns[k]:.0f} / {by[k]:.1f} B | {ns[km]:.0f} / {by[km]:.1f} B | "
                           f"{ns[km] - ns[k]:+.0f} | {by[km] - by[k]:+.2f} | {(by[km] - by[k]) * n:+.0f} |")
        out.append("")
        out.append(f"(one measurement = {n} entries after kbench empties the buffer; the cache "
                   "forgets everything at that reset and the stack of kbench's own open() of "
                   "`trace` describes its mapping again, before the timed loop: \"added bytes in "
                   "all\" is that record, \"added ns\" the steady-state cache lookup per entry)")
    worst = max(((spread([x[0] for x in v]), k) for k, v in runs.items() if k[2] != "none"), default=None)
    if worst:
        out.append("")
        out.append(f"Largest spread of ns across rounds (max - min) / median: {worst[0]:.0%} "
                   f"(depth {worst[1][0]}, {worst[1][1]} events, {worst[1][2]}).")
    return out


def snap_tables(runs, snaplen, n):
    """Deferred stacks with a user stack snapshot (snapSIZE modes) against deferred and sync."""
    snaps = sorted({k[2] for k in runs if snap_size(k[2])}, key=snap_size)
    if not snaps:
        return []
    ns = {k: med([x[0] for x in v]) for k, v in runs.items()}
    by = {k: med([x[1] for x in v]) / n for k, v in runs.items()}
    depths = sorted({k[0] for k in runs})
    evs = sorted({k[1] for k in runs})

    def length(d, m):
        c = snaplen.get((d, m))
        return ", ".join(str(x) for x, _ in c.most_common(2)) if c else "?"

    out = ["", "User stack snapshots (user_stack_snapshot_size) on top of deferred: ns / bytes "
           "per kernel entry, and their ratios", "",
           "| depth | events | snapshot size | bytes per snapshot | + deferred | + deferred + snapshot "
           "| added ns / bytes | / deferred: ns, bytes | / sync: ns, bytes |",
           "|---|---|---|---|---|---|---|---|---|"]
    for d in depths:
        for e in evs:
            kd, ks = (d, e, "deferred"), (d, e, "sync")
            for m in snaps:
                k = (d, e, m)
                if k not in ns:
                    continue
                vd = (f"{ns[kd]:.0f} / {by[kd]:.0f} B", f"{ns[k] - ns[kd]:+.0f} / {by[k] - by[kd]:+.0f} B",
                      f"{ns[k] / ns[kd]:.2f}, {by[k] / by[kd]:.2f}") if kd in ns else ("-", "-", "-")
                vs = f"{ns[k] / ns[ks]:.2f}, {by[k] / by[ks]:.2f}" if ks in ns else "-"
                out.append(f"| {d} | {e} | {snap_size(m)} | {length(d, m)} | {vd[0]} | "
                           f"{ns[k]:.0f} / {by[k]:.0f} B | {vd[1]} | {vd[2]} | {vs} |")
    out.append("")
    out.append("(bytes per snapshot: the snapshot data of its stack entries, from `trace` in a "
               "short run; at most the size asked for and what the largest event of a sub-buffer "
               "holds)")
    return out


UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def first_tables(first, samples):
    if not first:
        return []
    out = ["", "First sight: the first kernel entry with a user stack of a fresh process "
           "(only getppid traced, 1 event), median of "
           f"{max(len(v) for v in first.values())} processes", "",
           "| binary | depth | file mappings described | + deferred: ns / bytes | "
           "+ deferred + maps: ns / bytes | added ns | added bytes | bytes per record |",
           "|---|---|---|---|---|---|---|---|"]
    for b, d in sorted({(k[0], k[1]) for k in first}):
        k, km = (b, d, "deferred"), (b, d, "maps")
        if k not in first or km not in first:
            continue
        nd, bd = med([x[0] for x in first[k]]), med([x[1] for x in first[k]])
        nm, bm = med([x[0] for x in first[km]]), med([x[1] for x in first[km]])
        recs = med([x[2] for x in first[km]])
        per = f"{(bm - bd) / recs:.0f}" if recs else "-"
        out.append(f"| {b} | {d} | {recs:.0f} | {nd:.0f} / {bd:.0f} | {nm:.0f} / {bm:.0f} | "
                   f"{nm - nd:+.0f} | {bm - bd:+.0f} | {per} |")
    for (b, d), lines in sorted(samples.items()):
        out.append("")
        out.append(f"{b}, depth {d}, the records:")
        out.append("")
        out.extend(f"    {x}" for x in lines)
    return out


def profile_tables(prof):
    out = []
    for (d, m), lines in sorted(prof.items()):
        run = [x for x in lines if x and x[0] == "run"]
        filt = [x for x in lines if x and x[0] == "filter"]
        rows = []
        for x in lines:
            # Function Hit Time Avg s^2, each time with its unit
            if len(x) >= 5 and x[1].isdigit() and x[3] in UNIT:
                rows.append((x[0], int(x[1]), float(x[2]) * UNIT[x[3]], float(x[4]) * UNIT.get(x[5], 1)))
        rows.sort(key=lambda r: -r[2])
        out.append(f"depth {d}, {m}, 2 events per entry: " + (" ".join(run[0][1:]) if run else ""))
        if filt:
            out.append(f"(profiled: {len(filt[0]) - 1} functions)")
        out.append("")
        out.append("| function | hits | total ms | avg ns (with callees) |")
        out.append("|---|---|---|---|")
        for name, hit, tot, avg in rows[:25]:
            out.append(f"| {name} | {hit} | {tot / 1e6:.1f} | {avg:.0f} |")
        out.append("")
    return out


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    head, done, errors, runs, frames, prof, first, samples, snaplen = parse(path)
    for e in errors:
        print(f"kernel.sh: guest error: {e}", file=sys.stderr)
    if not done:
        print("kernel.sh: the guest did not finish (see the console log)", file=sys.stderr)
    if errors or not done:
        return 1
    print(f"guest: {head}")
    print()
    lines = profile_tables(prof) if prof else (bench_tables(runs, frames, n) + snap_tables(runs, snaplen, n)
                                               + first_tables(first, samples))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
