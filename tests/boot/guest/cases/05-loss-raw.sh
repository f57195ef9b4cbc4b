# timeout: 120
# A tiny buffer and a flood: the kernel must account the losses per CPU, and
# no stack event may appear for a cookie that is broken (checked on the host).
. /cases/lib.sh
I=$(mkinst c5)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 8 "$I/buffer_size_kb"
w 'id == 39' "$I/events/raw_syscalls/sys_enter/filter"
w 'id == 39' "$I/events/raw_syscalls/sys_exit/filter"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/options/userstacktrace_delay"
ustest flood 3000 "$I/trace_marker" >truth.txt
w 0 "$I/tracing_on"
dump "$I" c5
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
