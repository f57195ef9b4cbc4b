#!/bin/bash
# Manual end-to-end check of the deferred user stack series under QEMU TCG.
#
# usage: run.sh BZIMAGE [OUTDIR]
#   Builds a busybox initramfs with fp-prog (frame pointers, static, no PIE),
#   trace-cmd and its libraries and the ftracetest cases of the series (from
#   KSRC, default: the patched tree of kernel-patch/build.sh), boots it with
#   2 vCPUs under TCG, and checks the serial log with check.py.
# needs: busybox-static, cpio, gcc, qemu-system-x86, trace-cmd,
#        libtraceevent-dev, python3
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
K=$(readlink -f "$1")
OUT=$(readlink -m "${2:-/tmp/ustack-guest-test}")
KSRC=${KSRC:-$HOME/.cache/ustack/kernel/src}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"/{bin,dev,proc,sys,tmp,selftests,usr/bin}
cp /bin/busybox "$W/bin/busybox"
ln -s busybox "$W/bin/sh"
mknod "$W/dev/console" c 5 1
mknod "$W/dev/null" c 1 3
gcc -static -O0 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-pie -no-pie \
	-o "$OUT/fp-prog" "$HERE/fp-prog.c"
cp "$OUT/fp-prog" "$W/bin/fp-prog"
gcc -O2 -o "$OUT/rawdump" "$HERE/rawdump.c" $(pkg-config --cflags --libs libtraceevent)
cp /usr/bin/trace-cmd "$W/usr/bin/"
for l in $(ldd /usr/bin/trace-cmd | grep -o '/lib[^ ]*'); do
	mkdir -p "$W$(dirname "$l")"
	cp -L "$l" "$W$l"
done
if [ -d "$KSRC/tools/testing/selftests/ftrace" ]; then
	cp -a "$KSRC/tools/testing/selftests/ftrace" "$W/selftests/ftrace"
fi
install -m755 "$HERE/init" "$W/init"
(cd "$W" && find . | cpio -o -H newc --quiet) > "$OUT/initramfs.cpio"
s=$(date +%s.%N)
timeout 300 qemu-system-x86_64 -accel tcg -m 512 -smp 2 -nographic -no-reboot \
	-kernel "$K" -initrd "$OUT/initramfs.cpio" -append 'console=ttyS0 panic=-1' \
	> "$OUT/serial.log" 2>&1 || true
echo "boot: $(echo "$(date +%s.%N) - $s" | bc)s, log $OUT/serial.log"
grep -E "^ *(ok|not ok) [0-9]+ rust_(unwind|trace_user_unwind)" "$OUT/serial.log" || true
grep -E "^# of (passed|failed)" "$OUT/serial.log" || true
python3 "$HERE/check.py" "$OUT/serial.log" "$OUT"
