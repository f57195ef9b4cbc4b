#!/bin/bash
# bench/symbols.sh: what the (file, offset) symbol cache saves,
# and the TUI's first frame on about 1M events, in one run, release build.
#
#   1. a trace of 250,000 deferred user stacks of 4 frames (1M frames) drawn
#      from 3,000 distinct functions of the machine's libc
#      (`ustack-bench gen-symbols`);
#   2. every user frame symbolized as `report --stacks` does it, with the
#      cache and without it (`ustack-bench symbolize` / `symbolize-nocache`:
#      the same symbolizer; without the cache each frame is looked up in
#      the symbol and line tables again, files still load once);
#   3. `tracer-cli report --stacks` of that file, end to end (cache on);
#   4. the TUI's first frame (headless) on a 1.2M-event cookie trace.
#
# No root needed. Prints Markdown rows for Documentation/benchmarks.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$ROOT"
cargo build -q --release -p tracer-cli -p ustack-bench
W=$(mktemp -d /tmp/ustack-symbench.XXXXXX)
trap 'rm -rf "$W"' EXIT
B=$ROOT/target/release/ustack-bench
T=$ROOT/target/release/tracer-cli
"$B" gen-symbols "$W/sym.dat" 250000 3000
"$B" gen-cookie "$W/cookie.dat" 150000 none
echo "## symbolization of every user frame (ustack-bench, 3 rounds)"
echo "| file | frames | min ms | median ms | M frames/s (median) | detail |"
echo "|---|---|---|---|---|---|"
"$B" symbolize "$W/sym.dat" 3 | sed 's/^| sym.dat |/| with cache |/'
"$B" symbolize-nocache "$W/sym.dat" 3 | sed 's/^| sym.dat |/| without cache |/'
echo
echo "## tracer-cli report --stacks, end to end (wall s / max RSS KiB, 3 runs)"
for i in 1 2 3; do
	/usr/bin/time -f "%e s, %M KiB" "$T" report --stacks -i "$W/sym.dat" >"$W/out.txt" 2>"$W/time.txt" ||
		{ cat "$W/time.txt"; exit 1; }
	echo "run $i: $(tail -1 "$W/time.txt"), $(grep -c '=> ' "$W/out.txt") frames printed"
done
echo
echo "## TUI first frame, headless (ustack-bench tui, 5 rounds)"
"$B" tui "$W/cookie.dat" 5
