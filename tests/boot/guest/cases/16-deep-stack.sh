# timeout: 60
# A user stack deeper than a ring buffer sub-buffer holds (main -> do_deep ->
# 600 x deep_level -> deep_leaf -> getppid): the stack entry keeps the
# innermost frames that fit.
. /cases/lib.sh
I=$(mkinst c16)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 512 "$I/buffer_size_kb"
w 'id == 110' "$I/events/raw_syscalls/sys_enter/filter"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/options/userstacktrace_delay"
ustest deep 600 >truth.txt
w 0 "$I/tracing_on"
dump "$I" c16
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
