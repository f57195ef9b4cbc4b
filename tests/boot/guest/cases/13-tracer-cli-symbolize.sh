# timeout: 1200
# Symbolization ground truth in the guest, with deferred user stacks: programs
# with threads that start at once, fork without exec, fork+exec, exec of
# another non-PIE program over a forked child, short-lived processes, a
# static PIE, and processes the recorder did not start (the whole system
# recorded, stopped with SIGINT). Each program writes its own truth (tids,
# /proc/self/maps: tracer-cli/tests/gt/gt.h); the host checks every frame
# against nm of the binaries (tests/boot/symcheck.py). Racy cases 20 times.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
need /bin/gt-threads "ground-truth programs not packed"

# getppid(2) is the syscall the programs make from their call chains; the
# exec events tell the judge which image each stack belongs to.
EV="-e sched:sched_process_exec -e raw_syscalls:sys_enter -f id==110"

# flatten DIR: DIR/x -> DIR.x (only the case's top level is shipped)
flatten() {
	for f in "$1"/*; do [ -f "$f" ] && mv "$f" "$1.$(basename "$f")"; done
	rmdir "$1"
}

# sub NAME SCRIPT: record `sh -c SCRIPT` (run in NAME/, GT_DIR=NAME) as the command
sub() {
	mkdir "$1"
	(cd "$1" && GT_DIR=$PWD tracer-cli record -q --user-stacks deferred -b 1024 -o t.dat $EV \
		-- sh -c "$2" >cmd.out 2>record.err
	echo "rc=$?" >record.rc
	tracer-cli report -i t.dat --json >report.json 2>report.err
	echo "rc=$?" >report.rc
	rm -f t.dat)
	flatten "$1"
	tracer-cli reset >/dev/null 2>&1
}

# system NAME SCRIPT: record the whole system while SCRIPT runs (started
# here, not by the recorder; its programs linger 1 s after their stacks)
system() {
	mkdir "$1"
	(cd "$1" && {
		tracer-cli record -q --user-stacks deferred -b 1024 -o t.dat $EV 2>record.err &
		rec=$!
		i=0
		while [ "$(cat $T/events/raw_syscalls/sys_enter/enable 2>/dev/null)" != 1 ] && [ $i -lt 300 ]; do
			sleep 0.1; i=$((i + 1))
		done
		sleep 1
		GT_DIR=$PWD GT_LINGER_MS=1000 sh -c "$2" >cmd.out 2>&1
		sleep 1
		kill -INT $rec
		wait $rec
		echo "rc=$?" >record.rc
		tracer-cli report -i t.dat --json >report.json 2>report.err
		echo "rc=$?" >report.rc
		rm -f t.dat
	})
	flatten "$1"
	tracer-cli reset >/dev/null 2>&1
}

n=1
while [ $n -le 20 ]; do
	sub threads-$n "busybox echo hi >/dev/null; gt-threads 10"
	sub short-lived-$n "gt-spie plain 3; gt-spie plain 3; gt-spie fork 3"
	n=$((n + 1))
done
sub fork-without-exec "gt-spie fork 10"
sub fork-exec "gt-spie forkexec 10"
sub exec-non-pie "gt-execa /bin/gt-spie"
sub static-pie "gt-pie plain 10"
for n in 1 2 3; do
	system system-$n "gt-spie fork 5 & gt-spie forkexec 5 & gt-threads 5 & gt-execa /bin/gt-spie & wait"
done
true
