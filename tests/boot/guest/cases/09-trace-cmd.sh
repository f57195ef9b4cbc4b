# timeout: 120
# Debian's trace-cmd records (tracer user_unwind, then the option) and reports
# the new events in the guest.
. /cases/lib.sh
need /usr/bin/trace-cmd "trace-cmd not packed"
grep -qw user_unwind "$T/available_tracers" || skip "no user_unwind tracer"
trace-cmd record -q -o p.dat -p user_unwind -e raw_syscalls:sys_enter -f 'id == 35' ustest chain 5 >truth-p.txt 2>record-p.err
echo "record_rc=$?" >record-p.rc
trace-cmd report -i p.dat >report-p.txt 2>report-p.err
echo "report_rc=$?" >report-p.rc
trace-cmd record -q -o o.dat -O userstacktrace_delay -e raw_syscalls:sys_enter -f 'id == 35' ustest chain 5 >truth-o.txt 2>record-o.err
echo "record_rc=$?" >record-o.rc
trace-cmd report -i o.dat >report-o.txt 2>report-o.err
echo "report_rc=$?" >report-o.rc
trace-cmd reset >/dev/null 2>&1
rm -f p.dat o.dat
