# timeout: 150
# Toggle the option, add/remove an instance with the option and a trigger, while
# 8 threads fork/exit/syscall. Bounded: 30 s. Then a short sanity recording.
. /cases/lib.sh
A=$(mkinst s8a)
need "$A/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
w 64 "$A/buffer_size_kb"
w 1 "$A/events/raw_syscalls/enable"
w 1 "$A/events/sched/sched_process_exit/enable"
ustest stress 30 >truth.txt &
spid=$!
loops=0 fails=0
# as long as the storm lasts, and at least 5 rounds: on a loaded host a round
# (mkdir and rmdir through grace periods under TCG) can take 7 s
while kill -0 $spid 2>/dev/null || [ $loops -lt 5 ]; do
	echo 1 >"$A/options/userstacktrace_delay" || fails=$((fails + 1))
	mkdir "$T/instances/s8b" || fails=$((fails + 1))
	echo 1 >"$T/instances/s8b/events/raw_syscalls/sys_enter/enable" || fails=$((fails + 1))
	echo 1 >"$T/instances/s8b/events/sched/enable" || fails=$((fails + 1))
	echo 1 >"$T/instances/s8b/options/userstacktrace_delay" || fails=$((fails + 1))
	echo 'userstacktrace_delay if id == 39' >"$T/instances/s8b/events/raw_syscalls/sys_exit/trigger" || fails=$((fails + 1))
	echo 1 >"$T/instances/s8b/events/raw_syscalls/sys_exit/enable" || fails=$((fails + 1))
	usleep 20000
	echo 0 >"$A/options/userstacktrace_delay" || fails=$((fails + 1))
	rmdir "$T/instances/s8b" || fails=$((fails + 1))
	loops=$((loops + 1))
done
wait $spid
echo "stress_rc=$? loops=$loops fails=$fails" >loops.txt
rmdir "$A"
# the mechanism still works afterwards
still_works s8c
