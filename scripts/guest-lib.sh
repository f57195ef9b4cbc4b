# scripts/guest-lib.sh: shell functions shared by the scripts that build a QEMU
# guest's initramfs (tests/boot/run.sh, bench/record.sh). Source it; it expects
# $R, the root of the initramfs being built.

# copy_elf BINARY DEST: the binary and every shared library ldd names
copy_elf() {
	install -D -m755 "$1" "$R$2"
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
		while read -r lib; do
			[ -e "$R$lib" ] || install -D -m755 "$(readlink -f "$lib")" "$R$lib"
		done
}
