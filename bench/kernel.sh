#!/bin/bash
# bench/kernel.sh: the cost of deferred user stacks in the kernel.
#
# Builds the patched kernel with the benchmark configuration (kernel-patch/build.sh
# --config bench: no lockdep, KFENCE or other debug options), boots it under QEMU
# TCG with a tiny initramfs, and prints in one run ns per kernel entry and
# ring-buffer bytes per entry for: no tracing; events only; + synchronous
# `userstacktrace`; + deferred (`userstacktrace_delay`), at user stack depths 8, 32
# and 128 and 1, 2, 4 and 8 events per kernel entry (medians of interleaved rounds),
# then the ratios the issue's goals are stated in (and, with snapSIZE modes,
# deferred with user stack snapshots). The workload is a static C
# program with frame pointers (bench/kernel/kbench.c) making getppid through a raw
# `syscall` instruction; the events are raw_syscalls:sys_enter (1), + sys_exit (2),
# + syscalls:sys_{enter,exit}_getppid (4), + 4 event probes on those (8), top
# instance. See Documentation/benchmarks.md.
#
# usage: bench/kernel.sh [--patches DIR] [--profile]
#   --patches DIR  benchmark the series in DIR (DIR/series + patches) instead of
#                  kernel-patch/ (e.g. a copy of another worktree's series)
#   --profile      instead of the table: the function profiler (graph time) on the
#                  deferred and synchronous paths, 2 events per entry. Only the
#                  first profiler session of a boot is sound on this kernel (the
#                  second one oopses on its first profiled function, see
#                  Documentation/benchmarks-history.md, "What these say (v1 and
#                  the kernel branch alike)"): profile one mode and one depth
#                  per run, e.g. BENCH_PROFILE_MODES=sync BENCH_DEPTHS=8
# env: BENCH_ROUNDS (5), BENCH_N (getppid calls per measurement, 20000),
#      BENCH_WARMUP (calls before each measurement, 1000),
#      BENCH_DEPTHS (8,32,128), BENCH_EVENTS (1,2,4,8), BENCH_SMP (1),
#      BENCH_MODES (none,events,sync,deferred; add maps for + deferred with the
#      kernel's mapping records, userstacktrace_maps: an extra table, and a
#      first-sight table: the first stack of a fresh process, static kbench and a
#      dynamically linked kbench-dyn; add snapSIZE modes, e.g.
#      snap128,snap512,snap2k,snap4k, for + deferred with a user stack snapshot
#      of SIZE bytes per stack, user_stack_snapshot_size of the top instance,
#      k = 1024: an extra table against deferred and sync), BENCH_FIRST
#      (repetitions of the first-sight measurement, default BENCH_ROUNDS with
#      maps, else 0), BENCH_STACK (bytes of live stack kbench keeps above its
#      frames, default the largest snapshot size of BENCH_MODES, else 0: every
#      mode of the run gets it, so that each snapshot finds the bytes it asks for),
#      BENCH_KTREE (private patched tree of build.sh, default "bench"; empty: the
#      shared tree), BENCH_PROFILE_FUNCS (functions for --profile; not the
#      kernel's own stack unwinder, unwind_next_frame & co: graph-tracing it makes
#      an oops recurse without a call trace), BENCH_PROFILE_MODES (deferred,sync), BENCH_OUT
#      (copy of the tables), BENCH_BUFFER_KB (ring buffer per CPU, default from
#      BENCH_N), BENCH_KEEP=1 (keep the temp dir), QEMU_TIMEOUT (s, 3600),
#      BENCH_BZIMAGE (boot this kernel instead of building one), BENCH_CLOCK (icount:
#      guest time counts guest instructions, 1 per ns, independent of host load
#      (default); wall: TCG's real-time clock), BENCH_INSNS=FILE (count the guest
#      instructions of every translation block with the TCG plugin insns.so into
#      FILE; bench/kernel/insns.py folds two such runs into instructions per call
#      and kernel function, see Documentation/benchmarks.md)
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
HERE=$REPO/bench/kernel
PATCHES=""
PROFILE=""
while [ $# -gt 0 ]; do
	case $1 in
	--patches) [ $# -ge 2 ] || { echo "kernel.sh: --patches needs a directory" >&2; exit 2; }
		PATCHES=$(cd "$2" && pwd); shift 2 ;;
	--profile) PROFILE=${BENCH_PROFILE_FUNCS:-unwind_user*,unwind_deferred*,unwind_task*,*task_work*,*user_unwind*,stack_trace_save_user,arch_stack_walk_user,copy_from_user_nofault,x64_sys_call,exit_to_user_mode_loop,*ring_buffer_lock_reserve,*ring_buffer_unlock_commit}
		shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "kernel.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
