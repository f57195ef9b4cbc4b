#!/usr/bin/env python3
"""Judge one boot-test run: the guest's data port log and the kernel console log.

usage: check.py DATA_LOG CONSOLE_LOG USTEST_BINARY [--qemu-rc N] [--timed-out]

Prints KTAP (``KTAP version 1``, ``1..N``, ``ok``/``not ok`` lines with
diagnostics as ``# `` lines), then ``N passed, N failed, N skipped``; exits 1
when anything is not ok. A case whose prerequisite is missing prints
``not ok N name # SKIP reason``: it never counts as passed.

Every check compares exact values: cookies, counts, symbolized frames (against
the ustest binary's own symbol table via nm), loss counters.
"""

import argparse
import base64
import bisect
import io
import itertools
import json
import os
import re
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawtrace  # noqa: E402
import snapcheck  # noqa: E402
import symcheck  # noqa: E402
import unwindcheck  # noqa: E402

# Expected call chains of tests/boot/progs/ustest.c, innermost first.
CHAIN = ["chain_level3", "chain_level2", "chain_level1", "do_chain", "main"]
FLOOD = ["flood_leaf", "do_flood", "main"]
MIGRATE = ["mig_sleep", "mig_level1", "mig_worker"]
THREADS_MAIN = ["thr_leaf", "do_threads", "main"]
THREADS_WORKER = ["thr_leaf", "thr_level1", "thr_worker"]
EXITER = ["child_exit", "child_level1", "do_exiter", "main"]
SIGNAL = ["sig_raise", "sig_level1", "do_signal", "main"]
GANG = ["chain_level3", "chain_level2", "chain_level1", "do_chain", "do_gang", "main"]
# what may follow main in a static glibc binary (start code, no frame pointers)
LIBC_START = re.compile(r"^(__libc_start\w*|_start)$")

NR_NANOSLEEP, NR_GETPID, NR_EXECVE, NR_EXIT, NR_KILL, NR_GETPPID, NR_EXIT_GROUP = 35, 39, 59, 60, 62, 110, 231

SPLAT = re.compile(
    r"Kernel panic|BUG:|kernel BUG at|WARNING:|Oops|general protection fault|panicked at|"
    r"UBSAN:|KASAN:|detected stalls?|"
    r"possible recursive locking|possible circular locking|inconsistent lock state|"
    r"possible irq lock inversion|suspicious RCU usage|lock held when returning|"
    r"DEBUG_LOCKS_WARN_ON|list_add corruption|list_del corruption|KFENCE:|"
    r"soft lockup|hung_task|INFO: task .* blocked"
)


class CaseFail(Exception):
    pass


