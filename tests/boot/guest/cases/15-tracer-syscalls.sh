# timeout: 90
# The user_unwind tracer: with a pid filter, one
# user_unwind_syscall entry per system call entry of the filtered task, each
# with a cookie of its own and one user_unwind_stack. The task is a subshell
# that publishes its pid, waits on a fifo and then execs `ustest chain 20`
# (same pid: the filter is set before the program starts); `ustest chain 7`
# runs next to it, out of the filter. raw_syscalls:sys_enter in the same
# instance (same filter) is the ground truth of the system calls.
. /cases/lib.sh
I=$(mkinst c15)
grep -qw user_unwind "$I/available_tracers" || skip "no user_unwind tracer"
need "$T/events/ftrace/user_unwind_syscall/format" "kernel lacks the user_unwind_syscall entry"
w 1024 "$I/buffer_size_kb"
held truth.txt ustest chain 20
w "$HELD_PID" "$I/set_event_pid"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w user_unwind "$I/current_tracer"
cat "$I/options/userstacktrace_delay" >option.txt
ustest chain 7 >truth-other.txt &
other=$!
release
wait
w 0 "$I/tracing_on"
cat "$I/trace" >trace.txt
dump "$I" c15
w nop "$I/current_tracer"
w 0 "$I/events/raw_syscalls/sys_enter/enable"
rmdir "$I"
echo "other=$other" >other.txt
rm -f go
# The same through tracer-cli, as the README shows it: record -p user_unwind
# -F (the command's pid is the filter, set before it runs), stitched report.
if [ -x /usr/bin/tracer-cli ]; then
	tracer-cli record -q -p user_unwind -F -b 1024 -o t.dat ustest chain 6 >truth-cli.txt 2>record.err
	echo "rc=$?" >record.rc
	reports
	tracer-cli reset >/dev/null 2>&1
fi
