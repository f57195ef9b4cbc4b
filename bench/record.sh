#!/bin/bash
# bench/record.sh: the cost of `tracer-cli record` against `trace-cmd record`,
# measured in a guest where both can run.
#
# Boots the benchmark kernel (kernel-patch/build.sh --config bench: no debug
# options) under QEMU TCG with -icount (guest time = guest instructions, so the
# numbers do not depend on how busy the host is), with a busybox initramfs
# holding tracer-cli (release build of this worktree), Debian's trace-cmd and
# its libraries, and two small static helpers (bench/record/rload.c: N getppid
# through a raw syscall; bench/record/rrun.c: runs a recorder, times it and
# takes its CPU from wait4()). Every recorder records the same load
# (raw_syscalls, -b 1024 by default) once per round, the order rotating from
# round to round; the host prints medians (bench/record/report.py).
# See Documentation/benchmarks.md.
#
# usage: bench/record.sh
# env: BENCH_ROUNDS (5), BENCH_N (getppid calls per run, 200000), BENCH_SMP (1),
#      BENCH_RECORD_ARGS (options of both recorders, "-b 1024 -e raw_syscalls"),
#      BENCH_EXTRA (more recorders, one a line: "NAME COMMAND...", e.g.
#      "ours-noptrace tracer-cli record --no-ptrace -b 1024 -e raw_syscalls"),
#      BENCH_BZIMAGE (kernel to boot; default the bench kernel
#      $HOME/.cache/ustack-kbench/bzImage-bench-v2, else built with
#      kernel-patch/build.sh --config bench --tree bench), BENCH_TRACER_CLI (a
#      tracer-cli binary instead of building one), BENCH_OUT (copy of the table),
#      BENCH_KEEP=1 (keep the temp dir), QEMU_TIMEOUT (s, 3600)
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
HERE=$REPO/bench/record
[ $# -eq 0 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; [ "$1" = -h ] || [ "$1" = --help ]; exit; }
ROUNDS=${BENCH_ROUNDS:-5}
N=${BENCH_N:-200000}
SMP=${BENCH_SMP:-1}
ARGS=${BENCH_RECORD_ARGS:--b 1024 -e raw_syscalls}
[ "$ROUNDS" -ge 1 ] && [ "$N" -ge 1 ] 2>/dev/null || { echo "record.sh: BENCH_ROUNDS and BENCH_N must be positive" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "record.sh: qemu-system-x86_64 missing (kernel-patch/build.sh --prereqs)" >&2; exit 1; }
command -v trace-cmd >/dev/null || { echo "record.sh: trace-cmd missing (scripts/install-deps.sh)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/ustack-rbench.XXXXXX)
cleanup() { [ "${BENCH_KEEP:-0}" = 1 ] && echo "record.sh: kept $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT

# ---- kernel: the bench kernel (no debug options), copied so a rebuild cannot
# replace it while we run
BZ=${BENCH_BZIMAGE:-$HOME/.cache/ustack-kbench/bzImage-bench-v2}
if [ ! -f "$BZ" ]; then
	BZ=$("$REPO/kernel-patch/build.sh" --config bench --tree bench | tail -1) ||
		{ echo "record.sh: kernel build failed" >&2; exit 1; }
fi
cp "$BZ" "$WORK/bzImage"

# ---- tracer-cli, copied for the same reason
if [ -n "${BENCH_TRACER_CLI:-}" ]; then
	TC=$BENCH_TRACER_CLI
else
	(cd "$REPO" && cargo build -q --release -p tracer-cli) || { echo "record.sh: cargo build failed" >&2; exit 1; }
	TC=$REPO/target/release/tracer-cli
fi
cp "$TC" "$WORK/tracer-cli"

# ---- guest: busybox, the helpers, both recorders with their libraries
R=$WORK/root
mkdir -p "$R"/{bin,dev,proc,sys,tmp,run,etc,usr/bin,bench}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
mknod "$R/dev/console" c 5 1
mknod "$R/dev/null" c 1 3
CFLAGS=(-static -O2 -Wall -Wextra -Werror)
gcc "${CFLAGS[@]}" -o "$R/bin/rload" "$HERE/rload.c"
gcc "${CFLAGS[@]}" -o "$R/bin/rrun" "$HERE/rrun.c"
install -m755 "$HERE/init" "$R/init"
# shellcheck source=scripts/guest-lib.sh
. "$REPO/scripts/guest-lib.sh"
copy_elf "$WORK/tracer-cli" /usr/bin/tracer-cli
copy_elf "$(command -v trace-cmd)" /usr/bin/trace-cmd
echo "root:x:0:0:root:/:/bin/sh" >"$R/etc/passwd"
{
	echo "tracer-cli tracer-cli record $ARGS"
	echo "trace-cmd trace-cmd record $ARGS"
	printf '%s\n' "${BENCH_EXTRA:-}"
} | grep . >"$R/bench/recorders"
(cd "$R" && find . | cpio -o -H newc --quiet) >"$WORK/initramfs.cpio"

echo "record.sh: $ROUNDS rounds of $N getppid, smp $SMP, recorders: $(cut -d' ' -f1 "$R/bench/recorders" | tr '\n' ' ')" >&2
t0=$(date +%s)
set +e
timeout "${QEMU_TIMEOUT:-3600}" qemu-system-x86_64 -accel tcg -icount shift=0,sleep=off -smp "$SMP" \
	-m 2048 -nodefaults -display none -no-reboot -kernel "$WORK/bzImage" -initrd "$WORK/initramfs.cpio" \
	-append "console=ttyS0 panic=-1 loglevel=4 rbench.rounds=$ROUNDS rbench.n=$N rbench.base_kb=1408" \
	-serial "file:$WORK/console.log" -serial "file:$WORK/data.log" >"$WORK/qemu.log" 2>&1
qrc=$?
set -e
echo "record.sh: guest ran $(( $(date +%s) - t0 )) s (qemu rc $qrc)" >&2
[ -n "${BENCH_DATA:-}" ] && cp "$WORK/data.log" "$BENCH_DATA"
if ! python3 "$HERE/report.py" "$WORK/data.log" "$N" "$WORK/tracer-cli" >"$WORK/table.md"; then
	cat "$WORK/table.md"
	tail -20 "$WORK/console.log" >&2
	BENCH_KEEP=1
	exit 1
fi
cat "$WORK/table.md"
[ -n "${BENCH_OUT:-}" ] && cp "$WORK/table.md" "$BENCH_OUT"
exit 0
