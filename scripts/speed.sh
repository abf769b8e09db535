#!/usr/bin/env bash
# CPU decode speed per weight type, against llama.cpp on the same files.
#
# For each shape (stories110M, tinyllama-1.1b) and type (f16, q8_0, q4_k_m) it
# writes a GGUF file with synthetic weights (h2o-cli convert, the Llama-2
# vocabulary from the assets) unless it exists, then times decode with
#   h2o-bench --model FILE --threads T --policies full   (ours; bytes, GB/s, % of measured bandwidth)
#   llama-bench -m FILE -t T -p 0 -n TOKENS             (llama.cpp, when LLAMA_BENCH is given)
# and, with --batched, StreamingLLM + H2O + TOVA in one pass against each alone.
# It prints a Markdown table. Nothing here downloads anything: llama.cpp is
# built by you (docs/BENCHMARKS.md, "CPU decode speed").
#
#   LLAMA_BENCH  path to llama.cpp's llama-bench (optional)
#   FILES        folder for the GGUF files (default /tmp/h2o-speed)
#   SHAPES       default "stories110M tinyllama-1.1b"
#   TYPES        default "f16 q8_0 q4_k_m"
#   THREADS      default 2
#   TOKENS       decode steps per timed window (default 128)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/app/h2o-cli
bench=build/app/h2o-bench
files=${FILES:-/tmp/h2o-speed}
shapes=${SHAPES:-stories110M tinyllama-1.1b}
types=${TYPES:-f16 q8_0 q4_k_m}
threads=${THREADS:-2}
tokens=${TOKENS:-128}
source scripts/synthetic_gguf.sh
synthetic_gguf_folder speed.sh "$files"

echo "| shape | type | file MiB | ours tok/s | llama.cpp tok/s | ours / llama.cpp | ours GB/s | % of measured BW | 3 policies batched / alone |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for shape in $shapes; do
  for type in $types; do
    file=$(synthetic_gguf "$cli" "$files" "$shape" "$type")
    mib=$(( $(stat -c %s "$file") / 1048576 ))
    # h2o-bench's row: | backend | model | weights | context | policies | sessions | ms/step | tok/s | bytes | GB/s | % | ratio |
    ours=$("$bench" --model "$file" --threads "$threads" --policies full --contexts 1 --tokens "$tokens" --repeats 5 2>/dev/null |
           grep '^| cpu' | tail -n 1)
    tps=$(echo "$ours" | awk -F'|' '{gsub(/ /,"",$9); print $9}')
    gbs=$(echo "$ours" | awk -F'|' '{gsub(/ /,"",$11); print $11}')
    pct=$(echo "$ours" | awk -F'|' '{gsub(/^ +| +$/,"",$12); print $12}')
    batched=$("$bench" --model "$file" --threads "$threads" --policies streaming,h2o,tova --contexts 1 --tokens "$tokens" \
                --repeats 3 --batched 2>/dev/null | grep '^| cpu' | tail -n 1 | awk -F'|' '{gsub(/ /,"",$13); print $13}')
    ref="–"
    ratio="–"
    if [ -n "${LLAMA_BENCH:-}" ]; then
      ref=$("$LLAMA_BENCH" -m "$file" -t "$threads" -p 0 -n "$tokens" -r 5 -o md 2>/dev/null | grep "tg$tokens" |
            awk -F'|' '{print $(NF-1)}' | awk '{print $1}')
      ratio=$(awk -v a="$tps" -v b="$ref" 'BEGIN { printf "%.2f×", a / b }')
    fi
    echo "| $shape | $type | $mib | $tps | $ref | $ratio | $gbs | $pct | $batched |"
  done
done
