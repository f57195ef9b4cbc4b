"""Boot case 18-unwound: tracer-cli's unwound user stacks against ground truth.

The guest ran truth-o2 and truth-fp (crates/testdata/progs/truth.c, -O2
without and with frame pointers, dynamically linked, 5 threads x 3 calls)
under `tracer-cli record --user-stacks deferred[,4k]`. Each marked call (a
write(-1, ...) or a syscall(SYS_getppid, ...) through libc's wrappers) has
its truth line: the task and the chain glibc's backtrace() gave in the
function that made the call. Per run, each task's marked sys_enter groups
are matched, in order, to its truth lines, and every frame is checked:

* frame 0 is where the wrapper entered the kernel (via "ip");
* frame 1 is the wrapper's caller, `work`, found by CFI (the kernel's
  frame-pointer walk cannot find it: the wrapper has no frame);
* frames 2.. are the truth's entries 1.., address for address;
* with 4 KiB (the whole stack here) every stack is complete, found by CFI
  alone, on both programs;
* with the default snapshot (128 bytes): on frame-pointer code every frame
  is exact to the end of the frame-pointer chain ("fp" frames after the
  cut line); on code without frame pointers what is delivered is exact and
  the stack is marked as cut where the snapshot ran out.
"""

import json

MARKS = ("NR 1 (ffffffff,", "NR 1 (ffffffffffffffff,", "NR 110 (")


def truths(text):
    per_tid = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        tid, n = int(f[0]), int(f[1])
        per_tid.setdefault(tid, []).append([int(a, 16) for a in f[2:2 + n]])
    return per_tid


def marked(groups):
    per_tid = {}
    for g in groups:
        ev = [e for e in g.get("events", []) if e["name"] == "sys_enter"]
        if len(ev) != 1:
            continue
        info = ev[0]["info"]
        if info.startswith(MARKS):
            per_tid.setdefault(g["pid"], []).append(g)
    return per_tid


def check_run(name, files, expect, fp, whole):
    rc = files.get(f"{name}.record.rc", b"").decode().strip()
    expect(rc == "rc=0", f"{name}: record {rc}: {files.get(name + '.record.err', b'')[:300]!r}")
    doc = json.loads(files.get(f"{name}.json", b"{}") or b"{}")
    want = truths(files.get(f"{name}.truth", b"").decode())
    got = marked(doc.get("groups", []))
    expect(sum(len(v) for v in want.values()) == 15, f"{name}: {sum(len(v) for v in want.values())} truth lines, want 15")
    expect(sorted(want) == sorted(got), f"{name}: tasks with truth {sorted(want)} != tasks with stacks {sorted(got)}")
    exact = delivered = expected = 0
    for tid, chains in want.items():
        groups = got[tid]
        expect(len(groups) == len(chains), f"{name}: task {tid}: {len(groups)} stacks for {len(chains)} calls")
        for g, chain in zip(groups, chains):
            us = g.get("user_stack") or {}
            frames = us.get("frames", [])
            where = f"{name}: task {tid} cookie {g.get('cookie')}"
            expect(len(frames) >= 2, f"{where}: {len(frames)} frames")
            expect(frames[0].get("via") == "ip", f"{where}: frame 0 via {frames[0].get('via')}")
            expect(frames[1].get("via") == "cfi" and (frames[1].get("symbol") or "").startswith("work"),
                   f"{where}: frame 1 is {frames[1].get('symbol')} via {frames[1].get('via')}, not work by CFI")
            for i, f in enumerate(frames[2:], start=2):
                expect(i - 1 < len(chain) and int(f["addr"], 16) == chain[i - 1],
                       f"{where}: frame {i} {f['addr']} ({f.get('symbol')}, via {f.get('via')}) is not the truth's "
                       f"{hex(chain[i - 1]) if i - 1 < len(chain) else 'end'}")
            cut = us.get("cut")
            if whole:
                expect(cut is None and len(frames) == len(chain) + 1,
                       f"{where}: {len(frames)} frames of {len(chain) + 1}, cut {cut}")
                expect(all(f.get("via") == "cfi" for f in frames[1:]), f"{where}: a frame not found by CFI")
            elif fp:
                expect(cut is not None and cut["at"] == 2 and cut["reason"] == "frame-pointer walk from here",
                       f"{where}: cut {cut}")
                # libc's start-up frames have no frame pointer: the chain ends there
                expect(len(frames) >= len(chain) - 1, f"{where}: {len(frames)} frames of {len(chain) + 1}")
            else:
                expect(cut is not None and cut["at"] == len(frames) and cut["reason"] == "stack snapshot exhausted",
                       f"{where}: cut {cut}")
            exact += len(frames)
            delivered += len(frames)
            expected += len(chain) + 1
    return exact, delivered, expected


def case(ctx, files, expect, fail):
    if "skip" in files:
        return
    for prog in ("o2", "fp"):
        for size in ("default", "4k"):
            name = f"{prog}-{size}"
            e, d, x = check_run(name, files, expect, prog == "fp", size == "4k")
            ctx.diag(f"{name}: {e} exact / {d} delivered / {x} expected frames")
