"""Self-tests of the boot-test judge: a real recording passes, and every kind
of wrong data makes it fail (a test that cannot fail tests nothing).

Run: python3 -m unittest discover -s tests/boot -p 'test_*.py'

The fixture (fixtures/option-raw) is what case 03 left in a real run on the
patched kernel (v1, with the exit_group entry traced): per-CPU trace_pipe_raw
dumps, formats, the trace text, the program's ground truth, and the function
symbols of `nm -n` of that run's ustest binary.
"""

import base64
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check  # noqa: E402
import rawtrace  # noqa: E402

FIX = os.path.join(HERE, "fixtures", "option-raw")


def load():
    files = {}
    for name in os.listdir(FIX):
        with open(os.path.join(FIX, name), "rb") as f:
            files[name] = f.read()
    return files


def ctx(files):
    return check.Ctx([], rawtrace.Symbols(files["ustest.nm"].decode()))


def events(files, name):
    d = rawtrace.Dump(files, "c3")
    return [e for e in d.merged() if e.name == name]


def patch(files, ev, field, value):
    """Overwrite one u64 field of a decoded event in its raw dump."""
    f = ev.fmt.fields[field]
    key = f"c3.cpu{ev.cpu}.raw"
    raw = bytearray(files[key])
    struct.pack_into("<Q", raw, ev.pos + f.offset, value)
    files[key] = bytes(raw)


def stack_slot(files, ev, index, value):
    f = ev.fmt.fields["stack"]
    loc = int.from_bytes(ev.data[f.offset : f.offset + 4], "little")
    key = f"c3.cpu{ev.cpu}.raw"
    raw = bytearray(files[key])
    struct.pack_into("<Q", raw, ev.pos + (loc & 0xFFFF) + 8 * index, value)
    files[key] = bytes(raw)


class OptionCase(unittest.TestCase):
    def test_real_recording_passes(self):
        files = load()
        c = ctx(files)
        check.case_option_raw(c, files)
        self.assertTrue(any("20 syscalls" in line for line in c.lines), c.lines)

    def test_cookie_changed_inside_one_syscall_fails(self):
        files = load()
        cookie = events(files, "user_unwind_cookie")[1]
        patch(files, cookie, "cookie", 0x1234500000001)
        with self.assertRaises(check.CaseFail):
            check.case_option_raw(ctx(files), files)

    def test_stack_for_unknown_cookie_fails(self):
        files = load()
        stack = events(files, "user_unwind_stack")[3]
        patch(files, stack, "cookie", 0x7777700000001)
        with self.assertRaisesRegex(check.CaseFail, "stack"):
            check.case_option_raw(ctx(files), files)

    def test_wrong_frame_fails(self):
        files = load()
        syms = rawtrace.Symbols(files["ustest.nm"].decode())
        stacks = [
            e for e in events(files, "user_unwind_stack")
            if syms.frames(e.fmt.u64_array(e.data, "stack"))[:1] == ["chain_level3"]
        ]
        # replace the return address into chain_level2 by one into main
        stack_slot(files, stacks[0], 1, syms.by_name["main"] + 8)
        with self.assertRaisesRegex(check.CaseFail, "frames"):
            check.case_option_raw(ctx(files), files)

    def test_ground_truth_mismatch_fails(self):
        files = load()
        files["truth.txt"] = files["truth.txt"].replace(b"iterations=20", b"iterations=21")
        with self.assertRaisesRegex(check.CaseFail, "nanosleep entries"):
            check.case_option_raw(ctx(files), files)

    def exit_switch(self, files):
        """The task's exit_group entry and its last switch (the zombie's)."""
        pid = int(check.truth(files)["pid"])
        mine = [e for e in rawtrace.Dump(files, "c3").merged() if e.pid == pid]
        enter = [e for e in mine if e.name == "sys_enter" and e["id"] == check.NR_EXIT_GROUP]
        switch = [e for e in mine if e.name == "sched_switch"][-1]
        self.assertEqual(len(enter), 1, "the fixture must hold the exit_group entry")
        self.assertTrue(switch["prev_state"] & 0x30, "the fixture's last switch is the zombie's")
        return enter[0], switch

    def test_exiting_task_switch_without_cookie_passes(self):
        # preempted inside do_exit(): PF_EXITING is set, the unwinder hands out no cookie
        files = load()
        _, switch = self.exit_switch(files)
        patch(files, switch, "prev_state", 0x100)
        c = ctx(files)
        check.case_option_raw(c, files)
        self.assertTrue(any("exiting task without a cookie" in line for line in c.lines), c.lines)

    def test_switch_without_cookie_before_exit_fails(self):
        # the same switch, but the task never entered exit_group: it must have a cookie
        files = load()
        enter, switch = self.exit_switch(files)
        patch(files, switch, "prev_state", 0x100)
        patch(files, enter, "id", check.NR_GETPID)
        with self.assertRaisesRegex(check.CaseFail, "without a cookie event"):
            check.case_option_raw(ctx(files), files)

    def test_missing_formats_fail(self):
        files = load()
        del files["fmt.ftrace.user_unwind_stack"]
        with self.assertRaises(check.CaseFail):
            check.case_option_raw(ctx(files), files)


