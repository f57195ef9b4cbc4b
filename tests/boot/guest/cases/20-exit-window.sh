# timeout: 90
# Events on the way back to user space get their own kernel entry's cookie:
# the irq_enable of exit_to_user_mode() comes after the last task work, and
# used to ask for a cookie whose stack was the next kernel entry's. The
# option records every system call of `ustest chain 20` (its own pid only,
# set_event_pid) with the preemptirq irq_enable events.
. /cases/lib.sh
need "$T/events/preemptirq/irq_enable" "kernel lacks preemptirq events"
I=$(mkinst c20)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 2048 "$I/buffer_size_kb"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/events/preemptirq/irq_enable/enable"
w 1 "$I/options/userstacktrace_delay"
sh -c "echo \$\$ >$I/set_event_pid && exec ustest chain 20" >truth.txt
w 0 "$I/tracing_on"
dump "$I" c20
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
