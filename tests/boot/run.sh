#!/bin/bash
# tests/boot/run.sh: the kernel CI boot tests, one command.
#
#   1. builds the patched kernel (kernel-patch/build.sh, cached under $USTACK_CACHE);
#   2. builds the guest userspace: tests/boot/progs (static, frame pointers),
#      tracer-cli (cargo, this workspace), Debian's trace-cmd, busybox, the
#      ftracetest cases the series adds, with the shared libraries they need;
#   3. packs an initramfs and boots it under QEMU TCG, -smp 2 (plain QEMU: see
#      Documentation/boot-tests.md for why not virtme-ng);
#   4. judges the run on the host (tests/boot/check.py): KTAP, then
#      "N passed, N failed, N skipped"; exit status non-zero on any failure,
#      skip, guest hang (timeout) or kernel splat (panic, BUG, WARNING, lockdep).
#
# env: USTACK_CACHE (default $HOME/.cache/ustack), USTACK_BOOT_ONLY=3,4 (case
#      numbers), USTACK_BOOT_OUT (logs; default $USTACK_CACHE/boot/last),
#      USTACK_BOOT_WORK (guest build dir; default $USTACK_CACHE/boot/work: give
#      each concurrent run its own, as with USTACK_BOOT_OUT),
#      QEMU_TIMEOUT (seconds, default 1500), CI=true (skips count as failures).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
HERE=$REPO/tests/boot
CACHE=${USTACK_CACHE:-$HOME/.cache/ustack}
export USTACK_CACHE=$CACHE
OUT=${USTACK_BOOT_OUT:-$CACHE/boot/last}
WORK=${USTACK_BOOT_WORK:-$CACHE/boot/work}
ONLY=${USTACK_BOOT_ONLY:-}
T_START=$(date +%s.%N)
T0=$T_START