def data_log(case_files, rc=0, done=True, skip=None):
    out = ["@@START test cpus=2", "@@BEGIN 03-option-raw"]
    files = dict(case_files)
    if skip:
        files = {"skip": skip.encode()}
    for name, content in files.items():
        if name == "ustest.nm":
            continue
        out.append(f"@@FILE 03-option-raw {name}")
        out.append(base64.b64encode(content).decode())
        out.append("@@EOF")
    out.append(f"@@END 03-option-raw rc={rc} secs=1.0")
    if done:
        out.append("@@DONE")
    return "\n".join(out) + "\n"


class WholeRun(unittest.TestCase):
    def run_check(self, data, console, env_ci=False):
        with tempfile.TemporaryDirectory() as d:
            dl, cl = os.path.join(d, "data.log"), os.path.join(d, "console.log")
            with open(dl, "w") as f:
                f.write(data)
            with open(cl, "w") as f:
                f.write(console)
            env = dict(os.environ, CI="true" if env_ci else "false")
            p = subprocess.run(
                [sys.executable, os.path.join(HERE, "check.py"), dl, cl, "/nonexistent",
                 "--symbols", os.path.join(FIX, "ustest.nm"), "--only", "03"],
                capture_output=True, text=True, env=env,
            )
            return p.returncode, p.stdout

    CLEAN = "ustack-boot: begin 03-option-raw\nustack-boot: end 03-option-raw rc=0\n"

    def test_clean_run_passes(self):
        rc, out = self.run_check(data_log(load()), self.CLEAN)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok 1 option_deferred_stacks_raw", out)
        self.assertTrue(out.rstrip().endswith("2 passed, 0 failed, 0 skipped"), out)

    def test_warning_in_log_fails_case_and_run(self):
        console = ("ustack-boot: begin 03-option-raw\n"
                   "WARNING: CPU: 1 PID: 80 at kernel/trace/trace.c:1 x+0x1/0x2\n"
                   "ustack-boot: end 03-option-raw rc=0\n")
        rc, out = self.run_check(data_log(load()), console)
        self.assertEqual(rc, 1)
        self.assertIn("not ok 1 option_deferred_stacks_raw", out)
        self.assertIn("not ok 2 kernel_log_clean_and_no_hang", out)

    def test_lockdep_report_fails(self):
        console = self.CLEAN + "WARNING: possible circular locking dependency detected\n"
        rc, out = self.run_check(data_log(load()), console)
        self.assertEqual(rc, 1)
        self.assertIn("not ok 2 kernel_log_clean_and_no_hang", out)

    def test_hang_fails(self):
        rc, out = self.run_check(data_log(load(), done=False), self.CLEAN)
        self.assertEqual(rc, 1)
        self.assertIn("not ok 2", out)

    def test_guest_timeout_fails(self):
        rc, out = self.run_check(data_log(load(), rc=124), self.CLEAN)
        self.assertEqual(rc, 1)
        self.assertIn("not ok 1 option_deferred_stacks_raw", out)

    def test_skip_is_not_a_pass(self):
        rc, out = self.run_check(data_log(load(), skip="no option"), self.CLEAN)
        self.assertEqual(rc, 1)
        self.assertIn("not ok 1 option_deferred_stacks_raw # SKIP no option", out)
        self.assertIn("1 passed, 0 failed, 1 skipped", out)
        rc, out = self.run_check(data_log(load(), skip="no option"), self.CLEAN, env_ci=True)
        self.assertIn("1 passed, 1 failed, 1 skipped", out)


