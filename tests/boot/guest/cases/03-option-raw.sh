# timeout: 60
# Option userstacktrace_delay, read straight from tracefs (trace + trace_pipe_raw):
# main -> chain_level1 -> chain_level2 -> chain_level3 -> 20 x nanosleep.
. /cases/lib.sh
I=$(mkinst c3)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 512 "$I/buffer_size_kb"
w 'id == 35 || id == 231' "$I/events/raw_syscalls/sys_enter/filter"
w 'id == 35' "$I/events/raw_syscalls/sys_exit/filter"
w 'prev_comm == "ustest"' "$I/events/sched/sched_switch/filter"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/events/sched/sched_switch/enable"
w 1 "$I/options/userstacktrace_delay"
ustest chain 20 >truth.txt
w 0 "$I/tracing_on"
cat "$I/trace" >trace.txt
dump "$I" c3
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
