# timeout: 10
# KUnit runs at boot; the host reads its KTAP from the kernel log (ttyS0).
# Here only the list of suites the kernel knows, for the report.
. /cases/lib.sh
ls /sys/kernel/debug/kunit 2>/dev/null >suites.txt
true
