# timeout: 60
# Children request a stack in exit_group and never return to user space.
. /cases/lib.sh
I=$(mkinst c7)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 512 "$I/buffer_size_kb"
w 'id == 231' "$I/events/raw_syscalls/sys_enter/filter"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/options/userstacktrace_delay"
ustest exiter 20 >truth.txt
w 0 "$I/tracing_on"
dump "$I" c7
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
