#!/bin/sh
# Build the gateway image without pulling anything: the static binary is
# built on this machine (make build's tags and flags) and copied onto an
# empty base (Dockerfile.prebuilt).
#   deploy/image/build.sh [TAG]      (default TAG: sluice:local)
set -eu
tag=${1:-sluice:local}
repo=$(cd "$(dirname "$0")/../.." && pwd)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
version=$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev)
(cd "$repo" && CGO_ENABLED=0 go build -trimpath -tags=gore2regex -ldflags "-s -w -X main.version=$version" -o "$ctx/sluice" ./cmd/sluice)
roots=${SLUICE_ROOTS:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$roots" ] || { echo "build.sh: no root bundle at $roots (set SLUICE_ROOTS)" >&2; exit 1; }
cp "$roots" "$ctx/ca-certificates.crt"
cp -r "$repo/deploy/image/rootfs" "$ctx/rootfs"
DOCKER_BUILDKIT=0 docker build -q -f "$repo/deploy/image/Dockerfile.prebuilt" -t "$tag" "$ctx"
echo "built $tag"
