# timeout: 60
# KUnit suite unwind_deferred run from a system call: its requests need a task
# that entered the kernel from user space, so at boot (kernel_init) it skips.
# Writing the suite's debugfs "run" file runs it in this shell's write().
. /cases/lib.sh
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
R=/sys/kernel/debug/kunit/unwind_deferred
need "$R/run" "no KUnit suite unwind_deferred (CONFIG_UNWIND_DEFERRED_KUNIT_TEST, DEBUG_FS)"
w 1 "$R/run"
cat "$R/results" >results.txt
