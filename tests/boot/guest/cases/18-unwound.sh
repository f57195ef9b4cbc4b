# timeout: 900
# Exact user stacks from stack snapshots, unwound in user space with the
# binaries' CFI, on programs built as distributions build them: truth-o2
# (-O2, no frame pointers) and truth-fp (-O2 -fno-omit-frame-pointer), both
# PIE and dynamically linked against Debian's libc, 5 threads each making
# system calls through libc's write() and syscall() wrappers from a 40-deep
# recursion (crates/testdata/progs/truth.c). Before each marked call the
# program takes its own chain with glibc's backtrace() and writes it to
# TRUTH_OUT after the call; the host (tests/boot/unwindcheck.py) checks
# every frame of `tracer-cli report --stacks --json` against it, with the
# default snapshot and with one that holds the whole stack.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
need "$T/user_stack_snapshot_size" "kernel lacks user stack snapshots"
need /bin/truth-o2 "ground-truth programs not packed"

# getppid (110) and write (1): the marked calls, told apart by the host
for prog in o2 fp; do
	for size in default 4k; do
		us=deferred
		[ $size = default ] || us=deferred,$size
		TRUTH_OUT=$PWD/$prog-$size.truth tracer-cli record -q -F --user-stacks $us -b 2048 -o t.dat \
			-e raw_syscalls:sys_enter -f 'id == 110 || id == 1' -- /bin/truth-$prog recurse \
			>/dev/null 2>$prog-$size.record.err
		echo "rc=$?" >$prog-$size.record.rc
		tracer-cli report -i t.dat --stacks --json >$prog-$size.json 2>$prog-$size.report.err
		echo "rc=$?" >$prog-$size.report.rc
		rm -f t.dat
		tracer-cli reset >/dev/null 2>&1
	done
done
