#!/usr/bin/env bash
# The app under a real window manager, with F11 (presentation mode) pressed at
# run time: the offscreen platform cannot show what a window manager does to a
# window going full screen and back (the 2x2 grid once became columns of 640
# and 1280 px). Plays the demo's four panes at 1280x720 on a 1920x1080 screen,
# presses F11 PRESSES times while it plays, and saves the window at the end.
#
#   scripts/screenshot_f11.sh [PRESSES] [OUT.png]     (default 2, docs/screenshot-f11-twice.png)
#
# Needs Xvfb, openbox and xdotool (apt-get install xvfb openbox xdotool; not
# in the test command: tests/gui checks the grid's rule directly).
set -euo pipefail
presses=${1:-2}
out=${2:-docs/screenshot-f11-twice.png}
studio=${H2O_STUDIO:-build/app/h2o-studio}
for tool in xvfb-run openbox xdotool; do
  command -v "$tool" >/dev/null || { echo "screenshot_f11.sh: $tool is not installed" >&2; exit 2; }
done
[[ "$presses" =~ ^[0-9]+$ ]] || { echo "screenshot_f11.sh: PRESSES: expected a whole number, got '$presses'" >&2; exit 2; }
inner=$(mktemp)
trap 'rm -f "$inner"' EXIT
cat >"$inner" <<INNER
set -e
openbox >/dev/null 2>&1 &
sleep 1
"$studio" --no-settings --threads 2 --window-size 1280x720 --policies full,streaming,h2o,tova \
  --autoplay-steps 1500 --screenshot "$out" &
app=\$!
sleep 2.5
window=\$(xdotool search --name "H2O Studio" | head -1)
for i in \$(seq 1 $presses); do xdotool windowactivate --sync "\$window" key F11; sleep 0.7; done
wait \$app
INNER
xvfb-run -a -s "-screen 0 1920x1080x24" bash "$inner"
