"""Self-tests of the judge of boot case 17-snapshot (snapcheck.py) and of the
pending skips of check.py: a real recording passes, wrong data fails.

The fixture (fixtures/snapshot.tar.gz) is what case 17 left in a real run on
the series with the snapshot patch: the raw dumps of its instances, formats,
sizes, trace-cmd's report, the program's ground truth and `nm -n` of that
run's ustest binary (ustest.nm), gzipped (the 64 KB sub-buffers of c17d).
"""

import os
import struct
import sys
import tarfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check  # noqa: E402
import rawtrace  # noqa: E402
import snapcheck  # noqa: E402
import test_check  # noqa: E402

FIX = os.path.join(HERE, "fixtures", "snapshot.tar.gz")


def load():
    with tarfile.open(FIX) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def run(files):
    c = check.Ctx([], rawtrace.Symbols(files["ustest.nm"].decode()))
    snapcheck.case(c, files, check.expect, check.CaseFail)
    return c


def snapshots(files, inst):
    d = rawtrace.Dump(files, f"c17{inst}")
    return [e for e in d.merged() if e.name == "user_unwind_stack_snapshot"]


def poke(files, inst, ev, offset, fmt, value):
    key = f"c17{inst}.cpu{ev.cpu}.raw"
    raw = bytearray(files[key])
    struct.pack_into(fmt, raw, ev.pos + offset, value)
    files[key] = bytes(raw)


@unittest.skipUnless(os.path.isfile(FIX), "no fixtures/snapshot.tar.gz")
class SnapshotCase(unittest.TestCase):
    def test_real_recording_passes(self):
        c = run(load())
        self.assertTrue(any("trace-cmd report" in line for line in c.lines), c.lines)

    def test_wrong_sp_fails(self):
        files = load()
        ev = snapshots(files, "a")[0]
        poke(files, "a", ev, ev.fmt.fields["sp"].offset, "<Q", ev["sp"] + 8)
        with self.assertRaises(check.CaseFail):
            run(files)

    def test_wrong_cookie_fails(self):
        files = load()
        ev = snapshots(files, "b")[2]
        poke(files, "b", ev, ev.fmt.fields["cookie"].offset, "<Q", ev["cookie"] + 1)
        with self.assertRaises(check.CaseFail):
            run(files)

    def test_marker_byte_changed_fails(self):
        files = load()
        ev = snapshots(files, "a")[3]
        f = ev.fmt.fields["data"]
        off = int.from_bytes(ev.data[f.offset : f.offset + 4], "little") & 0xFFFF
        poke(files, "a", ev, off + 1, "<B", ev.data[off + 1] ^ 0xFF)
        with self.assertRaises(check.CaseFail):
            run(files)

    def test_shorter_data_fails(self):
        files = load()
        ev = snapshots(files, "c")[0]
        f = ev.fmt.fields["data"]
        loc = int.from_bytes(ev.data[f.offset : f.offset + 4], "little")
        poke(files, "c", ev, f.offset, "<I", loc - (8 << 16))
        with self.assertRaises(check.CaseFail):
            run(files)

    def test_non_zero_padding_fails(self):
        files = load()
        ev = snapshots(files, "d")[0]
        f = ev.fmt.fields["links"]
        poke(files, "d", ev, f.offset + 1, "<B", 0x5A)
        with self.assertRaises(check.CaseFail):
            run(files)

    def test_stack_entry_lost_fails(self):
        files = load()
        ev = snapshots(files, "a")[1]
        # another entry type in its place: a getppid has no stack entry
        pf = rawtrace.Dump(files, "c17a").fmt("ftrace", "user_unwind_page_cookie")
        poke(files, "a", ev, 0, "<H", pf.id)
        with self.assertRaises(check.CaseFail):
            run(files)

    def test_trace_cmd_parse_failure_fails(self):
        files = load()
        files["tc-report.txt"] += b"ustest-1 [000] 1.0: user_unwind_stack_snapshot: [FAILED TO PARSE]\n"
        with self.assertRaises(check.CaseFail):
            run(files)


class PendingSkip(unittest.TestCase):
    """--pending CASE:REASON: a skip of a case whose kernel patch the built
    series lacks is `ok # SKIP` and pending; any other result is unchanged."""

    run_check = test_check.WholeRun.run_check
    CLEAN = test_check.WholeRun.CLEAN

    def run_pending(self, data, env_ci=False):
        orig = test_check.subprocess.run

        def with_pending(cmd, **kw):
            return orig(cmd + ["--pending", "03:not in the series"], **kw)

        test_check.subprocess.run = with_pending
        try:
            return self.run_check(data, self.CLEAN, env_ci=env_ci)
        finally:
            test_check.subprocess.run = orig

    def test_pending_skip_does_not_fail(self):
        for ci in (False, True):
            rc, out = self.run_pending(test_check.data_log(test_check.load(), skip="no file"), env_ci=ci)
            self.assertEqual(rc, 0, out)
            self.assertIn("ok 1 option_deferred_stacks_raw # SKIP no file; pending: not in the series", out)
            self.assertIn("1 passed, 0 failed, 0 skipped, 1 pending", out)

    def test_pending_case_that_fails_still_fails(self):
        rc, out = self.run_pending(test_check.data_log(test_check.load(), rc=124))
        self.assertEqual(rc, 1, out)
        self.assertIn("not ok 1 option_deferred_stacks_raw", out)

    def test_pending_case_that_runs_is_judged(self):
        rc, out = self.run_pending(test_check.data_log(test_check.load()))
        self.assertEqual(rc, 0, out)
        self.assertIn("2 passed, 0 failed, 0 skipped", out)


if __name__ == "__main__":
    unittest.main()
