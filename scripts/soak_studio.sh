#!/usr/bin/env bash
# Soak of the desktop app: h2o-studio streams MT-Bench (looping) through its
# default panes for DURATION seconds, offscreen but drawing every frame as in
# a window, and prints one line of memory figures every INTERVAL seconds
# (--stats-interval): resident memory (VmRSS), the analyzer's whole-history
# bytes (the timeline, the whole-stream rasters and the scrolling text keep
# every position: stream_history.h states the bytes), its bounded state
# (curves, score histories, capture window), the KV the caches allocated, and
# the recording spool (on disk, capped by --recording-limit).
#
# It prints a Markdown table: each figure at the end of warm-up and at the end,
# its growth per hour after warm-up (least squares over the samples), and what
# is left of the resident memory's growth once the whole history and the KV are
# taken out — the figure the app promises to keep under 64 MiB an hour.
#
#   H2O_STUDIO  binary (default build/app/h2o-studio)
#   DURATION    seconds of streaming (default 1500 = 25 minutes)
#   WARMUP      seconds not counted in the growth (default 180)
#   INTERVAL    seconds between samples (default 10)
#   THREADS     CPU threads (default 2)
#   POLICIES    panes (default full,streaming,h2o)
#   OUT         folder for the samples (default runs/soak-studio-<time>)
#   any further arguments go to h2o-studio (--model, --prompts, --budget, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
studio=${H2O_STUDIO:-build/app/h2o-studio}
duration=${DURATION:-1500}
warmup=${WARMUP:-180}
interval=${INTERVAL:-10}
threads=${THREADS:-2}
policies=${POLICIES:-full,streaming,h2o}
out=${OUT:-runs/soak-studio-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"

echo "== h2o-studio --play for $duration s ($policies, $threads threads), a sample every $interval s" >&2
QT_QPA_PLATFORM=offscreen "$studio" --no-settings --play --quit-after "$duration" --stats-interval "$interval" \
  --threads "$threads" --policies "$policies" --window-size 1600x900 "$@" >"$out/stdout.txt" 2>"$out/stderr.txt" || {
  echo "h2o-studio failed:" >&2
  tail -n 5 "$out/stderr.txt" >&2
  exit 1
}
grep '^h2o-studio stats:' "$out/stdout.txt" >"$out/samples.txt" || true
echo "samples in $out/samples.txt" >&2

python3 - "$out/samples.txt" "$warmup" <<'PY'
import sys
path, warmup = sys.argv[1], float(sys.argv[2])
rows = []
for line in open(path):
    f = line.split()[2:]
    rows.append({f[i]: float(f[i + 1]) for i in range(0, len(f) - 1, 2)})
if len(rows) < 3:
    sys.exit("too few samples")
after = [r for r in rows if r["seconds"] >= warmup] or rows[-2:]
first, last = after[0], rows[-1]
mib = lambda b: b / 1048576
def slope(key):  # bytes per hour, least squares over the samples after warm-up
    xs = [r["seconds"] for r in after]
    ys = [key(r) for r in after]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 3600
rest = lambda r: r["rss_bytes"] - r["history_bytes"] - r["kv_allocated_bytes"]
hours = (last["seconds"] - first["seconds"]) / 3600
positions = last["positions"] - first["positions"]
print(f"Streamed {last['seconds']:.0f} s: {last['step']:.0f} steps, {last['positions']:.0f} positions over all panes "
      f"(warm-up: the first {warmup:.0f} s; growth fitted over the {len(after)} samples after it).")
print()
print("| figure | after warm-up MiB | end MiB | growth MiB/hour |")
print("|---|---:|---:|---:|")
for name, key in [("resident memory (VmRSS)", lambda r: r["rss_bytes"]),
                  ("whole-history state (analyzer)", lambda r: r["history_bytes"]),
                  ("KV allocated by the caches", lambda r: r["kv_allocated_bytes"]),
                  ("bounded analyzer state", lambda r: r["bounded_bytes"]),
                  ("**resident − whole history − KV**", rest),
                  ("recording spool (disk, capped)", lambda r: r["spool_bytes"])]:
    print(f"| {name} | {mib(key(first)):.1f} | {mib(key(last)):.1f} | {mib(slope(key)):.1f} |")
if positions > 0:
    print()
    print(f"Whole-history bytes per stream position (all panes): "
          f"{(last['history_bytes'] - first['history_bytes']) / positions:.1f}")
PY
