#!/usr/bin/env bash
# What starting the programs costs (docs/PACKAGING.md's start-up table): the CUDA
# libraries each program links (ldd) and maps at start, the wall time of
# `h2o-cli --help` and of `h2o-cli info` on the demo model, and the app's
# first frame (h2o-studio --screenshot, offscreen: it saves once the first
# snapshot is drawn, 300 ms after it settles, and quits), each the median of
# REPEATS runs. Prints a Markdown table.
#
#   startup_cost.sh [BUILD]   BUILD: a build folder (default build) or an install prefix (with bin/)
#   REPEATS                   runs per timing (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-build}
repeats=${REPEATS:-5}
if [[ -x $root/bin/h2o-cli ]]; then bin=$root/bin; else bin=$root/app; fi
cli=$bin/h2o-cli
studio=$bin/h2o-studio
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# Seconds of wall time of one run of "$@" (output dropped).
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  printf '%.3f\n' "$(echo "$t1 - $t0" | bc -l)"
}
timed() { for ((i = 0; i < repeats; i++)); do seconds "$@"; done | median; }

# What the loader maps before main() runs, read while the program waits to open a FIFO as its model
# (every library a program links is mapped at start; --help maps the same set and exits at once).
mapped_cuda_mib() {
  local fifo=$work/fifo pid
  mkfifo "$fifo"
  "$cli" info --model "$fifo" >/dev/null 2>&1 &
  pid=$!
  sleep 1
  local bytes=0 range rest
  while read -r range _ _ _ _ rest; do
    [[ $rest =~ lib(cuda|cudart|cublas|cublasLt)\.so ]] && bytes=$((bytes + 16#${range#*-} - 16#${range%-*}))
  done <"/proc/$pid/maps"
  # ... and of that, what is resident (read in from disk) already.
  local rss
  rss=$(awk '/^[0-9a-f]+-[0-9a-f]+ / {cuda = ($6 ~ /lib(cuda|cudart|cublas|cublasLt)\.so/)} cuda && /^Rss:/ {kb += $2}
             END {printf "%d", kb / 1024}' "/proc/$pid/smaps")
  echo "$((bytes >> 20)) mapped, $rss resident"
  echo x >"$fifo" || true  # let it read and fail
  wait "$pid" 2>/dev/null || true
  rm -f "$fifo"
}

cuda_libs() { ldd "$1" | grep -cE "lib(cuda|cudart|cublas|cublasLt)\.so" || true; }

echo "| what | ${root} |"
echo "|---|---:|"
echo "| CUDA libraries in \`ldd h2o-cli\` | $(cuda_libs "$cli") |"
[[ -x $studio ]] && echo "| CUDA libraries in \`ldd h2o-studio\` | $(cuda_libs "$studio") |"
echo "| CUDA libraries at start (h2o-cli), MiB | $(mapped_cuda_mib) |"
echo "| \`h2o-cli --help\`, s (median of $repeats) | $(timed "$cli" --help) |"
echo "| \`h2o-cli info\` on the demo, s | $(timed "$cli" info) |"
if [[ -x $studio ]]; then
  export QT_QPA_PLATFORM=offscreen
  first=$(timed "$studio" --no-settings --screenshot "$work/first.png" --window-size 1280x800)
  echo "| app's first frame (\`h2o-studio --screenshot\`, less its 0.3 s settle), s | $(printf '%.3f' "$(echo "$first - 0.3" | bc -l)") |"
fi