class Skip(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise CaseFail(msg)


# ---------------------------------------------------------------------------
# reading the logs


def unpack_tars(files):
    """A case may pack many small files into NAME.tar or NAME.tgz (busybox tar;
    shipping one file costs the guest a base64 process, and the serial port is
    slow under TCG): its members join the case's files."""
    for name in [n for n in files if n.endswith((".tar", ".tgz"))]:
        try:
            with tarfile.open(fileobj=io.BytesIO(files[name])) as t:
                for m in t.getmembers():
                    if m.isfile():
                        files.setdefault(os.path.basename(m.name), t.extractfile(m).read())
        except tarfile.TarError as e:
            files[name + ".error"] = str(e).encode()


def read_data_log(path):
    """@@BEGIN id / @@FILE id name / base64 / @@EOF / @@END id rc=N / @@DONE"""
    cases, done, start = {}, False, None
    cur_file = None
    buf = []
    try:
        f = open(path, "rb")
    except OSError:
        return cases, done, start
    with f:
        for raw in f:
            line = raw.decode("latin-1").rstrip("\r\n")
            if cur_file is not None:
                if line == "@@EOF":
                    cid, name = cur_file
                    try:
                        cases[cid]["files"][name] = base64.b64decode("".join(buf))
                    except ValueError:
                        cases[cid]["files"][name] = b""
                        cases[cid]["notes"].append(f"file {name}: bad base64 (serial garbled?)")
                    cur_file, buf = None, []
                else:
                    buf.append(line.strip())
                continue
            if line.startswith("@@START"):
                start = line
            elif line.startswith("@@BEGIN "):
                cid = line.split()[1]
                cases[cid] = {"files": {}, "rc": None, "notes": []}
            elif line.startswith("@@FILE "):
                _, cid, name = line.split(maxsplit=2)
                cases.setdefault(cid, {"files": {}, "rc": None, "notes": []})
                cur_file, buf = (cid, name), []
            elif line.startswith("@@END "):
                parts = line.split()
                c = cases.setdefault(parts[1], {"files": {}, "rc": None, "notes": []})
                for kv in parts[2:]:
                    k, _, v = kv.partition("=")
                    if k == "rc":
                        c["rc"] = int(v)
                    elif k == "secs":
                        c["secs"] = v
            elif line.startswith("@@DONE"):
                done = True
    for c in cases.values():
        unpack_tars(c["files"])
    return cases, done, start


def scan_console(path):
    """-> (splats by case id ('boot' before the first case), kunit lines)"""
    splats = {}
    current = "boot"
    lines = []
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        line = line.rstrip("\r")
        m = re.search(r"ustack-boot: (begin|end) (\S+)", line)
        if m:
            current = m.group(2) if m.group(1) == "begin" else "between cases"
            continue
        if SPLAT.search(line):
            splats.setdefault(current, []).append(line.strip())
        lines.append(line)
    return splats, lines


# ---------------------------------------------------------------------------
# helpers shared by the cases


def truth(files, name="truth.txt"):
    t = files.get(name, b"").decode()
    m = re.search(r"ustest (\w+) (.*)", t)
    expect(m, f"{name}: no ground-truth line from ustest (got {t.strip()!r})")
    vals = {}
    for kv in m.group(2).split():
        if "=" in kv:
            k, v = kv.split("=", 1)
            vals[k] = v
    return vals


def dump(files, prefix):
    try:
        d = rawtrace.Dump(files, prefix)
    except (ValueError, KeyError) as e:
        raise CaseFail(f"cannot decode the {prefix} dump: {e}")
    cf = d.fmt("ftrace", "user_unwind_cookie")
    sf = d.fmt("ftrace", "user_unwind_stack")
    expect(cf is not None and sf is not None, "no user_unwind_cookie/user_unwind_stack format files")
    expect("cookie" in cf.fields, "user_unwind_cookie has no field 'cookie'")
    expect("cookie" in sf.fields and "stack" in sf.fields, "user_unwind_stack lacks cookie/stack")
    return d, cf, sf


def collect(d, cf, sf):
    """Attribute events to cookie entries (rawtrace.attribute: page cookies of the
    option, cookie entries after an event, linking stack entries resolved by their
    successor's prev); index stack events by (pid, cookie)."""
    pairs, strays = [], []
    pf = d.fmt("ftrace", "user_unwind_page_cookie")
    for c in d.cpus:
        p, s = rawtrace.attribute(c, cf, pf, sf)
        pairs += p
        strays += s
    stacks = {}
    for e in d.merged():
        if e.fmt is sf:
            stacks.setdefault((e.pid, e["cookie"]), []).append(e)
    pairs = rawtrace.resolve_links(pairs, [s for v in stacks.values() for s in v], sf)
    return pairs, strays, stacks


def check_frames(syms, sf, ev, expected, allow_empty=False, diag=None):
    stack = sf.u64_array(ev.data, "stack")
    names = syms.frames(stack)
    if not stack:
        expect(allow_empty, f"empty stack for cookie {ev['cookie']:#x} (pid {ev.pid})")
        return names
    head, tail = names[: len(expected)], names[len(expected) :]
    expect(
        head == expected and all(LIBC_START.match(n) for n in tail),
        f"pid {ev.pid} cookie {ev['cookie']:#x}: frames {names}, expected {expected} "
        f"(+ libc start code)",
    )
    return names


def check_frames_prefix(syms, sf, ev, expected, allow_empty=False):
    stack = sf.u64_array(ev.data, "stack")
    names = syms.frames(stack)
    if not stack:
        expect(allow_empty, f"empty stack for cookie {ev['cookie']:#x} (pid {ev.pid})")
        return names
    expect(
        names[: len(expected)] == expected,
        f"pid {ev.pid} cookie {ev['cookie']:#x}: frames {names}, expected to start {expected}",
    )
    return names


# a cookie, page cookie or stack line of `trace-cmd report`: pid, entry name, rest
# a stack entry with a snapshot (kernel-patch tracing/0014) is a stack entry
COOKIE_LINE = (r"-(\d+)\s+\[\d+\].*?\b(user_unwind_cookie|user_unwind_page_cookie|user_unwind_stack"
               r"|user_unwind_stack_snapshot):\s*(.*)")
STACK_NAMES = ("user_unwind_stack", "user_unwind_stack_snapshot")


def exiting_events(mine):
    """ids of one task's events after its exit/exit_group entry (in time order)."""
    out, seen = set(), False
    for e in mine:
        if seen:
            out.add(id(e))
        elif e.name == "sys_enter" and e["id"] in (NR_EXIT, NR_EXIT_GROUP):
            seen = True
    return out


def syscall_entries(events, pid, nr):
    """Split one task's traced events (not the cookie/stack entries) into syscall
    entries: sys_enter(nr) .. sys_exit(nr)."""
    entries, cur = [], None
    for e in events:
        if e.pid != pid or e.name in ("user_unwind_cookie", "user_unwind_page_cookie") + STACK_NAMES:
            continue
        if e.name == "sys_enter" and e["id"] == nr:
            cur = [e]
            entries.append(cur)
        elif cur is not None:
            cur.append(e)
            if e.name == "sys_exit" and e["id"] == nr:
                cur = None
    return entries


# ---------------------------------------------------------------------------
# the cases


def case_ftracetest(ctx, files):
    lst = files.get("tests.list", b"").decode().split()
    out = files.get("ftracetest.txt", b"").decode("utf-8", "replace")
    counts = {k: int(v) for k, v in re.findall(r"# of (\w+)[^:]*:\s*(\d+)", out)}
    ctx.diag(f"ftracetest: {len(lst)} case(s): {' '.join(os.path.basename(t) for t in lst)}")
    ctx.diag("results: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    # per failing test: its header and the tail of its (set -x) output
    blocks = re.split(r"(?m)^(?=\[\d+\] )", out)
    for b in blocks:
        lines = b.splitlines()
        if lines and re.search(r"\[(FAIL|UNRESOLVED|UNSUPPORTED|UNTESTED|XFAIL)\]", lines[0]):
            ctx.diag(lines[0])
            body = [ln for ln in lines[1:] if ln.strip() and not ln.startswith("# of")]
            for ln in body[-12:]:
                ctx.diag("  " + (ln if len(ln) < 160 else ln[:160] + "..."))
    expect(counts, "no '# of passed' summary in the ftracetest output")
    expect(counts.get("passed", 0) == len(lst), f"{counts.get('passed', 0)} of {len(lst)} passed")
    bad = {k: v for k, v in counts.items() if k != "passed" and v}
    expect(not bad, f"not all passed: {bad}")


def case_kunit(ctx, files):
    suites = {}
    subtests = {}
    cur = None
    for line in ctx.console:
        s = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", line)
        m = re.match(r"^\s*# Subtest: (\S+)", s)
        if m:
            cur = m.group(1)
            subtests.setdefault(cur, [])
            continue
        m = re.match(r"^(\s*)(ok|not ok) (\d+) (\S+)(.*)", s)
        if m:
            indent, res, name, rest = m.group(1), m.group(2), m.group(4), m.group(5)
            if indent == "" or name in subtests:
                suites[name] = (res, rest.strip())
            elif cur is not None:
                subtests[cur].append((res, name, rest.strip()))
    expect(suites, "no KUnit results in the kernel log (CONFIG_KUNIT?)")
    failed = [n for n, (r, _) in suites.items() if r != "ok"]
    unwind = [n for n in suites if "unwind" in n]
    ctx.diag(f"{len(suites)} KUnit suites, unwind suites: {unwind or 'none'}")
    expect(not failed, f"KUnit suites failed: {failed}")
    expect(unwind, "no KUnit suite for the unwind abstraction (name containing 'unwind')")
    for n in unwind:
        if n == "unwind_deferred":
            # at boot (no task in a system call) its cases only check that requests
            # are refused: case 10 runs it from a system call
            ctx.diag(f"{n}: {suites[n][0]} {suites[n][1]} (checked by case 10)")
            continue
        subs = subtests.get(n, [])
        expect(subs, f"suite {n} ran no test cases")
        expect(all(r == "ok" and "SKIP" not in rest for r, _, rest in subs), f"suite {n}: {subs}")
        expect("SKIP" not in suites[n][1], f"suite {n} skipped")
        ctx.diag(f"{n}: {len(subs)} cases ok")


def text_same_as_raw(ctx, text, d, pairs, sf, what="trace text"):
    """A reader of the trace file gets the same cookie for every event with the
    rules for text (kernel-patch tracing/0013: the file prints prev and links,
    and "the same page" reads "the same CPU since its last LOST line") as a
    reader of the raw pages of the same buffer."""
    if "links" not in sf.fields:
        return
    expect(text.strip(), f"{what}: empty")
    by_text = rawtrace.text_attribute(text)
    cookie_of = {id(e): c["cookie"] for e, c in pairs}
    compared = 0
    for c in d.cpus:
        raw = [(e.name, e.pid, cookie_of.get(id(e))) for e in c.events if e.fmt is not None and e.fmt.system != "ftrace"]
        got = by_text.get(c.cpu, [])
        diff = next((i for i, (a, b) in enumerate(zip(raw, got)) if a != b), None)
        expect(len(raw) == len(got) and diff is None,
               f"{what}, CPU {c.cpu}: the text rules give {len(got)} events, the raw ones {len(raw)}; first "
               f"difference at {diff}: text {got[diff] if diff is not None else None}, "
               f"raw {raw[diff] if diff is not None else None}")
        compared += len(raw)
    covered = sum(1 for v in by_text.values() for x in v if x[2])
    ctx.diag(f"{what}: {compared} events, {covered} with a cookie, each the same as from the raw pages")


def case_option_raw(ctx, files):
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    d, cf, sf = dump(files, "c3")
    expect(all(lost == 0 for lost, _ in d.lost()), f"unexpected loss {d.lost()}")
    pairs, strays, stacks = collect(d, cf, sf)
    evs = d.merged()
    # the task's traced events: not the ftrace system's own records (cookies,
    # stacks, and the mapping records the kernel writes by default), which ask
    # for no stack (rawtrace.attribute)
    mine = [e for e in evs if e.pid == pid and not (e.fmt is not None and e.fmt.system == "ftrace")]
    paired = {id(e): c for e, c in pairs}
    # every traced event of the task is followed by its cookie event, except once the
    # task is exiting: do_exit() sets PF_EXITING before its last switches (blocking in
    # exit_mm()/exit_files(), preempted, and the zombie's final one), and the unwinder
    # refuses requests from then on. The case traces the
    # exit_group entry so the data shows where that starts; a recording without it
    # still exempts the zombie's final switch.
    exiting = exiting_events(mine)
    dying = [e for e in mine if e.name == "sched_switch" and e["prev_state"] & 0x30]
    unpaired = [e for e in mine if id(e) not in paired and e not in dying and id(e) not in exiting]
    expect(not unpaired, f"{len(unpaired)} events of pid {pid} without a cookie event: {unpaired[:3]}")
    late = [e for e in mine if id(e) in exiting and id(e) not in paired and e not in dying]
    if late:
        ctx.diag(f"{len(late)} events of the exiting task without a cookie (PF_EXITING): {late[:3]}")
    expect(not [s for s in strays if s.pid == pid], "cookie events not right after an event of the task")
    entries = syscall_entries(evs, pid, NR_NANOSLEEP)
    expect(len(entries) == n, f"{len(entries)} nanosleep entries recorded, ustest made {n}")
    seen = {}
    for ent in entries:
        expect(ent[-1].name == "sys_exit", f"entry without sys_exit: {ent}")
        cookies = {paired[id(e)]["cookie"] for e in ent}
        expect(len(cookies) == 1, f"one syscall, several cookies: {[hex(c) for c in cookies]}")
        c = cookies.pop()
        expect(c != 0, "cookie 0")
        expect(c not in seen, f"cookie {c:#x} shared by two syscalls")
        seen[c] = ent
    sched = sum(1 for ent in entries for e in ent if e.name == "sched_switch")
    ctx.diag(f"{n} syscalls, {len(mine)} events of pid {pid} ({sched} sched_switch), all paired")
    # a loop of system calls: most entries follow the stack entry of the one
    # before in the same page, which stands for their page cookie (tracing/0013)
    if "links" in sf.fields:
        linked = sum(1 for ent in entries if paired[id(ent[0])].fmt is sf)
        ctx.diag(f"{linked} of {n} syscalls linked to the stack entry before them")
        expect(linked > 0, "no system call linked to the stack entry of the one before")
    expect(sched > 0, "no sched_switch inside the nanosleep syscalls")
    all_cookies = {c["cookie"] for e, c in pairs if e.pid == pid}
    my_stacks = {k: v for k, v in stacks.items() if k[0] == pid}
    for c in all_cookies:
        st = my_stacks.get((pid, c), [])
        expect(len(st) == 1, f"cookie {c:#x}: {len(st)} stack events, expected exactly 1")
    extra = set(k[1] for k in my_stacks) - all_cookies
    expect(not extra, f"stack events for cookies never announced: {[hex(c) for c in extra]}")
    expect(len(my_stacks) == len(all_cookies), "stack events != kernel entries that asked")
    for c in seen:
        names = check_frames(ctx.syms, sf, my_stacks[(pid, c)][0], CHAIN)
    ctx.diag(f"{len(seen)} stacks symbolize to {names}")
    # the human-readable trace file shows the same cookies and frames
    text = files.get("trace.txt", b"").decode("utf-8", "replace")
    expect(text.count("<user stack unwind>") >= n, "trace: fewer '<user stack unwind>' blocks than syscalls")
    shown = {int(x, 16) for x in re.findall(r"cookie=(?:0x)?([0-9a-fA-F]+)", text)}
    missing = [hex(c) for c in seen if c not in shown]
    expect(not missing, f"trace does not show cookies {missing[:3]}")
    addrs = {int(x, 16) for x in re.findall(r"=>\s*(?:<)?(?:0x)?([0-9a-fA-F]+)", text)}
    some = sf.u64_array(my_stacks[(pid, next(iter(seen)))][0].data, "stack")
    expect(all(a in addrs for a in some), "trace: the ' => addr' lines miss frames of a stack")
    text_same_as_raw(ctx, text, d, pairs, sf)


def case_trigger_raw(ctx, files):
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    d, cf, sf = dump(files, "c4")
    pairs, strays, stacks = collect(d, cf, sf)
    expect(not strays, f"{len(strays)} cookie events not right after their event")
    wrong = [e for e, _ in pairs if not (e.name == "sys_enter" and e["id"] == NR_NANOSLEEP)]
    expect(not wrong, f"cookies after events the filter excludes: {wrong[:3]}")
    mine = [(e, c) for e, c in pairs if e.pid == pid]
    expect(len(mine) == n, f"{len(mine)} cookie events for ustest, expected {n} (one per nanosleep)")
    cookies = [c["cookie"] for _, c in mine]
    expect(len(set(cookies)) == n, "cookies repeat across syscalls")
    for c in cookies:
        st = stacks.get((pid, c), [])
        expect(len(st) == 1, f"cookie {c:#x}: {len(st)} stack events")
        check_frames(ctx.syms, sf, st[0], CHAIN)
    others = [e for e in d.merged() if e.pid == pid and e.name in ("sys_exit", "sched_switch")]
    expect(others, "sys_exit/sched_switch of ustest missing (were they traced?)")
    ctx.diag(f"filter: {n} cookies, all on sys_enter(nanosleep); {len(others)} other events without")
    # the counted trigger: exactly 3
    t2 = truth(files, "truth-count.txt")
    pid2 = int(t2["pid"])
    d2, cf2, sf2 = dump(files, "c4b")
    pairs2, strays2, stacks2 = collect(d2, cf2, sf2)
    got = [(e, c) for e, c in pairs2]
    expect(not strays2, "count trigger: stray cookie events")
    expect(len(got) == 3, f"count trigger ':3': {len(got)} cookie events, expected 3")
    expect(all(e.pid == pid2 and e["id"] == NR_NANOSLEEP for e, _ in got), "count trigger fired elsewhere")
    for _, c in got:
        st = stacks2.get((pid2, c["cookie"]), [])
        expect(len(st) == 1, f"count trigger: cookie {c['cookie']:#x} has {len(st)} stacks")
        check_frames(ctx.syms, sf2, st[0], CHAIN)
    ctx.diag("count ':3': exactly 3 cookies with matching stacks")
    # trigger-only event: nothing recorded for a cookie to follow
    truth(files, "truth-trigger-only.txt")
    d3, cf3, sf3 = dump(files, "c4c")
    n_cookies = sum(1 for e in d3.merged() if e.fmt is cf3)
    n_stacks = sum(1 for e in d3.merged() if e.fmt is sf3)
    n_exits = sum(1 for e in d3.merged() if e.name == "sys_exit")
    expect(n_exits > 0, "trigger-only: no sys_exit recorded (was it enabled?)")
    expect(n_cookies == 0 and n_stacks == 0,
           f"trigger-only event: {n_cookies} cookie and {n_stacks} stack events, expected none")
    ctx.diag(f"trigger on a disabled event: no cookie, no stack ({n_exits} sys_exit traced)")
    # ':1' on sched_switch: idle and kernel threads do not use the count up
    truth(files, "truth-sched.txt")
    d4, cf4, sf4 = dump(files, "c4d")
    pairs4, strays4, stacks4 = collect(d4, cf4, sf4)
    switches = sum(1 for e in d4.merged() if e.name == "sched_switch")
    expect(not strays4, "count ':1' on sched_switch: stray cookie events")
    expect(len(pairs4) == 1, f"count ':1' on sched_switch: {len(pairs4)} cookie events, expected 1 "
           f"({switches} sched_switch events)")
    e, c = pairs4[0]
    expect(e.name == "sched_switch" and e["prev_pid"] == e.pid and e.pid != 0,
           f"count ':1': cookie after {e.name} of pid {e.pid}")
    st = stacks4.get((e.pid, c["cookie"]), [])
    expect(len(st) == 1, f"count ':1': cookie {c['cookie']:#x} has {len(st)} stacks")
    ctx.diag(f"count ':1' on sched_switch: one cookie (pid {e.pid}) among {switches} switches")


def case_loss_raw(ctx, files):
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    d, cf, sf = dump(files, "c5")
    lost = d.lost()
    ctx.diag(f"per-CPU (stats overrun+dropped, pages flagged missing): {lost}")
    expect(any(s > 0 for s, _ in lost), "no loss produced: the test did not test anything")
    pf = d.fmt("ftrace", "print")
    expect(pf is not None, "no ftrace/print format")
    seqs = []
    for c in d.cpus:
        last = -1
        for e in c.events:
            if e.fmt is pf and e.pid == pid:
                m = re.match(r"ustest seq=(\d+)", pf.string(e.data, "buf"))
                if m:
                    s = int(m.group(1))
                    expect(s > last, f"cpu{c.cpu}: marker seq {s} after {last}")
                    last = s
                    seqs.append(s)
    expect(seqs, "no markers survived")
    expect(len(set(seqs)) == len(seqs), "duplicate markers")
    expect(len(seqs) < n, f"{len(seqs)} of {n} markers seen yet loss was reported")
    for c, (s, flagged) in zip(d.cpus, lost):
        # a CPU whose surviving pages start after a gap must say so
        if s == 0:
            expect(flagged == 0, f"cpu{c.cpu}: pages flagged missing but stats show no loss")
    pairs, strays, stacks = collect(d, cf, sf)
    ok = 0
    for e, c in pairs:
        if e.pid != pid:
            continue
        st = stacks.get((pid, c["cookie"]), [])
        expect(len(st) <= 1, f"cookie {c['cookie']:#x}: {len(st)} stacks")
        if st and e.name == "sys_enter" and e["id"] == NR_GETPID:
            names = ctx.syms.frames(sf.u64_array(st[0].data, "stack"))
            if names and names[0] == "flood_leaf":
                check_frames(ctx.syms, sf, st[0], FLOOD)
                ok += 1
    expect(ok > 0, "no complete getpid entry (cookie + stack) survived")
    ctx.diag(f"{len(seqs)}/{n} markers survived, {ok} complete getpid stacks all correct")


def loss_attribution(ctx, files, prefix, truth_file, mode):
    """One dump of case 05c: every attributed getpid event of the flood against the
    markers. Between two consecutive markers (seq s-1 and s, both kept) the task made
    exactly one getpid kernel entry: its attributed events must share one cookie, and
    no cookie may appear in two such intervals. Returns (attributed, unattributed)."""
    t = truth(files, truth_file)
    pid, n = int(t["pid"]), int(t["iterations"])
    d, cf, sf = dump(files, prefix)
    lost = d.lost()
    expect(any(s > 0 for s, _ in lost), f"{mode}: no loss produced {lost}: the case tests nothing")
    pf = d.fmt("ftrace", "print")
    expect(pf is not None, "no ftrace/print format")
    evs = d.merged()
    markers = {}
    for e in evs:
        if e.fmt is pf and e.pid == pid:
            m = re.match(r"ustest seq=(\d+)", pf.string(e.data, "buf"))
            if m:
                markers[int(m.group(1))] = e.ts
    expect(markers, f"{mode}: no marker survived")
    seqs = sorted(markers)
    times = [markers[s] for s in seqs]
    pairs, _, stacks = collect(d, cf, sf)
    if mode == "overwrite":
        text_same_as_raw(ctx, files.get("trace-o.txt", b"").decode("utf-8", "replace"), d, pairs, sf,
                         "trace text after overwritten pages")
    cookie_of = {id(e): c["cookie"] for e, c in pairs}
    mine = [e for e in evs if e.pid == pid and e.name in ("sys_enter", "sys_exit") and e["id"] == NR_GETPID]
    expect(mine, f"{mode}: no getpid event survived")
    by_interval, attributed, unattributed = {}, 0, 0
    for e in mine:
        if id(e) not in cookie_of:
            unattributed += 1
            continue
        attributed += 1
        i = bisect.bisect_left(times, e.ts)  # first marker at or after the event
        if i == len(seqs):
            continue  # after the last kept marker: no upper bound
        s = seqs[i]
        if s == 0 or (i > 0 and seqs[i - 1] == s - 1):
            by_interval.setdefault(s, set()).add(cookie_of[id(e)])
    owner = {}
    for s, cookies in by_interval.items():
        expect(len(cookies) == 1, f"{mode}: getpid entry {s} has events with cookies {[hex(c) for c in cookies]}")
        c = cookies.pop()
        expect(c not in owner, f"{mode}: cookie {c:#x} given to getpid entries {owner.get(c)} and {s}")
        owner[c] = s
        for st in stacks.get((pid, c), []):
            check_frames(ctx.syms, sf, st, FLOOD)
    expect(len(owner) > 10, f"{mode}: only {len(owner)} getpid entries checked against the markers")
    via = {id(e): c for e, c in pairs}
    linked = sum(1 for e in mine if getattr(via.get(id(e)), "fmt", None) is sf)
    ctx.diag(f"{mode}: loss {lost}, {len(markers)}/{n} markers, {attributed} getpid events attributed "
             f"({linked} through a linking stack; {len(owner)} entries checked, one cookie each, none "
             f"shared), {unattributed} unattributed")
    return attributed, unattributed


def case_loss_attr(ctx, files):
    loss_attribution(ctx, files, "c5o", "truth-o.txt", "overwrite")
    loss_attribution(ctx, files, "c5p", "truth-p.txt", "producer")


def case_migrate_raw(ctx, files):
    t = truth(files)
    tid, n = int(t["tid"]), int(t["iterations"])
    d, cf, sf = dump(files, "c6")
    expect(all(lost == 0 for lost, _ in d.lost()), f"unexpected loss {d.lost()}")
    pairs, strays, stacks = collect(d, cf, sf)
    text_same_as_raw(ctx, files.get("trace.txt", b"").decode("utf-8", "replace"), d, pairs, sf)
    paired = {id(e): c for e, c in pairs}
    entries = [
        ent
        for ent in syscall_entries(d.merged(), tid, NR_NANOSLEEP)
        if ent[-1].name == "sys_exit"
    ]
    expect(len(entries) >= n, f"{len(entries)} complete nanosleep entries of tid {tid}, expected {n}")
    migrated = 0
    for ent in entries:
        expect(all(id(e) in paired for e in ent), f"event without cookie in {ent}")
        cookies = {paired[id(e)]["cookie"] for e in ent}
        expect(len(cookies) == 1, f"entry {ent}: cookies {[hex(c) for c in cookies]}")
        c = cookies.pop()
        if ent[0].cpu != ent[-1].cpu:
            migrated += 1
        st = stacks.get((tid, c), [])
        expect(len(st) == 1, f"cookie {c:#x}: {len(st)} stack events")
        expect(st[0].ts >= ent[-1].ts, "stack event before the syscall returned")
        check_frames_prefix(ctx.syms, sf, st[0], MIGRATE)
    ctx.diag(f"{len(entries)} entries, {migrated} entered on one CPU and left on the other")
    expect(migrated > 0, "no entry migrated between CPUs: the test did not test anything")


def case_exit_raw(ctx, files):
    t = truth(files)
    children = [int(p) for p in t["children"].split(",") if p]
    expect(len(children) == int(t["iterations"]) and t.get("bad") == "0", f"ustest: {t}")
    d, cf, sf = dump(files, "c7")
    pairs, strays, stacks = collect(d, cf, sf)
    empty = 0
    for child in children:
        mine = [(e, c) for e, c in pairs if e.pid == child]
        expect(mine, f"child {child}: no event with a cookie")
        cookies = {c["cookie"] for _, c in mine}
        expect(len(cookies) == 1, f"child {child}: cookies {[hex(x) for x in cookies]}, expected one")
        e, c = mine[0]
        expect(e.name == "sys_enter" and e["id"] == NR_EXIT_GROUP, f"child {child}: {e}")
        st = stacks.get((child, c["cookie"]), [])
        expect(len(st) == 1, f"child {child}: {len(st)} stack events for its cookie")
        if not sf.u64_array(st[0].data, "stack"):
            empty += 1
        else:
            check_frames(ctx.syms, sf, st[0], EXITER)
    ctx.diag(f"{len(children)} exiting children, each with one stack event ({empty} empty)")


def case_deep_stack(ctx, files):
    """A stack deeper than a sub-buffer holds: the one stack entry of the kernel entry
    holds exactly the innermost frames that fit in a ring-buffer event (tracing/0003 asks for
    the largest event size only for such stacks)."""
    t = truth(files)
    pid, depth = int(t["pid"]), int(t["depth"])
    d, cf, sf = dump(files, "c16")
    expect(all(lost == 0 for lost, _ in d.lost()), f"unexpected loss {d.lost()}")
    pairs, _, stacks = collect(d, cf, sf)
    mine = [(e, c) for e, c in pairs if e.pid == pid and e.name == "sys_enter"]
    expect(len(mine) == 1, f"{len(mine)} getppid entries with a cookie, expected 1")
    st = stacks.get((pid, mine[0][1]["cookie"]), [])
    expect(len(st) == 1, f"{len(st)} stack entries for the cookie of getppid")
    frames = sf.u64_array(st[0].data, "stack")
    # the entry's fixed part ends where its array begins (__data_loc offset)
    loc = sf.fields["stack"]
    header = int.from_bytes(st[0].data[loc.offset : loc.offset + 2], "little")
    # largest payload of an event: a sub-buffer less its 16-byte header, the
    # event header and the length word (ring_buffer_max_event_size())
    fit = (d.cpus[0].page_size - 16 - 8 - header) // 8
    ctx.diag(f"depth {depth}: {len(frames)} frames stored, {fit} fit in an event "
             f"of a {d.cpus[0].page_size}-byte sub-buffer")
    expect(depth + 3 > fit, f"the stack of depth {depth} fits whole: the case tests nothing")
    expect(len(frames) == fit, f"{len(frames)} frames stored, {fit} fit")
    names = ctx.syms.frames(frames)
    expected = ["deep_leaf"] + ["deep_level"] * (fit - 1)
    expect(names == expected, f"frames {names[:3]}...{names[-2:]}, expected deep_leaf then "
           f"{fit - 1} x deep_level")


def case_stress(ctx, files):
    loops = files.get("loops.txt", b"").decode()
    m = re.search(r"stress_rc=(\d+) loops=(\d+) fails=(\d+)", loops)
    expect(m, f"no loop summary: {loops!r}")
    t = truth(files)
    ctx.diag(f"{m.group(2)} toggle/instance rounds, {t.get('rounds')} worker rounds")
    expect(m.group(1) == "0", "ustest stress failed")
    expect(int(m.group(2)) >= 5, "fewer than 5 rounds")
    expect(m.group(3) == "0", f"{m.group(3)} tracefs writes failed")
    t2 = truth(files, "truth-after.txt")
    pid = int(t2["pid"])
    d, cf, sf = dump(files, "s8c")
    pairs, _, stacks = collect(d, cf, sf)
    # the task's nanosleeps, not its stack entries or mapping records (an
    # entry in the page of its page cookie is "covered" by it too)
    mine = [c["cookie"] for e, c in pairs
            if e.pid == pid and e.fmt is not None and e.name == "sys_enter"]
    expect(len(mine) == 3, f"after the stress: {len(mine)} cookies, expected 3")
    for c in mine:
        st = stacks.get((pid, c), [])
        expect(len(st) == 1, f"after the stress: cookie {c:#x} has {len(st)} stacks")
        check_frames(ctx.syms, sf, st[0], CHAIN)


SYSCALL_LINE = r"-(\d+)\s+\[\d+\].*?\buser_unwind_syscall:\s*nr=(-?\d+) cookie=(?:0x)?([0-9a-fA-F]+)"


def tc_report(files, v, what):
    rec = files.get(f"record-{v}.rc", b"").decode().strip()
    rep = files.get(f"report-{v}.rc", b"").decode().strip()
    err = files.get(f"record-{v}.err", b"").decode("utf-8", "replace").strip()
    expect(rec == "record_rc=0", f"trace-cmd record {what}: {rec} {err[-300:]}")
    expect(rep == "report_rc=0", f"trace-cmd report ({what}): {rep}")
    text = files.get(f"report-{v}.txt", b"").decode("utf-8", "replace")
    expect("FAILED TO PARSE" not in text, f"{what}: [FAILED TO PARSE] in the report")
    return text


def tc_stack_cookies(text, pid, what):
    """The cookies of the user_unwind_stack lines of pid in a trace-cmd report."""
    out = []
    for line in text.splitlines():
        m = re.search(COOKIE_LINE, line)
        if m and m.group(1) == pid and m.group(2) in STACK_NAMES:
            c = re.search(r"cookie=(?:0x)?([0-9a-fA-F]+)", m.group(3))
            expect(c, f"{what}: no cookie= in {line.strip()!r}")
            out.append(int(c.group(1), 16))
    return out


def case_trace_cmd(ctx, files):
    # -p user_unwind -P PID: one user_unwind_syscall line per system call of the
    # process, none of another one (trace-cmd's own threads included), and one
    # stack line per cookie
    what = "-p user_unwind -P"
    text = tc_report(files, "p", what)
    t = truth(files, "truth-p.txt")
    pid, n = t["pid"], int(t["iterations"])
    sub = files.get("pid-p.txt", b"").decode().strip()
    expect(sub == pid, f"ustest pid {pid}, the subshell it replaced was {sub!r}")
    calls = [m.groups() for m in (re.search(SYSCALL_LINE, l) for l in text.splitlines()) if m]
    others = sorted({p for p, _, _ in calls if p != pid})
    expect(not others, f"{what}: user_unwind_syscall lines of other pids {others[:5]}")
    sleeps = [c for p, nr, c in calls if int(nr) == NR_NANOSLEEP]
    expect(len(sleeps) == n, f"{what}: {len(sleeps)} nanosleep user_unwind_syscall lines, ustest made {n}")
    cookies = [int(c, 16) for _, _, c in calls]
    expect(len(set(cookies)) == len(cookies) and 0 not in cookies, f"{what}: cookies not distinct/non-zero")
    stack_cookies = tc_stack_cookies(text, pid, what)
    missing = [hex(c) for c in cookies if stack_cookies.count(c) != 1]
    expect(not missing, f"{what}: cookies without exactly one stack line: {missing[:3]}")
    extra = [hex(c) for c in set(stack_cookies) - set(cookies)]
    expect(not extra, f"{what}: stack lines of cookies no user_unwind_syscall announced: {extra[:3]}")
    ctx.diag(f"{what}: {len(calls)} user_unwind_syscall lines of ustest ({len(sleeps)} nanosleep), "
             f"each with one stack line; no other pid")
    # tracer-cli report of trace-cmd's file prints the same user_unwind_syscall
    # lines, and groups each system call entry with the stack of its cookie
    rc_ok(files, "tcli-report-p", "tracer-cli report of trace-cmd's p.dat")
    ours = files.get("tcli-report-p.txt", b"").decode("utf-8", "replace")
    lines = [l.strip() for l in text.splitlines() if "user_unwind_syscall:" in l]
    our_lines = [l.strip() for l in ours.splitlines() if "user_unwind_syscall:" in l]
    diff = [(a, b) for a, b in zip(lines, our_lines) if a != b]
    expect(len(lines) == len(our_lines) and not diff,
           f"tracer-cli report: {len(our_lines)} user_unwind_syscall lines, trace-cmd {len(lines)}; "
           f"first difference {diff[:1]}")
    rc_ok(files, "tcli-p", "tracer-cli report --json of trace-cmd's p.dat")
    try:
        rep = json.loads(files.get("tcli-p.json", b"").decode())
    except ValueError as e:
        raise CaseFail(f"tracer-cli report --json is not JSON: {e}")
    mine = [g for g in rep["groups"] if g["pid"] == int(pid)]
    by_cookie = {int(g["cookie"], 16): g for g in mine if g.get("cookie")}
    expect(len(by_cookie) == len(mine) == len(cookies),
           f"tracer-cli: {len(mine)} groups of ustest, {len(cookies)} user_unwind_syscall cookies")
    for c in cookies:
        g = by_cookie.get(c)
        expect(g is not None, f"tracer-cli: no group of cookie {c:#x}")
        names = [e["name"] for e in g["events"]]
        expect(g["status"] == "complete" and names == ["user_unwind_syscall"],
               f"tracer-cli: group {c:#x} {g['status']} with events {names}")
    for c in (int(x, 16) for x in sleeps):
        g = by_cookie[c]
        expect("nr=35" in g["events"][0].get("info", ""), f"tracer-cli: group {c:#x}: {g['events'][0]}")
        # trace-cmd's file has no maps of the process, which is gone: the
        # frames stay addresses, which nm's table names
        addrs = [int(f["addr"], 16) for f in g["user_stack"]["frames"]]
        expect_chain(ctx.syms.frames(addrs), CHAIN, what=f"tracer-cli, cookie {c:#x}: ")
    ctx.diag(f"tracer-cli: the same {len(our_lines)} lines; {len(mine)} complete groups of one "
             f"user_unwind_syscall each, nanosleep frames (by nm) {CHAIN}")

    what = "-O userstacktrace_delay"
    text = tc_report(files, "o", what)
    t = truth(files, "truth-o.txt")
    pid, n = t["pid"], int(t["iterations"])
    # kernel entries: cookie lines, or a stack line linked to the one before
    lines = {c: v for (p, c), v in cookie_lines(text).items() if p == int(pid)}
    cookies = [c for c, v in lines.items() if v[0] or v[2]]
    linked = sum(1 for v in lines.values() if v[2])
    ctx.diag(f"{what}: {len(cookies)} kernel entries of ustest ({linked} linked) and "
             f"{sum(v[1] for v in lines.values())} stack events")
    expect(len(cookies) >= n, f"{what}: {len(cookies)} kernel entries with a cookie, ustest made {n} nanosleeps")
    missing = [hex(c) for c in cookies if lines[c][1] != 1]
    expect(not missing, f"{what}: cookies without exactly one stack event: {missing[:3]}")


def case_tracer_syscalls(ctx, files):
    """The user_unwind tracer with set_event_pid: one user_unwind_syscall per system
    call entry of the filtered task (the sys_enter events of the same instance are
    the ground truth), none of the task out of the filter, one stack per cookie."""
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    sub = files.get("pid.txt", b"").decode().strip()
    expect(sub == str(pid), f"ustest pid {pid}, the subshell it replaced was {sub!r}")
    other = int(truth(files, "truth-other.txt")["pid"])
    opt = files.get("option.txt", b"").decode().strip()
    expect(opt == "0", f"the tracer set userstacktrace_delay ({opt!r})")
    d, cf, sf = dump(files, "c15")
    expect(all(lost == 0 for lost, _ in d.lost()), f"unexpected loss {d.lost()}")
    yf = d.fmt("ftrace", "user_unwind_syscall")
    expect(yf is not None, "no user_unwind_syscall format file")
    expect("nr" in yf.fields and "cookie" in yf.fields, f"user_unwind_syscall fields {list(yf.fields)}")
    evs = d.merged()
    ys = [e for e in evs if e.fmt is yf]
    strangers = sorted({e.pid for e in ys if e.pid != pid})
    expect(not strangers, f"user_unwind_syscall entries of pids out of the filter: {strangers}")
    expect(not [e for e in evs if e.pid == other], f"entries of pid {other} (out of the filter)")
    enters = [e for e in evs if e.name == "sys_enter" and e.pid == pid]
    nrs, enter_nrs = [e["nr"] for e in ys], [e["id"] for e in enters]
    expect(nrs == enter_nrs, f"user_unwind_syscall nrs {nrs} != sys_enter ids {enter_nrs}")
    # each next to its sys_enter event, on the same CPU
    for y, e in zip(ys, enters):
        expect(y.cpu == e.cpu, f"nr {y['nr']}: user_unwind_syscall on cpu {y.cpu}, sys_enter on {e.cpu}")
    sleeps = [e for e in ys if e["nr"] == NR_NANOSLEEP]
    expect(len(sleeps) == n, f"{len(sleeps)} nanosleep entries, ustest made {n}")
    cookies = [e["cookie"] for e in ys]
    expect(0 not in cookies, "cookie 0")
    expect(len(set(cookies)) == len(cookies), "two system calls with the same cookie")
    stacks = {}
    for e in evs:
        if e.fmt is sf:
            stacks.setdefault((e.pid, e["cookie"]), []).append(e)
    for y in ys:
        st = stacks.get((pid, y["cookie"]), [])
        expect(len(st) == 1, f"nr {y['nr']} cookie {y['cookie']:#x}: {len(st)} stack events")
        expect(st[0].ts >= y.ts, f"cookie {y['cookie']:#x}: stack before the entry")
    extra = [hex(c) for p, c in stacks if p == pid and c not in set(cookies)]
    expect(not extra, f"stack events of cookies no entry announced: {extra[:3]}")
    expect(not [k for k in stacks if k[0] != pid], f"stack events of other pids: {[k for k in stacks if k[0] != pid][:3]}")
    for y in sleeps:
        names = check_frames(ctx.syms, sf, stacks[(pid, y["cookie"])][0], CHAIN)
    empty = sum(1 for y in ys if not sf.u64_array(stacks[(pid, y["cookie"])][0].data, "stack"))
    ctx.diag(f"{len(ys)} system calls of pid {pid} ({len(sleeps)} nanosleep), each with one "
             f"user_unwind_syscall and one stack ({empty} empty); none of pid {other}")
    ctx.diag(f"nanosleep stacks symbolize to {names}")
    text = files.get("trace.txt", b"").decode("utf-8", "replace")
    shown = re.findall(rf"-{pid}\s+\[\d+\].*user_unwind_syscall: nr=35 cookie=([0-9a-f]+)", text)
    expect(sorted(int(c, 16) for c in shown) == sorted(y["cookie"] for y in sleeps),
           f"trace shows {len(shown)} nanosleep user_unwind_syscall lines, expected {n}")
    if "record.rc" in files:
        tracer_cli_syscalls(ctx, files)


def tracer_cli_syscalls(ctx, files):
    """tracer-cli record -p user_unwind -F: every group is the command's, one
    user_unwind_syscall and its stack each, the nanosleep ones on the chain."""
    rc_ok(files, "record", "tracer-cli record -p user_unwind -F")
    t = truth(files, "truth-cli.txt")
    pid, n = int(t["pid"]), int(t["iterations"])
    rep = load_report(files)
    tc, _ = tc_cookies(files)
    groups = rep["groups"]
    strangers = sorted({g["pid"] for g in groups if g["pid"] != pid})
    expect(not strangers, f"tracer-cli groups of pids out of -F: {strangers}")
    bad = [(g["cookie"], g["status"]) for g in groups if g["status"] != "complete"]
    expect(not bad, f"groups not complete: {bad[:5]}")
    for g in groups:
        names = [e["name"] for e in g["events"]]
        expect(names == ["user_unwind_syscall"], f"group {g['cookie']}: events {names}")

    def nr(g):
        m = re.search(r"nr=(\d+)", g["events"][0].get("info", ""))
        return int(m.group(1)) if m else None

    sleeps = [g for g in groups if nr(g) == NR_NANOSLEEP]
    expect(len(sleeps) == n, f"{len(sleeps)} nanosleep groups, ustest made {n}")
    for g in sleeps:
        expect_chain(group_frames(ctx, g), CHAIN, what=f"cookie {g['cookie']}: ")
    expect(len(tc) == len(groups) and all(v[:2] == [0, 1] for v in tc.values()),
           f"trace-cmd sees {len(tc)} cookies with stacks, tracer-cli {len(groups)} groups")
    ctx.diag(f"tracer-cli record -p user_unwind -F: {len(groups)} system calls of pid {pid}, "
             f"each one complete group; {n} nanosleep on {CHAIN}")


def case_unwind_kunit(ctx, files):
    """KUnit suite unwind_deferred, run from a write() system call in the guest."""
    text = files.get("results.txt", b"").decode("utf-8", "replace")
    cases, suite = [], None
    for line in text.splitlines():
        m = re.match(r"^(\s*)(ok|not ok) \d+ (\S+)(.*)", line)
        if not m:
            continue
        if m.group(1):
            cases.append((m.group(2), m.group(3), m.group(4).strip()))
        elif m.group(3) == "unwind_deferred":
            suite = (m.group(2), m.group(4).strip())
    for ln in text.splitlines():
        if "Expected" in ln or "work bit" in ln or "not ok" in ln:
            ctx.diag(ln.strip())
    names = [c[1] for c in cases]
    expect(names == ["unwind_deferred_test_cancelled", "unwind_deferred_test_twice",
                     "unwind_deferred_test_wrap", "unwind_deferred_test_late"],
           f"unexpected cases in the results: {names} ({text[-300:]!r})")
    bad = [c for c in cases if c[0] != "ok" or "SKIP" in c[2]]
    expect(not bad, f"cases not ok: {bad}")
    expect(suite is not None and suite[0] == "ok" and "SKIP" not in suite[1], f"suite result {suite}")
    ctx.diag("request on a cancelled work: -EINVAL and one warning; second request: 1, same cookie; "
             "cookies 2^32 entries apart differ; a request pending at the reset on the way out is dropped")


# ---------------------------------------------------------------------------
# tracer-cli cases: its stitched JSON, cross-checked against trace-cmd's report
# of the same trace.dat and against ustest's symbol table


def rc_ok(files, name, what):
    rc = files.get(f"{name}.rc", b"").decode().strip()
    err = files.get(f"{name}.err", files.get(f"{name}.out", b"")).decode("utf-8", "replace").strip()
    expect(rc == "rc=0", f"{what} failed ({rc or 'no rc'}): {err[-400:]}")


def load_report(files):
    import json

    rc_ok(files, "report", "tracer-cli report --json")
    try:
        return json.loads(files.get("report.json", b"").decode())
    except ValueError as e:
        raise CaseFail(f"tracer-cli report --json is not JSON: {e}")


def tc_cookies(files):
    """trace-cmd report of tracer-cli's file: {(pid, cookie): [n cookie lines, n stack lines,
    linked]}; linked: its stack line's prev= names a stack line of the task with links=1
    (kernel-patch tracing/0013: that stack stands for the entry's page cookie)"""
    rc_ok(files, "tc-report", "trace-cmd report of tracer-cli's trace.dat")
    text = files.get("tc-report.txt", b"").decode("utf-8", "replace")
    expect("FAILED TO PARSE" not in text, "trace-cmd report: [FAILED TO PARSE]")
    return cookie_lines(text), text


PLUGIN_DIR = None  # --plugins: the directory of plugins/ built (run.sh)


def text_cookies_agree(text, groups, what):
    """The rules for text (Documentation/trace/user-unwind.rst, rawtrace.text_attribute)
    applied to a `trace-cmd report -t` give every event the cookie that tracer-cli's
    report --json groups give it (none: the event is in no deferred group). Returns
    the per-CPU attribution of the text."""
    ours = {}
    for g in groups:
        if g["kind"] == "deferred" and g["cookie"]:
            for e in g["events"]:
                ours[(e["cpu"], e["ts"], e["name"], g["pid"])] = int(g["cookie"], 16)
    times = {}
    by_text = rawtrace.text_attribute(text, times)
    got = {}
    for cpu, evs in by_text.items():
        for (name, pid, cookie), ts in zip(evs, times[cpu]):
            got[(cpu, ts, name, pid)] = cookie
    missing = [k for k in ours if k not in got]
    expect(not missing, f"{what}: events of tracer-cli's groups not in the text: {missing[:3]}")
    diff = [(k, c, ours.get(k)) for k, c in sorted(got.items()) if c != ours.get(k)]
    expect(not diff, f"{what}: {len(diff)} events where the rules for text disagree with tracer-cli; "
           f"first (cpu, ts, event, pid), text, tracer-cli: {diff[:1]}")
    return by_text


def text_readers_agree(ctx, files, what):
    """The readers of the rules agree on tracer-cli's trace.dat: `trace-cmd report`
    without plugins (the kernel's print formats) and with the plugin of plugins/,
    read by the rules for text, and tracer-cli's stitching (text_cookies_agree)."""
    import tempfile

    if PLUGIN_DIR is None:
        ctx.diag(f"{what}: no --plugins, the text readers are not compared")
        return
    dat = files.get("t.dat")
    expect(dat, f"{what}: no t.dat")
    groups = load_report(files)["groups"]
    results = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.dat")
        with open(path, "wb") as f:
            f.write(dat)
        for how, args, env in (("without plugins", ["-N"], {}),
                               ("with the plugin", [], {"TRACEEVENT_PLUGIN_DIR": PLUGIN_DIR})):
            r = subprocess.run(["trace-cmd", "report", "-t", *args, path], capture_output=True, text=True,
                               env={**os.environ, **env})
            expect(r.returncode == 0, f"{what}: trace-cmd report {how}: {r.stderr.strip()[-300:]}")
            expect("FAILED TO PARSE" not in r.stdout, f"{what}: trace-cmd report {how}: [FAILED TO PARSE]")
            if how == "with the plugin":
                expect("links=" in r.stdout, f"{what}: the plugin's report shows no links=")
                linked = r.stdout.count("links=1")
            results[how] = text_cookies_agree(r.stdout, groups, f"{what}, trace-cmd report {how}")
    a, b = results.values()
    expect(a == b, f"{what}: the plugin's text gives other cookies than the kernel's formats")
    n = sum(len(v) for v in a.values())
    covered = sum(1 for v in a.values() for x in v if x[2])
    ctx.diag(f"{what}: rules for text on trace-cmd report (-N and with the plugin) and tracer-cli agree on "
             f"{n} events, {covered} with a cookie ({linked} linking stack entries)")


def cookie_lines(text):
    """The cookie, page cookie and stack lines of a trace-cmd report, as tc_cookies()."""
    out, prevs, linking = {}, {}, set()
    for line in text.splitlines():
        m = re.search(COOKIE_LINE, line)
        if not m:
            continue
        c = re.search(r"cookie=(?:0x)?([0-9a-fA-F]+)", m.group(3))
        expect(c, f"trace-cmd report: no cookie= in {line.strip()!r}")
        k = (int(m.group(1)), int(c.group(1), 16))
        if k[1] == 0:
            continue  # a page cookie of no kernel entry
        stack = m.group(2) in STACK_NAMES
        out.setdefault(k, [0, 0, False])[1 if stack else 0] += 1
        link = re.search(r"prev=(?:0x)?([0-9a-fA-F]+) links=(\d)", m.group(3)) if stack else None
        if link:
            prevs[k] = (k[0], int(link.group(1), 16))
            if link.group(2) == "1":
                linking.add(k)
    for k, p in prevs.items():
        out[k][2] = p in linking
    return out


def group_frames(ctx, g):
    """Symbols of a group's user stack: tracer-cli's names, checked against nm's."""
    frames = g["user_stack"]["frames"]
    addrs = [int(f["addr"], 16) for f in frames]
    ours = ctx.syms.frames(addrs)
    theirs = [f.get("symbol") or f["addr"] for f in frames]
    expect(
        ours == theirs,
        f"tracer-cli symbolized {theirs}, ustest's symbol table says {ours} (cookie {g['cookie']})",
    )
    return theirs


def expect_chain(names, expected, prefix_only=False, what=""):
    head, tail = names[: len(expected)], names[len(expected) :]
    ok = head == expected and (prefix_only or all(LIBC_START.match(n) for n in tail))
    expect(ok, f"{what}frames {names}, expected {expected}{'...' if prefix_only else ' (+ libc start)'}")


def syscall_nr(ev):
    m = re.search(r"NR (\d+)", ev.get("info", ""))
    return int(m.group(1)) if m else None


def check_pairing(g, tc):
    """A stack may be attached only when trace-cmd sees the same cookie paired."""
    cookie = int(g["cookie"], 16)
    n = tc.get((g["pid"], cookie), [0, 0, False])
    expect(g["cookie_events"] >= 1 or n[2], f"group {g['cookie']} complete without cookie events or a link")
    expect((n[0] >= 1 or n[2]) and n[1] == 1, f"pid {g['pid']} cookie {g['cookie']}: trace-cmd shows {n[0]} "
           f"cookie and {n[1]} stack events (linked: {n[2]}), yet tracer-cli attached a stack")


def case_tc_record(ctx, files):
    rc_ok(files, "record", "tracer-cli record")
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    rep = load_report(files)
    tc, _ = tc_cookies(files)
    mine = [g for g in rep["groups"] if g["pid"] == pid]
    expect(all(g["kind"] == "deferred" for g in mine), "non-deferred groups for ustest")
    bad = [g for g in mine if g["status"] != "complete"]
    for g in bad[:5]:
        n = tc.get((pid, int(g["cookie"], 16)), [0, 0])
        ev = ", ".join(f"{e['name']}@{e['ts']}" for e in g["events"][:3])
        ctx.diag(f"group {g['cookie']} {g['status']}: events {ev}; trace-cmd shows {n[0]} cookie and "
                 f"{n[1]} stack events for it")
        same = [h for h in mine if h is not g and h["cookie"] == g["cookie"] and h["user_stack"]]
        if same and n[1] == 1:
            ctx.diag(f"  its one stack event came at {same[0]['user_stack']['ts']}, before these events: "
                     "the cookie was announced again in the same kernel entry after the unwind ran")
    expect(not bad, f"groups of ustest not complete: {[(g['cookie'], g['status']) for g in bad[:5]]}")
    sys_groups = [g for g in mine if any(syscall_nr(e) == NR_NANOSLEEP for e in g["events"])]
    expect(len(sys_groups) == n, f"{len(sys_groups)} groups with a nanosleep, ustest made {n}")
    cookies = [g["cookie"] for g in mine]
    expect(len(set(cookies)) == len(cookies), "two groups with the same cookie")
    for g in sys_groups:
        names = [e["name"] for e in g["events"]]
        # a switch after sys_exit is still this kernel entry (preempted on
        # the way back to user space, before the unwind)
        core = names[:len(names) - len(list(itertools.takewhile(lambda x: x == "sched_switch", reversed(names))))]
        expect(core and core[0] == "sys_enter" and core[-1] == "sys_exit", f"group {g['cookie']}: events {names}")
        # one page cookie per kernel entry and page (plus a cookie entry after an event that
        # landed in another page than its page cookie): never more than the events
        linked = tc.get((pid, int(g["cookie"], 16)), [0, 0, False])[2]
        expect(int(not linked) <= g["cookie_events"] <= len(g["events"]), f"group {g['cookie']}: {g['cookie_events']} "
               f"cookie entries for {len(g['events'])} events")
        expect_chain(group_frames(ctx, g), CHAIN, what=f"cookie {g['cookie']}: ")
        check_pairing(g, tc)
    tc_mine = {k: v for k, v in tc.items() if k[0] == pid}
    expect(len(tc_mine) == len(mine), f"trace-cmd sees {len(tc_mine)} cookies of ustest, tracer-cli "
           f"{len(mine)} groups")
    expect(all(v[1] == 1 for v in tc_mine.values()), "a cookie without exactly one stack event")
    sched = sum(1 for g in sys_groups for e in g["events"] if e["name"] == "sched_switch")
    ctx.diag(f"{n} syscall groups complete ({sched} sched_switch inside), frames {CHAIN}, "
             f"{len(mine)} groups == {len(tc_mine)} cookies in trace-cmd's view")
    text_readers_agree(ctx, files, "record")


def case_tc_loss(ctx, files):
    rc_ok(files, "start", "tracer-cli start")
    rc_ok(files, "extract", "tracer-cli extract")
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    kl = []
    cpu = 0
    while f"kstats.cpu{cpu}" in files:
        s = rawtrace.parse_stats(files[f"kstats.cpu{cpu}"].decode())
        kl.append(s.get("overrun", 0) + s.get("dropped events", 0))
        cpu += 1
    rep = load_report(files)
    # count: events known lost; unknown_count: a loss whose size the kernel did not store
    drops = {d["cpu"]: int(d["count"]) + (1 if d["unknown_count"] else 0) for d in rep["drops"]}
    ctx.diag(f"kernel per-CPU loss {kl}, tracer-cli drops {rep['drops']}")
    expect(kl and any(kl), "no loss produced: the test did not test anything")
    for c, lost in enumerate(kl):
        if lost:
            expect(drops.get(c, 0) > 0, f"cpu{c}: the kernel lost {lost} events, tracer-cli reports none")
    # the file holds the kernel's per-CPU stats (CPUSTAT), so every count is known and exact
    exact = {d["cpu"]: int(d["count"]) for d in rep["drops"] if not d["unknown_count"]}
    expect(len(exact) == len(rep["drops"]), f"drops of unknown size despite CPUSTAT: {rep['drops']}")
    for c, lost in enumerate(kl):
        expect(exact.get(c, 0) == lost, f"cpu{c}: the kernel lost {lost} events, tracer-cli reports {exact.get(c, 0)}")
    tc, text = tc_cookies(files)
    seen = len(re.findall(r"ustest seq=\d+", text))
    expect(seen < n, f"{seen} of {n} markers in the file despite the loss")
    complete = 0
    for g in rep["groups"]:
        if g["user_stack"] is None or g["status"] != "complete":
            continue
        check_pairing(g, tc)
        if g["pid"] == pid:
            # start + extract: the process is gone when the file is written, so
            # tracer-cli has no maps to symbolize with; use ustest's symbols
            addrs = [int(f["addr"], 16) for f in g["user_stack"]["frames"]]
            names = ctx.syms.frames(addrs)
            if names and names[0] == "flood_leaf":
                expect_chain(names, FLOOD, what=f"cookie {g['cookie']}: ")
                complete += 1
    expect(complete > 0, "no complete getpid group survived")
    st = {}
    for g in rep["groups"]:
        st[g["status"]] = st.get(g["status"], 0) + 1
    ctx.diag(f"{seen}/{n} markers kept; groups {st}; {complete} complete flood stacks all correct")
    text_readers_agree(ctx, files, "loss")


def case_tc_migrate(ctx, files):
    rc_ok(files, "record", "tracer-cli record")
    t = truth(files)
    tid, n = int(t["tid"]), int(t["iterations"])
    rep = load_report(files)
    tc, _ = tc_cookies(files)
    mine = [g for g in rep["groups"] if g["pid"] == tid and any(syscall_nr(e) == NR_NANOSLEEP for e in g["events"])]
    expect(len(mine) == n, f"{len(mine)} nanosleep groups for tid {tid}, expected {n}")
    migrated = 0
    for g in mine:
        expect(g["status"] == "complete", f"group {g['cookie']}: {g['status']}")
        ev = g["events"]
        core = [e for e in ev if e["name"] != "sched_switch"]
        expect(core and core[0]["name"] == "sys_enter" and core[-1]["name"] == "sys_exit",
               f"group {g['cookie']}: {ev}")
        if ev[0]["cpu"] != ev[-1]["cpu"]:
            migrated += 1
        expect_chain(group_frames(ctx, g), MIGRATE, prefix_only=True, what=f"cookie {g['cookie']}: ")
        check_pairing(g, tc)
    ctx.diag(f"{n} groups complete, {migrated} migrated between CPUs")
    expect(migrated > 0, "no group migrated: the test did not test anything")
    text_readers_agree(ctx, files, "migration")


def case_tc_exit(ctx, files):
    rc_ok(files, "record", "tracer-cli record")
    t = truth(files)
    children = [int(p) for p in t["children"].split(",") if p]
    rep = load_report(files)
    tc, _ = tc_cookies(files)
    empty = 0
    for child in children:
        gs = [g for g in rep["groups"] if g["pid"] == child]
        expect(len(gs) == 1, f"child {child}: {len(gs)} groups, expected 1")
        g = gs[0]
        expect(g["status"] == "complete", f"child {child}: status {g['status']}")
        expect([syscall_nr(e) for e in g["events"]] == [NR_EXIT_GROUP], f"child {child}: {g['events']}")
        check_pairing(g, tc)
        names = group_frames(ctx, g)
        if names:
            expect_chain(names, EXITER, what=f"child {child}: ")
        else:
            empty += 1
    ctx.diag(f"{len(children)} children: one complete group each ({empty} with an empty stack)")
    text_readers_agree(ctx, files, "exit")


MAPPING = re.compile(
    r"-(\d+)\s+\[\d+\].*?\buser_unwind_mapping:\s*tgid=(\d+) exec=(\d+) ([0-9a-f]+)-([0-9a-f]+) "
    r"offset=([0-9a-f]+) build_id=([0-9a-f]*) path=(.*)$"
)


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    return m.group(1) if m else ""


def case_maps_exit(ctx, files):
    """Mapping records symbolize a process gone before the read."""
    got = {}
    for run in ("on", "off"):
        for step in ("start", "extract"):
            rc = files.get(f"{step}-{run}.rc", b"").decode().strip()
            out = files.get(f"{step}-{run}.out", b"").decode("utf-8", "replace").strip()
            expect(rc == "rc=0", f"tracer-cli {step} ({run}) failed ({rc or 'no rc'}): {out[-300:]}")
        rc_ok(files, f"report-{run}", f"tracer-cli report --json ({run})")
        rc_ok(files, f"tc-report-{run}", f"trace-cmd report ({run})")
        t = truth(files, f"truth-{run}.txt")
        pid, n = int(t["pid"]), int(t["iterations"])
        text = files.get(f"tc-report-{run}.txt", b"").decode("utf-8", "replace")
        expect("FAILED TO PARSE" not in text, f"trace-cmd report ({run}): [FAILED TO PARSE]")
        recs = [m.groups() for m in map(MAPPING.search, text.splitlines()) if m and int(m.group(2)) == pid]
        groups = [g for g in json.loads(files[f"report-{run}.json"].decode())["groups"]
                  if g["pid"] == pid and any(syscall_nr(e) == NR_NANOSLEEP for e in g["events"])]
        expect(len(groups) == n, f"({run}) {len(groups)} nanosleep groups of ustest, it made {n}")
        expect(all(g["status"] == "complete" for g in groups), f"({run}) groups not complete")
        got[run] = (pid, recs, groups)

    # on: every record is a mapping of the program, exactly as its /proc/self/maps said
    pid, recs, groups = got["on"]
    maps = {}
    for line in files.get("maps-on.txt", b"").decode().splitlines():
        w = line.split()
        if len(w) >= 6:
            s, e = w[0].split("-")
            maps[(int(s, 16), int(e, 16))] = (int(w[2], 16), w[5], w[1])
    expect(maps, "ustest saved no /proc/self/maps")
    expect(recs, f"trace-cmd report shows no user_unwind_mapping of ustest (pid {pid})")
    want_id = build_id(ctx.ustest)
    seen = set()
    for tid, tgid, exe, s, e, off, bid, path in recs:
        k = (int(s, 16), int(e, 16))
        expect(k not in seen, f"mapping {s}-{e} described twice")
        seen.add(k)
        expect(int(tid) == pid, f"record of thread {tid}, ustest has one thread ({pid})")
        expect(k in maps, f"record {s}-{e} {path} is not in ustest's /proc/self/maps")
        moff, mpath, perm = maps[k]
        expect((int(off, 16), path) == (moff, mpath), f"record {s}-{e}: offset {off} {path}, "
               f"/proc/self/maps says {moff:x} {mpath}")
        if path == "/bin/ustest":
            expect(bid == want_id, f"build id {bid}, readelf -n says {want_id}")
    text_maps = [k for k, v in maps.items() if v[1] == "/bin/ustest" and "x" in v[2]]
    expect(set(text_maps) <= seen, f"ustest's text mapping {text_maps} not described: {sorted(seen)}")
    # ustest maps: main -> do_maps (saves its maps) -> do_chain -> ...
    chain = CHAIN[:-1] + ["do_maps", "main"]
    for g in groups:
        expect_chain(group_frames(ctx, g), chain, what=f"cookie {g['cookie']}: ")
    stacks = files.get("stacks-on.txt", b"").decode("utf-8", "replace")
    expect("chain_level3" in stacks, "report --stacks does not name chain_level3")
    ctx.diag(f"{len(recs)} mapping records of pid {pid}, all in its /proc/self/maps, build id {want_id}; "
             f"{len(groups)} stacks symbolize to {chain}")

    # off (control): no record, and the same stacks stay bare
    pid, recs, groups = got["off"]
    expect(not recs, f"option off, yet {len(recs)} mapping records")
    named = [f["symbol"] for g in groups for f in g["user_stack"]["frames"] if f.get("symbol")]
    expect(not named, f"option off, yet frames were symbolized ({named[:3]}): the test proves nothing")


def case_tc_threads(ctx, files):
    """A stock trace-cmd recording of a multi-threaded program symbolizes, threads
    included: with the option and with the tracer, no option about mappings."""
    expect(files.get("maps-default.txt", b"").decode().strip() == "1", "userstacktrace_maps is not on by default")
    named = {}
    for run in ("o", "p", "off"):
        for step, what in (("record", "trace-cmd record"), ("report", "tracer-cli report --json"),
                           ("tc-report", "trace-cmd report")):
            rc = files.get(f"{step}-{run}.rc", b"").decode().strip()
            err = files.get(f"{step}-{run}.err", b"").decode("utf-8", "replace").strip()
            expect(rc == "rc=0", f"{what} ({run}) failed ({rc or 'no rc'}): {err[-300:]}")
        text = files.get(f"tc-report-{run}.txt", b"").decode("utf-8", "replace")
        expect("FAILED TO PARSE" not in text, f"trace-cmd report ({run}): [FAILED TO PARSE]")
        t = truth(files, f"truth-{run}.txt")
        pid, n = int(t["pid"]), int(t["iterations"])
        tids = [int(x) for x in t["tids"].split(",")]
        expect(len(set(tids + [pid])) == 4, f"({run}) ustest threads printed tids {tids}, pid {pid}")
        try:
            groups = json.loads(files[f"report-{run}.json"].decode())["groups"]
        except (KeyError, ValueError) as e:
            raise CaseFail(f"({run}) tracer-cli report --json: {e}")
        stacks = {task: [g for g in groups if g["pid"] == task and g["user_stack"] and g["user_stack"]["frames"]]
                  for task in [pid] + tids}
        if run == "off":
            bare = [f["symbol"] for v in stacks.values() for g in v for f in g["user_stack"]["frames"]
                    if f.get("symbol")]
            expect(not bare, f"(off) frames symbolized without mapping records ({bare[:3]}): the case proves "
                   "nothing")
            expect(sum(len(v) for v in stacks.values()) >= 4 * n, "(off) fewer stacks than getppid calls")
            continue
        for task, v in stacks.items():
            chain = THREADS_MAIN if task == pid else THREADS_WORKER
            mine = [g for g in v if g["user_stack"]["frames"][0].get("symbol") == "thr_leaf"]
            expect(len(mine) == n, f"({run}) task {task}: {len(mine)} stacks from thr_leaf, it made {n} getppid")
            for g in mine:
                expect_chain(group_frames(ctx, g), chain, prefix_only=True,
                             what=f"({run}) task {task} cookie {g['cookie']}: ")
            raw = [g["user_stack"]["frames"][0]["addr"] for g in v if not g["user_stack"]["frames"][0].get("symbol")]
            expect(not raw, f"({run}) task {task}: {len(raw)} of {len(v)} stacks unsymbolized, e.g. {raw[:3]}")
            named[(run, task)] = len(v)
        tasks = ", ".join(f"{task}: {named[(run, task)]}" for task in [pid] + tids)
        ctx.diag(f"({run}) every stack of the 4 tasks symbolized (stacks per task: {tasks}); {n} from thr_leaf "
                 f"each, chains {THREADS_MAIN} and {THREADS_WORKER}")
    ctx.diag("(off) with -O nouserstacktrace_maps no frame is symbolized")


def exit_window(ctx, files, prefix, nr, chain):
    """Events of the way back to user space (the irq_enable of exit_to_user_mode(),
    after the last task work) belong to their own kernel entry: they carry its
    cookie, not the one of the task's next kernel entry. The program made
    `iterations` system calls `nr` from `chain`, each with exactly one stack."""
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    d, cf, sf = dump(files, prefix)
    expect(all(lost == 0 for lost, _ in d.lost()), f"unexpected loss {d.lost()}")
    pairs, _, stacks = collect(d, cf, sf)
    cookie_of = {id(e): c["cookie"] for e, c in pairs}
    mine = [e for e in d.merged() if e.pid == pid]
    # the shell that set the pid filter calls getppid too: from its execve on
    execs = [i for i, e in enumerate(mine) if e.name == "sys_enter" and e["id"] == NR_EXECVE]
    mine = mine[execs[-1]:] if execs else mine
    calls = {cookie_of.get(id(e)): e for e in mine if e.name == "sys_enter"}
    expect(None not in calls and 0 not in calls, "a sys_enter without a cookie")
    # Every event of the program has a cookie (the preemptirq events of the
    # unwind request's irqsave and of interrupts nest in the option's
    # writers), and none the cookie of another system call: an event with
    # the cookie of call k comes after the stack entry of call k-1 and
    # before the sys_enter of call k+1.
    own = [e for e in mine if e.fmt is not None and e.fmt.system != "ftrace"]
    bare = [e for e in own if not cookie_of.get(id(e))]
    expect(not bare, f"{len(bare)} of {len(own)} events of ustest without a cookie: "
           + ", ".join(f"{e.name} at {e.ts} on CPU {e.cpu}" for e in bare[:3]))
    where = {id(e): i for i, e in enumerate(mine)}
    order = [c for c, _ in sorted(calls.items(), key=lambda ce: where[id(ce[1])])]
    stack_at = {e["cookie"]: where[id(e)] for e in mine if e.fmt is sf}
    rank = {c: k for k, c in enumerate(order)}
    for e in own:
        k = rank.get(cookie_of.get(id(e)))
        if k is None:
            continue  # no cookie, or one of a page fault or an interrupt from user space
        lo = stack_at.get(order[k - 1], -1) if k else -1
        hi = where[id(calls[order[k + 1]])] if k + 1 < len(order) else len(mine)
        expect(lo < where[id(e)] < hi, f"{e.name} at {e.ts} has the cookie {order[k]:#x} of another system call")
    # The stack entry of a system call is written by the unwind callback, the
    # last task work on its way out; the next irq_enable of the task is the one
    # of exit_to_user_mode(), still in that kernel entry. (Other kernel entries
    # of the task, page faults and interrupts, have cookies of their own.)
    outward, pending = 0, None
    for e in mine:
        c = cookie_of.get(id(e))
        if e.name == "sys_enter":
            pending = None
        elif e.fmt is sf and e["cookie"] in calls:
            pending = e["cookie"]
        elif e.name == "irq_enable" and pending is not None:
            expect(c == pending, f"the irq_enable on the way out of the system call of cookie {pending:#x} "
                   f"(at {e.ts}) has cookie {hex(c) if c else None}"
                   + (", a later system call's" if c in calls else ""))
            outward += 1
            pending = None
    made = [c for c, e in calls.items() if e["id"] == nr]
    expect(len(made) == n, f"{len(made)} calls of system call {nr} recorded, ustest made {n}")
    expect(outward >= n, f"{outward} irq_enable events on the way out of a system call, fewer than the {n} "
           f"calls of {nr}: the case proves nothing")
    for c in made:
        st = stacks.get((pid, c), [])
        expect(len(st) == 1, f"cookie {c:#x}: {len(st)} stack events, expected exactly 1")
        names = check_frames(ctx.syms, sf, st[0], chain)
    ctx.diag(f"{len(calls)} system calls; {outward} irq_enable events on the way out of them, each with its "
             f"call's cookie; {n} stacks of system call {nr} {names}; all {len(own)} events with a "
             "cookie, none with another call's")
    return t, d, sf


def nested_page_cookies(d, sf, pid):
    """Stack entries of the unwind callback (prev set) that are no link and whose
    last cookie-bearing entry of the task before them in their sub-buffer is a
    page cookie of their own cookie: an interrupt wrote it in the callback, after
    the callback dropped the task's page cookie coverage."""
    pf = d.fmt("ftrace", "user_unwind_page_cookie")
    n = 0
    for cpu in d.cpus:
        last = None
        for e in cpu.events:
            if e.pid != pid:
                continue
            if e.fmt is pf:
                last = (e.pos // cpu.page_size, e["cookie"])
            elif e.fmt is sf:
                n += not e["links"] and e["prev"] != 0 and last == (e.pos // cpu.page_size, e["cookie"])
                last = None
    return n


def case_exit_window(ctx, files):
    exit_window(ctx, files, "c20", NR_NANOSLEEP, CHAIN)


def case_exit_ipi(ctx, files):
    """As case_exit_window, with IPIs nesting in the way out without pause."""
    t, d, sf = exit_window(ctx, files, "c22", NR_GETPPID, ["ipi_leaf", "ipi_level1", "do_ipi", "main"])
    expect(int(t["sent"]) > 0, "no mprotect of the sender thread took write access away: the case proves nothing")
    ctx.diag(f"{t['sent']} mprotect calls took write access away meanwhile (TLB shootdown IPIs); "
             f"{nested_page_cookies(d, sf, int(t['pid']))} stack entries with an interrupt's page cookie "
             "right before them, no link")


def case_uprobe_migrate(ctx, files):
    """A trigger's cookie follows its event on the event's CPU when the event
    commits preemptibly (a uprobe) and the task is moved between CPUs meanwhile."""
    t = truth(files)
    pid, n = int(t["pid"]), int(t["iterations"])
    d, cf, sf = dump(files, "c21")
    expect(all(lost == 0 for lost, _ in d.lost()), f"unexpected loss {d.lost()}")
    pairs, strays, stacks = collect(d, cf, sf)
    ups = [e for e in d.merged() if e.name == "up_target" and e.pid == pid]
    expect(len(ups) == n, f"{len(ups)} up_target events, ustest made {n} calls")
    cpus = {e.cpu for e in ups}
    expect(len(cpus) == 2, f"the task ran on CPUs {sorted(cpus)} only: the case proves nothing")
    paired = {id(e): c for e, c in pairs}
    unpaired = [e for e in ups if id(e) not in paired]
    mine = [c for c in strays if c.pid == pid]
    expect(not unpaired and not mine,
           f"{len(unpaired)} up_target events without their cookie right after them, {len(mine)} cookie "
           f"entries after no event of the task (written on another CPU): {unpaired[:2]} {mine[:2]}")
    cookies = [paired[id(e)]["cookie"] for e in ups]
    expect(len(set(cookies)) == n and 0 not in cookies, "up_target events sharing a cookie, or cookie 0")
    for c in cookies:
        st = stacks.get((pid, c), [])
        expect(len(st) == 1, f"cookie {c:#x}: {len(st)} stack events, expected exactly 1")
        names = check_frames_prefix(ctx.syms, sf, st[0], ["up_target"])
    ctx.diag(f"{n} uprobe events on CPUs {sorted(cpus)}, each followed by its own cookie on its CPU, one stack "
             f"each ({names[:3]}...)")


def exact_instance(ctx, files, prefix, pids=None):
    """The cookies and stacks of one instance: every stack is of a (pid, cookie) the
    instance announced (of its own pids), every announced cookie has exactly one stack.
    -> (pairs, stacks, cookies)"""
    d, cf, sf = dump(files, prefix)
    expect(all(lost == 0 for lost, _ in d.lost()), f"{prefix}: unexpected loss {d.lost()}")
    pairs, _, stacks = collect(d, cf, sf)
    cookies = {(e.pid, c["cookie"]) for e, c in pairs if c["cookie"]}
    if pids is not None:
        other = sorted({e.pid for e, _ in pairs} - pids)
        expect(not other, f"{prefix}: events of pids {other[:5]}, traced only {sorted(pids)}")
        other = sorted({p for p, _ in stacks} - pids)
        expect(not other, f"{prefix}: stacks of foreign pids {other[:5]}")
    foreign = [f"{p}/{c:#x}" for p, c in stacks if (p, c) not in cookies]
    expect(not foreign, f"{prefix}: {len(foreign)} stacks of kernel entries it never asked for: {foreign[:3]}")
    multi = [f"{p}/{c:#x} x{len(v)}" for (p, c), v in stacks.items() if len(v) != 1]
    expect(not multi, f"{prefix}: cookies with more than one stack: {multi[:3]}")
    missing = [f"{p}/{c:#x}" for p, c in cookies if (p, c) not in stacks]
    expect(not missing, f"{prefix}: {len(missing)} cookies without a stack: {missing[:3]}")
    return pairs, stacks, cookies, sf


def case_fanout(ctx, files):
    """100 instances at once, each its own worker; then toggles under a fork/exit storm."""
    n = 100
    marks = [ln.split() for ln in files.get("phases.txt", b"").decode().splitlines() if ln.strip()]
    if len(marks) > 1:
        ctx.diag("phases (s in the guest): " + ", ".join(
            f"{a[1]} {float(b[0]) - float(a[0]):.1f}" for a, b in zip(marks, marks[1:])))
    nstacks = 0
    expect(files.get("gang.txt", b"").decode().strip() == "gang_rc=0",
           f"ustest gang failed: {files.get('gang.txt', b'').decode().strip()!r}")
    pids = dict(ln.split() for ln in files.get("pids.txt", b"").decode().splitlines() if ln.strip())
    ran = {}
    for ln in files.get("truth-gang.txt", b"").decode().splitlines():
        m = re.match(r"ustest chain pid=(\d+) iterations=(\d+)", ln)
        if m:
            ran[int(m.group(1))] = int(m.group(2))
    expect(len(pids) == n and len(ran) == n, f"{len(pids)} workers listed, {len(ran)} ran, expected {n}")
    for i in range(n):
        pid = int(pids.get(str(i), 0))
        expect(pid in ran, f"f{i}: worker {pid} left no ground truth")
        pairs, stacks, cookies, sf = exact_instance(ctx, files, f"f{i}", {pid})
        sleeps = {c["cookie"] for e, c in pairs if e.name == "sys_enter" and e["id"] == NR_NANOSLEEP}
        expect(len(sleeps) == ran[pid], f"f{i}: {len(sleeps)} nanosleep cookies, worker {pid} made {ran[pid]}")
        for c in sleeps:
            check_frames(ctx.syms, sf, stacks[(pid, c)][0], GANG)
        nstacks += len(stacks)
    ctx.diag(f"{n} instances at once: {nstacks} stacks, each in exactly the instance that asked")

    # ids run out at 128: f0..f99, the top instance, keep and t0..t25 hold them;
    # the next gets EBUSY by option and trigger, and an id once f99 is removed
    ids = dict(kv.split("=", 1) for kv in re.findall(r"\w+=[^\n]*?(?= \w+=|$)",
                                                      files.get("ids.txt", b"").decode(), re.M))
    expect("busy" in ids.get("option_129", "").lower(),
           f"ids: with 128 ids held the option did not fail with EBUSY: {ids.get('option_129')!r}")
    expect(ids.get("trigger_rc") != "0" and "busy" in ids.get("trigger_err", "").lower(),
           f"ids: with 128 ids held the trigger did not fail with EBUSY: {ids}")
    expect(ids.get("after_remove") == "ok", "ids: the id of a removed instance was not given again")
    ctx.diag("ids: with 128 held, the option and the trigger get EBUSY; a removed instance's id is reused")

    loops = files.get("loops.txt", b"").decode()
    m = re.search(r"stress_rc=(\d+) loops=(\d+) stormy=(\d+) fails=(\d+)", loops)
    expect(m, f"no loop summary: {loops!r}")
    expect(m.group(1) == "0", "ustest stress failed")
    expect(int(m.group(2)) >= 5, f"only {m.group(2)} toggle rounds")
    expect(int(m.group(3)) >= 1, "no toggle round during the fork/exit storm")
    expect(m.group(4) == "0", f"{m.group(4)} tracefs writes failed")
    churn = re.search(r"churn=(\d+) churn_fails=(\d+)", files.get("churn.txt", b"").decode())
    expect(churn, "no churn summary")
    expect(int(churn.group(1)) >= 3, f"only {churn.group(1)} instances made and removed")
    expect(churn.group(2) == "0", f"{churn.group(2)} writes of the churn failed")
    t = truth(files, "truth-stress.txt")
    pairs, stacks, cookies, _ = exact_instance(ctx, files, "keep")
    # The cost of an rmdir of an instance whose deferred stacks are in use
    # (rmdir must not wait for I/O): measured, not judged (TCG, 10 ms uptime ticks).
    waits = sorted(float(b) - float(a) for a, b in
                   (ln.split() for ln in files.get("rmdir-times.txt", b"").decode().splitlines()
                    if len(ln.split()) == 2))
    if waits:
        ctx.diag(f"rmdir during the storm: median {1000 * waits[len(waits) // 2]:.0f} ms, "
                 f"max {1000 * waits[-1]:.0f} ms ({len(waits)} instances, 10 ms ticks)")
    ctx.diag(f"{m.group(2)} rounds of 52 toggles ({m.group(3)} during the storm), "
             f"{churn.group(1)} instances made and removed meanwhile, "
             f"{t.get('rounds')} fork/exit rounds; instance keep: {len(stacks)} stacks, all its own")
    expect(len(stacks) > 0, "instance keep has no stack at all")

    t = truth(files, "truth-after.txt")
    pid = int(t["pid"])
    pairs, stacks, cookies, sf = exact_instance(ctx, files, "after")
    sleeps = {c["cookie"] for e, c in pairs if e.pid == pid}
    expect(len(sleeps) == 3, f"after the storm: {len(sleeps)} cookies, expected 3")
    for c in sleeps:
        check_frames(ctx.syms, sf, stacks[(pid, c)][0], CHAIN)

    # late requests (signal_deliver comes after the unwind callback): every
    # instance still has exactly one stack per cookie, the right one
    t = truth(files, "truth-signal.txt")
    pid, n = int(t["pid"]), int(t["iterations"])
    expect(int(t.get("delivered", -1)) == n, f"signal: {t.get('delivered')} of {n} signals delivered")
    for prefix, kills in (("sa", True), ("sb", False), ("sc", True)):
        pairs, stacks, cookies, sf = exact_instance(ctx, files, prefix)
        kill = {c["cookie"] for e, c in pairs if e.pid == pid and e.name == "sys_enter" and e["id"] == NR_KILL}
        dlv = [c["cookie"] for e, c in pairs if e.pid == pid and e.name == "signal_deliver"]
        expect(len(dlv) == n and len(set(dlv)) == n,
               f"{prefix}: {len(dlv)} signal_deliver events with {len(set(dlv))} cookies, expected {n}")
        if kills:
            expect(len(kill) == n, f"{prefix}: {len(kill)} kill entries with a cookie, expected {n}")
            expect(kill == set(dlv), f"{prefix}: signal_deliver cookies are not those of the kill entries")
        for c in set(dlv):
            check_frames(ctx.syms, sf, stacks[(pid, c)][0], SIGNAL)
    ctx.diag(f"late requests: {n} signals; sa, sb, sc: one stack per cookie, frames {SIGNAL}")


CASES = [
    ("01-ftracetest", "ftracetest", case_ftracetest),
    ("02-kunit", "kunit_rust_unwind", case_kunit),
    ("03-option-raw", "option_deferred_stacks_raw", case_option_raw),
    ("03b-tracer-cli-record", "tracer_cli_record_deferred", case_tc_record),
    ("04-trigger-raw", "trigger_filter_count_raw", case_trigger_raw),
    ("05-loss-raw", "loss_small_buffer_raw", case_loss_raw),
    ("05b-tracer-cli-loss", "tracer_cli_loss_drops", case_tc_loss),
    ("05c-loss-attr", "loss_attribution_both_modes", case_loss_attr),
    ("06-migrate-raw", "migration_raw", case_migrate_raw),
    ("06b-tracer-cli-migrate", "tracer_cli_migration", case_tc_migrate),
    ("07-exit-raw", "exit_while_pending_raw", case_exit_raw),
    ("07b-tracer-cli-exit", "tracer_cli_exit_while_pending", case_tc_exit),
    ("08-stress", "stress_toggle_instances", case_stress),
    ("09-trace-cmd", "trace_cmd_compat", case_trace_cmd),
    ("10-unwind-kunit", "kunit_unwind_deferred_from_syscall", case_unwind_kunit),
    ("11-maps-exit", "mapping_records_symbolize_after_exit", case_maps_exit),
    ("13-tracer-cli-symbolize", "tracer_cli_symbolize_ground_truth", lambda c, f: symcheck.case(c, f, expect, CaseFail)),
    ("14-fanout", "fanout_100_instances_toggle_storm", case_fanout),
    ("15-tracer-syscalls", "tracer_user_unwind_syscall_stacks", case_tracer_syscalls),
    ("16-deep-stack", "deep_stack_keeps_innermost_frames", case_deep_stack),
    ("17-snapshot", "user_stack_snapshot_per_stack", lambda c, f: snapcheck.case(c, f, expect, CaseFail)),
    ("18-unwound", "tracer_cli_unwound_stacks_ground_truth", lambda c, f: unwindcheck.case(c, f, expect, CaseFail)),
    ("19-trace-cmd-threads", "trace_cmd_threads_symbolize", case_tc_threads),
    ("20-exit-window", "exit_path_events_own_cookie", case_exit_window),
    ("21-uprobe-migrate", "trigger_cookie_on_event_cpu_uprobe_migrating", case_uprobe_migrate),
    ("22-exit-ipi", "exit_path_events_own_cookie_nested_irqs", case_exit_ipi),
]


class Ctx:
    def __init__(self, console, syms):
        self.console = console
        self.syms = syms
        self.lines = []

    def diag(self, msg):
        for line in str(msg).splitlines():
            self.lines.append(f"# {line}")


# ftracetest runs upstream's tests too, which may leave options of theirs:
# its changes are shown, not judged.
TOP_LEAK_SHOWN_ONLY = {"01-ftracetest"}


def top_leak(ctx, cid, files):
    """A case must leave the top instance as it found it (the guest's init
    diffs its options, tracer, clock, events, pids and instances around
    each case): new instances copy the top's options."""
    leak = files.get("top-leak.txt", b"").decode("utf-8", "replace").strip()
    if not leak:
        return
    # busybox diff: unified format
    changed = [l for l in leak.splitlines() if l[:1] in "-+" and l[:3] not in ("---", "+++")]
    if cid in TOP_LEAK_SHOWN_ONLY:
        ctx.diag("top instance changed by the case (not judged): " + "; ".join(changed))
        return
    raise CaseFail("the case left the top instance changed: " + "; ".join(changed))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_log")
    ap.add_argument("console_log")
    ap.add_argument("ustest")
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("--timed-out", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--save", metavar="DIR", help="write every case's files to DIR/CASE/")
    ap.add_argument("--symbols", metavar="NM_FILE", help="`nm -n` output to use instead of running nm")
    ap.add_argument("--plugins", metavar="DIR", help="plugins/ built here: compare the text readers with it")
    ap.add_argument("--pending", action="append", default=[], metavar="CASE:REASON",
                    help="a case whose kernel patch the built series lacks: its skip is "
                    "reported as `ok ... # SKIP` and counted as pending, not as skipped")
    args = ap.parse_args()
    global PLUGIN_DIR
    PLUGIN_DIR = args.plugins

    symcheck.GT_DIR = os.path.join(os.path.dirname(os.path.abspath(args.ustest)), "gt")
    cases, done, start = read_data_log(args.data_log)
    if args.save:
        for cid, c in cases.items():
            os.makedirs(os.path.join(args.save, cid), exist_ok=True)
            for name, content in c["files"].items():
                with open(os.path.join(args.save, cid, os.path.basename(name)), "wb") as f:
                    f.write(content)
    splats, console = scan_console(args.console_log)
    if args.symbols:
        with open(args.symbols) as f:
            syms = rawtrace.Symbols(f.read())
    else:
        nm = subprocess.run(["nm", "-n", args.ustest], capture_output=True, text=True, check=True)
        syms = rawtrace.Symbols(nm.stdout)
    only = [o for o in args.only.split(",") if o]
    selected = [c for c in CASES if not only or c[0].split("-")[0] in only]
    # (the self-tests' recorded ustest of case 03 predates the signal mode)
    chains = CHAIN + FLOOD + MIGRATE + EXITER + (SIGNAL + GANG if any(c[0] == "14-fanout" for c in selected) else [])
    for name in set(chains):
        if name not in syms.by_name:
            sys.exit(f"check.py: {args.ustest} has no symbol {name}")

    pending = dict(p.split(":", 1) if ":" in p else (p, "") for p in args.pending)
    print("KTAP version 1")
    print(f"1..{len(selected) + 1}")
    passed = failed = skipped = npending = 0
    for i, (cid, name, fn) in enumerate(selected, 1):
        ctx = Ctx(console, syms)
        ctx.ustest = args.ustest
        status, reason = "ok", ""
        c = cases.get(cid)
        try:
            if c is None:
                raise CaseFail("the guest never started this case (hang or crash earlier)")
            for note in c["notes"]:
                ctx.diag(note)
            if c["rc"] is None:
                raise CaseFail("the case never finished (guest hang or crash)")
            if c["rc"] == 124 or c["rc"] == 143:
                raise CaseFail(f"the case timed out in the guest (rc={c['rc']})")
            if "skip" in c["files"]:
                raise Skip(c["files"]["skip"].decode().strip())
            if c["rc"] != 0:
                raise CaseFail(f"guest script failed, rc={c['rc']}")
            fn(ctx, c["files"])
            top_leak(ctx, cid, c["files"])
        except Skip as e:
            status, reason = "skip", str(e)
        except CaseFail as e:
            status, reason = "not ok", str(e)
        except Exception as e:  # a checker bug must fail the case, never pass it
            status, reason = "not ok", f"checker error: {type(e).__name__}: {e}"
        if c is not None and cid in splats:
            status = "not ok" if status != "skip" else status
            reason = (reason + "; " if reason else "") + f"kernel splat during the case: {splats[cid][0]}"
        if c is not None and status != "ok":
            out = c["files"].get("out.txt", b"").decode("utf-8", "replace").strip()
            if out:
                ctx.diag("guest output (tail):")
                ctx.diag("\n".join(out.splitlines()[-15:]))
        if c is not None and c.get("secs"):
            ctx.diag(f"{cid}: {c['secs']}s in the guest")
        for line in ctx.lines:
            print(line)
        if status == "ok":
            passed += 1
            print(f"ok {i} {name}")
        elif status == "skip" and cid.split("-")[0] in pending:
            # the series that was built does not have the case's patch yet:
            # nothing to test, and nothing missing that should be there
            npending += 1
            print(f"ok {i} {name} # SKIP {reason}; pending: {pending[cid.split('-')[0]]}")
        elif status == "skip":
            skipped += 1
            print(f"not ok {i} {name} # SKIP {reason}")
        else:
            failed += 1
            print(f"# FAIL: {reason}")
            print(f"not ok {i} {name}")

    # the run as a whole: completed, no timeout, no panic, clean kernel log
    problems = []
    if args.timed_out:
        problems.append("QEMU timed out (guest hang)")
    elif args.qemu_rc != 0:
        problems.append(f"QEMU exited with status {args.qemu_rc}")
    if not done:
        problems.append("the guest did not reach the end of the suite")
    for where, lines in splats.items():
        for line in lines[:5]:
            problems.append(f"kernel log ({where}): {line}")
    if start:
        print(f"# guest: {start[len('@@START '):]}")
    for p in problems:
        print(f"# {p}")
    if problems:
        failed += 1
        print(f"not ok {len(selected) + 1} kernel_log_clean_and_no_hang")
    else:
        passed += 1
        print(f"ok {len(selected) + 1} kernel_log_clean_and_no_hang")
    strict = os.environ.get("CI") == "true"
    if strict and skipped:
        print("# CI=true: a skipped case is a failure (its prerequisite must be there in CI)")
        failed += skipped
    print(f"{passed} passed, {failed} failed, {skipped} skipped" + (f", {npending} pending" if npending else ""))
    return 1 if failed or skipped else 0


if __name__ == "__main__":
    sys.exit(main())
