#!/usr/bin/env bash
# The project's test command (README, .ci/run):
#   1. the Rust workspace tests (unit, integration, and as root the host
#      tracefs tests, which are #[ignore]d otherwise);
#   2. the kernel boot tests: patched kernel + tracer-cli end to end under QEMU,
#      then the compile-fail tests of the kernel's Rust abstractions, then the
#      C cases again on a kernel built without Rust.
# Prints the time of each phase and a final "N passed, N failed" line.
# Set USTACK_SKIP_BOOT=1 to run only the Rust tests (never in CI).
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
status=0
passed=0 failed=0 skipped=0

phase() { printf '\n=== %s\n' "$1"; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }

# counted NAME LOG CMD...: runs CMD, its output also in LOG, and adds the
# last "N passed, N failed" line it printed to the totals; a run that
# printed none counts as a failure.
counted() {
	local name=$1 out=$2 t0 p f
	shift 2
	t0=$(date +%s)
	"$@" 2>&1 | tee "$out"
	[ "${PIPESTATUS[0]}" = 0 ] || status=1
	read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$out" | tail -1)
	if [ -z "${p:-}" ]; then
		echo "$name: no result line"
		status=1 p=0 f=1
	fi
	passed=$((passed + p)) failed=$((failed + f))
	echo "$name: $p passed, $f failed ($(elapsed "$t0"))"
}

scripts/install-deps.sh || { echo "test: installing dependencies failed"; exit 1; }

# Tests that need root and tracefs are #[ignore = "needs root and tracefs"]:
# as root they run too (and fail if they cannot), otherwise they are counted
# as ignored, never as passed.
ignored=()
if [ "$(id -u)" = 0 ]; then
	ignored=(--include-ignored)
else
	echo "test: not root: the tests that need root and tracefs are ignored"
fi

phase "cargo test --workspace ${ignored[*]}"
t0=$(date +%s)
cargo test --workspace --release --no-fail-fast -- "${ignored[@]}" 2>&1 | tee "$log/cargo"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
while read -r p f i; do
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + i))
done < <(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$log/cargo")
echo "cargo tests: $passed passed, $failed failed, $skipped ignored ($(elapsed "$t0"))"

if [ "${USTACK_SKIP_BOOT:-0}" = 1 ] && [ "${CI:-}" != true ]; then
	echo "SKIP: kernel boot tests (USTACK_SKIP_BOOT=1)"
else
	phase "kernel boot tests (tests/boot/run.sh)"
	counted "boot tests" "$log/boot" tests/boot/run.sh

	# needs the kernel the boot tests built
	phase "kernel Rust compile-fail tests (kernel-patch/compile-fail/run.sh)"
	counted "compile-fail tests" "$log/cfail" kernel-patch/compile-fail/run.sh

	# The option, the trigger and the mapping records are C: they must work in a
	# kernel without Rust (ftracetest is left out: it has the Rust tracer's test)
	phase "boot tests of the series without Rust (build.sh --config norust)"
	counted "boot tests without Rust" "$log/norust" env USTACK_BOOT_CONFIG=norust \
		USTACK_BOOT_ONLY=03,04,05,07,11 USTACK_BOOT_OUT="${USTACK_CACHE:-$HOME/.cache/ustack}/boot/last-norust" \
		tests/boot/run.sh
fi

[ "$failed" = 0 ] || status=1
echo
echo "$passed passed, $failed failed"
exit $status
