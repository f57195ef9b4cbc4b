#!/bin/bash
# kernel-patch/build.sh: build the patched Linux 7.3 bzImage for the ustack boot tests.
#
# One command on a fresh Debian 12 (root): installs its own prerequisites, fetches
# Debian's linux-source-7.3, applies kernel-patch/series, configures (tinyconfig +
# kernel-patch/config/*.config) and builds bzImage with ccache. Everything is cached
# under $USTACK_CACHE (default $HOME/.cache/ustack) and keyed, so a second run only
# redoes what changed. See Documentation/boot-tests.md.
#
# usage: kernel-patch/build.sh [--prereqs|--print-env|--print-bzimage|--print-src|--each|--checkpatch] [--force]
#                              [--config boot|bench] [--patches DIR] [--tree NAME]
#   (no option)      prerequisites + kernel build; prints the bzImage path last
#   --prereqs        only install the prerequisites, then write $USTACK_CACHE/env.sh
#                    (source it to get LIBCLANG_PATH, RUST_LIB_SRC and bindgen on PATH)
#   --print-env      print the environment a kernel `make` needs (after --prereqs)
#   --print-bzimage  print the path of the bzImage (built by the last run) and exit
#   --print-src      print the patched source tree (a git repo: base commit = pristine)
#   --each           bisectability: build after each patch of the series in turn
#                    (incremental, so each step costs only what the patch touches),
#                    then leave the tree at the whole series
#   --checkpatch     scripts/checkpatch.pl --strict on every patch of the series
#   --force          regenerate .config and run make even if no input changed
#                    (e.g. with KBUILD_EXTRA="W=1"); --force-config is the same
#   --config NAME    boot (default): tinyconfig + every config/*.config except
#                    bench.config (debug options on), objects in <tree>/out;
#                    bench: tinyconfig + rust-ftrace, guest, ustack and bench.config
#                    (no debug options, no KUnit; bench/kernel.sh), objects in
#                    <tree>/out-bench; norust: the bench fragments without Rust
#                    (norust.config), which builds the series' C feature alone, in
#                    <tree>/out-norust. Each is keyed and cached on its own, so
#                    building one never invalidates another.
#   --patches DIR    apply DIR/series and the patches it names instead of this
#                    directory's (e.g. another worktree's series, copied)
#   --tree NAME      use a private patched tree $USTACK_CACHE/kernel-NAME (own
#                    source copy, objects and lock) instead of the shared
#                    $USTACK_CACHE/kernel, so another series can be built without
#                    touching the tree the boot tests and patch authors use
# env:
#   USTACK_CACHE     cache root (default $HOME/.cache/ustack)
#   JOBS             make -j (default nproc)
#   KBUILD_EXTRA     extra make arguments (e.g. "W=1")
#   USTACK_NO_APT=1  do not install apt packages (fail if missing instead)
#   USTACK_KCONFIG, USTACK_PATCHES, USTACK_KTREE: the same as --config, --patches, --tree
#
# Never writes to the pristine source tree $USTACK_CACHE/src/linux-source-7.3: the
# patched tree lives in $USTACK_CACHE/kernel/src (a private git repo), the objects in
# $USTACK_CACHE/kernel/out.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
CACHE=${USTACK_CACHE:-$HOME/.cache/ustack}
JOBS=${JOBS:-$(nproc)}

# Pinned inputs. The patches in this directory are written against exactly this base.
LINUX_SOURCE_PKG=linux-source-7.3
LINUX_SOURCE_VERSION=${LINUX_SOURCE_VERSION:-7.3.4-1~bpo13+1}
RUST_SRC_VERSION=1.95.0+dfsg1-2~bpo13+1     # must match `rustc --version` (1.95.0)
RUSTC_WANT=1.95.0
BINDGEN_VERSION=0.73.2
LIBCLANG_VERSION=18.1.1
BOOKWORM_PKGS=(build-essential flex bison bc libelf-dev libssl-dev cpio busybox-static lz4 ccache
	python3 python3-pip unzip git xz-utils)

