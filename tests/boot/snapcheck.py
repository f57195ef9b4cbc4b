"""Boot case 17-snapshot: user stack snapshots (kernel-patch "tracing: Add user
stack snapshot").

`ustest snap N` makes N getppid system calls from snap_leaf, 12 KB of locals
below main, each with two words on snap_leaf's stack (SNAP_MAGIC + i and their
own address), and prints, per call, its stack pointer at the syscall
instruction and the address of the words, and the range of its [stack]
mapping. Six instances record the same run (see guest/cases/17-snapshot.sh):
the option, the trigger and the user_unwind tracer, with sizes that end the
copy at the size, at the largest event of a 4 KB sub-buffer and at the end of
the [stack] mapping (64 KB sub-buffers). For each:

* every stack entry of the program is a user_unwind_stack_snapshot (none is
  a plain user_unwind_stack), and the link rules hold for them as they are;
* each getppid kernel entry has exactly one stack entry; its sp is the
  program's own, the return address above its bp is the stack's second
  frame, and its data holds the program's words at their offset from sp;
* the length of the data is min(size, the largest event of the sub-buffer
  once the frames are in, end of [stack] - sp), the bytes of the entry past
  the data and in its holes are zero;
* trace-cmd (libtraceevent, from the format file) reports the stack entries
  of instance c17t with their sp and length.
"""

import re

import rawtrace

SNAP_FIELDS = {"cookie", "prev", "sp", "bp", "stack", "data", "links"}
# the most bytes a __data_loc holds (16 bits of length), in whole words
LOC_MAX = 0xFFFF // 8 * 8
# per instance: (how its stacks are asked for, expected bound of the length)
INSTANCES = {
    "a": ("option", "size"),
    "b": ("trigger", "size"),
    "c": ("option", "event"),
    "d": ("option", "vma"),
    "e": ("tracer", "size"),
}
NR_GETPPID = 110
TC_LINE = re.compile(r"-(\d+)\s+\[\d+\].*?\b(user_unwind_stack_snapshot|user_unwind_stack):\s*(.*)")


def ground_truth(files, expect):
    text = files.get("truth.txt", b"").decode()
    m = re.search(r"ustest snap pid=(\d+) n=(\d+) syscall=(\d+) stack=([0-9a-f]+)-([0-9a-f]+) magic=([0-9a-f]+)", text)
    expect(m, f"truth.txt: no ground-truth line from ustest snap (got {text[:200]!r})")
    pid, n = int(m.group(1)), int(m.group(2))
    lo, hi, magic = int(m.group(4), 16), int(m.group(5), 16), int(m.group(6), 16)
    calls = [(int(i), int(sp, 16), int(mk, 16))
             for i, sp, mk in re.findall(r"^snap i=(\d+) sp=([0-9a-f]+) marker=([0-9a-f]+)$", text, re.M)]
    expect(n > 0 and [c[0] for c in calls] == list(range(n)), f"truth.txt: {n} calls, lines for {len(calls)}")
    expect(lo < hi and all(lo <= sp < hi for _, sp, _ in calls), "truth.txt: an sp outside [stack]")
    return pid, hi, magic, calls


def decode(files, prefix, subbuf, expect, CaseFail):
    """The dump of an instance; header_page describes a page-sized sub-buffer,
    so an instance with larger ones is decoded with its own size."""
    if subbuf:
        files = dict(files)
        hp = files.get("header_page", b"").decode()
        files["header_page"] = re.sub(
            r"(field:\s*char data;\s*offset:(\d+);\s*size:)(\d+);",
            lambda m: f"{m.group(1)}{subbuf - int(m.group(2))};", hp).encode()
    try:
        d = rawtrace.Dump(files, prefix)
    except (ValueError, KeyError) as e:
        raise CaseFail(f"cannot decode the {prefix} dump: {e}")
    return d


