# timeout: 120
# Issue case 3 through the whole chain: tracer-cli record --user-stacks deferred,
# then tracer-cli report --json (stitched, symbolized in the guest) and, as an
# independent view of the same file, trace-cmd report.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
record_deferred -e raw_syscalls:sys_enter -f 'id == 35' -e raw_syscalls:sys_exit -f 'id == 35' \
	-e sched:sched_switch -f 'prev_comm == "ustest"' ustest chain 20
