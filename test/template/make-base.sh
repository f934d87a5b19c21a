#!/usr/bin/env bash
# Makes the base image the template test builds on, as a tarball, once:
# Debian bookworm (debootstrap --variant=minbase from Debian's mirror) with
# node, npm, git and CA certificates, plus the host's CA bundle (the machines
# reach the registries through a TLS-intercepting proxy). There is no image
# registry here, so node:22-bookworm and ghcr.io/astral-sh/uv cannot be pulled;
# this image stands in for BASE_IMAGE (no uv: the test uses npm servers only).
#
#   test/template/make-base.sh OUT.tar      (needs root; ~3-4 minutes)
#
# Nothing is done when OUT.tar exists. `docker import OUT.tar IMAGE` loads it.
set -euo pipefail
out=${1:?usage: make-base.sh OUT.tar}
[ -s "$out" ] && exit 0
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "make-base.sh: debootstrap needs root" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "make-base.sh: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
dir=$(mktemp -d "$(dirname "$out")/rootfs.XXXXXX")
cleanup() {
  umount "$dir/proc" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
echo "make-base.sh: debootstrap bookworm into $dir" >&2
debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.log" 2>&1 || { tail -30 "$dir.log" >&2; exit 1; }
rm -f "$dir.log"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
mount -t proc proc "$dir/proc"
echo "make-base.sh: apt-get install nodejs npm git ca-certificates" >&2
chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  nodejs npm git ca-certificates >/dev/null
chroot "$dir" apt-get clean
umount "$dir/proc"
# The host's bundle holds the intercepting proxy's CA; Debian's node reads the
# system store, NODE_EXTRA_CA_CERTS (set at import) covers the rest.
cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
rm -rf "$dir/var/lib/apt/lists/"* "$dir/var/cache/apt/"*.bin
: >"$dir/etc/resolv.conf"
tar -C "$dir" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "make-base.sh: wrote $out" >&2
