#!/usr/bin/env bash
# Builds herald's .deb and .rpm into dist/ with nfpm (a Go tool, fetched
# through the module proxy at the version pinned in the Makefile).
#   VERSION   what `herald --version` prints (default: git describe)
#   COMMIT    the commit stamped next to it
#   PKG_VERSION  the package version (default: from VERSION; must start
#             with a digit: 1.2.3, or 0.0.0+git<date>.<commit> off a tag)
#   ARCH      amd64 | arm64 (default amd64)
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
NFPM=${NFPM:?NFPM names the nfpm module, e.g. github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0}
VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
ARCH=${ARCH:-amd64}

if [ -z "${PKG_VERSION:-}" ]; then
	if [[ $VERSION =~ ^v?([0-9]+\.[0-9]+\.[0-9]+.*)$ ]]; then
		PKG_VERSION=${BASH_REMATCH[1]//-/+}
	else
		when=$(git log -1 --format=%cd --date=format:%Y%m%d%H%M%S 2>/dev/null || date -u +%Y%m%d%H%M%S)
		PKG_VERSION=0.0.0+git${when}.${COMMIT}
	fi
fi

# nfpm.yaml names the staged files by this path.
stage=dist/package-stage
rm -rf "$stage"
mkdir -p "$stage"
trap 'rm -rf "$stage"' EXIT

CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH "$GO" build -trimpath \
	-ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT -X github.com/herald-bridge/herald/delivery/egress.Version=$VERSION" \
	-o "$stage/herald" ./cmd/herald

# The service config is the reference config with its secrets in
# /etc/herald/secrets.yaml; the listener stays on 127.0.0.1 (a proxy in
# front, docs/install.md). The data dir comes from the unit's --data-dir.
sed 's|^# secrets_file: herald.secrets.yaml$|secrets_file: secrets.yaml|' configs/herald.example.yaml >"$stage/herald.yaml"
grep -q '^secrets_file: secrets.yaml$' "$stage/herald.yaml" ||
	{ echo "package.sh: configs/herald.example.yaml no longer has the secrets_file line to switch on" >&2; exit 1; }
grep -q '^  listen: 127\.0\.0\.1:' "$stage/herald.yaml" ||
	{ echo "package.sh: the reference config no longer listens on 127.0.0.1" >&2; exit 1; }

# A one-entry changelog (Debian wants one): this build's version and commit.
cat >"$stage/changelog.yml" <<CHG
- semver: $PKG_VERSION-1
  deb: {urgency: medium, distributions: [stable]}
  date: $(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
  packager: ${HERALD_PKG_MAINTAINER:-herald maintainers <maintainers@herald-bridge.invalid>}
  changes:
    - note: herald $VERSION, commit $COMMIT
CHG

export HERALD_PKG_ARCH=$ARCH HERALD_PKG_VERSION=$PKG_VERSION
export HERALD_PKG_MAINTAINER=${HERALD_PKG_MAINTAINER:-herald maintainers <maintainers@herald-bridge.invalid>}
for p in deb rpm; do
	"$GO" run "$NFPM" package --config configs/packaging/nfpm.yaml --packager "$p" --target dist/
done
ls -1 dist/herald*"$PKG_VERSION"*
