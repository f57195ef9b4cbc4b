#!/usr/bin/env bash
# Runs one coverage-guided fuzz target (libFuzzer, fuzz/fuzz_targets/) for a
# given time:
#   scripts/fuzz.sh TARGET SECONDS      e.g. scripts/fuzz.sh trace_dat 30
#   scripts/fuzz.sh all SECONDS         every target, SECONDS each
#   scripts/fuzz.sh list                the targets
# The committed seeds (fuzz/seeds/TARGET) start each run; what libFuzzer
# finds goes to fuzz/corpus/TARGET (not committed). A crash, panic, timeout
# (-timeout=10 s per input) or allocation above 2 GiB fails the run, with
# the input in fuzz/artifacts/TARGET.
#
# Builds with the instrumentation flags cargo-fuzz passes (they are stable
# rustc flags), so neither cargo-fuzz nor a nightly toolchain is needed;
# with cargo-fuzz installed, `cargo fuzz run TARGET` works on the same
# crate. No sanitizer: the reader has no unsafe beyond the mmap, and
# libtraceevent is only reached through the print-format screen target.
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../fuzz"

targets=$(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' Cargo.toml | grep -v '^ustack-fuzz$' || true)
usage() { echo "usage: scripts/fuzz.sh TARGET|all SECONDS (targets: $(echo $targets))" >&2; exit 2; }

[ "${1:-}" = list ] && { echo "$targets"; exit 0; }
[ $# = 2 ] || usage
target=$1 secs=$2
[[ "$secs" =~ ^[0-9]+$ ]] || usage
if [ "$target" = all ]; then
	for t in $targets; do "$self" "$t" "$secs"; done
	exit 0
fi
echo "$targets" | grep -qx "$target" || usage

export RUSTFLAGS="${RUSTFLAGS:-} -Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# With --target, RUSTFLAGS leave build scripts uninstrumented.
triple=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --quiet --target "$triple" --bin "$target"

mkdir -p "corpus/$target" "artifacts/$target"
echo "=== fuzz $target for ${secs}s"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"target/$triple/release/$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-max_len=1048576 -print_final_stats=1 \
	-artifact_prefix="artifacts/$target/" "corpus/$target" "seeds/$target" 2>"$log"
rc=$?
set -e
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+ *DONE|ERROR|panicked|SUMMARY' "$log" || true
if [ $rc != 0 ]; then
	tail -40 "$log"
	echo "fuzz $target: FAILED (rc $rc), input in fuzz/artifacts/$target/"
	exit 1
fi
echo "fuzz $target: ok"