def snap_data(fmt, ev, expect):
    """(offset, bytes) of the data of a stack entry with a snapshot; the
    entry's bytes past the data (to whole words) and in the hole after its
    last field must be zero, and the data must follow the frames."""
    f, st, ln = fmt.fields["data"], fmt.fields["stack"], fmt.fields["links"]
    loc = int.from_bytes(ev.data[f.offset:f.offset + 4], "little")
    off, length = loc & 0xFFFF, loc >> 16
    sloc = int.from_bytes(ev.data[st.offset:st.offset + 4], "little")
    expect(off == (sloc & 0xFFFF) + (sloc >> 16), f"snapshot data at {off}, the frames end at "
           f"{(sloc & 0xFFFF) + (sloc >> 16)}")
    expect(off + length <= len(ev.data), f"snapshot data {off}+{length} past its {len(ev.data)}-byte record")
    pad = ev.data[ln.offset + 1:sloc & 0xFFFF] + ev.data[off + length:off + (length + 7) // 8 * 8]
    expect(not any(pad), f"snapshot of cookie {ev['cookie']:#x}: non-zero bytes in its padding {pad.hex()}")
    return off, ev.data[off:off + length]


def getppid_cookies(door, d, pid, expect):
    """The cookies of the program's getppid kernel entries, in time order."""
    if door == "tracer":
        uf = d.fmt("ftrace", "user_unwind_syscall")
        expect(uf is not None, "no user_unwind_syscall format")
        return [e["cookie"] for e in d.merged() if e.fmt is uf and e.pid == pid and e["nr"] == NR_GETPPID]
    cf = d.fmt("ftrace", "user_unwind_cookie")
    pf = d.fmt("ftrace", "user_unwind_page_cookie")
    sf = d.fmt("ftrace", "user_unwind_stack_snapshot")
    pairs = []
    for c in d.cpus:
        pairs += rawtrace.attribute(c, cf, pf, sf)[0]
    stacks = [e for e in d.merged() if e.fmt is sf]
    pairs = rawtrace.resolve_links(pairs, stacks, sf)
    mine = sorted((e for e in pairs if e[0].pid == pid and e[0].name == "sys_enter" and e[0]["id"] == NR_GETPPID),
                  key=lambda p: (p[0].ts, p[0].seq))
    return [c["cookie"] for _, c in mine]


def check_instance(ctx, files, inst, truth, expect, CaseFail):
    pid, hi, magic, calls = truth
    door, bound = INSTANCES[inst]
    size = int(files.get(f"size-{inst}.txt", b"0").decode().strip() or 0)
    subbuf = int(files.get("subbuf-d.txt", b"4").decode().strip()) * 1024 if inst == "d" else None
    d = decode(files, f"c17{inst}", subbuf, expect, CaseFail)
    expect(all(lost == 0 for lost, _ in d.lost()), f"c17{inst}: unexpected loss {d.lost()}")
    sn = d.fmt("ftrace", "user_unwind_stack_snapshot")
    sf = d.fmt("ftrace", "user_unwind_stack")
    expect(sn is not None and SNAP_FIELDS <= set(sn.fields), "no user_unwind_stack_snapshot format with "
           f"{sorted(SNAP_FIELDS)}")
    expect(re.sub(r"\s+", " ", sn.fields["data"].decl) == "__data_loc unsigned char[] data",
           f"the snapshot's data is {sn.fields['data'].decl!r}, not a __data_loc unsigned char[]")

    # every stack entry of the program holds a snapshot
    snaps, nstack = {}, 0
    for e in d.merged():
        if e.pid != pid:
            continue
        expect(sf is None or e.fmt is not sf, f"c17{inst}: a user_unwind_stack without a snapshot: {e!r}")
        if e.fmt is sn:
            nstack += 1
            snaps.setdefault(e["cookie"], []).append(e)

    cookies = getppid_cookies(door, d, pid, expect)
    expect(len(cookies) == len(calls) and len(set(cookies)) == len(cookies),
           f"c17{inst} ({door}): {len(cookies)} getppid kernel entries with a cookie, ustest made {len(calls)}")
    page = d.cpus[0].page_size
    bounds = set()
    for (i, sp, marker), cookie in zip(calls, cookies):
        s = snaps.get(cookie, [])
        expect(len(s) == 1, f"c17{inst}: getppid {i} (cookie {cookie:#x}) has {len(s)} stack entries")
        s = s[0]
        frames = sn.u64_array(s.data, "stack")
        off, data = snap_data(sn, s, expect)
        expect(s["sp"] == sp, f"c17{inst}: getppid {i}: snapshot sp {s['sp']:#x}, ustest's sp {sp:#x}")
        names = ctx.syms.frames(frames)
        expect(names[:4] == ["snap_leaf", "snap_level1", "do_snap", "main"],
               f"c17{inst}: getppid {i}: frames {names}")
        # the largest data of an event: a sub-buffer less its header, the
        # event header and length word, the entry's fixed part and frames
        cap = (page - 16 - 8 - off) // 8 * 8
        want = min(size, cap, LOC_MAX, hi - sp)
        which = [n for n, v in (("size", size), ("event", cap), ("vma", hi - sp)) if v == want]
        bounds.update(which)
        expect(len(data) == want, f"c17{inst}: getppid {i}: {len(data)} bytes, expected {want} "
               f"(size {size}, event {cap}, end of [stack] - sp {hi - sp})")
        m = marker - sp
        word = lambda o: int.from_bytes(data[o:o + 8], "little") if 0 <= o and o + 8 <= len(data) else None
        expect(word(m) == magic + i and word(m + 8) == marker,
               f"c17{inst}: getppid {i}: words at sp+{m}: {word(m)}, {word(m + 8)}; ustest wrote "
               f"{magic + i:#x}, {marker:#x}")
        # the frame record the walk read: the return address above bp
        expect(word(s["bp"] - sp + 8) == frames[1],
               f"c17{inst}: getppid {i}: return address at bp+8 {word(s['bp'] - sp + 8)}, "
               f"second frame {frames[1]:#x}")
    expect(bound in bounds, f"c17{inst}: the length was bounded by {sorted(bounds)}, the case is "
           f"there to test the {bound} bound")
    ctx.diag(f"c17{inst} ({door}, size {size}, {page}-byte sub-buffers): {nstack} stacks of ustest, each "
             f"with a snapshot; {len(cookies)} getppid: sp, bp+8 and the words at sp+"
             f"{calls[0][2] - calls[0][1]} as ustest has them, {len(data)} bytes ({bound})")


def check_trace_cmd(ctx, files, truth, expect):
    pid, _, _, calls = truth
    for name in ("extract", "tc-report"):
        rc = files.get(f"{name}.rc", b"").decode().strip()
        err = files.get(f"{name}.err", b"").decode("utf-8", "replace").strip()
        expect(rc == "rc=0", f"trace-cmd {name} failed ({rc or 'no rc'}): {err[-300:]}")
    text = files.get("tc-report.txt", b"").decode("utf-8", "replace")
    expect("FAILED TO PARSE" not in text, "trace-cmd report: [FAILED TO PARSE]")
    lines = [m.groups() for m in (TC_LINE.search(l) for l in text.splitlines()) if m and int(m.group(1)) == pid]
    snaps = [f for _, kind, f in lines if kind == "user_unwind_stack_snapshot"]
    expect(len(snaps) == len(calls) and len(snaps) == len(lines),
           f"trace-cmd report: {len(snaps)} stack lines of ustest with a snapshot, {len(lines)} in all, "
           f"{len(calls)} getppid")
    size = int(files.get("size-t.txt", b"0").decode().strip() or 0)
    for f, (_, sp, _) in zip(snaps, calls):
        # the print format of the kernel, or the plugin's (plugins/)
        m = re.match(r"cookie=(?:0x)?([0-9a-f]+) .*?sp=(?:0x)?([0-9a-f]+) bp=(?:0x)?[0-9a-f]+ "
                     r"(?:len|snapshot)=(\d+)", f.strip())
        expect(m, f"trace-cmd report: stack line {f!r}")
        expect(int(m.group(2), 16) == sp and int(m.group(3)) == size,
               f"trace-cmd report: stack {f!r}, ustest's sp {sp:#x}, size {size}")
    ctx.diag(f"trace-cmd report (c17t): {len(snaps)} stack lines with a snapshot (sp as ustest's, "
             f"len={size})")


def case(ctx, files, expect, CaseFail):
    truth = ground_truth(files, expect)
    for f in ("size-b.txt",):
        expect(files.get(f, b"").decode().strip() == "104", f"100 written to user_stack_snapshot_size reads "
               f"{files.get(f, b'').decode().strip()!r}, not 104")
    for inst in INSTANCES:
        check_instance(ctx, files, inst, truth, expect, CaseFail)
    check_trace_cmd(ctx, files, truth, expect)
