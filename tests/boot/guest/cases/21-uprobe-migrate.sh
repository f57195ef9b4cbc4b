# timeout: 240
# The trigger's cookie follows its event on the event's CPU even when the
# event commits preemptibly: a uprobe event on ustest's up_target with the
# userstacktrace_delay trigger, while another thread moves the task between
# CPU 0 and 1 without pause (ustest uprobe). Needs preemptible RCU
# (kernel-patch/config/preempt.config), else the uprobe's RCU read section
# keeps the commit on its CPU anyway.
. /cases/lib.sh
need "$T/uprobe_events" "kernel lacks uprobe events"
[ "$ncpus" -ge 2 ] || skip "needs 2 CPUs"
off=$(ustest uprobe 0 | sed -n 's/.*offset=\(0x[0-9a-f]*\).*/\1/p')
[ -n "$off" ] || { echo "ustest uprobe 0 printed no offset"; exit 1; }
w "p:ustack/up_target $(command -v ustest):$off" "$T/uprobe_events"
I=$(mkinst c21)
need "$I/events/ustack/up_target" "the uprobe event was not created"
w 4096 "$I/buffer_size_kb"
w userstacktrace_delay "$I/events/ustack/up_target/trigger"
w 1 "$I/events/ustack/up_target/enable"
ustest uprobe 4000 >truth.txt
w 0 "$I/tracing_on"
dump "$I" c21
cp "$I/events/ustack/up_target/format" fmt.ustack.up_target
w 0 "$I/events/ustack/up_target/enable"
w '!userstacktrace_delay' "$I/events/ustack/up_target/trigger"
rmdir "$I"
: >"$T/uprobe_events" || { echo "cannot clear uprobe_events"; exit 1; }