ROUNDS=${BENCH_ROUNDS:-5}
N=${BENCH_N:-20000}
WARMUP=${BENCH_WARMUP:-1000}
DEPTHS=${BENCH_DEPTHS:-8,32,128}
EVENTS=${BENCH_EVENTS:-1,2,4,8}
SMP=${BENCH_SMP:-1}
KTREE=${BENCH_KTREE-bench}
MODES=${BENCH_MODES:-none,events,sync,deferred}
case ",$MODES," in *,maps,*) FIRST=${BENCH_FIRST:-$ROUNDS} ;; *) FIRST=0 ;; esac
# snapshot modes: snapSIZE, SIZE in bytes or KB (snap2k); the largest, in bytes
SNAP=0
for m in ${MODES//,/ }; do
	case $m in snap*) ;; *) continue ;; esac
	[[ $m =~ ^snap([0-9]+)(k?)$ ]] || { echo "kernel.sh: mode $m: snapSIZE, e.g. snap512 or snap2k" >&2; exit 2; }
	b=$(( 10#${BASH_REMATCH[1]} * (${#BASH_REMATCH[2]} ? 1024 : 1) ))
	if [ "$b" -gt "$SNAP" ]; then SNAP=$b; fi
done
STACK=${BENCH_STACK:-$SNAP}
[ -n "$PROFILE" ] && FIRST=0
[ "$ROUNDS" -ge 1 ] && [ "$N" -ge 1 ] 2>/dev/null || { echo "kernel.sh: BENCH_ROUNDS and BENCH_N must be positive" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "kernel.sh: qemu-system-x86_64 missing (kernel-patch/build.sh --prereqs)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/ustack-kbench.XXXXXX)
cleanup() { [ "${BENCH_KEEP:-0}" = 1 ] && echo "kernel.sh: kept $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT

# ---- kernel: own configuration (and by default its own patched tree, so that the
# boot tests' tree and objects are never touched)
args=(--config bench)
[ -n "$KTREE" ] && args+=(--tree "$KTREE")
[ -n "$PATCHES" ] && args+=(--patches "$PATCHES")
if [ -n "${BENCH_BZIMAGE:-}" ]; then
	BZ=$BENCH_BZIMAGE   # a kernel built elsewhere (development of this script)
else
	BZ=$("$REPO/kernel-patch/build.sh" "${args[@]}" | tail -1) || { echo "kernel.sh: kernel build failed" >&2; exit 1; }
fi
cp "$BZ" "$WORK/bzImage"   # a later build may replace it while we run

# ---- guest: busybox, kbench, /init
R=$WORK/root
mkdir -p "$R"/{bin,dev,proc,sys,tmp}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
mknod "$R/dev/console" c 5 1
mknod "$R/dev/null" c 1 3
gcc -static -no-pie -O1 -g0 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -Wall -Wextra -Werror -o "$R/bin/kbench" "$HERE/kbench.c"
# first-sight measurement (maps mode): the same program dynamically linked, so that
# a fresh process's stack is in two file mappings (kbench-dyn and libc), with the
# host's libc and dynamic loader
if [ "$FIRST" -gt 0 ]; then
	gcc -O1 -g0 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-fno-optimize-sibling-calls -Wall -Wextra -Werror -o "$R/bin/kbench-dyn" "$HERE/kbench.c"
	for lib in $(ldd "$R/bin/kbench-dyn" | grep -o '/[^ ]*'); do
		mkdir -p "$R$(dirname "$lib")"
		cp -L "$lib" "$R$lib"
	done
fi
install -m755 "$HERE/init" "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet) >"$WORK/initramfs.cpio"

# the largest entry: deferred, depth 128, 8 events (~1.5 KB); twice that per call.
# A snapshot adds its size, and a snapshot of more than half a sub-buffer may
# leave most of a sub-buffer unused each time: two 4 KB sub-buffers per call
# of any snapshot mode.
BUF_KB=${BENCH_BUFFER_KB:-$(( (N + 2000) * (SNAP > 0 ? 3 + 8 * ((SNAP + 4095) / 4096) : 3) + 1024 ))}
echo "kernel.sh: tree ${KTREE:-shared}, series ${PATCHES:-$REPO/kernel-patch}," \
	"$ROUNDS rounds of $N calls, smp $SMP, modes $MODES$( [ "$STACK" = 0 ] || echo " (stack $STACK)"), clock ${BENCH_CLOCK:-icount}, buffer ${BUF_KB} KB${PROFILE:+, profile}" >&2
# The guest's clock: by default instruction counting (-icount shift=0: one guest
# instruction = 1 ns of guest time), so the numbers do not depend on how busy the
# host is; BENCH_CLOCK=wall uses TCG's real-time clock instead.
case ${BENCH_CLOCK:-icount} in
icount) ICOUNT=(-icount shift=0,sleep=off) ;;
wall) ICOUNT=() ;;
*) echo "kernel.sh: BENCH_CLOCK is icount or wall" >&2; exit 2 ;;
esac
PLUGIN=()
if [ -n "${BENCH_INSNS:-}" ]; then
	gcc -O2 -shared -fPIC -Wall -Wextra -Werror -o "$WORK/insns.so" "$HERE/insns.c"
	PLUGIN=(-plugin "$WORK/insns.so,out=$(realpath -m "$BENCH_INSNS")")
fi
t0=$(date +%s)
set +e
timeout "${QEMU_TIMEOUT:-3600}" qemu-system-x86_64 -accel tcg "${ICOUNT[@]}" -smp "$SMP" -m 1024 -nodefaults \
	-display none -no-reboot -kernel "$WORK/bzImage" -initrd "$WORK/initramfs.cpio" "${PLUGIN[@]}" \
	-append "console=ttyS0 panic=-1 loglevel=4 ${BENCH_INSNS:+nokaslr }kbench.rounds=$ROUNDS kbench.n=$N kbench.warmup=$WARMUP kbench.depths=$DEPTHS kbench.events=$EVENTS kbench.buffer_kb=$BUF_KB kbench.modes=$MODES kbench.first=$FIRST kbench.stack=$STACK${PROFILE:+ kbench.profile=$PROFILE kbench.profile_modes=${BENCH_PROFILE_MODES:-deferred,sync}}" \
	-serial "file:$WORK/console.log" -serial "file:$WORK/data.log" >"$WORK/qemu.log" 2>&1
qrc=$?
set -e
echo "kernel.sh: guest ran $(( $(date +%s) - t0 )) s (qemu rc $qrc)" >&2
if ! python3 "$HERE/report.py" "$WORK/data.log" "$N" >"$WORK/tables.md"; then
	tail -20 "$WORK/console.log" >&2
	BENCH_KEEP=1
	exit 1
fi
cat "$WORK/tables.md"
[ -n "${BENCH_OUT:-}" ] && cp "$WORK/tables.md" "$BENCH_OUT"
exit 0
