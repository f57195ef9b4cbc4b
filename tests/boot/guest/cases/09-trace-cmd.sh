# timeout: 120
# Debian's trace-cmd records (tracer user_unwind with -P, then the option) and
# reports the new entries in the guest.
. /cases/lib.sh
need /usr/bin/trace-cmd "trace-cmd not packed"
grep -qw user_unwind "$T/available_tracers" || skip "no user_unwind tracer"
# -p user_unwind -P PID, no event: where the process makes its system calls
# from. A subshell publishes its pid and waits on a fifo, then execs ustest
# (same pid) once trace-cmd traces it; trace-cmd stops when it exits.
mkfifo go
(
	read -r p _ </proc/self/stat
	echo "$p" >pid-p.txt
	read -r x <go
	exec ustest chain 5 >truth-p.txt
) &
sub=$!
n=0
while [ ! -s pid-p.txt ]; do
	[ $n -lt 600 ] || { echo "the subshell wrote no pid"; exit 1; }
	sleep 0.1
	n=$((n + 1))
done
trace-cmd record -q -o p.dat -p user_unwind -P "$(cat pid-p.txt)" >record-p.out 2>record-p.err &
rec=$!
# started: trace-cmd turns tracing off, sets the tracer, starts its readers,
# writes the pid filter and then turns tracing on
p=$(cat pid-p.txt)
n=0
until grep -qx "$p" "$T/set_event_pid" && [ "$(cat "$T/current_tracer")" = user_unwind ] &&
	[ "$(cat "$T/tracing_on")" = 1 ]; do
	[ $n -lt 600 ] || break
	sleep 0.1
	n=$((n + 1))
done
echo go >go
wait $sub
# trace-cmd stops by itself once the process it follows is gone
n=0
while kill -0 $rec 2>/dev/null && [ $n -lt 300 ]; do
	sleep 0.1
	n=$((n + 1))
done
kill -INT $rec 2>/dev/null
wait $rec
echo "record_rc=$?" >record-p.rc
rm -f go
trace-cmd report -i p.dat >report-p.txt 2>report-p.err
echo "report_rc=$?" >report-p.rc
# tracer-cli reads trace-cmd's file: the same lines, and each system call
# grouped with its stack
tracer-cli report -i p.dat >tcli-report-p.txt 2>tcli-report-p.err
echo "rc=$?" >tcli-report-p.rc
tracer-cli report -i p.dat --json >tcli-p.json 2>tcli-p.err
echo "rc=$?" >tcli-p.rc
trace-cmd record -q -o o.dat -O userstacktrace_delay -e raw_syscalls:sys_enter -f 'id == 35' ustest chain 5 >truth-o.txt 2>record-o.err
echo "record_rc=$?" >record-o.rc
trace-cmd report -i o.dat >report-o.txt 2>report-o.err
echo "report_rc=$?" >report-o.rc
trace-cmd reset >/dev/null 2>&1
rm -f p.dat o.dat
