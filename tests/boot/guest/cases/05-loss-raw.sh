# timeout: 120
# A tiny buffer and a flood: the kernel must account the losses per CPU, and
# no stack event may appear for a cookie that is broken (checked on the host).
. /cases/lib.sh
flood_inst c5
ustest flood 3000 "$I/trace_marker" >truth.txt
w 0 "$I/tracing_on"
dump "$I" c5
w 0 "$I/options/userstacktrace_delay"
rmdir "$I"
