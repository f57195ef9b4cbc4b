#!/usr/bin/env python3
"""Tables of bench/record.sh from the guest's data log (bench/record/init).

usage: report.py DATA_LOG N TRACER_CLI

The trace.dat of every run comes in the log (base64); its events (lines of
the raw_syscalls events in `TRACER_CLI report`, whichever tool wrote it)
and losses ("[N EVENTS DROPPED]" marks, plus overrun and dropped events of
the file's CPUSTAT as `trace-cmd report --stat` prints it) are counted here.

One row per recorder, medians over the rounds (min-max in brackets where
they differ), in the order the recorders were listed.
"""
import base64
import os
import re
import statistics
import subprocess
import sys
import tempfile


def count(path, tracer_cli):
    """events, losses of one trace.dat"""
    out = subprocess.run([tracer_cli, "report", "-i", path], capture_output=True, check=True).stdout
    events = len(re.findall(rb" sys_(?:enter|exit): ", out))
    lost = sum(int(m) for m in re.findall(rb"\[(\d+) EVENTS DROPPED\]", out))
    stat = subprocess.run(["trace-cmd", "report", "--stat", "-i", path], capture_output=True,
                          check=True).stdout.decode(errors="replace")
    lost += sum(int(m) for m in re.findall(r"^overrun: (\d+)", stat, re.M))
    lost += sum(int(m) for m in re.findall(r"^dropped events: (\d+)", stat, re.M))
    return events, lost


def parse(path, tracer_cli):
    head, runs, errors, order = None, {}, [], []
    with open(path, errors="replace") as f, tempfile.TemporaryDirectory() as tmp:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "F" and len(w) == 3 and w[2] in runs:
                lines = []
                for b in f:
                    if b.strip() == "EOF":
                        break
                    lines.append(b.strip())
                dat = os.path.join(tmp, "r.dat")
                with open(dat, "wb") as o:
                    o.write(base64.b64decode("".join(lines)))
                try:
                    ev, lost = count(dat, tracer_cli)
                    runs[w[2]][-1].update(events=str(ev), lost=str(lost))
                except subprocess.CalledProcessError as e:
                    errors.append(f"E {w[1]} {w[2]} cannot read the file: {e.stderr[:200]!r}")
            elif w[0] == "S":
                head = " ".join(w[1:])
            elif w[0] == "R" and len(w) >= 3:
                kv = dict(x.split("=", 1) for x in w[3:] if "=" in x)
                name = w[2]
                if name not in order:
                    order.append(name)
                runs.setdefault(name, []).append(kv)
            elif w[0] in ("E", "X"):
                errors.append(line.rstrip())
    return head, runs, errors, order


def med(vals, fmt):
    m = statistics.median(vals)
    lo, hi = min(vals), max(vals)
    s = fmt.format(m)
    if fmt.format(lo) != fmt.format(hi):
        s += " (" + fmt.format(lo) + "-" + fmt.format(hi) + ")"
    return s


def main():
    path, n, tracer_cli = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    head, runs, errors, order = parse(path, tracer_cli)
    if head is None or not runs:
        print("report.py: no results in " + path, file=sys.stderr)
        for e in errors:
            print(e, file=sys.stderr)
        return 1
    bad = False
    print(f"guest: {head}; load: {n} getppid, 2 events each (expected {2 * n} events)\n")
    cols = [
        ("recorder CPU ms", lambda r: (int(r["cpu_us"]) - int(r["lcpu_us"])) / 1e3, "{:.1f}"),
        ("load CPU ms", lambda r: int(r["lcpu_us"]) / 1e3, "{:.1f}"),
        ("load ns/call", lambda r: int(r["ns_call"]), "{:.0f}"),
        ("start-up ms", lambda r: (int(r["ls"]) - int(r["t0"])) / 1e6, "{:.1f}"),
        ("stop+write ms", lambda r: (int(r["t1"]) - int(r["le"])) / 1e6, "{:.1f}"),
        ("whole run ms", lambda r: (int(r["t1"]) - int(r["t0"])) / 1e6, "{:.0f}"),
        ("system busy ms", lambda r: int(r["busy_ms"]), "{:.0f}"),
        ("events", lambda r: int(r["events"]), "{:.0f}"),
        ("lost", lambda r: int(r["lost"]), "{:.0f}"),
        ("file KiB", lambda r: int(r["size"]) / 1024, "{:.0f}"),
    ]
    print("| recorder | rounds | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name in order:
        ok = [r for r in runs[name] if r.get("rc") == "0" and "ls" in r and "events" in r]
        if len(ok) < len(runs[name]):
            bad = True
        if not ok:
            print(f"| {name} | 0 of {len(runs[name])} | " + " | ".join("-" for _ in cols) + " |")
            continue
        cells = [med([f(r) for r in ok], fmt) for _, f, fmt in cols]
        print(f"| {name} | {len(ok)} | " + " | ".join(cells) + " |")
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