MODE=build
FORCE_CONFIG=0
KCONFIG=${USTACK_KCONFIG:-boot}
PATCH_DIR=${USTACK_PATCHES:-$HERE}
KTREE=${USTACK_KTREE:-}
while [ $# -gt 0 ]; do
	a=$1
	shift
	case $a in
	--prereqs) MODE=prereqs ;;
	--print-env) MODE=print-env ;;
	--print-bzimage) MODE=print-bzimage ;;
	--print-src) MODE=print-src ;;
	--each) MODE=each ;;
	--checkpatch) MODE=checkpatch ;;
	--force-config | --force) FORCE_CONFIG=1 ;;
	--config=* | --patches=* | --tree=*) set -- "${a%%=*}" "${a#*=}" "$@" ;;
	--config | --patches | --tree)
		[ $# -gt 0 ] || { echo "build.sh: $a needs a value" >&2; exit 2; }
		case $a in
		--config) KCONFIG=$1 ;;
		--patches) PATCH_DIR=$1 ;;
		--tree) KTREE=$1 ;;
		esac
		shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "build.sh: unknown argument $a" >&2; exit 2 ;;
	esac
done
case $KCONFIG in
boot | bench | norust) ;;
*) echo "build.sh: unknown --config $KCONFIG (boot, bench or norust)" >&2; exit 2 ;;
esac
case $KTREE in
*[!A-Za-z0-9_.-]* | .*) echo "build.sh: --tree takes a plain name, not '$KTREE'" >&2; exit 2 ;;
esac
if [ "$PATCH_DIR" != "$HERE" ]; then
	[ -f "$PATCH_DIR/series" ] || { echo "build.sh: no series file in $PATCH_DIR" >&2; exit 2; }
	PATCH_DIR=$(cd "$PATCH_DIR" && pwd)
fi
# sub-invocations (--each) build the same configuration, series and tree
export USTACK_KCONFIG=$KCONFIG USTACK_PATCHES=$PATCH_DIR USTACK_KTREE=$KTREE

log() { echo "build.sh: $*" >&2; }
die() { echo "build.sh: error: $*" >&2; exit 1; }
now() { date +%s.%N; }
T_START=$(now)
PHASE_NAME=""
PHASE_T0=""
phase() { # phase NAME: end the previous phase (printing its time), start NAME
	local t
	t=$(now)
	if [ -n "$PHASE_NAME" ]; then
		printf 'build.sh: phase %-14s %7.1fs\n' "$PHASE_NAME" "$(echo "$t - $PHASE_T0" | bc)" >&2
	fi
	PHASE_NAME=$1
	PHASE_T0=$t
}
trap 'phase ""' EXIT

# ---------------------------------------------------------------------------
# apt helpers. The registry URIs are never written into the repo: private
# sources files are derived at run time from the system's debian.sources.
SYS_SOURCES=/etc/apt/sources.list.d/debian.sources
APT_DIR=$CACHE/apt

# first_stanza SUITE TYPES: print the first deb822 stanza of the system sources with
# Suites and Types replaced.
first_stanza() {
	if [ ! -r "$SYS_SOURCES" ] && [ -r /etc/apt/sources.list ]; then
		# one-line format: take the mirror of the first "deb" line
		awk -v suite="$1" -v types="$2" '
			$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
				print "Types: " types; print "URIs: " $i; print "Suites: " suite
				print "Components: main"
				print "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"; exit }' /etc/apt/sources.list
		return
	fi
	[ -r "$SYS_SOURCES" ] || die "$SYS_SOURCES not found (need a Debian sources file)"
	awk -v suite="$1" -v types="$2" '
		/^[[:space:]]*$/ { if (seen) exit; next }
		{ seen = 1 }
		/^Suites:/ { print "Suites: " suite; next }
		/^Types:/ { print "Types: " types; next }
		{ print }' "$SYS_SOURCES"
}

