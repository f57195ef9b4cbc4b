# timeout: 180
# A stock trace-cmd recording of a multi-threaded program symbolizes: Debian's
# trace-cmd records `ustest threads 5` (the main thread and 3 threads, 5
# getppid each from thr_leaf) with the option and with the user_unwind
# tracer, with no option about mappings (the kernel describes them by
# default, and each thread tells its process), and tracer-cli reads the files
# in the guest, where the binary is. A control recording with
# -O nouserstacktrace_maps must leave the stacks bare.
. /cases/lib.sh
need /usr/bin/trace-cmd "trace-cmd not packed"
need "$T/options/userstacktrace_maps" "kernel lacks the userstacktrace_maps option"
grep -qw user_unwind "$T/available_tracers" || skip "no user_unwind tracer"
cat "$T/options/userstacktrace_maps" >maps-default.txt

# record RUN ARGS...: trace-cmd record ARGS ustest threads 5, then reports
record() {
	run=$1
	shift
	trace-cmd record -q -o "$run.dat" "$@" ustest threads 5 >"truth-$run.txt" 2>"record-$run.err"
	echo "rc=$?" >"record-$run.rc"
	tracer-cli report -i "$run.dat" --json >"report-$run.json" 2>"report-$run.err"
	echo "rc=$?" >"report-$run.rc"
	trace-cmd report -i "$run.dat" >"tc-report-$run.txt" 2>"tc-report-$run.err"
	echo "rc=$?" >"tc-report-$run.rc"
	trace-cmd reset >/dev/null 2>&1
	rm -f "$run.dat"
}
record o -O userstacktrace_delay -e raw_syscalls:sys_enter -f 'id == 110'
record p -p user_unwind -F -c
record off -O userstacktrace_delay -O nouserstacktrace_maps -e raw_syscalls:sys_enter -f 'id == 110'
w 1 "$T/options/userstacktrace_maps"
