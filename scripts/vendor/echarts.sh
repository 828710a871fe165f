#!/usr/bin/env bash
# Vendors Apache ECharts into crates/report/assets/web/vendor/echarts/ from the npm
# registry, at a pinned version whose tarball must match the pinned sha512 (the
# registry's `dist.integrity`):
# the pages are served from the binary to runners that are often offline, so the library is
# committed, and this script is how it got there (and how to move to a newer release).
#
# echarts.common.min.js is the smallest dist file that has every part the pages use: line,
# bar and scatter series, tooltip, legend, dataZoom (inside + slider), markLine/markPoint,
# log axes, and the SVG and canvas renderers. (echarts.simple.min.js lacks tooltip,
# legend and dataZoom; echarts.min.js adds 400 KB of charts nobody draws.)
#
# Usage: scripts/vendor/echarts.sh   (needs npm, network access to the registry, and
# openssl or sha512sum)
set -euo pipefail

VERSION=6.1.0
# npm view echarts@6.1.0 dist.integrity
INTEGRITY="sha512-q0yaFPggC9FUdsWH4blavRWFmxdrIodbkoKNAjJudAI6CA9gNPxHtV2RcZNEepZVlk4yvBYkOkbk6HIVpIyHZA=="
DIST=dist/echarts.common.min.js

root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$root/crates/report/assets/web/vendor/echarts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
tarball="$(npm pack --silent "echarts@$VERSION")"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "echarts@$VERSION: tarball checksum $actual does not match the pinned $INTEGRITY" >&2
  exit 1
fi
tar xzf "$tarball"
if grep -q '</script' "package/$DIST"; then
  # report.html inlines the library in a <script> element: this would end it early.
  echo "package/$DIST contains '</script': it cannot be inlined" >&2
  exit 1
fi
mkdir -p "$dest"
cp "package/$DIST" "$dest/echarts.min.js"
cp package/LICENSE package/NOTICE "$dest/"
printf 'echarts %s\nfile %s\nintegrity %s\nsource https://registry.npmjs.org/echarts/-/echarts-%s.tgz\n' \
  "$VERSION" "$DIST" "$INTEGRITY" "$VERSION" >"$dest/VERSION"
echo "vendored echarts $VERSION ($DIST, $(wc -c <"$dest/echarts.min.js") bytes) into $dest"