phase_done() { # phase_done NAME: print the time since the previous phase ended
	local t
	t=$(date +%s.%N)
	printf 'boot-tests: phase %-12s %7.1fs\n' "$1" "$(echo "$t - $T0" | bc)"
	T0=$t
}
die() { echo "boot-tests: error: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# ---- 1. kernel (USTACK_BZIMAGE + USTACK_KSRC: test a kernel built elsewhere,
#      e.g. a patch author's work tree, without building; never in CI)
if [ -n "${USTACK_BZIMAGE:-}" ]; then
	[ "${CI:-}" != true ] || die "USTACK_BZIMAGE is for development, not CI"
	BZ=$USTACK_BZIMAGE
	KSRC=${USTACK_KSRC:-}
	echo "boot-tests: using $BZ (not built here)"
else
	# USTACK_BOOT_CONFIG=norust: the series' C feature without Rust (build.sh --config)
	BZ=$("$REPO/kernel-patch/build.sh" --config "${USTACK_BOOT_CONFIG:-boot}" | tail -1) ||
		die "kernel build failed"
	KSRC=$("$REPO/kernel-patch/build.sh" --print-src)
fi
[ -f "$BZ" ] || die "no bzImage at $BZ"
# cases whose kernel patch the built series does not have yet (it is added to
# kernel-patch/series later): their skip is reported as pending, not failed
PENDING=()
if [ -n "$KSRC" ] && ! grep -qs user_stack_snapshot_size "$KSRC/kernel/trace/trace_user_unwind.c"; then
	PENDING+=(--pending "17:the built series has no user stack snapshot patch")
	PENDING+=(--pending "18:the built series has no user stack snapshot patch")
fi
phase_done kernel

# host packages tracer-cli's build and the guest need (trace-cmd, libtraceevent...)
"$REPO/scripts/install-deps.sh" >/dev/null || die "scripts/install-deps.sh failed"

# ---- 2. the judge's own self-tests (it must be able to fail), then guest userspace
mkdir -p "$WORK" "$OUT"
python3 -m unittest discover -s "$HERE" -p 'test_*.py' >"$WORK/selftest.log" 2>&1 ||
	{ cat "$WORK/selftest.log"; die "tests/boot/check.py self-tests failed"; }
CFLAGS=(-static -no-pie -O1 -g0 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
	-fno-optimize-sibling-calls -Wall -Wextra -Werror)
gcc "${CFLAGS[@]}" -o "$WORK/ustest" "$HERE/progs/ustest.c" -lpthread
gcc -static -O2 -Wall -Werror -o "$WORK/rawdump" "$HERE/progs/rawdump.c"
# the libtraceevent plugin, for the judge's host-side trace-cmd reports
rm -rf "$WORK/plugins" && mkdir -p "$WORK/plugins"
make -s -C "$REPO/plugins" OUTPUT="$WORK/plugins/" >"$WORK/plugins.log" 2>&1 ||
	{ cat "$WORK/plugins.log"; die "make -C plugins failed"; }
# the symbolization ground-truth programs (case 13), built as the host tests build them
GT=$REPO/tracer-cli/tests/gt
GTFLAGS=(-O1 -g -fno-omit-frame-pointer -I"$GT")
rm -rf "$WORK/gt" && mkdir -p "$WORK/gt"
gcc "${GTFLAGS[@]}" -static -no-pie -o "$WORK/gt/gt-threads" "$GT/threads.c" -lpthread
gcc "${GTFLAGS[@]}" -static -no-pie -o "$WORK/gt/gt-spie" "$GT/pie.c"
gcc "${GTFLAGS[@]}" -static -no-pie -o "$WORK/gt/gt-execa" "$GT/execa.c"
gcc "${GTFLAGS[@]}" -static-pie -fPIE -o "$WORK/gt/gt-pie" "$GT/pie.c"
# the unwinding ground truth (case 18), built as distributions build: -O2,
# PIE, dynamically linked against Debian's libc, with and without frame pointers
TRUTH=$REPO/crates/testdata/progs/truth.c
gcc -O2 -pthread -fomit-frame-pointer -o "$WORK/truth-o2" "$TRUTH"
gcc -O2 -pthread -fno-omit-frame-pointer -o "$WORK/truth-fp" "$TRUTH"
TRACER_CLI=""
if (cd "$REPO" && cargo build -q --release -p tracer-cli) >"$WORK/cargo.log" 2>&1; then
	TRACER_CLI=$REPO/target/release/tracer-cli
else
	echo "boot-tests: cargo build -p tracer-cli failed (the tracer-cli cases will fail):" >&2
	tail -5 "$WORK/cargo.log" >&2
fi
phase_done userspace

# ---- 3. initramfs
R=$WORK/root
rm -rf "$R"
mkdir -p "$R"/{bin,dev,proc,sys,tmp,cases,usr/bin,etc}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
mknod "$R/dev/console" c 5 1
mknod "$R/dev/null" c 1 3
install -m755 "$WORK/ustest" "$WORK/rawdump" "$WORK"/gt/gt-* "$R/bin/"
install -m755 "$HERE/guest/init" "$R/init"
install -m644 "$HERE"/guest/cases/*.sh "$R/cases/"

# shellcheck source=scripts/guest-lib.sh
. "$REPO/scripts/guest-lib.sh"
[ -n "$TRACER_CLI" ] && copy_elf "$TRACER_CLI" /usr/bin/tracer-cli
copy_elf "$WORK/truth-o2" /bin/truth-o2
copy_elf "$WORK/truth-fp" /bin/truth-fp
command -v trace-cmd >/dev/null || die "trace-cmd is not installed (scripts/install-deps.sh)"
copy_elf "$(command -v trace-cmd)" /usr/bin/trace-cmd
echo "root:x:0:0:root:/:/bin/sh" >"$R/etc/passwd"

# ftracetest and the cases the series adds
if [ -n "$KSRC" ] && [ -d "$KSRC/tools/testing/selftests/ftrace" ]; then
	cp -a "$KSRC/tools/testing/selftests/ftrace" "$R/ftrace"
	# the cases the series adds or changes, relative to the pristine base
	base=$(cat "$KSRC/.git/ustack-base" 2>/dev/null || git -C "$KSRC" rev-list --max-parents=0 HEAD)
	git -C "$KSRC" diff --name-only --diff-filter=AM "$base" -- tools/testing/selftests/ftrace/test.d |
		sed 's|^tools/testing/selftests/ftrace/||' | grep '\.tc$' >"$R/ftrace/ustack-tests.list" || true
fi
(cd "$R" && find . | cpio -o -H newc --quiet) >"$WORK/initramfs.cpio"
echo "boot-tests: initramfs $(du -h "$WORK/initramfs.cpio" | cut -f1), ftracetest cases: $(wc -l <"$R/ftrace/ustack-tests.list" 2>/dev/null || echo 0)"
phase_done initramfs

# ---- 4. boot
rm -f "$OUT/console.log" "$OUT/data.log"
timed_out=0
set +e
timeout "${QEMU_TIMEOUT:-1500}" qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -nodefaults \
	-display none -no-reboot -kernel "$BZ" -initrd "$WORK/initramfs.cpio" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=7 ustack.only=$ONLY" \
	-serial "file:$OUT/console.log" -serial "file:$OUT/data.log" >"$OUT/qemu.log" 2>&1
qrc=$?
set -e
[ $qrc = 124 ] && timed_out=1
[ $qrc = 0 ] || { echo "boot-tests: qemu exited with $qrc:"; tail -5 "$OUT/qemu.log"; }
cp "$WORK/ustest" "$OUT/ustest"
rm -rf "$OUT/gt" && cp -r "$WORK/gt" "$OUT/gt"
phase_done "qemu(rc=$qrc)"

# ---- 5. judge
set +e
rm -rf "$OUT/files"
python3 "$HERE/check.py" "$OUT/data.log" "$OUT/console.log" "$WORK/ustest" --qemu-rc $qrc --save "$OUT/files" \
	--plugins "$WORK/plugins" \
	${ONLY:+--only "$ONLY"} $([ $timed_out = 1 ] && echo --timed-out) "${PENDING[@]}"
rc=$?
set -e
phase_done check
printf 'boot-tests: total %.1fs; logs in %s\n' "$(echo "$(date +%s.%N) - $T_START" | bc)" "$OUT"
exit $rc
