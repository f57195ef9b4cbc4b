# timeout: 120
# User stack snapshots (kernel-patch "tracing: Add user stack snapshot"):
# every stack entry of an instance with user_stack_snapshot_size set is a
# user_unwind_stack_snapshot, whose sp is the program's own at the system
# call. `ustest snap 10`: 10 getppid from
# snap_leaf, 12 KB below main, each with two known words on its stack.
# Instances, all on one run of the program:
#   c17a  option,  256 bytes
#   c17b  trigger, 100 bytes (rounded up to 104)
#   c17c  option,  65536 bytes, 4 KB sub-buffers: cut to the largest event
#   c17d  option,  65536 bytes, 64 KB sub-buffers: up to the end of [stack]
#   c17e  tracer user_unwind, 512 bytes, set_event_pid: the program's pid
#   c17t  option,  256 bytes, read by trace-cmd (extract + report)
. /cases/lib.sh
need "$T/user_stack_snapshot_size" "kernel lacks user_stack_snapshot_size (the snapshot patch is not in the series)"
need "$T/events/ftrace/user_unwind_stack_snapshot/format" "kernel lacks the user_unwind_stack_snapshot entry"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
grep -qw user_unwind "$T/available_tracers" || skip "no user_unwind tracer"

# option_inst NAME SIZE: the option on getppid (id 110)
option_inst() {
	I=$(mkinst "$1") || exit 1
	w 512 "$I/buffer_size_kb"
	w "$2" "$I/user_stack_snapshot_size"
	w 'id == 110' "$I/events/raw_syscalls/sys_enter/filter"
	w 1 "$I/events/raw_syscalls/sys_enter/enable"
	w 1 "$I/options/userstacktrace_delay"
}
option_inst c17a 256
A=$I
B=$(mkinst c17b) || exit 1
w 512 "$B/buffer_size_kb"
w 100 "$B/user_stack_snapshot_size"
w 'id == 110' "$B/events/raw_syscalls/sys_enter/filter"
w 1 "$B/events/raw_syscalls/sys_enter/enable"
w 'userstacktrace_delay if id == 110' "$B/events/raw_syscalls/sys_enter/trigger"
option_inst c17c 65536
C=$I
D=$(mkinst c17d) || exit 1
w 64 "$D/buffer_subbuf_size_kb"
w 2048 "$D/buffer_size_kb"
w 65536 "$D/user_stack_snapshot_size"
w 'id == 110' "$D/events/raw_syscalls/sys_enter/filter"
w 1 "$D/events/raw_syscalls/sys_enter/enable"
w 1 "$D/options/userstacktrace_delay"
option_inst c17t 256
TC=$I
for i in a b c d t; do
	cat "$T/instances/c17$i/user_stack_snapshot_size" >"size-$i.txt"
done
cat "$D/buffer_subbuf_size_kb" >subbuf-d.txt

# the tracer needs the pid before the program starts: a subshell publishes
# its pid, waits on a fifo, then execs ustest (same pid)
E=$(mkinst c17e) || exit 1
w 512 "$E/buffer_size_kb"
w 512 "$E/user_stack_snapshot_size"
cat "$E/user_stack_snapshot_size" >size-e.txt
held truth.txt ustest snap 10
w "$HELD_PID" "$E/set_event_pid"
w user_unwind "$E/current_tracer"
release
wait
rm -f go
for i in a b c d e t; do
	w 0 "$T/instances/c17$i/tracing_on"
done
cat "$A/trace" >trace-a.txt
# the raw pages, and the format of the snapshot for tests/boot/rawtrace.py
for i in a b c d e; do
	dump "$T/instances/c17$i" "c17$i"
done
cp "$T/events/ftrace/user_unwind_stack_snapshot/format" fmt.ftrace.user_unwind_stack_snapshot
# libtraceevent reads the format file: trace-cmd's view of instance c17t
trace-cmd extract -B c17t -o t.dat >extract.out 2>extract.err
echo "rc=$?" >extract.rc
trace-cmd report -i t.dat >tc-report.txt 2>tc-report.err
echo "rc=$?" >tc-report.rc
rm -f t.dat
w nop "$E/current_tracer"
w 0 "$B/events/raw_syscalls/sys_enter/enable"
echo '!userstacktrace_delay if id == 110' >"$B/events/raw_syscalls/sys_enter/trigger"
# trace-cmd extract removed c17t
for i in a c d t; do
	[ -d "$T/instances/c17$i" ] && w 0 "$T/instances/c17$i/options/userstacktrace_delay"
done
for i in a b c d e t; do
	[ -d "$T/instances/c17$i" ] && rmdir "$T/instances/c17$i"
done
true
