#!/usr/bin/env bash
# Tokenizer load speed: h2o-cli tokenize against llama.cpp's llama-tokenize,
# back to back, on each vocabulary-only GGUF file of the shared assets, with
# a short text (so the time is loading the vocabulary). Optionally a long
# text too (TEXT=file), for encoding speed. Prints a Markdown table: wall
# seconds, user+system CPU seconds and maximum resident memory (GNU time -v),
# each the best of RUNS runs.
#
#   H2O_CLI         h2o-cli binary (default build/app/h2o-cli)
#   LLAMA_TOKENIZE  llama.cpp's llama-tokenize (optional; rows without it say "not given").
#                   Build it yourself, e.g. from the source node-llama-cpp ships:
#                     mkdir -p /tmp/llcpp && cd /tmp/llcpp && npm install --ignore-scripts node-llama-cpp@3.22.1
#                     git clone node_modules/node-llama-cpp/llama/gitRelease.bundle llama.cpp
#                     cmake -S llama.cpp -B llama.cpp/build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
#                     cmake --build llama.cpp/build --target llama-tokenize -j2
#                   then LLAMA_TOKENIZE=/tmp/llcpp/llama.cpp/build/bin/llama-tokenize
#   H2O_ASSETS      shared assets (default ../shared/assets)
#   VOCABS          default "llama-spm qwen2 llama-bpe"
#   TEXT            a text file to tokenize instead of the short prompt (optional)
#   RUNS            default 3
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${H2O_CLI:-build/app/h2o-cli}
llama=${LLAMA_TOKENIZE:-}
assets=${H2O_ASSETS:-../shared/assets}
vocabs=${VOCABS:-llama-spm qwen2 llama-bpe}
runs=${RUNS:-3}
[ -x "$cli" ] || { echo "tokenizer_speed.sh: no executable h2o-cli at $cli (set H2O_CLI)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "tokenizer_speed.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
[ -z "$llama" ] || [ -x "$llama" ] || { echo "tokenizer_speed.sh: LLAMA_TOKENIZE=$llama is not executable" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/h2o-tokspeed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prompt="Hello world, this is a short text."

# best_of NAME CMD...: runs CMD $runs times; prints "wall | user+sys | max RSS" of the fastest (by CPU).
best_of() {
  local best="" best_cpu="" i
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -v -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { echo "failed (see: $*)"; return; }
    local wall user sys rss cpu
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (j = 1; j <= n; j++) s = s * 60 + p[j]; print s }' "$tmp/time")
    user=$(awk -F': ' '/User time/ { print $2 }' "$tmp/time")
    sys=$(awk -F': ' '/System time/ { print $2 }' "$tmp/time")
    rss=$(awk -F': ' '/Maximum resident/ { printf "%.1f", $2 / 1024 }' "$tmp/time")
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    if [ -z "$best_cpu" ] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then
      best_cpu=$cpu
      best="$(printf '%.2f' "$wall") | $cpu | $rss MB"
    fi
  done
  echo "$best"
}

echo "| vocabulary | file | tool | wall s | user+sys s | max RSS |"
echo "|---|---|---|---:|---:|---:|"
for v in $vocabs; do
  f=$assets/vocab/ggml-vocab-$v.gguf
  [ -f "$f" ] || { echo "tokenizer_speed.sh: $f not found (set H2O_ASSETS)" >&2; exit 2; }
  size=$(awk -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.1f MB", b / 1e6 }')
  if [ -n "${TEXT:-}" ]; then
    ours=(--text-file "$TEXT")
    theirs=(-f "$TEXT")
  else
    ours=("$prompt")
    theirs=(-p "$prompt")
  fi
  echo "| $v | $size | h2o-cli tokenize | $(best_of "$cli" tokenize --tokenizer "$f" "${ours[@]}") |"
  if [ -n "$llama" ]; then
    echo "| $v | $size | llama-tokenize | $(best_of "$llama" -m "$f" --ids --log-disable "${theirs[@]}") |"
  else
    echo "| $v | $size | llama-tokenize | not given (set LLAMA_TOKENIZE) | | |"
  fi
done