if __name__ == "__main__":
    unittest.main()


def fmt(name, ident, fields):
    text = f"name: {name}\nID: {ident}\nformat:\n"
    text += "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    text += "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    off = 8
    for f in fields:
        text += f"\tfield:u64 {f};\toffset:{off};\tsize:8;\tsigned:0;\n"
        off += 8
    return rawtrace.Format(text, "ftrace" if "unwind" in name else "raw_syscalls", name)


class Attribution(unittest.TestCase):
    """rawtrace.attribute(): page cookies (kernel-patch v2) and cookie entries."""

    CF = fmt("user_unwind_cookie", 21, ["cookie"])
    PF = fmt("user_unwind_page_cookie", 23, ["cookie"])
    EV = fmt("sys_enter", 30, ["id"])

    def cpu(self, items, page_size=4096):
        """items: (page, fmt, pid, value) -> CpuData with events in that order."""
        c = rawtrace.CpuData(0, page_size)
        for seq, (page, f, pid, v) in enumerate(items):
            data = struct.pack("<HHiQ", f.id, 0, pid, v)
            c.events.append(rawtrace.Event(0, seq, f, data, seq, page * page_size + 16 + seq * 24))
        return c

    def attributed(self, items):
        pairs, strays = rawtrace.attribute(self.cpu(items), self.CF, self.PF)
        return [(e.seq, c["cookie"]) for e, c in pairs], len(strays)

    def test_interleaved_tasks_and_reentry_in_one_page(self):
        got = self.attributed([
            (0, self.PF, 42, 0xA), (0, self.EV, 42, 1), (0, self.PF, 43, 0xB),
            (0, self.EV, 43, 1), (0, self.EV, 42, 1), (0, self.PF, 42, 0xC),
            (0, self.EV, 42, 1), (0, self.EV, 44, 1),
        ])
        self.assertEqual(got, ([(1, 0xA), (3, 0xB), (4, 0xA), (6, 0xC)], 0))

    def test_next_page_needs_its_own_cookie_and_cookie_entry_after_wins(self):
        got = self.attributed([
            (0, self.PF, 42, 0xA), (1, self.EV, 42, 1), (1, self.CF, 42, 0xA),
            (1, self.EV, 42, 1), (2, self.EV, 42, 1),
        ])
        self.assertEqual(got, ([(1, 0xA)], 0))

    SF = fmt("user_unwind_stack", 22, ["cookie", "prev", "links"])

    def test_linking_stacks_stand_for_the_next_entry_page_cookie(self):
        c = rawtrace.CpuData(0, 4096)

        def add(page, f, pid, *vals):
            seq = len(c.events)
            data = struct.pack("<HHi", f.id, 0, pid) + b"".join(struct.pack("<Q", v) for v in vals)
            c.events.append(rawtrace.Event(0, seq, f, data, seq, page * 4096 + 16 + seq * 40))
            return c.events[-1]

        add(0, self.PF, 42, 0xA)
        add(0, self.EV, 42, 1)  # 1: page cookie A
        s_a = add(0, self.SF, 42, 0xA, 0, 1)
        add(0, self.EV, 42, 1)  # 3: linked to A's successor
        add(0, self.EV, 43, 1)  # 4: another task, uncovered
        s_b = add(1, self.SF, 42, 0xB, 0xA, 1)
        add(1, self.EV, 42, 1)  # 6: new page, uncovered
        s_late = add(1, self.SF, 42, 0xC, 0, 0)
        add(1, self.EV, 42, 1)  # 8: a stack without links covers nothing
        pairs, strays = rawtrace.attribute(c, self.CF, self.PF, self.SF)
        resolved = rawtrace.resolve_links(pairs, [s_a, s_b, s_late], self.SF)
        self.assertEqual([(e.seq, p["cookie"]) for e, p in resolved], [(1, 0xA), (3, 0xB)])
        self.assertEqual(strays, [])
        # the successor's stack was lost: the linked event has no cookie
        self.assertEqual([e.seq for e, _ in rawtrace.resolve_links(pairs, [s_a], self.SF)], [1])

    def test_zero_and_reset_page_cookies_end_coverage(self):
        got = self.attributed([
            (0, self.PF, 42, 0xA), (0, self.PF, 43, 0xB), (0, self.PF, 42, 0),
            (0, self.EV, 42, 1), (0, self.EV, 43, 1), (0, self.PF, 0, 0), (0, self.EV, 43, 1),
        ])
        self.assertEqual(got, ([(4, 0xB)], 0))


