#!/usr/bin/env bash
# The CPU backend beside another program: decode speed of one policy and of
# three batched (full, streaming, h2o) on a quiet machine, then with one core
# held by a busy loop, as a desktop shares its machine (reliability round 4:
# the pool must degrade in proportion, at least 40 % of the quiet figure).
# Prints a Markdown table: the median of REPEATS runs each, decode tok/s per
# session as `h2o-cli stream` reports it.
#
#   H2O_CLI   h2o-cli binary (default build/app/h2o-cli)
#   MODEL     default synthetic:stories110M
#   THREADS   CPU threads (default 2)
#   TOKENS    new tokens per run (default 96)
#   REPEATS   runs per cell (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${H2O_CLI:-build/app/h2o-cli}
model=${MODEL:-synthetic:stories110M}
threads=${THREADS:-2}
tokens=${TOKENS:-96}
repeats=${REPEATS:-3}
out=$(mktemp -d)
busy=
trap '[[ -n $busy ]] && kill "$busy" 2>/dev/null; rm -rf "$out"' EXIT

# One run's decode tok/s (every batched session reports the same).
decode() {
  "$cli" stream --model "$model" --threads "$threads" --questions 1 --max-new-tokens "$tokens" --quiet \
    --out "$out/run-$RANDOM$RANDOM" "$@" 2>&1 | sed -n 's/.*decode \([0-9.]*\) tok\/s.*/\1/p' | head -1
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
cell() { for ((i = 0; i < repeats; ++i)); do decode "$@"; done | median; }

quiet_one=$(cell --policies full)
quiet_three=$(cell --policies full,streaming,h2o --batched)
(while :; do :; done) &
busy=$!
busy_one=$(cell --policies full)
busy_three=$(cell --policies full,streaming,h2o --batched)

echo "| $model, $threads threads | one policy, tok/s | three batched, tok/s each | one / three |"
echo "|---|---:|---:|---:|"
awk -v q1="$quiet_one" -v q3="$quiet_three" -v b1="$busy_one" -v b3="$busy_three" 'BEGIN {
  printf "| quiet machine | %.1f | %.1f | %.2fx |\n", q1, q3, q1 / q3
  printf "| one core busy elsewhere | %.1f (%.0f %% of quiet) | %.1f (%.0f %% of quiet) | %.2fx |\n",
         b1, 100 * b1 / q1, b3, 100 * b3 / q3, b1 / b3 }'
