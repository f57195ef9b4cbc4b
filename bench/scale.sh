#!/bin/bash
# bench/scale.sh: the TUI and the stitched views as the trace grows, beside
# trace-cmd report, in one run on this machine.
#
#   bench/scale.sh                      # 1, 10 and 50 million events
#   BENCH_SCALE="1 10" bench/scale.sh   # fewer sizes
#
# Inputs, per size N (millions of events), in a temp dir:
#   * demo-N: the synthetic deferred-stack trace (ustack-bench gen-cookie,
#     zstd v7; about 8 records per group: sys_enter with a kernel stack,
#     cookies, sys_exit, the user stack);
#   * host-N (with root and a tracefs, N <= BENCH_HOST_MAX, default 10): a
#     private instance with sched, syscalls, timer and irq events, per-CPU
#     buffers sized for about N million events, filled under the mixed
#     syscall load until every CPU buffer has wrapped, then extracted with
#     tracer-cli (zstd v7).
# For each file:
#   * first screen: ustack-bench tui-first, what `tracer-cli tui` draws
#     before the whole file is indexed (median of 3, ms, and peak RSS);
#   * full index: ustack-bench tui, open + whole index + first draw (1 run);
#   * `report --stacks | head -50`, the same with `--memory-budget 256`
#     (the index in memory up to 256 MiB), `report --stacks --stream | head -50`,
#     `report | head -50` and `trace-cmd report | head -50`: wall time
#     until the pipe is done, and the peak RSS of the reporter;
#   * `report --stacks --stream > /dev/null`: the whole streamed view;
#   * `report > /dev/null`, ours and trace-cmd's: wall time and peak RSS.
# Prints one Markdown table (Documentation/benchmarks.md, "Scale").
# Knobs: BENCH_SCALE (sizes, "1 10 50"), BENCH_HOST_MAX (10),
# BENCH_TRACE_CMD_MAX (10: the largest size whose whole `trace-cmd report`
# is run; on 50 million events it ran for over 10 minutes), BENCH_KEEP=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$ROOT"
SIZES=${BENCH_SCALE:-1 10 50}
HOST_MAX=${BENCH_HOST_MAX:-10}
TC_MAX=${BENCH_TRACE_CMD_MAX:-10}
TR=/sys/kernel/tracing
command -v trace-cmd >/dev/null || { echo "scale.sh: trace-cmd is not installed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "scale.sh: /usr/bin/time is not installed (apt-get install time)" >&2; exit 1; }

cargo build -q --release -p tracer-cli -p ustack-bench
W=$(mktemp -d /tmp/ustack-scale.XXXXXX)
INST=ustack_scale_$$
cleanup() {
	[ -d "$TR/instances/$INST" ] && rmdir "$TR/instances/$INST" 2>/dev/null
	[ "${BENCH_KEEP:-0}" = 1 ] && echo "scale.sh: kept $W" >&2 || rm -rf "$W"
}
trap cleanup EXIT
trap "exit 1" INT TERM
cp target/release/tracer-cli target/release/ustack-bench "$W/"
T=$W/tracer-cli
B=$W/ustack-bench

# host FILE MILLIONS: fills a private instance and extracts it.
host() {
	local d=$TR/instances/$INST ncpu kb s
	ncpu=$(nproc)
	# about 40 bytes an event, in 4 KiB pages
	kb=$(($2 * 1000000 * 40 / 1024 / ncpu))
	mkdir "$d"
	echo "$kb" >"$d/buffer_size_kb"
	for s in sched syscalls timer irq; do echo 1 >"$d/events/$s/enable"; done
	echo 1 >"$d/tracing_on"
	"$B" load --mix --secs 300 --until-full "$d" >/dev/null
	echo 0 >"$d/tracing_on"
	"$T" extract -q -B "$INST" -o "$1"
	rmdir "$d"
}

# col CMD...: runs CMD (stdout to /dev/null), prints "wall s / peak MiB".
col() {
	/usr/bin/time -f "%e %M" -o "$W/t" "$@" >/dev/null 2>"$W/err" || true
	tail -1 "$W/t" | awk '{ printf "%.2f s / %d MiB", $1, $2 / 1024 }'
}
# head_col CMD...: wall time of `CMD | head -50` and CMD's peak RSS.
head_col() {
	local t0 t1
	t0=$(date +%s.%N)
	{ /usr/bin/time -f "%M" -o "$W/t" "$@" 2>"$W/err" || true; } | head -50 >/dev/null
	t1=$(date +%s.%N)
	# a reporter killed by SIGPIPE has a first line that says so
	tail -1 "$W/t" | awk -v a="$t0" -v b="$t1" '{ printf "%.2f s / %d MiB", b - a, $1 / 1024 }'
}
# bench_row NAME FILE MILLIONS
bench_row() {
	local f=$2 events first full tc="not run"
	first=$("$B" tui-first "$f" 3 | awk -F'|' '{ gsub(/ /, "", $5); split($7, a, "peak RSS "); printf "%s ms / %s", $5, a[2] }')
	full=$("$B" tui "$f" 1 | awk -F'|' '{ gsub(/ /, "", $5); split($7, a, "peak RSS "); printf "%.2f s / %s", $5 / 1000, a[2] }')
	events=$("$B" decode "$f" 1 | awk -F'|' '{ gsub(/ /, "", $3); print $3 }')
	[ "$3" -le "$TC_MAX" ] && tc=$(col trace-cmd report -i "$f")
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$events" \
		"$(du -m "$f" | cut -f1) MiB" "$first" "${full% |}" \
		"$(head_col "$T" report --stacks -i "$f")" \
		"$(head_col "$T" report --stacks --memory-budget 256 -i "$f")" \
		"$(head_col "$T" report --stacks --stream -i "$f")" \
		"$(col "$T" report --stacks --stream -i "$f")" \
		"$(head_col "$T" report -i "$f")" \
		"$(head_col trace-cmd report -i "$f")" \
		"$(col "$T" report -i "$f")" "$tc"
}

echo "| file | events | size | first screen (ms / peak RSS) | full index (s / peak RSS) | report --stacks \\| head -50 | report --stacks --memory-budget 256 \\| head -50 | report --stacks --stream \\| head -50 | report --stacks --stream | report \\| head -50 | trace-cmd report \\| head -50 | report | trace-cmd report |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
	"$B" gen-cookie "$W/demo-$n.dat" $((n * 1000000 / 8)) zstd
	bench_row "demo-${n}M" "$W/demo-$n.dat" "$n"
	rm -f "$W/demo-$n.dat"
	if [ "$n" -le "$HOST_MAX" ] && [ "$(id -u)" = 0 ] && [ -d $TR/instances ]; then
		host "$W/host-$n.dat" "$n"
		bench_row "host-${n}M" "$W/host-$n.dat" "$n"
		rm -f "$W/host-$n.dat"
	fi
done
