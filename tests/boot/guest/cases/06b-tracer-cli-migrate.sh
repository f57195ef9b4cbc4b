# timeout: 150
# Issue case 6 through tracer-cli: entries that migrate between the two vCPUs.
. /cases/lib.sh
[ "$ncpus" -ge 2 ] || skip "needs 2 CPUs"
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
record_deferred -e raw_syscalls:sys_enter -f 'id == 35' -e raw_syscalls:sys_exit -f 'id == 35' \
	ustest migrate 12
