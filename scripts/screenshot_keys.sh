#!/usr/bin/env bash
# The app under a real window manager, with keys pressed at run time: the
# offscreen platform cannot show what a window manager does to a window going
# full screen and back (the 2x2 grid once became columns of 640 and 1280 px),
# nor the window as a key leaves it (Help's overview, F1). Plays the demo's four
# panes at 1280x720 on a 1920x1080 screen, presses KEYS in turn while it plays
# (0.5 s apart, xdotool's names), and saves the window after STEPS steps (default 3000).
#
#   scripts/screenshot_keys.sh OUT.png KEY...
#   scripts/screenshot_keys.sh docs/screenshot-f11-twice.png F11 F11
#   scripts/screenshot_keys.sh docs/screenshot-overview.png F1 Right Right Right
#
# Needs Xvfb, openbox and xdotool (apt-get install xvfb openbox xdotool; not
# in the test command: tests/gui checks what these show directly).
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 OUT.png KEY..." >&2; exit 2; }
out=$1
shift
studio=${H2O_STUDIO:-build/app/h2o-studio}
steps=${STEPS:-3000}
[[ "$steps" =~ ^[0-9]+$ ]] || { echo "screenshot_keys.sh: STEPS: expected a whole number, got '$steps'" >&2; exit 2; }
for tool in xvfb-run openbox xdotool; do
  command -v "$tool" >/dev/null || { echo "screenshot_keys.sh: $tool is not installed" >&2; exit 2; }
done
for key in "$@"; do
  [[ "$key" =~ ^[A-Za-z0-9_+]+$ ]] || { echo "screenshot_keys.sh: KEY: '$key' is not a key name" >&2; exit 2; }
done
inner=$(mktemp)
trap 'rm -f "$inner"' EXIT
cat >"$inner" <<INNER
set -e
openbox >/dev/null 2>&1 &
sleep 1
"$studio" --no-settings --threads 2 --window-size 1280x720 --policies full,streaming,h2o,tova \
  --autoplay-steps $steps --screenshot "$out" &
app=\$!
sleep 2.5
window=\$(xdotool search --onlyvisible --name "H2O Studio" | head -1)
xdotool windowactivate --sync "\$window"
# Each key to the window with the focus: a key may open a widget of its own (Help's overview).
for key in $*; do xdotool key "\$key"; sleep 0.5; done
wait \$app
INNER
xvfb-run -a -s "-screen 0 1920x1080x24" bash "$inner"
