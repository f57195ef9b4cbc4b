#!/bin/bash
# bench/live.sh: `tracer-cli tui --live` on a trace that keeps growing, for
# minutes, at a high event rate: its memory, how fast it answers a key, and
# what the file it saves holds.
#
#   sudo bench/live.sh                     # 10 minutes
#   BENCH_LIVE_SECS=120 sudo bench/live.sh # shorter
#
# In a 160x45 tmux pane, `tracer-cli tui --live -B INST -e raw_syscalls -o
# FILE -- ustack-bench load --secs S --rate R` (R syscalls/s per CPU, default
# 20000: about 80,000 events/s on 2 CPUs). Every 30 s it samples the TUI's
# RSS (VmRSS) and the bytes it has written so far (wchar of /proc/PID/io:
# write, pwrite, copy_file_range, so the live snapshots; the recorder's
# splices are not counted), and sends `2` or `1` (the events tab, the
# groups tab), timing how long the screen takes to change (polled every
# 5 ms). (`j`/`k` change nothing on the screen when there are no groups,
# as without stacks: the time measured was then that to the next refresh
# of the status line.) At the end it quits with `q` and counts the events
# and drops of the saved file (`report --stat`).
# Needs root, a tracefs, tmux. Prints a Markdown table.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$ROOT"
SECS=${BENCH_LIVE_SECS:-600}
RATE=${BENCH_LIVE_RATE:-20000}
command -v tmux >/dev/null || { echo "live.sh: tmux is not installed" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "live.sh: needs root (a tracefs instance)" >&2; exit 1; }
cargo build -q --release -p tracer-cli -p ustack-bench
W=$(mktemp -d /tmp/ustack-live.XXXXXX)
S=ustack-live-$$
INST=ustack_live_$$
cleanup() {
	tmux kill-session -t "$S" 2>/dev/null || true
	[ -d "/sys/kernel/tracing/instances/$INST" ] && rmdir "/sys/kernel/tracing/instances/$INST" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap "exit 1" INT TERM
cp target/release/tracer-cli target/release/ustack-bench "$W/"

tmux new-session -d -s "$S" -x 160 -y 45 \
	"$W/tracer-cli tui --live -B $INST -e raw_syscalls -o $W/live.dat -- $W/ustack-bench load --secs $SECS --rate $RATE; echo \$? > $W/rc"
screen() { tmux capture-pane -p -t "$S"; }
until screen | grep -q "live: recording"; do sleep 0.1; done
# The pane's tracer-cli (not another one of this machine).
pid=$(pgrep -P "$(tmux display -p -t "$S" "#{pane_pid}")" -x tracer-cli)

echo "| s | RSS MiB | written MiB | key answered in ms | status line |"
echo "|---|---|---|---|---|"
key=2
start=$(date +%s)
while [ $(($(date +%s) - start)) -lt "$SECS" ]; do
	sleep 30
	rss=$(awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status")
	wrote=$(awk '/^wchar/ { printf "%d", $2 / 1048576 }' "/proc/$pid/io")
	# a key's answer: the other tab is drawn
	before=$(screen)
	t0=$(date +%s%N)
	tmux send-keys -t "$S" "$key"
	while [ "$(screen)" = "$before" ]; do
		sleep 0.005
		[ $(($(date +%s%N) - t0)) -gt 5000000000 ] && break
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$key" = 2 ] && key=1 || key=2
	echo "| $(($(date +%s) - start)) | $rss | $wrote | $ms | $(screen | tail -1 | cut -c1-70 | tr "|" "/") |"
done
hwm=$(awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$pid/status")
until screen | grep -q "live: stopped"; do sleep 0.5; done
tmux send-keys -t "$S" q
until [ -s "$W/rc" ]; do sleep 0.2; done
echo
echo "peak RSS of the TUI: $hwm MiB; exit status $(cat "$W/rc")"
echo "saved file: $(du -m "$W/live.dat" | cut -f1) MiB; $("$W/tracer-cli" report --stacks -i "$W/live.dat" | grep -m2 '^#' | tr '\n' ' ')"
