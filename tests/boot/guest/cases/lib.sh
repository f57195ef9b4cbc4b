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

# flood_inst NAME: sets I to a fresh instance for the loss cases: an 8 KB
# buffer, raw_syscalls of getpid (id 39) only, deferred user stacks on
flood_inst() {
	I=$(mkinst "$1") || exit 1
	need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
	w 8 "$I/buffer_size_kb"
	w 'id == 39' "$I/events/raw_syscalls/sys_enter/filter"
	w 'id == 39' "$I/events/raw_syscalls/sys_exit/filter"
	w 1 "$I/events/raw_syscalls/sys_enter/enable"
	w 1 "$I/events/raw_syscalls/sys_exit/enable"
	w 1 "$I/options/userstacktrace_delay"
}

# still_works NAME: after a stress, a fresh instance NAME with deferred user
# stacks of nanosleep (id 35) records `ustest chain 3` (truth-after.txt) and
# is dumped as NAME, then removed.
still_works() {
	I=$(mkinst "$1")
	w 'id == 35' "$I/events/raw_syscalls/sys_enter/filter"
	w 1 "$I/events/raw_syscalls/sys_enter/enable"
	w 1 "$I/options/userstacktrace_delay"
	ustest chain 3 >truth-after.txt
	w 0 "$I/tracing_on"
	dump "$I" "$1"
	w 0 "$I/options/userstacktrace_delay"
	rmdir "$I"
}

# dump INSTANCE_DIR PREFIX: raw pages per CPU, stats, and the formats needed to
# decode them, for tests/boot/rawtrace.py. Its variables are local: a caller
# looping over `i` around it must not see its counter (14-fanout once dumped
# f3 forever because dump left i at ncpus). One rawdump process copies all the
# files of the instance, and the formats are copied once per case, with no
# subshell: under TCG every fork and exec counts (14-fanout dumps 100 instances).
dump() {
	local c=0 e f args=""
	while [ $c -lt "$ncpus" ]; do
		args="$args $1/per_cpu/cpu$c/trace_pipe_raw $2.cpu$c.raw $1/per_cpu/cpu$c/stats $2.cpu$c.stats"
		c=$((c + 1))
	done
	# shellcheck disable=SC2086 # tracefs paths have no spaces
	rawdump $args || echo "rawdump $1 failed"
	[ -f header_page ] && return 0
	cp "$T/events/header_page" header_page
	for e in ftrace/user_unwind_cookie ftrace/user_unwind_page_cookie ftrace/user_unwind_stack ftrace/print \
		ftrace/user_unwind_mapping ftrace/user_unwind_stack_snapshot \
		ftrace/user_unwind_syscall \
		raw_syscalls/sys_enter \
		raw_syscalls/sys_exit sched/sched_switch sched/sched_process_exit signal/signal_deliver \
		preemptirq/irq_enable; do
		f=fmt.${e%/*}.${e#*/}
		cp "$T/events/$e/format" "$f" 2>/dev/null
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

# held OUT CMD...: starts CMD (stdout to OUT) in a subshell that waits for
# `release` before it execs, so that its pid can be put into filters
# first; sets HELD_PID.
held() {
	out=$1
	shift
	mkfifo go
	(
		read -r p _ </proc/self/stat
		echo "$p" >pid.txt
		read -r x <go
		exec "$@" >"$out"
	) &
	wait_file pid.txt "the subshell wrote no pid"
	HELD_PID=$(cat pid.txt)
}

# wait_file FILE WHAT: waits up to 60 s for FILE to be non-empty; fails the
# case with WHAT otherwise.
wait_file() {
	n=0
	while [ ! -s "$1" ]; do
		[ $n -lt 600 ] || { echo "$2"; exit 1; }
		sleep 0.1
		n=$((n + 1))
	done
}

# release: lets the command started by `held` exec.
release() { echo go >go; }
