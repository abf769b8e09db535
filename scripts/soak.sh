#!/usr/bin/env bash
# Soak: streams every MT-Bench turn (2 per question) through h2o-cli
# stream and watches the process's resident memory (VmRSS from /proc) while it
# runs. Two runs on the same stream:
#   bounded   --policies streaming,h2o       resident memory must stay flat
#   all       --policies full,streaming,h2o  it may grow, but by no more than
#                                            the full cache's own KV
# Prints a Markdown table (RSS at start, after the first turn, at the end,
# growth; KV live/allocated bytes per policy at the first and last step).
#
#   H2O_CLI     h2o-cli binary (default build/app/h2o-cli)
#   MODEL       default synthetic:stories15M (vocab 32000, pairs with tokenizer.model)
#   TOKENIZER   default $H2O_ASSETS/tokenizer.model
#   PROMPTS     default $H2O_ASSETS/mt_bench.jsonl
#   MAX_NEW     tokens generated per turn (default 32)
#   THREADS     CPU threads (default 2)
#   OUT         where the runs' logs go (default runs/soak-<time>)
set -euo pipefail
cd "$(dirname "$0")/.."
assets=${H2O_ASSETS:-../shared/assets}
cli=${H2O_CLI:-build/app/h2o-cli}
model=${MODEL:-synthetic:stories15M}
tokenizer=${TOKENIZER:-$assets/tokenizer.model}
prompts=${PROMPTS:-$assets/mt_bench.jsonl}
max_new=${MAX_NEW:-32}
threads=${THREADS:-2}
out=${OUT:-runs/soak-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }

# One run: h2o-cli in the background, its RSS sampled every second into
# $dir/rss.csv (seconds, turns done, VmRSS kB) until it exits.
run() {
  local name=$1 policies=$2 dir="$out/$1"
  mkdir -p "$dir"
  echo "== $name: --policies $policies, $max_new new tokens per turn" >&2
  "$cli" stream --model "$model" --tokenizer "$tokenizer" --prompts "$prompts" --policies "$policies" \
    --max-new-tokens "$max_new" --threads "$threads" --out "$dir/logs" 2>"$dir/stderr.txt" &
  local pid=$! t0=$SECONDS
  echo "seconds,turns,rss_kb" >"$dir/rss.csv"
  # The first sample after the model is loaded and the sessions exist.
  until grep -q '^streaming' "$dir/stderr.txt" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  local rss
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(rss_kb "$pid")
    [ -n "$rss" ] && echo "$((SECONDS - t0)),$(grep -c '^turn ' "$dir/stderr.txt" || true),$rss" >>"$dir/rss.csv"
    sleep 1
  done
  wait "$pid" || { echo "$name: h2o-cli failed:" >&2; tail -n 5 "$dir/stderr.txt" >&2; exit 1; }
  echo "   done in $((SECONDS - t0)) s" >&2
}

run bounded streaming,h2o
run all full,streaming,h2o

python3 - "$out" <<'PY'
import csv, json, sys, os
out = sys.argv[1]
mib = lambda b: f"{b / 1048576:.1f}"
print(f"| run | policy | turns | RSS start MiB | RSS after turn 1 MiB | RSS end MiB | growth from start MiB | growth after turn 1 MiB | KV live first step MiB | KV live end MiB | KV allocated end MiB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for run in ("bounded", "all"):
    d = os.path.join(out, run)
    rows = [r for r in csv.DictReader(open(os.path.join(d, "rss.csv")))]
    start = int(rows[0]["rss_kb"]) * 1024
    after1 = next((int(r["rss_kb"]) * 1024 for r in rows if int(r["turns"]) >= 1), start)
    end = int(rows[-1]["rss_kb"]) * 1024
    manifest = json.load(open(os.path.join(d, "logs", "manifest.json")))
    first = {}
    for line in open(os.path.join(d, "logs", "steps.jsonl")):
        s = json.loads(line)
        first.setdefault(s["policy"], s["kv_live_bytes"])
    turns = sum(1 for line in open(os.path.join(d, "stderr.txt")) if line.startswith("turn "))  # completed
    for i, t in enumerate(manifest["totals"]):
        lead = (f"| {run} | {t['policy']} | {turns} | {mib(start)} | {mib(after1)} | {mib(end)} | {mib(end - start)} | {mib(end - after1)} "
                if i == 0 else "| | " + t["policy"] + " | | | | | | ")
        print(lead + f"| {mib(first[t['policy']])} | {mib(t['kv_live_bytes'])} | {mib(t['kv_allocated_bytes'])} |")
    print(f"<!-- {run}: status {manifest['status']}, steps {manifest['steps']}, peak KV allocated {mib(manifest['peak_kv_allocated_bytes'])} MiB -->")
PY
echo "logs and rss.csv per run in $out" >&2
