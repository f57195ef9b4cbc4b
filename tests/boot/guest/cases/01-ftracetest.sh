# timeout: 300
# The kselftest ftracetest cases that kernel-patch/ adds (list written by run.sh).
. /cases/lib.sh
need /ftrace/ftracetest "ftracetest not packed (no patched tree?)"
[ -s /ftrace/ustack-tests.list ] || skip "the series adds no ftracetest cases"
cp /ftrace/ustack-tests.list tests.list
cd /ftrace && ./ftracetest -v -l /tmp/ftracetest-logs $(cat /ftrace/ustack-tests.list) >"$OLDPWD/ftracetest.txt" 2>&1
echo "rc=$?" >"$OLDPWD/ftracetest.rc"
