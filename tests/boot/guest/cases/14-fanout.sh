# timeout: 450
# One tracing-wide unwind work, fanned out to instances.
# Part 1: 100 instances with userstacktrace_delay on at once, instance i tracing
# only the system calls of its own worker process i: every instance must hold
# exactly its own cookies and stacks (host: check.py case_fanout).
# Then the ids run out: the 129th instance gets EBUSY, until one is removed.
# Part 2: the option toggled in a tight loop on 26 instances, and instances with
# the option made and removed (ids released and made stale; f0..f98 keep theirs,
# so at most 2 ids are free and from the third round on every new id is a stale
# one, cleared from every task first), while `ustest stress` forks and exits;
# instance "keep" has the option on throughout and traces only getpid
# entries: its stacks must be exactly its own. Part 3: late requests (after the
# unwind callback ran in the kernel entry) get exactly one stack per instance.
# Lockdep is on in the boot config: any splat fails the case.
. /cases/lib.sh
need "$T/options/userstacktrace_delay" "kernel lacks the userstacktrace_delay option"
N=100
# mark PHASE: guest uptime at the start of each phase, in phases.txt (check.py
# prints it) and in the kernel log, so that a timeout shows where it stood
mark() {
	echo "$(cut -d' ' -f1 /proc/uptime) $1" >>phases.txt
	echo "ustack-boot: 14-fanout: $1" >/dev/kmsg
}
mark start

# ---- part 1: 100 instances, one worker each. `ustest gang` forks the workers
# held (one process start instead of 100 shells: under TCG each costs a lot)
# and lists their pids, so that instance i can filter worker i; SIGUSR1 then
# releases them all at once.
ustest gang $N pids.txt >truth-gang.txt 2>&1 &
gang=$!
wait_file pids.txt "ustest gang wrote no pids"
mark instances
while read -r i pid; do
	I=$T/instances/f$i
	mkdir "$I" || exit 1
	w 16 "$I/buffer_size_kb"
	w "common_pid == $pid" "$I/events/raw_syscalls/sys_enter/filter"
	w 1 "$I/events/raw_syscalls/sys_enter/enable"
	w 1 "$I/options/userstacktrace_delay"
done <pids.txt
mark release
kill -USR1 $gang
wait $gang
echo "gang_rc=$?" >gang.txt
mark dump
i=0
while [ $i -lt $N ]; do
	I=$T/instances/f$i
	w 0 "$I/tracing_on"
	dump "$I" f$i
	w 0 "$I/options/userstacktrace_delay"
	i=$((i + 1))
done
# one small file to ship instead of 400 (mostly empty pages: 900 KB -> 30 KB)
tar czf fanout.tgz f[0-9]*.cpu* && rm -f f[0-9]*.cpu*

# ---- ids run out. f0..f99 keep theirs (option off, instance still there),
# the top instance gets one (if case 09 did not give it one already), and so
# do keep and t0..t25 of part 2: 128. The next instance to turn deferred stacks
# on gets EBUSY, by the option and by the trigger; once an instance with an id
# is removed (f99), it gets that id (stale: cleared from every task first).
mark ids
w 1 "$T/options/userstacktrace_delay"
w 0 "$T/options/userstacktrace_delay"
K=$(mkinst keep)
w 2048 "$K/buffer_size_kb"
w 'id == 39' "$K/events/raw_syscalls/sys_enter/filter"
w 1 "$K/events/raw_syscalls/sys_enter/enable"
w 1 "$K/options/userstacktrace_delay"
j=0
while [ $j -lt 26 ]; do
	I=$T/instances/t$j
	mkdir "$I" || exit 1
	w 16 "$I/buffer_size_kb"
	w 1 "$I/events/raw_syscalls/enable"
	w 1 "$I/events/sched/sched_process_fork/enable"
	w 1 "$I/events/sched/sched_process_exit/enable"
	w 1 "$I/options/userstacktrace_delay"
	w 0 "$I/options/userstacktrace_delay"
	j=$((j + 1))
done
X=$T/instances/x0
mkdir "$X" || exit 1
w 4 "$X/buffer_size_kb"
if echo 1 >"$X/options/userstacktrace_delay" 2>opt-err.txt; then
	echo "option_129=ok" >ids.txt
else
	echo "option_129=$(cat opt-err.txt)" >ids.txt
fi
echo userstacktrace_delay >"$X/events/raw_syscalls/sys_enter/trigger" 2>trig-err.txt
echo "trigger_rc=$? trigger_err=$(cat trig-err.txt)" >>ids.txt
rm -f opt-err.txt trig-err.txt
# f0..f98 keep their ids through part 2: with the top instance, keep and
# t0..t25 that is 127, so the instance made each round takes the last free
# id, and from the second round on that id is a stale one, cleared from every
# task under the fork/exit storm first
rmdir "$T/instances/f99" || echo "rmdir f99 failed"
echo 1 >"$X/options/userstacktrace_delay" && echo "after_remove=ok" >>ids.txt
w 0 "$X/options/userstacktrace_delay"
rmdir "$X"

