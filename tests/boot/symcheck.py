"""Judge of boot case 13 (symbolization ground truth with deferred user stacks).

The guest runs the ground-truth programs of tracer-cli/tests/gt (static,
frame pointers) under `tracer-cli record --user-stacks deferred`; each
program writes its own truth next to the trace: `tids` ("tid tgid" lines)
and `maps.PID` (its /proc/self/maps before it exits; `maps-preexec.PID`
for a child before its exec). Which image a stack belongs to comes from
the kernel's `sched_process_exec` events in the trace: stacks after a
process's last exec are of its final image (`maps.PID`), those between
its last two execs of the image before it (`maps-preexec.PID`), earlier
ones (the shell that exec'd the program: busybox, non-PIE too) are not
checked. Every other user frame of those tasks in `report --json` is
checked against `nm` of the binary (not against tracer-cli's own output),
at the address the program's own maps give. Sub-cases are flattened into the
case's files as `NAME.FILE`; `NAME-N` are repeated runs of one case.
"""

import bisect
import json
import re
import subprocess

# Where the host keeps the guest's ground-truth binaries (set by check.py).
GT_DIR = None


class Nm:
    """Function symbols of one binary with their sizes (`nm -n -S`)."""

    def __init__(self, path):
        out = subprocess.run(["nm", "-n", "-S", "--defined-only", path],
                             capture_output=True, text=True, check=True).stdout
        by = {}
        for line in out.splitlines():
            w = line.split()
            if len(w) == 4:
                a, s, t, n = int(w[0], 16), int(w[1], 16), w[2], w[3]
            elif len(w) == 3:
                a, s, t, n = int(w[0], 16), 0, w[1], w[2]
            else:
                continue
            if t not in "TtWwi":
                continue
            e = by.setdefault(a, [0, []])
            e[0] = max(e[0], s)
            e[1].append(n.split("@")[0])
        self.syms = sorted((a, s, n) for a, (s, n) in by.items())
        self.addrs = [a for a, _, _ in self.syms]

    def names(self, va):
        i = bisect.bisect_right(self.addrs, va) - 1
        if i < 0:
            return None
        a, s, n = self.syms[i]
        return n if s == 0 or va < a + s else None


def read_maps(text):
    out = []
    for line in text.splitlines():
        w = line.split()
        if len(w) < 5 or "-" not in w[0]:
            continue
        s, e = w[0].split("-")
        out.append((int(s, 16), int(e, 16), int(w[2], 16), w[5] if len(w) > 5 else ""))
    return out


class Truth:
    def __init__(self, files, prefix):
        self.tgid = {}
        for line in files.get(prefix + "tids", b"").decode().splitlines():
            tid, tgid = map(int, line.split())
            self.tgid[tid] = tgid
        self.maps, self.pre = {}, {}
        for name, data in files.items():
            m = re.fullmatch(re.escape(prefix) + r"(maps|maps-preexec)\.(\d+)", name)
            if m:
                (self.maps if m.group(1) == "maps" else self.pre)[int(m.group(2))] = read_maps(data.decode())
        self.nm = {}

    def expect(self, tid, execs, ts, addr, ret):
        """nm's names for a frame of a stack at `ts`, None when not in a file
        of ours (or of an image before the program's); KeyError for other
        tasks. `execs`: exec times of each process."""
        tgid = self.tgid[tid]
        ex = sorted(execs.get(tgid, []))
        if not ex or ts >= ex[-1]:
            maps = self.maps[tgid]
        elif tgid in self.pre and (len(ex) == 1 or ts >= ex[-2]):
            maps = self.pre[tgid]
        else:
            return None
        look = addr - 1 if ret else addr
        hit = [m for m in maps if m[0] <= look < m[1]]
        if not hit or not hit[0][3].startswith("/bin/gt-"):
            return None
        path = hit[0][3]
        host = f"{GT_DIR}/{path.rsplit('/', 1)[1]}"
        with open(host, "rb") as f:
            exec_type = f.read(18)[16] == 2
        bias = 0 if exec_type else min(m[0] for m in maps if m[3] == path and m[2] == 0)
        if host not in self.nm:
            self.nm[host] = Nm(host)
        return self.nm[host].names(look - bias)


def score(files, prefix, expect, CaseFail):
    """(resolved, delivered, first mismatches) of one sub-case."""
    rc = files.get(prefix + "record.rc", b"").decode().strip()
    err = files.get(prefix + "record.err", b"").decode("utf-8", "replace")[-300:]
    expect(rc == "rc=0", f"{prefix}: tracer-cli record failed ({rc or 'no rc'}): {err}")
    rc = files.get(prefix + "report.rc", b"").decode().strip()
    expect(rc == "rc=0", f"{prefix}: tracer-cli report --json failed ({rc or 'no rc'})")
    try:
        rep = json.loads(files.get(prefix + "report.json", b"").decode())
    except ValueError as e:
        raise CaseFail(f"{prefix}: report --json is not JSON: {e}")
    truth = Truth(files, prefix)
    expect(truth.tgid, f"{prefix}: the programs wrote no truth (tids)")
    resolved = delivered = 0
    bad = []
    execs = {}
    for g in rep["groups"]:
        for e in g["events"]:
            if e["name"] == "sched_process_exec":
                execs.setdefault(g["pid"], []).append(e["ts"])
    for g in rep["groups"]:
        us = g.get("user_stack")
        if g["pid"] not in truth.tgid or not us:
            continue
        for i, f in enumerate(us["frames"]):
            want = truth.expect(g["pid"], execs, us["ts"], int(f["addr"], 16), i > 0)
            if want is None:
                continue
            delivered += 1
            if f.get("symbol") in want:
                resolved += 1
            elif len(bad) < 3:
                bad.append(f"tid {g['pid']} {f['addr']}: got {f.get('symbol')!r} "
                           f"({f.get('unresolved', '')}), nm says {want!r}")
    expect(delivered > 0, f"{prefix}: no frames of the programs' tasks")
    return resolved, delivered, bad


def case(ctx, files, expect, CaseFail):
    """The judge; `expect` and `CaseFail` are check.py's."""
    subs = sorted({n[: -len("report.rc")] for n in files if n.endswith(".report.rc")})
    expect(subs, "no sub-case ran")
    totals = {}
    failures = []
    for prefix in subs:
        name = re.sub(r"-\d+\.$", "", prefix).rstrip(".")
        r, d, bad = score(files, prefix, expect, CaseFail)
        t = totals.setdefault(name, [0, 0, 0])
        t[0] += r
        t[1] += d
        t[2] += 1
        if r != d:
            failures.append(f"{prefix.rstrip('.')}: {r}/{d}: {'; '.join(bad)}")
    for name, (r, d, n) in sorted(totals.items()):
        ctx.diag(f"case {name}: resolved-correctly {r} / delivered {d} frames in {n} run(s)")
    expect(not failures, "frames not resolved to nm's symbol: " + " | ".join(failures[:4]))
