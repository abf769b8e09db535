#!/usr/bin/env bash
# Renders the app icon (resources/icons/h2o-studio.svg) at every hicolor size into
# resources/icons/hicolor/<N>x<N>.png, which `cmake --install` puts into the icon theme
# (resources/CMakeLists.txt). Run it after changing the SVG, and commit the PNGs: the
# build itself needs no SVG renderer. Needs rsvg-convert (librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v rsvg-convert >/dev/null || { echo "render_icons: rsvg-convert not found (apt-get install librsvg2-bin)" >&2; exit 2; }
mkdir -p resources/icons/hicolor
for size in 16 22 24 32 48 64 128 256 512; do
  rsvg-convert -w "$size" -h "$size" resources/icons/h2o-studio.svg -o "resources/icons/hicolor/${size}x${size}.png"
done
ls -l resources/icons/hicolor
