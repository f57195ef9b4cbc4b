# timeout: 120
# Issue case 3 through the whole chain: tracer-cli record --user-stacks deferred,
# then tracer-cli report --json (stitched, symbolized in the guest) and, as an
# independent view of the same file, trace-cmd report.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
tracer-cli record -q --user-stacks deferred -b 1024 -o t.dat \
	-e raw_syscalls:sys_enter -f 'id == 35' -e raw_syscalls:sys_exit -f 'id == 35' \
	-e sched:sched_switch -f 'prev_comm == "ustest"' ustest chain 20 >truth.txt 2>record.err
echo "rc=$?" >record.rc
tracer-cli report -i t.dat --json >report.json 2>report.err
echo "rc=$?" >report.rc
trace-cmd report -i t.dat >tc-report.txt 2>tc-report.err
echo "rc=$?" >tc-report.rc
tracer-cli reset >/dev/null 2>&1
true
