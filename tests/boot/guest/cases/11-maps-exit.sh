# timeout: 150
# The kernel's mapping records (userstacktrace_maps) symbolize
# a process that exited before the trace was read: tracer-cli start, the program
# (which saves its /proc/self/maps first), exit, extract. No /proc, no ptrace maps.
# A second run with the option off is the control: its frames must stay bare.
. /cases/lib.sh
need /usr/bin/tracer-cli "tracer-cli not packed (cargo build failed?)"
need "$T/options/userstacktrace_maps" "kernel lacks the userstacktrace_maps option"
for run in on off; do
	opt=userstacktrace_maps
	[ $run = off ] && opt=nouserstacktrace_maps
	tracer-cli start --user-stacks deferred -b 1024 -O $opt \
		-e raw_syscalls:sys_enter -f 'id == 35' >start-$run.out 2>&1
	echo "rc=$?" >start-$run.rc
	ustest maps 5 maps-$run.txt >truth-$run.txt
	cat "$T/options/userstacktrace_maps" >option-$run.txt
	tracer-cli extract -q -o t-$run.dat >extract-$run.out 2>&1
	echo "rc=$?" >extract-$run.rc
	tracer-cli reset >/dev/null 2>&1
	tracer-cli report -i t-$run.dat --json >report-$run.json 2>report-$run.err
	echo "rc=$?" >report-$run.rc
	tracer-cli report -i t-$run.dat --stacks >stacks-$run.txt 2>&1
	trace-cmd report -i t-$run.dat >tc-report-$run.txt 2>tc-report-$run.err
	echo "rc=$?" >tc-report-$run.rc
done
true
