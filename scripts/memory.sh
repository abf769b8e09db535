#!/usr/bin/env bash
# Memory: the quantised files people run, streamed by the three evicting
# policies side by side at budget 256, within a resident-memory limit:
#   tinyllama-1.1b  Q4_K_M  <= 1.2 GiB
#   llama2-7b       Q4_K_M  <= 5 GiB
# Each file is written by `h2o-cli convert` (synthetic weights in the file's
# own types, the Llama-2 SentencePiece vocabulary from the shared assets),
# then streamed from disk: the weights are memory-mapped, so their resident
# pages count. Prints a Markdown table: file size, tokens per session, the KV
# each session holds, peak resident memory (GNU time's maximum RSS) and the
# verdict. Exits 1 when a run fails or exceeds its limit.
#
#   H2O_CLI     h2o-cli binary (default build/app/h2o-cli)
#   H2O_ASSETS  shared assets (default ../shared/assets)
#   SHAPES      subset of "tinyllama-1.1b llama2-7b" (default both)
#   QUESTIONS   MT-Bench questions (2 turns each) streamed (default 2: past 256 tokens, so every policy evicts)
#   MAX_NEW     tokens generated per turn (default 64)
#   THREADS     CPU threads (default 2)
#   WORK        where the GGUF files are written (default a mktemp -d folder, removed at exit; 4 GB for the 7B)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${H2O_CLI:-build/app/h2o-cli}
assets=${H2O_ASSETS:-../shared/assets}
shapes=${SHAPES:-"tinyllama-1.1b llama2-7b"}
questions=${QUESTIONS:-2}
max_new=${MAX_NEW:-64}
threads=${THREADS:-2}
vocab=$assets/vocab/ggml-vocab-llama-spm.gguf
[ -x "$cli" ] || { echo "memory.sh: no executable h2o-cli at $cli (set H2O_CLI)" >&2; exit 2; }
[ -f "$vocab" ] || { echo "memory.sh: $vocab is missing (set H2O_ASSETS)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "memory.sh: needs GNU time (/usr/bin/time, Debian package time)" >&2; exit 2; }
if [ -n "${WORK:-}" ]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/h2o-memory.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

limit_mib() { case $1 in tinyllama-1.1b) echo 1229 ;; llama2-7b) echo 5120 ;; *) echo 0 ;; esac; }

echo "| shape | file | tokens per session | KV live / allocated per session | peak RSS | limit | verdict |"
echo "|---|---|---:|---|---:|---:|---|"
status=0
for shape in $shapes; do
  limit=$(limit_mib "$shape")
  [ "$limit" -gt 0 ] || { echo "memory.sh: unknown shape $shape (tinyllama-1.1b or llama2-7b)" >&2; exit 2; }
  file=$work/$shape-q4_k_m.gguf
  if [ ! -f "$file" ]; then
    echo "== writing $file" >&2
    "$cli" convert --model "synthetic:$shape:dtype=q4_k_m" --type q4_k_m --vocab "$vocab" --out "$file" >&2
  fi
  echo "== streaming $shape: streaming, h2o, tova at budget 256, $questions questions, $max_new new tokens per turn" >&2
  log=$work/$shape.stderr
  rc=0
  /usr/bin/time -f 'maxrss_kb %M' "$cli" stream --model "$file" --policies streaming,h2o,tova --budget 256 \
    --questions "$questions" --max-new-tokens "$max_new" --threads "$threads" --batched --quiet \
    --out "$work/$shape-run" >/dev/null 2>"$log" || rc=$?
  peak_kb=$(awk '/^maxrss_kb/ {print $2}' "$log")
  peak_mib=$(( ${peak_kb:-0} / 1024 ))
  # Tokens fed to the first session over the run (each step logs one row per session).
  tokens=$(python3 -c '
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
first = rows[0]["policy"] if rows else None
print(sum(r.get("fed", 0) for r in rows if r["policy"] == first))' "$work/$shape-run/steps.jsonl" 2>/dev/null || echo "?")
  kv=$(sed -n 's/^ *\([a-z0-9]*\)(.*KV live \([0-9.]* MiB\), allocated \([0-9.]* MiB\).*/\1 \2 \/ \3/p' "$log" | paste -sd';' - | sed 's/;/; /g')
  size=$(du -m "$file" | cut -f1)
  verdict=ok
  if [ "$rc" -ne 0 ]; then verdict="FAILED (exit $rc: $(grep -m1 'h2o-cli:' "$log" || true))"; status=1;
  elif [ "$peak_mib" -gt "$limit" ]; then verdict="OVER"; status=1; fi
  echo "| $shape | Q4_K_M, $size MiB | $tokens | ${kv:-?} | $peak_mib MiB | $limit MiB | $verdict |"
done
exit $status
