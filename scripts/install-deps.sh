#!/usr/bin/env bash
# Installs the Debian packages that tracer-cli and its tests need on the host:
#   libtraceevent-dev, pkg-config  link libtraceevent (crates/traceevent-sys)
#   gcc                            the cc crate (bundled zstd), test programs
#   trace-cmd                      byte-for-byte comparisons in tests, bench
#   tmux                           the TUI tests
#   strace                         a test of a command that uses ptrace
#   golang-go                      go tool pprof reads --pprof output (tests/pprof.rs)
# (zstd and zlib are built from the crates' own sources.)
# Idempotent: packages already present are not downloaded again.
set -euo pipefail

pkgs=(libtraceevent-dev pkg-config gcc trace-cmd tmux strace golang-go)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# tracefs must be mounted for recording; mount it when it is not.
if [ ! -e /sys/kernel/tracing/trace ] && [ "$(id -u)" = 0 ]; then
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi
