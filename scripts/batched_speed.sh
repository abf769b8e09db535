#!/usr/bin/env bash
# What side by side costs on the CPU: a decode step of one session, then of
# 2, 3 and 4 sessions batched in one forward pass (h2o-bench --sessions; the
# policies full, streaming, h2o, tova in turn, budget 64), per shape, weight
# type and thread count, with each step's ratio to one session's and the
# weights' GB/s. A batched step reads every weight once for all its sessions,
# so where decode is bound by memory it should cost little more than one
# (issue 58's targets: three <= 1.2x, four <= 1.3x). The GGUF files of
# synthetic weights are written once, by scripts/synthetic_gguf.sh as for
# scripts/speed.sh (the same folder and names), so every thread count times
# the same file. Prints one Markdown table.
#
#   H2O_CLI    h2o-cli binary (default build/app/h2o-cli)
#   H2O_BENCH  h2o-bench binary (default build/app/h2o-bench)
#   FILES      folder for the GGUF files (default /tmp/h2o-speed)
#   SHAPES     default "stories110M tinyllama-1.1b"
#   TYPES      default "f32 f16 q8_0 q4_k_m"
#   THREADS    default "1 2"
#   CONTEXT    tokens in each cache before timing (default 64)
#   TOKENS     decode steps per timed window (default 32)
#   REPEATS    timed windows per row, the median reported (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${H2O_CLI:-build/app/h2o-cli}
bench=${H2O_BENCH:-build/app/h2o-bench}
files=${FILES:-/tmp/h2o-speed}
shapes=${SHAPES:-stories110M tinyllama-1.1b}
types=${TYPES:-f32 f16 q8_0 q4_k_m}
threads=${THREADS:-1 2}
context=${CONTEXT:-64}
tokens=${TOKENS:-32}
repeats=${REPEATS:-5}
source scripts/synthetic_gguf.sh
synthetic_gguf_folder batched_speed.sh "$files"

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
header=1
for shape in $shapes; do
  for type in $types; do
    file=$(synthetic_gguf "$cli" "$files" "$shape" "$type")
    for t in $threads; do
      "$bench" --model "$file" --threads "$t" --sessions 1,2,3,4 --policies full,streaming,h2o,tova --budget 64 \
        --contexts "$context" --tokens "$tokens" --repeats "$repeats" 2>/dev/null |
        if ((header)); then cat; else grep '^| cpu'; fi
      header=0
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