# ---- part 2: toggles, instance churn and a fork/exit storm
mark storm
ustest stress 20 >truth-stress.txt &
spid=$!
# an instance made and removed over and over, next to the toggles: it takes
# the last free id and, from its second round on, a stale one. Paced: mkdir
# and rmdir hold trace_types_lock through grace periods, and the toggles need it
: >toggling
(
	churn=0 fails=0
	while [ -f toggling ] || [ $churn -lt 3 ]; do
		C=$T/instances/c$churn
		mkdir "$C" || fails=$((fails + 1))
		echo 1 >"$C/events/raw_syscalls/sys_enter/enable" || fails=$((fails + 1))
		echo 1 >"$C/options/userstacktrace_delay" || fails=$((fails + 1))
		# how long an rmdir waits (grace periods, callbacks), in uptime
		t0=$(cut -d' ' -f1 /proc/uptime)
		rmdir "$C" || fails=$((fails + 1))
		echo "$t0 $(cut -d' ' -f1 /proc/uptime)" >>rmdir-times.txt
		churn=$((churn + 1))
		sleep 1
	done
	echo "churn=$churn churn_fails=$fails" >churn.txt
) &
cpid=$!
# as long as the storm lasts, and at least 5 rounds
loops=0 stormy=0 fails=0
while kill -0 $spid 2>/dev/null || [ $loops -lt 5 ]; do
	kill -0 $spid 2>/dev/null && stormy=$((stormy + 1))
	j=0
	while [ $j -lt 26 ]; do
		echo 1 >"$T/instances/t$j/options/userstacktrace_delay" || fails=$((fails + 1))
		j=$((j + 1))
	done
	j=0
	while [ $j -lt 26 ]; do
		echo 0 >"$T/instances/t$j/options/userstacktrace_delay" || fails=$((fails + 1))
		j=$((j + 1))
	done
	loops=$((loops + 1))
done
rm -f toggling
wait $spid
echo "stress_rc=$? loops=$loops stormy=$stormy fails=$fails" >loops.txt
wait $cpid
mark after-storm
w 0 "$K/tracing_on"
dump "$K" keep
w 0 "$K/options/userstacktrace_delay"
rmdir "$K"
j=0
while [ $j -lt 26 ]; do
	rmdir "$T/instances/t$j" || echo "rmdir t$j failed"
	j=$((j + 1))
done
mark remove
i=0
while [ $i -lt 99 ]; do
	rmdir "$T/instances/f$i" || echo "rmdir f$i failed"
	i=$((i + 1))
done

# the mechanism still works afterwards, with ids reused after the walk
still_works after

# ---- late requests: ustest signal sends itself SIGUSR1 from kill(); the signal
# is delivered on the way back, after the unwind callback ran (get_signal()
# runs task work first), so the signal_deliver events ask late in the entry.
# sa: the option, kill entries and signal_deliver: its stack comes from the
# callback, and no second one for the late request; sb: the option, only
# signal_deliver: the late request writes the cached stack; sc: the trigger on
# both events (a request per event): one stack per cookie all the same
mark late
SA=$(mkinst sa)
w 'id == 62' "$SA/events/raw_syscalls/sys_enter/filter"
w 1 "$SA/events/raw_syscalls/sys_enter/enable"
w 1 "$SA/events/signal/signal_deliver/enable"
w 1 "$SA/options/userstacktrace_delay"
SB=$(mkinst sb)
w 1 "$SB/events/signal/signal_deliver/enable"
w 1 "$SB/options/userstacktrace_delay"
SC=$(mkinst sc)
w 'id == 62' "$SC/events/raw_syscalls/sys_enter/filter"
w 1 "$SC/events/raw_syscalls/sys_enter/enable"
w userstacktrace_delay "$SC/events/raw_syscalls/sys_enter/trigger"
w 1 "$SC/events/signal/signal_deliver/enable"
w userstacktrace_delay "$SC/events/signal/signal_deliver/trigger"
ustest signal 10 >truth-signal.txt || echo "ustest signal failed"
for x in sa sb sc; do
	w 0 "$T/instances/$x/tracing_on"
	dump "$T/instances/$x" $x
done
echo '!userstacktrace_delay' >"$SC/events/raw_syscalls/sys_enter/trigger"
echo '!userstacktrace_delay' >"$SC/events/signal/signal_deliver/trigger"
for x in sa sb sc; do
	w 0 "$T/instances/$x/options/userstacktrace_delay"
	rmdir "$T/instances/$x"
done
mark end