LOSS_TEXT = os.path.join(HERE, "fixtures", "loss-text")


class TextRules(unittest.TestCase):
    """check.text_cookies_agree on what case 05b left in a real run: `trace-cmd
    report -t` of tracer-cli's trace.dat with the plugin (a loss on CPU 0, then
    linking stack entries) and tracer-cli's report --json of the same file."""

    def load(self):
        with open(os.path.join(LOSS_TEXT, "report-plugin.txt")) as f:
            text = f.read()
        with open(os.path.join(LOSS_TEXT, "report.json")) as f:
            groups = json.load(f)["groups"]
        return text, groups

    def test_real_recording_agrees(self):
        text, groups = self.load()
        by_text = check.text_cookies_agree(text, groups, "fixture")
        evs = [x for v in by_text.values() for x in v]
        self.assertEqual(len(evs), 60)
        self.assertTrue(all(c for _, _, c in evs))

    def test_another_cookie_in_tracer_cli_fails(self):
        text, groups = self.load()
        g = next(g for g in groups if g["events"])
        g["cookie"] = hex(int(g["cookie"], 16) + 4)
        with self.assertRaises(check.CaseFail):
            check.text_cookies_agree(text, groups, "fixture")

    def test_text_without_links_fails(self):
        # a plugin that drops links=: the events after a linking stack entry
        # get no cookie from the text, tracer-cli's groups still have them
        text, groups = self.load()
        with self.assertRaises(check.CaseFail):
            check.text_cookies_agree(text.replace("links=1", "links=0"), groups, "fixture")

    def test_loss_line_ends_the_cover(self):
        # a loss line before a page cookie's events: those events lose it
        text, groups = self.load()
        lines = text.splitlines()
        i = next(i for i, l in enumerate(lines) if "user_unwind_page_cookie:" in l and "[000]" in l)
        lines.insert(i + 1, "CPU:0 [LOST 1 EVENTS]")
        with self.assertRaises(check.CaseFail):
            check.text_cookies_agree("\n".join(lines), groups, "fixture")

    def test_kernel_trace_file_format_parses(self):
        # the trace file: a flags column, the stack entry's fields on the next line
        line = "          ustest-1720    [001] d..1.    38.491744: <user stack unwind>"
        times = {}
        out = rawtrace.text_attribute(
            line + "\ncookie=6ef4 prev=6ef0 links=1\n"
            "          ustest-1720    [001] .....    38.491769: sys_enter: NR 39\n"
            "          ustest-1720    [000] d..1.    38.491800: <user stack unwind>\n"
            "cookie=6ef8 prev=6ef4 links=0\n",
            times,
        )
        self.assertEqual(out, {1: [("sys_enter", 1720, 0x6EF8)]})
        self.assertEqual(times, {1: [38_491_769_000]})
