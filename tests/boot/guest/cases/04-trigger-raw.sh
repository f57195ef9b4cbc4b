# timeout: 60
# Trigger ustacktrace_delay with a filter (only nanosleep entries), and with a
# count (exactly 3), on sys_enter; sys_exit and sched_switch are traced without.
. /cases/lib.sh
I=$(mkinst c4)
need "$I/events/raw_syscalls/sys_enter/trigger" "no event triggers"
w 512 "$I/buffer_size_kb"
w 'common_pid != 0' "$I/events/raw_syscalls/sys_exit/filter"
w 'prev_comm == "ustest"' "$I/events/sched/sched_switch/filter"
if ! echo 'ustacktrace_delay if id == 35' >"$I/events/raw_syscalls/sys_enter/trigger"; then
	rmdir "$I"; skip "kernel rejects the ustacktrace_delay trigger"
fi
cat "$I/events/raw_syscalls/sys_enter/trigger" >trigger.txt
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/events/sched/sched_switch/enable"
ustest chain 10 >truth.txt
w 0 "$I/tracing_on"
cat "$I/trace" >trace.txt
dump "$I" c4
w '!ustacktrace_delay if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
rmdir "$I"

I=$(mkinst c4b)
w 512 "$I/buffer_size_kb"
w 'ustacktrace_delay:3 if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
ustest chain 10 >truth-count.txt
w 0 "$I/tracing_on"
cat "$I/events/raw_syscalls/sys_enter/trigger" >trigger-count.txt
dump "$I" c4b
w '!ustacktrace_delay:3 if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
rmdir "$I"
