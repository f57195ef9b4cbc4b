#!/usr/bin/env bash
# The README's main command: install, build and show the whole system.
#
#   1. installs the host packages and builds tracer-cli;
#   2. builds the patched kernel and boots it under QEMU with the boot-test
#      tooling (tests/boot/run.sh), where tracer-cli records a sample workload
#      (a static frame-pointer program: main -> level1 -> level2 -> level3 ->
#      a syscall loop) with --user-stacks deferred;
#   3. brings the trace.dat back to the host (./ustack-demo.dat, or
#      $USTACK_DEMO_OUT);
#   4. opens it in the TUI, or prints `report --stacks` when stdout is not a
#      terminal.
#
# usage: scripts/demo.sh [--host] [--no-tui]
#   --host    no kernel build: record a sample workload on this machine's own
#             kernel with the stock synchronous user stacks instead
#   --no-tui  print `report --stacks` even on a terminal
set -euo pipefail
out=${USTACK_DEMO_OUT:-$PWD/ustack-demo.dat}
cd "$(dirname "$0")/.."

mode=guest tui=auto
for a in "$@"; do
	case $a in
	--host) mode=host ;;
	--no-tui) tui=no ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "demo: unknown argument $a" >&2; exit 2 ;;
	esac
done

view=()
scripts/install-deps.sh
echo "demo: building tracer-cli"
cargo build --release -q -p tracer-cli
cli=$PWD/target/release/tracer-cli

if [ "$mode" = guest ]; then
	echo "demo: building the patched kernel and booting it under QEMU (first run: several minutes)"
	log=$(mktemp)
	if ! USTACK_BOOT_ONLY=03b tests/boot/run.sh >"$log" 2>&1; then
		tail -20 "$log" >&2
		echo "demo: the guest run failed (full log: $log); try scripts/demo.sh --host" >&2
		exit 1
	fi
	dat=$(find "${USTACK_CACHE:-$HOME/.cache/ustack}/boot/last/files" -path '*03b*' -name t.dat | head -1)
	[ -n "$dat" ] || { echo "demo: the guest left no trace.dat (log: $log)" >&2; exit 1; }
	cp "$dat" "$out"
	rm -f "$log"
	# The guest's files (its /bin/ustest): symbolize the trace against them.
	view=(--symfs "${USTACK_CACHE:-$HOME/.cache/ustack}/boot/work/root")
else
	echo "demo: recording a sample workload on the host kernel (synchronous user stacks)"
	"$cli" record -q -o "$out" -e syscalls:sys_enter_openat -e syscalls:sys_exit_openat \
		-e sched:sched_switch -T --user-stacks sync -F -- sh -c 'for i in 1 2 3; do ls /usr >/dev/null; cat /etc/hostname >/dev/null; done'
fi
echo "demo: trace saved in $out ($(stat -c %s "$out") bytes)"

if [ "$tui" = auto ] && [ -t 1 ] && [ -t 0 ]; then
	exec "$cli" tui -i "$out" "${view[@]}"
fi
exec "$cli" report --stacks -i "$out" "${view[@]}"
