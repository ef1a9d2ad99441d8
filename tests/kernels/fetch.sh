#!/usr/bin/env bash
# fetch.sh SERIES: Debian's generic kernel of SERIES (6.1, 6.12 or 5.10),
# unpacked into the cache; prints the folder that holds it (vmlinuz,
# release, modules/*.ko in load order in modules.order).
# Exit 0 with the folder; exit 2 with the reason on stderr when the package
# registry cannot be reached (the caller skips); exit 1 on anything else.
#
# The cache, $BPFS_KERNEL_CACHE (default /var/cache/bpfsampler-kernels,
# root-only): apt/ is an apt state of our own (its own sources list, lists
# and archives: the system's sources and lists are never touched), and one
# folder per kernel release. A series already unpacked is used as it is,
# with no network; BPFS_KERNEL_REFRESH=1 looks for a newer one. Clear it
# all with rm -rf /var/cache/bpfsampler-kernels.
set -euo pipefail
series=${1:?usage: fetch.sh 6.1|6.12|5.10}
CACHE=${BPFS_KERNEL_CACHE:-/var/cache/bpfsampler-kernels}

# the package name of each series (the generic flavour: the cloud one has
# no 9p), newest ABI chosen from what the lists offer
case $series in
6.1) suite=bookworm re='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
6.12) suite=bookworm re='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
5.10) suite=bullseye re='^linux-image-5\.10\.0-[0-9]+-amd64-unsigned$' ;;
*) echo "fetch.sh: unknown series $series (6.1, 6.12 or 5.10)" >&2; exit 1 ;;
esac

# The 9p root needs these, in this order (a dependency before its users);
# whichever a kernel builds in is simply not there. 5.10 has no netfs;
# 6.12 builds virtio in.
MODULES="netfs fscache virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci 9pnet 9pnet_virtio 9p"

mkdir -p "$CACHE"
chmod 0700 "$CACHE"

if [ "${BPFS_KERNEL_REFRESH:-0}" != 1 ] && [ -e "$CACHE/series-$series/vmlinuz" ]; then
	readlink -f "$CACHE/series-$series"
	exit 0
fi

# --- our own apt state ------------------------------------------------------
A=$CACHE/apt
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/debs"
# The mirrors are the ones this machine's own sources name (one-line or
# deb822 format), with the suites of bookworm and bullseye.
system_uris() {
	{
		grep -hE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -E 's/\[[^]]*\]//' | awk '{ print $2 }'
		grep -hE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
			sed -E 's/^[[:space:]]*URIs:[[:space:]]*//' | tr ' ' '\n'
	} | grep -E '/debian(-security)?/?$' | sed 's:/*$::' | sort -u
}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
{
	for uri in $(system_uris); do
		case $uri in
		*-security) echo "deb [signed-by=$keyring] $uri bookworm-security main"
			echo "deb [signed-by=$keyring] $uri bullseye-security main" ;;
		*) echo "deb [signed-by=$keyring] $uri bookworm main"
			echo "deb [signed-by=$keyring] $uri bookworm-updates main"
			echo "deb [signed-by=$keyring] $uri bullseye main"
			echo "deb [signed-by=$keyring] $uri bullseye-updates main" ;;
		esac
	done
} >"$A/sources.list"
if [ ! -s "$A/sources.list" ]; then
	echo "no Debian mirror in this machine's apt sources (/etc/apt/sources.list*)" >&2
	exit 2
fi
APT=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache"
	-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
	-o APT::Architecture=amd64 -o Acquire::Languages=none -o Debug::NoLocking=0)
if ! apt-get "${APT[@]}" -qq update >"$A/update.log" 2>&1 ||
	grep -qE '^(W|E): Failed to fetch|^Err:' "$A/update.log"; then
	echo "the package registry cannot be reached: $(grep -E '^(W|E|Err)' "$A/update.log" | head -2 | tr '\n' ' ')" >&2
	exit 2
fi
pkg=$(apt-cache "${APT[@]}" pkgnames linux-image- | grep -E "$re" | sort -V | tail -n1)
if [ -z "$pkg" ]; then
	echo "the lists offer no package matching $re" >&2
	exit 1
fi
# a package from bullseye while bookworm's lists are also ours: ask for the
# suite's own version
ver=$(apt-cache "${APT[@]}" madison "$pkg" | awk -v s="$suite" '$0 ~ s { print $3; exit }')
[ -n "$ver" ] || ver=$(apt-cache "${APT[@]}" madison "$pkg" | awk '{ print $3; exit }')
deb=$(ls "$A/debs/${pkg}_"*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ]; then
	(cd "$A/debs" && apt-get "${APT[@]}" -qq download "$pkg=$ver") >"$A/download.log" 2>&1 || {
		echo "cannot download $pkg=$ver: $(tail -2 "$A/download.log" | tr '\n' ' ')" >&2
		exit 2
	}
	deb=$(ls "$A/debs/${pkg}_"*.deb | head -n1)
fi

# --- unpack: the kernel and the few modules the guest loads -----------------
X=$(mktemp -d "$CACHE/unpack.XXXXXX")
trap 'rm -rf "$X"' EXIT
dpkg-deb -x "$deb" "$X/deb"
release=$(ls "$X/deb/lib/modules" | head -n1)
K=$CACHE/$release
rm -rf "$K.new"
mkdir -p "$K.new/modules"
cp "$X/deb/boot/vmlinuz-$release" "$K.new/vmlinuz"
for m in $MODULES; do
	f=$(find "$X/deb/lib/modules/$release/kernel" -name "$m.ko" -o -name "$m.ko.xz" | head -n1)
	[ -n "$f" ] || continue # built in, or absent in this series
	case $f in
	*.xz) xz -dc "$f" >"$K.new/modules/$m.ko" ;; # busybox insmod reads plain ELF
	*) cp "$f" "$K.new/modules/$m.ko" ;;
	esac
	echo "$m" >>"$K.new/modules/modules.order"
done
echo "$release" >"$K.new/release"
echo "$pkg $ver" >"$K.new/package"
rm -rf "$K"
mv "$K.new" "$K"
ln -sfn "$release" "$CACHE/series-$series"
echo "$K"
