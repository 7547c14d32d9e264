#!/usr/bin/env bash
# Cross-compiles static herald binaries into dist/ with one archive per
# platform (tar.gz; zip for Windows) holding the binary, the reference
# config and the LICENSE when the tree has one, and SHA256SUMS over all.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64 windows/amd64}
LDFLAGS="-s -w -X main.version=$VERSION -X main.commit=$COMMIT -X github.com/herald-bridge/herald/delivery/egress.Version=$VERSION"

# Archive entries carry the commit's time, not the build's.
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)

mkdir -p dist
rm -f dist/herald_* dist/SHA256SUMS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for p in $PLATFORMS; do
	os=${p%/*} arch=${p#*/}
	ext=""
	[ "$os" = windows ] && ext=.exe
	name=herald_${VERSION}_${os}_${arch}
	echo "building $name"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$LDFLAGS" -o "dist/$name$ext" ./cmd/herald

	dir=$work/$name
	mkdir -p "$dir"
	cp "dist/$name$ext" "$dir/herald$ext"
	cp configs/herald.example.yaml "$dir/"
	[ -f LICENSE ] && cp LICENSE "$dir/"
	find "$dir" -exec touch -h -d "@$epoch" {} +
	if [ "$os" = windows ]; then
		if command -v zip >/dev/null; then
			(cd "$work" && zip -qrX "$OLDPWD/dist/$name.zip" "$name")
		else
			(cd "$work" && python3 -m zipfile -c "$OLDPWD/dist/$name.zip" "$name")
		fi
	else
		tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$name" | gzip -n >"dist/$name.tar.gz"
	fi
done

(cd dist && sha256sum herald_* >SHA256SUMS)
cat dist/SHA256SUMS
