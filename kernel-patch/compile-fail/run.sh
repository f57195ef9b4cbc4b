#!/bin/bash
# kernel-patch/compile-fail/run.sh: the compile-fail tests of the kernel's
# Rust abstractions. Kernel doctests cannot expect a
# failure, so the misuse examples of kernel::unwind are files here, each
# with a "// expect: E0NNN" (or "// expect: ok") line, compiled against the
# built kernel crate with exactly the rustc command kbuild used for the
# series' own Rust user (kernel/trace/user_unwind_tracer.o), metadata only.
# A case passes when rustc fails with that error code (or succeeds, for
# "ok"); prints "N passed, N failed".
#
# usage: kernel-patch/compile-fail/run.sh [KERNEL_OBJECT_DIR]
#   (default: the boot kernel's, from kernel-patch/build.sh --print-bzimage)
set -uo pipefail
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
KOUT=${1:-}
if [ -z "$KOUT" ]; then
	bz=$("$HERE/../build.sh" --print-bzimage) || { echo "compile-fail: no kernel built"; exit 1; }
	KOUT=${bz%/arch/*}
fi
cmdfile=$KOUT/kernel/trace/.user_unwind_tracer.o.cmd
[ -f "$cmdfile" ] || { echo "compile-fail: $cmdfile missing (a kernel built with the series?)"; exit 1; }
# shellcheck disable=SC1090 # rustc and its environment, as for the kernel build
eval "$("$HERE/../build.sh" --print-env)" || { echo "compile-fail: build.sh --print-env failed"; exit 1; }

# kbuild lets the stable rustc take the -Z options the kernel needs
export RUSTC_BOOTSTRAP=1

# The command, without its output options and source file
cmd=$(sed -n 's/^savedcmd_[^ ]* := //p' "$cmdfile" |
	sed -e 's/ --out-dir [^ ]*//' -e 's/ --emit=[^ ]*//g' -e 's/ [^ ]*user_unwind_tracer\.rs *$//')
case "$cmd" in *rustc*) ;; *) echo "compile-fail: no rustc command in $cmdfile"; exit 1 ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
for src in "$HERE"/*.rs; do
	name=$(basename "$src" .rs)
	want=$(sed -n 's|^// expect: \(.*\)$|\1|p' "$src" | head -1)
	(cd "$KOUT" && eval "$cmd --out-dir $tmp --emit=metadata=$tmp/$name.rmeta $src") >"$tmp/$name.log" 2>&1
	rc=$?
	if [ "$want" = ok ]; then
		[ $rc = 0 ] && ok=1 || ok=0
	else
		[ $rc != 0 ] && grep -q "error\[$want\]" "$tmp/$name.log" && ok=1 || ok=0
	fi
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
		echo "ok $name (expect $want)"
	else
		failed=$((failed + 1))
		echo "FAIL $name (expect $want, rustc exit $rc):"
		grep -E '^(error|warning)' "$tmp/$name.log" | head -5 | sed 's/^/    /'
	fi
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
