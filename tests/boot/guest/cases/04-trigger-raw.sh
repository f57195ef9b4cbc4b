# timeout: 60
# Trigger userstacktrace_delay with a filter (only nanosleep entries), and with a
# count (exactly 3), on sys_enter; sys_exit and sched_switch are traced without.
. /cases/lib.sh
I=$(mkinst c4)
need "$I/events/raw_syscalls/sys_enter/trigger" "no event triggers"
w 512 "$I/buffer_size_kb"
w 'common_pid != 0' "$I/events/raw_syscalls/sys_exit/filter"
w 'prev_comm == "ustest"' "$I/events/sched/sched_switch/filter"
if ! echo 'userstacktrace_delay if id == 35' >"$I/events/raw_syscalls/sys_enter/trigger"; then
	rmdir "$I"; skip "kernel rejects the userstacktrace_delay trigger"
fi
cat "$I/events/raw_syscalls/sys_enter/trigger" >trigger.txt
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/events/sched/sched_switch/enable"
ustest chain 10 >truth.txt
w 0 "$I/tracing_on"
cat "$I/trace" >trace.txt
dump "$I" c4
w '!userstacktrace_delay if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
rmdir "$I"

I=$(mkinst c4b)
w 512 "$I/buffer_size_kb"
w 'userstacktrace_delay:3 if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
ustest chain 10 >truth-count.txt
w 0 "$I/tracing_on"
cat "$I/events/raw_syscalls/sys_enter/trigger" >trigger-count.txt
dump "$I" c4b
w '!userstacktrace_delay:3 if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
rmdir "$I"

# trigger-only event: sys_enter is not enabled, so no event is recorded for the
# trigger's cookie to follow: no cookie, no stack
I=$(mkinst c4c)
w 512 "$I/buffer_size_kb"
w 'userstacktrace_delay if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
w 'common_pid != 0' "$I/events/raw_syscalls/sys_exit/filter"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
ustest chain 5 >truth-trigger-only.txt
w 0 "$I/tracing_on"
dump "$I" c4c
w '!userstacktrace_delay if id == 35' "$I/events/raw_syscalls/sys_enter/trigger"
rmdir "$I"

# ':1' on sched_switch, where most events are of idle and kernel threads: the
# count goes to the first cookie written, not to the first event
I=$(mkinst c4d)
w 512 "$I/buffer_size_kb"
w 'userstacktrace_delay:1' "$I/events/sched/sched_switch/trigger"
w 1 "$I/events/sched/sched_switch/enable"
ustest chain 5 >truth-sched.txt
w 0 "$I/tracing_on"
cat "$I/events/sched/sched_switch/trigger" >trigger-sched.txt
dump "$I" c4d
w '!userstacktrace_delay:1' "$I/events/sched/sched_switch/trigger"
rmdir "$I"
