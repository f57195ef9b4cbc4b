# timeout: 300
# As 20-exit-window, with interrupts nesting everywhere in the way out:
# `ustest ipi` makes getppid calls on CPU 0 while a thread on CPU 1 takes
# write access to a page away without pause, and the TLB shootdowns of
# mprotect() interrupt CPU 0 wherever it is. An interrupt that lands in the unwind
# callback between its reset of the task's page cookie and the reservation
# of its stack entry writes a page cookie of its own there: the stack entry
# must then be no link, or the irq_enable of exit_to_user_mode() after it
# is read as the next system call's. irq_disable is recorded too: the
# unwind request saves and restores the interrupt flag, and those events
# nest in the option's writers (every event must still have a cookie).
. /cases/lib.sh
need "$T/events/preemptirq/irq_enable" "kernel lacks preemptirq events"
[ "$ncpus" -ge 2 ] || skip "needs 2 CPUs"
I=$(mkinst c22)
need "$I/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 24576 "$I/buffer_size_kb"
w 1 "$I/events/raw_syscalls/sys_enter/enable"
w 1 "$I/events/raw_syscalls/sys_exit/enable"
w 1 "$I/events/preemptirq/irq_enable/enable"
w 1 "$I/events/preemptirq/irq_disable/enable"
w 1 "$I/options/userstacktrace_delay"
sh -c "echo \$\$ >$I/set_event_pid && exec ustest ipi 30000" >truth.txt
w 0 "$I/tracing_on"
dump "$I" c22
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
