# timeout: 120
# Issue case 7 through tracer-cli: tasks that exit with a stack request pending.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
record_deferred -e raw_syscalls:sys_enter -f 'id == 231' ustest exiter 20
