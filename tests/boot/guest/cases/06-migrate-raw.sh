# timeout: 120
# A thread sleeps in nanosleep while another thread moves it to the other CPU:
# kernel entry on one CPU, exit (and the deferred unwind) on the other.
. /cases/lib.sh
[ "$ncpus" -ge 2 ] || skip "needs 2 CPUs"
I=$(mkinst c6)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 512 "$I/buffer_size_kb"
w 'id == 35' "$I/events/raw_syscalls/sys_enter/filter"
w 'id == 35' "$I/events/raw_syscalls/sys_exit/filter"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/options/userstacktrace_delay"
ustest migrate 12 >truth.txt
w 0 "$I/tracing_on"
cat "$I/trace" >trace.txt
dump "$I" c6
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