# private_apt NAME SUITE TYPES KEEP_SYSTEM: write $APT_DIR/NAME.sources and make sure its
# lists are fresh enough (re-update after a day). Sets APT_OPTS for later apt calls.
private_apt() {
	local name=$1 suite=$2 types=$3 keep_system=$4 src lists stamp
	src=$APT_DIR/$name.sources
	if [ "$keep_system" = 1 ]; then lists=$APT_DIR/lists-$name; else lists=$APT_DIR/lists; fi
	# trixie-backports keeps the lead's layout ($APT_DIR/lists); others get their own dir
	[ "$name" = trixie-bpo ] && lists=$APT_DIR/lists
	mkdir -p "$lists/partial" "$APT_DIR"
	first_stanza "$suite" "$types" > "$src.new"
	if ! cmp -s "$src.new" "$src" 2>/dev/null; then mv "$src.new" "$src"; rm -f "$lists/.stamp"; else rm -f "$src.new"; fi
	if [ "$keep_system" = 1 ]; then
		# the system's sources (either layout) plus ours, without touching /etc/apt
		local parts=$APT_DIR/parts-$name f
		rm -rf "$parts"; mkdir -p "$parts"
		for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
			[ -e "$f" ] && ln -s "$f" "$parts/"
		done
		cp "$src" "$parts/ustack-$name.sources"
		APT_OPTS=(-o "Dir::Etc::SourceList=/etc/apt/sources.list" -o "Dir::Etc::SourceParts=$parts")
	else
		APT_OPTS=(-o "Dir::Etc::SourceList=$src" -o "Dir::Etc::SourceParts=/dev/null")
	fi
	APT_OPTS+=(-o "Dir::State::Lists=$lists")
	stamp=$lists/.stamp
	if [ ! -f "$stamp" ] || ! ls "$lists" | grep -q "${suite}_InRelease\$" ||
		[ -n "$(find "$stamp" -mmin +1440)" ]; then
		log "apt-get update ($name: $suite)"
		apt-get -q "${APT_OPTS[@]}" update >"$APT_DIR/update-$name.log" 2>&1 ||
			{ tail -20 "$APT_DIR/update-$name.log" >&2; die "apt-get update for $suite failed"; }
		touch "$stamp"
	fi
}

need_root() { [ "$(id -u)" = 0 ] || die "installing $1 needs root"; }

install_bookworm_pkgs() {
	local missing=() p
	for p in "${BOOKWORM_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} = 0 ] && return 0
	[ "${USTACK_NO_APT:-0}" = 1 ] && die "missing packages: ${missing[*]}"
	need_root "${missing[*]}"
	log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}" >"$APT_DIR/install.log" 2>&1 || {
		apt-get -q update >>"$APT_DIR/install.log" 2>&1
		DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}" >>"$APT_DIR/install.log" 2>&1 ||
			{ tail -20 "$APT_DIR/install.log" >&2; die "apt-get install failed"; }
	}
}

# qemu-system-x86 from bookworm-backports, at the same version as the installed
# qemu-utils (if any): mixing versions makes apt remove qemu-utils.
install_qemu() {
	command -v qemu-system-x86_64 >/dev/null && return 0
	[ "${USTACK_NO_APT:-0}" = 1 ] && die "qemu-system-x86_64 missing"
	need_root qemu-system-x86
	private_apt bookworm-bpo bookworm-backports deb 1
	local spec=qemu-system-x86 v
	v=$(dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null || true)
	[ -n "$v" ] && spec="qemu-system-x86=$v"
	log "apt-get install -t bookworm-backports $spec"
	DEBIAN_FRONTEND=noninteractive apt-get -q "${APT_OPTS[@]}" install -y --no-install-recommends \
		-t bookworm-backports "$spec" >"$APT_DIR/install-qemu.log" 2>&1 ||
		{ tail -20 "$APT_DIR/install-qemu.log" >&2; die "installing $spec failed"; }
}

