# Helpers for the guest cases (sourced). Each case runs in its own empty
# directory; every file it leaves there is shipped to the host.
T=/sys/kernel/tracing
ncpus=$(grep -c ^processor /proc/cpuinfo)

# skip REASON: the host reports the case as "not ok ... # SKIP REASON"
skip() { echo "$*" >skip; exit 0; }

# need PATH REASON
need() { [ -e "$1" ] || skip "$2 (no $1)"; }

# mkinst NAME: fresh instance (removed first if left over)
mkinst() {
	[ -d "$T/instances/$1" ] && rmdir "$T/instances/$1"
	mkdir "$T/instances/$1" || exit 1
	echo "$T/instances/$1"
}

# w VALUE FILE: write and fail loudly (echo > tracefs errors are easy to miss)
w() { echo "$1" >"$2" || { echo "write '$1' > $2 failed"; exit 1; }; }

# dump INSTANCE_DIR PREFIX: raw pages per CPU, stats, and the formats needed to
# decode them, for tests/boot/rawtrace.py
dump() {
	i=0
	while [ $i -lt "$ncpus" ]; do
		rawdump "$1/per_cpu/cpu$i/trace_pipe_raw" >"$2.cpu$i.raw" || echo "rawdump cpu$i failed"
		cp "$1/per_cpu/cpu$i/stats" "$2.cpu$i.stats"
		i=$((i + 1))
	done
	[ -f header_page ] || cp "$T/events/header_page" header_page
	for e in ftrace/user_unwind_cookie ftrace/user_unwind_stack ftrace/print raw_syscalls/sys_enter \
		raw_syscalls/sys_exit sched/sched_switch sched/sched_process_exit; do
		f=fmt.$(echo $e | tr / .)
		[ -f "$f" ] || cp "$T/events/$e/format" "$f" 2>/dev/null
	done
	true
}

# reports: both views of t.dat, tracer-cli's stitched JSON (report.json) and
# trace-cmd's text (tc-report.txt), each with its exit status in NAME.rc.
reports() {
	tracer-cli report -i t.dat --json >report.json 2>report.err
	echo "rc=$?" >report.rc
	trace-cmd report -i t.dat >tc-report.txt 2>tc-report.err
	echo "rc=$?" >tc-report.rc
}

# record_deferred ARGS...: tracer-cli record with deferred user stacks into
# t.dat (the command's stdout, its ground truth, into truth.txt), then
# `reports`, then reset tracing.
record_deferred() {
	tracer-cli record -q --user-stacks deferred -b 1024 -o t.dat "$@" >truth.txt 2>record.err
	echo "rc=$?" >record.rc
	reports
	tracer-cli reset >/dev/null 2>&1
	true
}
