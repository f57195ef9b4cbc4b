# timeout: 150
# Issue case 5 through tracer-cli: start (tiny buffer) + flood + extract, so the
# loss is certain; the kernel's own per-CPU stats are the ground truth.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
tracer-cli start --user-stacks deferred -b 8 \
	-e raw_syscalls:sys_enter -f 'id == 39' -e raw_syscalls:sys_exit -f 'id == 39' >start.out 2>&1
echo "rc=$?" >start.rc
ustest flood 3000 "$T/trace_marker" >truth.txt
echo 0 >"$T/tracing_on"
i=0
while [ $i -lt "$ncpus" ]; do cp "$T/per_cpu/cpu$i/stats" "kstats.cpu$i"; i=$((i + 1)); done
tracer-cli extract -q -o t.dat >extract.out 2>&1
echo "rc=$?" >extract.rc
tracer-cli reset >/dev/null 2>&1
reports
echo 1 >"$T/tracing_on"
true