# download_deb PKG VERSION: arch-independent .deb from trixie-backports into $CACHE/dl
# (never installed; only unpacked with dpkg -x). Prints the file path.
download_deb() {
	local pkg=$1 ver=$2 f
	f=$CACHE/dl/${pkg}_${ver//:/%3a}_all.deb
	if [ ! -s "$f" ]; then
		private_apt trixie-bpo trixie-backports "deb deb-src" 0
		mkdir -p "$CACHE/dl"
		log "apt-get download $pkg=$ver"
		(cd "$CACHE/dl" && apt-get -q "${APT_OPTS[@]}" download "$pkg=$ver" >"$APT_DIR/download-$pkg.log" 2>&1) ||
			{ tail -5 "$APT_DIR/download-$pkg.log" >&2; die "apt-get download $pkg=$ver failed"; }
		[ -s "$f" ] || die "expected $f after apt-get download"
	fi
	echo "$f"
}

# ---------------------------------------------------------------------------
# Prerequisites
LIBCLANG_DIR=$CACHE/libclang-$LIBCLANG_VERSION
BINDGEN_ROOT=$CACHE/bindgen-$BINDGEN_VERSION
PRISTINE=$CACHE/src/linux-source-7.3
PRISTINE_STAMP=$CACHE/src/linux-source-7.3.version

ensure_rust_src() {
	local sysroot rustv deb dir
	rustv=$(rustc --version | awk '{print $2}')
	[ "$rustv" = "$RUSTC_WANT" ] || die "rustc $rustv found, this recipe pins rust-src for $RUSTC_WANT"
	sysroot=$(rustc --print sysroot)
	RUST_LIB_SRC=$sysroot/lib/rustlib/src/rust/library
	if [ -f "$RUST_LIB_SRC/core/src/lib.rs" ]; then return 0; fi
	dir=$CACHE/rust-src-$RUST_SRC_VERSION
	if [ ! -f "$dir/.done" ]; then
		deb=$(download_deb rust-src "$RUST_SRC_VERSION")
		rm -rf "$dir"; mkdir -p "$dir"
		dpkg -x "$deb" "$dir"
		touch "$dir/.done"
	fi
	local lib
	lib=$(echo "$dir"/usr/src/rustc-*/library)
	[ -f "$lib/core/src/lib.rs" ] || die "rust-src deb has no library/core in $dir"
	# install into the toolchain so every kernel build (also outside this script) finds it
	if mkdir -p "$sysroot/lib/rustlib/src/rust" 2>/dev/null && [ -w "$sysroot/lib/rustlib/src/rust" ]; then
		rm -rf "$sysroot/lib/rustlib/src/rust/library.tmp"
		cp -a "$lib" "$sysroot/lib/rustlib/src/rust/library.tmp"
		mv "$sysroot/lib/rustlib/src/rust/library.tmp" "$RUST_LIB_SRC"
	else
		RUST_LIB_SRC=$lib
	fi
}

ensure_bindgen() {
	if [ -x "$BINDGEN_ROOT/bin/bindgen" ]; then return 0; fi
	log "cargo install --locked bindgen-cli@$BINDGEN_VERSION (takes ~1-2 min)"
	cargo install -q --locked --root "$BINDGEN_ROOT" "bindgen-cli@$BINDGEN_VERSION" >"$CACHE/bindgen-install.log" 2>&1 ||
		{ tail -20 "$CACHE/bindgen-install.log" >&2; die "cargo install bindgen-cli failed"; }
}

ensure_libclang() {
	if [ -s "$LIBCLANG_DIR/.done" ]; then return 0; fi
	local whl
	mkdir -p "$CACHE/dl"
	whl=$(ls "$CACHE"/dl/libclang-"$LIBCLANG_VERSION"-*manylinux*x86_64*.whl 2>/dev/null | head -1 || true)
	if [ -z "$whl" ]; then
		log "pip download libclang==$LIBCLANG_VERSION"
		python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2010_x86_64 \
			-d "$CACHE/dl" "libclang==$LIBCLANG_VERSION" >"$CACHE/libclang-dl.log" 2>&1 ||
			{ tail -5 "$CACHE/libclang-dl.log" >&2; die "pip download libclang failed"; }
		whl=$(ls "$CACHE"/dl/libclang-"$LIBCLANG_VERSION"-*x86_64*.whl | head -1)
	fi
	rm -rf "$LIBCLANG_DIR"; mkdir -p "$LIBCLANG_DIR"
	unzip -q "$whl" -d "$LIBCLANG_DIR"
	local so
	so=$(find "$LIBCLANG_DIR" -name libclang.so -path '*clang/native/*' | head -1)
	[ -n "$so" ] || die "no clang/native/libclang.so in $whl"
	dirname "$so" >"$LIBCLANG_DIR/.done"
}

ensure_pristine() {
	local want=${LINUX_SOURCE_PKG}_$LINUX_SOURCE_VERSION deb tmp
	if [ -f "$PRISTINE_STAMP" ] && [ "$(cat "$PRISTINE_STAMP")" = "$want" ] && [ -f "$PRISTINE/Makefile" ]; then
		return 0
	fi
	if [ ! -f "$PRISTINE_STAMP" ] && [ -f "$PRISTINE/Makefile" ] && [ -f "$PRISTINE/MAINTAINERS" ] &&
		ls "$CACHE"/dl/"${LINUX_SOURCE_PKG}_${LINUX_SOURCE_VERSION}"_all.deb >/dev/null 2>&1; then
		# unpacked by hand earlier from the same .deb: adopt it, never touch it
		echo "$want" >"$PRISTINE_STAMP"
		return 0
	fi
	deb=$(download_deb "$LINUX_SOURCE_PKG" "$LINUX_SOURCE_VERSION")
	log "unpacking $(basename "$deb")"
	tmp=$CACHE/src/.unpack.$$
	rm -rf "$tmp"; mkdir -p "$tmp"
	dpkg -x "$deb" "$tmp/x"
	tar -xf "$tmp"/x/usr/src/linux-source-7.3.tar.* -C "$tmp"
	[ -f "$tmp/linux-source-7.3/Makefile" ] || die "unexpected layout in $deb"
	rm -rf "$PRISTINE"
	mv "$tmp/linux-source-7.3" "$PRISTINE"
	rm -rf "$tmp"
	echo "$want" >"$PRISTINE_STAMP"
}

write_env() {
	mkdir -p "$CACHE"
	cat >"$CACHE/env.sh.new.$$" <<-EOF
		# written by kernel-patch/build.sh: environment for building Linux 7.3 with Rust
		export LIBCLANG_PATH=$(cat "$LIBCLANG_DIR/.done")
		export RUST_LIB_SRC=$RUST_LIB_SRC
		export PATH=$BINDGEN_ROOT/bin:\$PATH
		export USTACK_PRISTINE=$PRISTINE
	EOF
	mv "$CACHE/env.sh.new.$$" "$CACHE/env.sh"
}

prereqs() {
	mkdir -p "$CACHE" "$APT_DIR"
	phase apt
	install_bookworm_pkgs
	install_qemu
	command -v rustc >/dev/null && command -v cargo >/dev/null ||
		die "rustc/cargo $RUSTC_WANT not found (install rustup's $RUSTC_WANT toolchain first)"
	phase rust-src
	ensure_rust_src
	phase libclang
	ensure_libclang
	phase bindgen
	ensure_bindgen
	phase linux-source
	ensure_pristine
	write_env
	# shellcheck disable=SC1091
	. "$CACHE/env.sh"
}

# ---------------------------------------------------------------------------
# Patched tree, config, build
KDIR=$CACHE/kernel${KTREE:+-$KTREE}
KSRC=$KDIR/src
KOUT=$KDIR/out
[ "$KCONFIG" = boot ] || KOUT=$KDIR/out-$KCONFIG

series_patches() { # the patch files named in $PATCH_DIR/series, in order (may be in subdirectories)
	[ -f "$PATCH_DIR/series" ] || return 0
	local l n=0
	while IFS= read -r l || [ -n "$l" ]; do
		l=${l%%#*}
		l=$(echo "$l" | xargs)
		[ -n "$l" ] || continue
		n=$((n + 1))
		# USTACK_SERIES_LIMIT=N: only the first N patches (used by --each)
		[ -n "${USTACK_SERIES_LIMIT:-}" ] && [ "$n" -gt "$USTACK_SERIES_LIMIT" ] && break
		echo "$PATCH_DIR/$l"
	done <"$PATCH_DIR/series"
}

# The configuration fragments of $KCONFIG. boot: all of config/ but the benchmark's
# own fragment (so the boot key stays what it was before bench.config existed).
fragments() {
	case $KCONFIG in
	boot) ls "$HERE"/config/*.config 2>/dev/null | grep -Ev '/(bench|norust)\.config$' | sort ;;
	bench) printf '%s\n' "$HERE"/config/{rust-ftrace,guest,ustack,bench}.config ;;
	norust) printf '%s\n' "$HERE"/config/{rust-ftrace,guest,ustack,bench,norust}.config ;;
	esac
}

patch_key() {
	{
		echo "base $LINUX_SOURCE_PKG $LINUX_SOURCE_VERSION"
		series_patches | while read -r p; do
			[ -f "$p" ] || die "series names $p, which does not exist"
			echo "patch $(basename "$p") $(sha256sum <"$p" | cut -d' ' -f1)"
		done
	} | sha256sum | cut -c1-16
}

config_key() {
	{
		echo "patches $(patch_key)"
		fragments | while read -r f; do echo "frag $(basename "$f") $(sha256sum <"$f" | cut -d' ' -f1)"; done
		echo "rustc $(rustc --version)"
	} | sha256sum | cut -c1-16
}

# Bring $KSRC to pristine + series. $KSRC is a git repo whose first commit is the
# pristine tree; checking that commit out again rewrites only the files that differ,
# so make rebuilds only what the (changed) series touches.
prepare_tree() {
	local key=$1 base
	if [ ! -f "$KSRC/.git/ustack-base" ]; then
		log "creating patched tree from pristine (one-time, ~1 min)"
		rm -rf "$KSRC"; mkdir -p "$KDIR"
		cp -a "$PRISTINE" "$KSRC.tmp"
		git -C "$KSRC.tmp" init -q
		git -C "$KSRC.tmp" config core.autocrlf false
		git -C "$KSRC.tmp" config gc.auto 0
		git -C "$KSRC.tmp" add -A -f .
		git -C "$KSRC.tmp" -c user.name=ustack -c user.email=ustack@localhost commit -q -m "linux-source $LINUX_SOURCE_VERSION (pristine)"
		git -C "$KSRC.tmp" rev-parse HEAD >"$KSRC.tmp/.git/ustack-base"
		mv "$KSRC.tmp" "$KSRC"
	fi
	if [ "$(cat "$KSRC/.git/ustack-applied" 2>/dev/null)" = "$key" ]; then
		return 0
	fi
	base=$(cat "$KSRC/.git/ustack-base")
	rm -f "$KSRC/.git/ustack-applied"
	git -C "$KSRC" am --abort >/dev/null 2>&1 || true
	git -C "$KSRC" checkout -q -f --detach "$base"
	git -C "$KSRC" clean -q -f -d
	local p n=0
	while read -r p; do
		n=$((n + 1))
		git -C "$KSRC" -c user.name=ustack -c user.email=ustack@localhost am -q --keep-cr "$p" ||
			{ git -C "$KSRC" am --abort >/dev/null 2>&1 || true; die "patch $n (${p#"$PATCH_DIR"/}) does not apply"; }
	done < <(series_patches)
	if [ "$n" = 0 ]; then log "kernel-patch/series is empty or missing: building the UNPATCHED kernel"; else log "applied $n patches"; fi
	echo "$key" >"$KSRC/.git/ustack-applied"
}

kmake() {
	make -C "$KSRC" O="$KOUT" LLVM= CC="ccache gcc" ${KBUILD_EXTRA:-} "$@"
}

configure() {
	local key=$1 f missing=0
	if [ "$FORCE_CONFIG" = 0 ] && [ "$(cat "$KOUT/.ustack-config-key" 2>/dev/null)" = "$key" ] && [ -f "$KOUT/.config" ]; then
		return 0
	fi
	mkdir -p "$KOUT"
	rm -f "$KOUT/.ustack-config-key"
	kmake -s rustavailable >"$KOUT/rustavailable.log" 2>&1 || { cat "$KOUT/rustavailable.log" >&2; die "make rustavailable failed"; }
	kmake -s tinyconfig >"$KOUT/config.log" 2>&1 || { tail "$KOUT/config.log" >&2; die "tinyconfig failed"; }
	# shellcheck disable=SC2046
	"$KSRC/scripts/kconfig/merge_config.sh" -m -O "$KOUT" "$KOUT/.config" $(fragments) >>"$KOUT/config.log" 2>&1 ||
		{ tail "$KOUT/config.log" >&2; die "merge_config failed"; }
	kmake -s olddefconfig >>"$KOUT/config.log" 2>&1 || { tail "$KOUT/config.log" >&2; die "olddefconfig failed"; }
	# every =y / =n / value asked for by a fragment must have survived (RUST drops silently
	# when rustavailable fails; TRACER_USER_UNWIND does not exist without the series)
	# ustack.config names the series' own symbol, absent before its Kconfig patch
	# (empty series, --each steps): only a note. Any other dropped line is an error:
	# the boot tests must not silently run without lockdep, KUnit, SMP...
	for f in $(fragments); do
		while IFS= read -r line; do
			# norust.config takes back rust-ftrace's Rust and what needs it
			[ "$KCONFIG" = norust ] && grep -qx "${line%%=*}=n" "$HERE/config/norust.config" &&
				[ "$(basename "$f")" != norust.config ] && continue
			case $line in
			CONFIG_*=n) sym=${line%%=*}
				if grep -q "^$sym=" "$KOUT/.config"; then log "$(basename "$f"): $sym should be off"; missing=1; fi ;;
			CONFIG_*=*) if ! grep -qxF "$line" "$KOUT/.config"; then
					log "$(basename "$f"): $line not set (now: $(grep "^${line%%=*}=" "$KOUT/.config" || echo unset))"
					[ "$(basename "$f")" = ustack.config ] || missing=1
				fi ;;
			esac
		done <"$f"
	done
	if [ "$KCONFIG" = norust ]; then
		grep -q '^CONFIG_TRACER_USER_UNWIND=y' "$KOUT/.config" || die "CONFIG_TRACER_USER_UNWIND needs more than the C side"
	else
		grep -q '^CONFIG_RUST=y' "$KOUT/.config" || die "CONFIG_RUST got dropped (rustavailable / LIBCLANG_PATH?)"
	fi
	[ "$missing" = 0 ] || die "the configuration lost options the fragments ask for (see above)"
	echo "$key" >"$KOUT/.ustack-config-key"
}

build() {
	local key=$1
	if [ "$FORCE_CONFIG" = 0 ] && [ "$(cat "$KOUT/.ustack-build-key" 2>/dev/null)" = "$key" ] &&
		[ -f "$KOUT/arch/x86/boot/bzImage" ]; then
		log "bzImage up to date (key $key)"
		return 0
	fi
	rm -f "$KOUT/.ustack-build-key"
	export CCACHE_DIR=$CACHE/ccache
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
	# kernel builds embed timestamps; make ccache ignore them
	export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
	export KBUILD_BUILD_TIMESTAMP="ustack" KBUILD_BUILD_USER=ustack KBUILD_BUILD_HOST=ustack
	log "make -j$JOBS bzImage (log $KOUT/build.log)"
	kmake -j"$JOBS" bzImage >"$KOUT/build.log" 2>&1 || { grep -E 'error|Error' "$KOUT/build.log" | head -30 >&2; tail -30 "$KOUT/build.log" >&2; die "kernel build failed (log $KOUT/build.log)"; }
	grep -E '(^|: )warning:' "$KOUT/build.log" | sort -u | head -20 >&2 || true
	echo "$key" >"$KOUT/.ustack-build-key"
}

case $MODE in
prereqs)
	prereqs
	phase ""
	log "prerequisites ready; source $CACHE/env.sh"
	exit 0 ;;
print-env)
	[ -f "$CACHE/env.sh" ] || die "run kernel-patch/build.sh --prereqs first"
	cat "$CACHE/env.sh"; trap - EXIT; exit 0 ;;
print-bzimage)
	echo "$KOUT/arch/x86/boot/bzImage"; trap - EXIT; exit 0 ;;
print-src)
	echo "$KSRC"; trap - EXIT; exit 0 ;;
each)
	total=$(series_patches | wc -l)
	[ "$total" -gt 0 ] || die "kernel-patch/series is empty"
	for n in $(seq 1 "$total"); do
		p=$(USTACK_SERIES_LIMIT=$n series_patches | tail -1)
		log "=== bisect step $n/$total: ${p#"$PATCH_DIR"/}"
		USTACK_SERIES_LIMIT=$n "$0" >/dev/null || die "the series does not build after patch $n"
	done
	"$0" >/dev/null
	log "each of the $total patches builds on its own"
	trap - EXIT; exit 0 ;;
checkpatch)
	[ -f "$PRISTINE/scripts/checkpatch.pl" ] || die "no pristine tree yet: run build.sh --prereqs"
	bad=0
	while read -r p; do
		# the gate: 0 errors and 0 warnings; --strict CHECKs are shown too.
		# FILE_PATH_CHANGES ("does MAINTAINERS need updating?") is left out: it fires for
		# every new file, also under directories MAINTAINERS already covers (kernel/unwind/,
		# kernel/trace/), where adding entries would be wrong. UNKNOWN_COMMIT_ID too: the
		# base is a release tarball without mainline history, so no Fixes: tag resolves.
		out=$(cd "$PRISTINE" && perl scripts/checkpatch.pl --strict --no-tree -q \
			--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p" 2>&1) || true
		summary=$(echo "$out" | grep -E '^total:' || echo "total: 0 errors, 0 warnings")
		echo "${p#"$PATCH_DIR"/}: $summary"
		echo "$out" | grep -E '^(ERROR|WARNING|CHECK):' | head -20 || true
		echo "$summary" | grep -q '^total: 0 errors, 0 warnings' || bad=1
	done < <(series_patches)
	trap - EXIT; exit $bad ;;
esac

prereqs
# one build at a time per cache (tests, demo and a patch author may run at once)
mkdir -p "$KDIR"
exec 9>"$KDIR/.lock"
if ! flock -n 9; then
	log "waiting for another build.sh using $KDIR"
	flock 9
fi
[ "$KCONFIG" = boot ] && [ -z "$KTREE" ] && [ "$PATCH_DIR" = "$HERE" ] ||
	log "config $KCONFIG, series $PATCH_DIR/series, tree $KSRC, objects $KOUT"
phase patch
PKEY=$(patch_key)
prepare_tree "$PKEY"
phase config
CKEY=$(config_key)
configure "$CKEY"
phase bzImage
build "$CKEY"
phase ""
printf 'build.sh: total %.1fs\n' "$(echo "$(now) - $T_START" | bc)" >&2
trap - EXIT
echo "$KOUT/arch/x86/boot/bzImage"
