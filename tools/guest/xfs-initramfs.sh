#!/bin/bash
# Add mkfs.xfs and the xfs module (with its dependencies) to a guest rig
# initramfs, for tools/guest/exp-simoop.sh: a second cpio archive with
# /sbin/mkfs.xfs and its libraries, the modules, and /etc/modules.xfs
# (their load order), appended to the base archive (the kernel unpacks
# concatenated archives in turn). The libraries of the wbsim binary, if
# given, are added too, so that it runs from the 9p share.
#
#   tools/guest/xfs-initramfs.sh KDIR BASE.cpio OUT.cpio [WBSIM]
#
# KDIR is the unpacked kernel package (lib/modules/KVER under it), as the
# guest rig's setup makes it. To boot it, give the rig a work directory
# whose initramfs-KVER.cpio is OUT.cpio (its k61 a link to KDIR), and copy
# the stripped wbsim binary and exp-simoop.sh to its share directory.
set -euo pipefail
KDIR=$1 BASE=$2 OUT=$3 WBSIM=${4:-}
KV=$(ls "$KDIR/lib/modules" | head -1)
R=$(mktemp -d)
trap 'rm -rf "$R"' EXIT
mkdir -p "$R/sbin" "$R/etc"
libs() {
  ldd "$1" | awk '/=>/ {print $3} /^\s*\/lib/ {print $1}' | while read -r l; do
    [ -n "$l" ] && [ -e "$l" ] || continue
    mkdir -p "$R$(dirname "$l")"
    [ -e "$R$l" ] || cp -L "$l" "$R$l"
  done
}
cp -L "$(command -v mkfs.xfs)" "$R/sbin/mkfs.xfs"
libs "$(command -v mkfs.xfs)"
[ -n "$WBSIM" ] && libs "$WBSIM"
: > "$R/etc/modules.xfs"
for ko in $(modprobe -d "$KDIR" -S "$KV" --show-depends xfs | awk '$1=="insmod"{print $2}'); do
  rel=${ko#"$KDIR"}
  mkdir -p "$R$(dirname "$rel")"
  case "$ko" in
    *.ko.xz)  rel=${rel%.xz};  xz -dc "$ko" > "$R$rel" ;;
    *.ko.zst) rel=${rel%.zst}; zstd -qdc "$ko" > "$R$rel" ;;
    *)        cp "$ko" "$R$rel" ;;
  esac
  echo "$rel" >> "$R/etc/modules.xfs"
done
(cd "$R" && find . | cpio -o -H newc --quiet) > "$R.cpio"
cat "$BASE" "$R.cpio" > "$OUT"
rm -f "$R.cpio"
echo "wrote $OUT: mkfs.xfs $(mkfs.xfs -V | awk '{print $3}'), $(wc -l < "$R/etc/modules.xfs") modules for $KV"
