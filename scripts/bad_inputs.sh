#!/usr/bin/env bash
# Bad inputs: runs h2o-cli on one example of every class of bad input (corrupt
# llama2.c / GGUF / safetensors files, wrong or malformed tokenizers (SentencePiece,
# byte-level BPE vocabularies, tokenizer.json), malformed prompt and
# token-id files, out-of-range flags, unwritable outputs, outputs that are
# inputs or earlier runs) plus faults (a full disk, refused threads, a KV limit
# too small, SIGINT/SIGTERM/SIGHUP/SIGKILL during runs and conversions), and
# prints a Markdown table of what happened: the message on stderr, the exit
# code, how many lines stderr had, and whether any file was left in the
# case's output folder (or an input changed).
#
# The promise being demonstrated (docs/RELIABILITY.md, "Bad input"): one line on stderr
# naming the file or flag, a non-zero exit below 128, and no output left.
#
#   H2O_CLI     h2o-cli binary (default build/app/h2o-cli)
#   H2O_ASSETS  shared assets folder (default ../shared/assets)
#
# Every generated bad file and every --out folder lives under one mktemp -d
# folder, removed on exit. Each case runs with stdin from /dev/null, under
# `timeout 60` and `nice`, with --threads 1 and small token counts.
set -u
cd "$(dirname "$0")/.." || exit 1
export LC_ALL=C.UTF-8

cli=${H2O_CLI:-build/app/h2o-cli}
assets=${H2O_ASSETS:-../shared/assets}
[ -x "$cli" ] || { echo "bad_inputs.sh: no executable h2o-cli at $cli (set H2O_CLI)" >&2; exit 2; }
for f in kjv-1M.bin kjv-tok2k.model stories260K.bin tokenizer.model mt_bench.jsonl tinystories-valid-sample.txt; do
  [ -f "$assets/$f" ] || { echo "bad_inputs.sh: $assets/$f is missing (set H2O_ASSETS)" >&2; exit 2; }
done
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
A=$(cd "$assets" && pwd)
export H2O_ASSETS=$A

tmp=$(mktemp -d "${TMPDIR:-/tmp}/h2o-bad-inputs.XXXXXX") || exit 1
bg_pid=
cleanup() {
  [ -n "$bg_pid" ] && kill -KILL "$bg_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
in=$tmp/in
logs=$tmp/logs
mkdir -p "$in" "$logs" "$tmp/out"

# ---- the bad files ------------------------------------------------------------

python3 - "$in" "$A" <<'PY' || { echo "bad_inputs.sh: could not write the input files" >&2; exit 1; }
import json, os, random, struct, sys

d, assets = sys.argv[1], sys.argv[2]
rng = random.Random(7)
def put(name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
def asset(name):
    with open(os.path.join(assets, name), "rb") as f:
        return f.read()
def floats(n):
    return struct.pack("<%df" % n, *(rng.uniform(-0.1, 0.1) for _ in range(n)))

# llama2.c: header of 7 int32 (dim, hidden, layers, heads, kv heads, vocab, seq len), then float32 weights.
kjv = asset("kjv-1M.bin")
s260 = asset("stories260K.bin")
put("truncated.bin", kjv[:100000])
put("empty.bin", b"")
put("negative-dim.bin", struct.pack("<i", -64) + s260[4:])
put("overflow.bin", struct.pack("<7i", 65536, 65536, 2**31 - 1, 1, 1, 3, 1) + bytes(64))
put("vocab0.bin", s260[:20] + struct.pack("<i", 0) + s260[24:])
put("trailing.bin", kjv + b"JUNK!!!")

# GGUF v3: a tiny, otherwise valid Llama (dim 8, hidden 16, 1 layer, 2 heads, vocab 512, F32).
DIM, HID, VOCAB, CTX = 8, 16, 512, 32
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b
def gguf(magic=b"GGUF", version=3, offsets={}, tensor_count=None, array_count=None, first_key_len=None):
    kvs = [gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama")]
    for key, val in [("llama.embedding_length", DIM), ("llama.feed_forward_length", HID), ("llama.block_count", 1),
                     ("llama.attention.head_count", 2), ("llama.attention.head_count_kv", 2),
                     ("llama.context_length", CTX)]:
        kvs.append(gstr(key) + struct.pack("<II", 4, val))
    # An array of two u32 (its count can be made absurd).
    kvs.append(gstr("general.note") + struct.pack("<IIQ", 9, 4, 2 if array_count is None else array_count) + struct.pack("<II", 1, 2))
    tensors = [("token_embd.weight", [DIM, VOCAB]), ("output_norm.weight", [DIM])]
    for name, dims in [("attn_norm", [DIM]), ("attn_q", [DIM, DIM]), ("attn_k", [DIM, DIM]), ("attn_v", [DIM, DIM]),
                       ("attn_output", [DIM, DIM]), ("ffn_norm", [DIM]), ("ffn_gate", [DIM, HID]),
                       ("ffn_down", [HID, DIM]), ("ffn_up", [DIM, HID])]:
        tensors.append(("blk.0.%s.weight" % name, dims))
    infos, data, off = b"", b"", 0
    for name, dims in tensors:
        n = 1
        for x in dims:
            n *= x
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", x) for x in dims)
        infos += struct.pack("<IQ", 0, offsets.get(name, off))
        blob = floats(n)
        blob += bytes((-len(blob)) % 32)
        data += blob
        off += len(blob)
    head = magic + struct.pack("<IQQ", version, len(tensors) if tensor_count is None else tensor_count, len(kvs))
    body = head + b"".join(kvs) + infos
    if first_key_len is not None:
        body = body[:24] + struct.pack("<Q", first_key_len) + body[32:]
    return body + bytes((-len(body)) % 32) + data
put("valid.gguf", gguf())
put("bad-magic.gguf", gguf(magic=b"GGUX"))
put("version-1.gguf", gguf(version=1))
put("version-4.gguf", gguf(version=4))
put("offset-past-end.gguf", gguf(offsets={"token_embd.weight": 1 << 40}))
put("huge-string.gguf", gguf(first_key_len=1 << 62))
put("huge-tensor-count.gguf", gguf(tensor_count=1 << 62))
put("huge-array-count.gguf", gguf(array_count=1 << 61))

# Quantised GGUF: the same layout at dim 32 (one Q8_0 block per row of the
# attention matrices) with every matrix Q8_0, or one matrix given another type.
QDIM, QHID = 32, 64
def q8_0(n):  # n values: blocks of an f16 scale and 32 int8
    return b"".join(struct.pack("<e", 0.01) + bytes(rng.getrandbits(8) for _ in range(32)) for _ in range(n // 32))
def q4_0(n):  # blocks of an f16 scale and 16 bytes of nibbles
    return b"".join(struct.pack("<e", 0.01) + bytes(rng.getrandbits(8) for _ in range(16)) for _ in range(n // 32))
def q4_k(n):  # super-blocks of 256: f16 scale and min, 12 bytes of scales, 128 of nibbles
    return b"".join(struct.pack("<ee", 0.01, 0.01) + bytes(rng.getrandbits(8) for _ in range(140)) for _ in range(n // 256))
BLOBS = {8: q8_0, 2: q4_0, 12: q4_k, 0: floats}
def qgguf(types={}, cut=0, base=8, dim=QDIM, hid=QHID, offsets={}):
    kvs = [gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama")]
    for key, val in [("llama.embedding_length", dim), ("llama.feed_forward_length", hid), ("llama.block_count", 1),
                     ("llama.attention.head_count", 2), ("llama.attention.head_count_kv", 2),
                     ("llama.context_length", CTX)]:
        kvs.append(gstr(key) + struct.pack("<II", 4, val))
    tensors = [("token_embd.weight", [dim, VOCAB], base), ("output_norm.weight", [dim], 0)]
    for name, dims, t in [("attn_norm", [dim], 0), ("attn_q", [dim, dim], base), ("attn_k", [dim, dim], base),
                          ("attn_v", [dim, dim], base), ("attn_output", [dim, dim], base), ("ffn_norm", [dim], 0),
                          ("ffn_gate", [dim, hid], base), ("ffn_down", [hid, dim], base), ("ffn_up", [dim, hid], base)]:
        tensors.append(("blk.0.%s.weight" % name, dims, t))
    infos, data = b"", b""
    for name, dims, t in tensors:
        n = 1
        for x in dims:
            n *= x
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", x) for x in dims)
        infos += struct.pack("<IQ", types.get(name, t), offsets.get(name, len(data)))
        blob = BLOBS[t](n)
        data += blob + bytes((-len(blob)) % 32)
    body = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    whole = body + bytes((-len(body)) % 32) + data
    return whole[:len(whole) - cut]
put("q8_0.gguf", qgguf())
put("iq2_xxs.gguf", qgguf(types={"blk.0.attn_q.weight": 16}))
put("q4_k-rows-of-32.gguf", qgguf(types={"blk.0.attn_q.weight": 12}))
put("q8_0-truncated.gguf", qgguf(cut=700))
# A type field changed, the data left as written: Q4_0 read as Q8_0 (larger:
# it overlaps the next tensor); two tensors at one offset; Q4_K read as Q4_0
# (the same size: scales that are not numbers).
put("q4_0-retyped-q8_0.gguf", qgguf(base=2, types={"blk.0.attn_q.weight": 8}))
put("same-offset.gguf", qgguf(offsets={"blk.0.attn_k.weight": 0}))
put("q4_k-retyped-q4_0.gguf", qgguf(base=12, dim=256, hid=256, types={"blk.0.attn_q.weight": 2}))

# safetensors: a u64 header length, a JSON header, the data; config.json beside it.
os.makedirs(os.path.join(d, "hf"))
put("hf/config.json", json.dumps({"model_type": "llama", "hidden_size": DIM, "intermediate_size": HID,
                                  "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
                                  "vocab_size": VOCAB, "max_position_embeddings": CTX}))
put("hf/header-too-long.safetensors", struct.pack("<Q", 1000000) + b'{"a": 1}' + bytes(56))
junk = b"this is not JSON at all!"
put("hf/header-not-json.safetensors", struct.pack("<Q", len(junk)) + junk + bytes(16))
hdr = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [VOCAB, DIM],
                                                "data_offsets": [0, VOCAB * DIM * 4]}}).encode()
put("hf/offsets-outside.safetensors", struct.pack("<Q", len(hdr)) + hdr + bytes(64))
# The same tiny model as valid safetensors: the control that shows the generator is right.
tensors, off, data = {}, 0, b""
for name, shape in [("model.embed_tokens.weight", [VOCAB, DIM]), ("model.norm.weight", [DIM])] + [
        ("model.layers.0.%s.weight" % n, s) for n, s in [
            ("input_layernorm", [DIM]), ("self_attn.q_proj", [DIM, DIM]), ("self_attn.k_proj", [DIM, DIM]),
            ("self_attn.v_proj", [DIM, DIM]), ("self_attn.o_proj", [DIM, DIM]), ("post_attention_layernorm", [DIM]),
            ("mlp.gate_proj", [HID, DIM]), ("mlp.down_proj", [DIM, HID]), ("mlp.up_proj", [HID, DIM])]]:
    count = 1
    for x in shape:
        count *= x
    tensors[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + 4 * count]}
    off += 4 * count
    data += floats(count)
hdr = json.dumps(tensors).encode()
put("hf/valid.safetensors", struct.pack("<Q", len(hdr)) + hdr + data)
# A header nested 100000 deep; a tokenizer.json beside the weights with more pieces than the model.
for folder in ("hf-deep", "hf-big"):
    os.makedirs(os.path.join(d, folder))
    put(folder + "/config.json", open(os.path.join(d, "hf/config.json")).read())
deep = b'{"a":' + b"[" * 100000 + b"]" * 100000 + b"}"
put("hf-deep/model.safetensors", struct.pack("<Q", len(deep)) + deep)
put("hf-big/model.safetensors", struct.pack("<Q", len(hdr)) + hdr + data)

# tokenizers
put("random.model", bytes(rng.getrandbits(8) for _ in range(4096)))
put("empty.model", b"")

# Byte-level BPE: vocabulary-only GGUF files (tokenizer.ggml.model "gpt2", no
# tensors) whose pieces are the 256 bytes in GPT-2's alphabet, "he", BOS, EOS.
def byte_alphabet():
    own = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    shifted = [b for b in range(256) if b not in own]
    cp = {b: b for b in own}
    cp.update({b: 256 + i for i, b in enumerate(shifted)})
    return [chr(cp[b]) for b in range(256)]
def gkv(key, type_, payload):
    return gstr(key) + struct.pack("<I", type_) + payload
def gstrings(items):
    return struct.pack("<IQ", 8, len(items)) + b"".join(gstr(x) for x in items)
def bpe_gguf(pre="llama-bpe", merges=("h e",)):
    pieces = byte_alphabet() + ["he", "<|begin_of_text|>", "<|end_of_text|>"]
    kvs = [gkv("general.architecture", 8, gstr("llama")), gkv("tokenizer.ggml.model", 8, gstr("gpt2")),
           gkv("tokenizer.ggml.pre", 8, gstr(pre)), gkv("tokenizer.ggml.tokens", 9, gstrings(pieces)),
           gkv("tokenizer.ggml.merges", 9, gstrings(list(merges))),
           gkv("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 257)),
           gkv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 258))]
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
put("vocab-only.gguf", bpe_gguf())
put("bad-merge.gguf", bpe_gguf(merges=("he",)))
put("unknown-piece.gguf", bpe_gguf(merges=("h zz",)))
put("unknown-pre.gguf", bpe_gguf(pre="falcon"))
put("wordpiece.json", json.dumps({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}}}))
# tokenizer.json (byte-level BPE): the 256 bytes, "he", then filler pieces.
def tokenizer_json(extra):
    pieces = byte_alphabet() + ["he", "<|begin_of_text|>", "<|end_of_text|>"] + ["x%d" % i for i in range(extra)]
    return json.dumps({"model": {"type": "BPE", "vocab": {p: i for i, p in enumerate(pieces)}, "merges": ["h e"]},
                       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
                       "decoder": {"type": "ByteLevel"}})
put("bom-tokenizer.json", b"\xef\xbb\xbf" + tokenizer_json(0).encode())
put("hf-big/tokenizer.json", tokenizer_json(600))

# prompt files (FastChat question.jsonl)
put("malformed.jsonl", '{"turns": ["fine"]}\n{"turns": ["cut\n')
put("malformed-first.jsonl", '{"turns": ["cut\n{"turns": ["fine"]}\n')
put("no-turns.jsonl", '{"question_id": 1, "category": "writing"}\n')
put("turns-string.jsonl", '{"turns": "one turn"}\n')
put("turns-empty.jsonl", '{"turns": []}\n')
put("empty-turn.jsonl", '{"turns": [""]}\n')
put("bad-utf8.jsonl", b'{"turns": ["caf\xc3\x28"]}\n')
put("huge-line.jsonl", '{"turns": ["' + "a" * (2 << 20) + '"]}\n')
os.makedirs(os.path.join(d, "prompts-folder"))

# token-id files
put("fine.ids", "1 5 9 13 2 7 7 7 40 41 42 43 44 45 46 47 48\n")
put("words.ids", "1 2 three\n")
put("out-of-vocab.ids", "1 2 2048\n")
put("negative.ids", "1 -2\n")
put("one.ids", "5\n")
put("empty.txt", "")
put("bom.txt", b"\xef\xbb\xbf")

# Long inputs (docs/RELIABILITY.md): one 8 MB word of random letters, and
# 50 MB of ordinary text (the TinyStories sample over and over).
put("word-8m.txt", "".join(rng.choices("abcdefghij", k=8_000_000)))
story = asset("tinystories-valid-sample.txt")
put("text-50m.txt", (story * (50_000_000 // len(story) + 1))[:50_000_000])

put("a-file", "a regular file, not a folder\n")
os.makedirs(os.path.join(d, "empty-folder"))
PY

# GPT-NeoX files from this project's own writer, then edited in place: a bias
# renamed away, and rope.dimension_count (4 of a 16-wide head) made 5: half a pair.
"$cli" convert --model synthetic:pythia-test --type f32 --out "$in/pythia.gguf" </dev/null >/dev/null 2>&1 &&
  python3 - "$in" <<'PY' || { echo "bad_inputs.sh: could not write the GPT-NeoX files" >&2; exit 1; }
import os, struct, sys
d = sys.argv[1]
data = open(os.path.join(d, "pythia.gguf"), "rb").read()
def edited(name, old, new):
    assert data.count(old) == 1 and len(old) == len(new), old
    open(os.path.join(d, name), "wb").write(data.replace(old, new))
edited("pythia-no-bias.gguf", b"blk.1.ffn_up.bias", b"blk.1.ffn_up.bixs")
key = b"gptneox.rope.dimension_count" + struct.pack("<I", 4)
edited("pythia-odd-rotary.gguf", key + struct.pack("<I", 4), key + struct.pack("<I", 5))
PY

# ---- running one case ----------------------------------------------------------

KJV=(--model "$A/kjv-1M.bin" --tokenizer "$A/kjv-tok2k.model")
# Command prefixes (shown by name in the table; @OUT@ is the case's fresh --out path).
declare -A BASE=(
  [S]="stream --quiet ${KJV[*]} --out @OUT@"
  [SK]="stream --quiet ${KJV[*]}"
  [M]="stream --quiet --out @OUT@ --model"
  [E]="eval ${KJV[*]} --ids $in/fine.ids --out @OUT@"
  [EI]="eval ${KJV[*]} --out @OUT@"
  [G]="generate ${KJV[*]}"
  [P]="sample ${KJV[*]}"
  [N]="needle ${KJV[*]} --out @OUT@"
)

n=0 one_line=0 nonzero=0 leftovers=0 accepted=0
suspicious=()

# Paths shown short: in/ (generated inputs), out/ (the case's output folder), $A (assets).
shorten() {
  local s=$1
  s=${s//"$case_dir"/out}
  s=${s//"$in"/in}
  s=${s//"$tmp"/tmp}
  s=${s//"$A"/\$A}
  s=${s//"$cli"/h2o-cli}
  printf '%s' "$s"
}

quote_args() {
  local out="" a re='^[-A-Za-z0-9_./:,=@+$]+$'
  for a in "$@"; do
    if [[ $a =~ $re ]]; then out+=" $a"; else out+=" '$a'"; fi
  done
  printf '%s' "${out# }"
}

# A Markdown cell: stderr lines joined with ⏎, paths shortened, no control
# characters, backticks and pipes made safe, at most 160 characters.
message_cell() {
  local file=$1 pick=${2:-} msg
  msg=$( { if [ -n "$pick" ]; then grep -m 1 -e "$pick" "$file" || cat "$file"; else cat "$file"; fi; } | tr -d '\r' | tr '\000-\011\013-\037' '?' | sed -e ':a;N;$!ba;s/\n/ ⏎ /g')
  msg=$(shorten "$msg")
  msg=${msg//\`/\'}
  [ ${#msg} -gt 160 ] && msg="${msg:0:159}…"
  msg=${msg//|/\\|}
  [ -z "$msg" ] && { printf '(empty)'; return; }
  printf '`%s`' "$msg"
}

# Files and folders under $1, comma-separated (folders end in /); empty if none.
list_under() {
  [ -d "$1" ] || return 0
  (cd "$1" && find . -mindepth 1 \( -type d -printf '%P/\n' -o -printf '%P\n' \) | LC_ALL=C sort | paste -sd, - | sed 's/,/, /g')
}

row() {  # class, command, message cell, exit code, stderr lines, files cell
  printf '| %s | `%s` | %s | %s | %s | %s |\n' "$1" "${2//|/\\|}" "$3" "$4" "$5" "$6"
}

new_case() {
  n=$((n + 1))
  case_dir=$tmp/out/$n
  mkdir -p "$case_dir"
  err=$logs/$n.err
}

# run_case CLASS KIND BASE ARGS...
#   KIND  bad: bad input, expected to fail cleanly; valid: accepted input whose outcome is shown
#   BASE  a key of BASE (its prefix goes first) or - for none
# Unless the case sets them itself, --threads 1 and small counts are added so that
# an accepted bad input still finishes fast.
run_case() {
  local class=$1 kind=$2 base=$3
  shift 3
  new_case
  local -a args=()
  [ "$base" != - ] && read -r -a args <<<"${BASE[$base]}"
  args+=("$@")
  local shown="h2o-cli"
  [ "$base" != - ] && shown+=" \$$base"
  [ $# -gt 0 ] && shown+=" $(quote_args "$@")"
  shown=$(shorten "${shown//@OUT@/out/run}")

  local -a real=() targets=()
  local a prev=""
  for a in "${args[@]}"; do
    a=${a//@OUT@/$case_dir/run}
    real+=("$a")
    # An output outside the case folder that exists already (a folder given as a file) is not a leftover.
    case $prev in --out | --csv) [ -e "$a" ] || targets+=("$a") ;; esac
    prev=$a
  done
  local sub=${real[0]} joined=" ${real[*]} "
  add() { [[ $joined == *" $1 "* ]] || real+=("$1" "$2"); }
  case $sub in info | tokenize | convert) ;; *) add --threads 1 ;; esac
  case $sub in
    stream) add --questions 1; add --max-new-tokens 2 ;;
    generate) add --max-new-tokens 2 ;;
    eval) [[ $joined == *" --lengths "* ]] || add --max-tokens 16 ;;  # --lengths refuses --max-tokens beside it
    sample) add --tokens 8 ;;
    needle) add --lengths 64; add --depths 0,100; add --budgets 32 ;;  # a small grid unless the case gives its own
  esac

  timeout 60 nice -n 10 "$cli" "${real[@]}" </dev/null >"$logs/$n.out" 2>"$err"
  local rc=$?
  local lines
  lines=$(awk 'END { print NR }' "$err")

  local left t
  left=$(list_under "$case_dir")
  for t in "${targets[@]}"; do
    [[ $t == "$case_dir"/* ]] && continue
    [ -e "$t" ] && left+="${left:+, }$(shorten "$t")"
    for f in "$t".tmp-*; do [ -e "$f" ] && left+="${left:+, }$(shorten "$f")"; done
  done
  local files
  if [ "$kind" = valid ]; then
    accepted=$((accepted + 1))
    files="accepted; wrote: ${left:-nothing}"
  else
    files=${left:-none}
  fi
  row "$class" "$shown" "$(message_cell "$err")" "$rc" "$lines" "$files"

  [ "$rc" -ne 0 ] && nonzero=$((nonzero + 1))
  [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && one_line=$((one_line + 1))
  if [ "$kind" = bad ]; then
    [ -n "$left" ] && leftovers=$((leftovers + 1))
    local why=()
    [ "$rc" -eq 0 ] && why+=("exit 0")
    [ "$rc" -eq 124 ] && why+=("hang (timeout)")
    [ "$rc" -ge 128 ] && why+=("killed by a signal (exit $rc)")
    [ "$lines" -ne 1 ] && why+=("$lines lines on stderr")
    grep -qiE 'terminate called|what\(\)|Aborted|Segmentation|core dumped' "$err" && why+=("crash text on stderr")
    [ -n "$left" ] && why+=("left: $left")
    if [ ${#why[@]} -gt 0 ]; then
      local w
      w=$(printf '%s; ' "${why[@]}")
      suspicious+=("$class — ${w%; } — $(shorten "$(quote_args h2o-cli "${real[@]}")")")
    fi
  fi
}

# signal_case CLASS SIGNAL EXPECTED_EXIT: a real stream on the default kjv model,
# stopped by SIGNAL about 2 s after it started streaming.
signal_case() {
  local class=$1 sig=$2 want=$3
  new_case
  local -a real=(stream --quiet --threads 1 --questions 3 --max-new-tokens 2000 --out "$case_dir/run")
  nice -n 10 "$cli" "${real[@]}" </dev/null >"$logs/$n.out" 2>"$err" &
  bg_pid=$!
  # The handlers are installed right after the "streaming ..." line.
  local i
  for ((i = 0; i < 300; i++)); do
    grep -q '^streaming' "$err" 2>/dev/null && break
    kill -0 "$bg_pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 2
  local sent=no
  kill -0 "$bg_pid" 2>/dev/null && kill -s "$sig" "$bg_pid" 2>/dev/null && sent=yes
  for ((i = 0; i < 600; i++)); do kill -0 "$bg_pid" 2>/dev/null || break; sleep 0.1; done
  local hung=no
  if kill -0 "$bg_pid" 2>/dev/null; then hung=yes; kill -KILL "$bg_pid" 2>/dev/null; fi
  wait "$bg_pid"
  local rc=$?
  bg_pid=
  local lines
  lines=$(awk 'END { print NR }' "$err")

  local present status partial tmps notes=()
  present=$(list_under "$case_dir/run")
  status=$(sed -n 's/.*"status" *: *"\([a-z]*\)".*/\1/p' "$case_dir/run/manifest.json" 2>/dev/null | head -n 1)
  partial=$(sed -n 's/.*"partial" *: *\([a-z]*\).*/\1/p' "$case_dir/run/manifest.json" 2>/dev/null | head -n 1)
  tmps=$(find "$case_dir" -name '*.tmp-*' | wc -l)
  local files="run/: ${present:-nothing}; manifest status: ${status:-none}, partial: ${partial:-none}; *.tmp-* files: $tmps"
  row "$class" "$(quote_args h2o-cli "${real[@]}" | sed "s|$case_dir|out|g") (kill -$sig after ~2 s)" \
    "$(message_cell "$err" 'interrupted')" "$rc" "$lines" "$files"

  [ "$rc" -ne 0 ] && nonzero=$((nonzero + 1))
  [ "$sent" = no ] && notes+=("the run ended before the signal was sent")
  [ "$hung" = yes ] && notes+=("did not stop within 60 s of the signal")
  [ "$rc" -ne "$want" ] && notes+=("exit $rc, expected $want")
  [ "$status" != interrupted ] && notes+=("manifest status '${status:-none}', expected interrupted")
  [ "$partial" != true ] && notes+=("manifest partial '${partial:-none}', expected true")
  [ "$tmps" -ne 0 ] && notes+=("$tmps *.tmp-* files left")
  if [ ${#notes[@]} -gt 0 ]; then
    local w
    w=$(printf '%s; ' "${notes[@]}")
    suspicious+=("$class — ${w%; } — $(quote_args h2o-cli "${real[@]}" | sed "s|$case_dir|out|g") & sleep 2; kill -$sig \$!")
  fi
}

# verdict CLASS SHOWN MESSAGE RC LINES FILES PROBLEM...: prints the row, counts
# it, and lists it under "Looks wrong" when any PROBLEM (non-empty) was found.
verdict() {
  local class=$1 shown=$2 message=$3 rc=$4 lines=$5 files=$6
  shift 6
  row "$class" "$shown" "$message" "$rc" "$lines" "$files"
  [ "$rc" -ne 0 ] && nonzero=$((nonzero + 1))
  [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && one_line=$((one_line + 1))
  local p why=()
  for p in "$@"; do [ -n "$p" ] && why+=("$p"); done
  if [ ${#why[@]} -gt 0 ]; then
    local w
    w=$(printf '%s; ' "${why[@]}")
    suspicious+=("$class — ${w%; } — $shown")
  fi
}

# last_line_has FILE NEEDLE: the last line of FILE contains NEEDLE.
last_line_has() { tail -n 1 "$1" | grep -qF -- "$2"; }

# fault_case CLASS SHELL NEEDLE ARGS...: a run under a fault the shell sets up
# (a file-size limit for a full disk, a stack size no thread can get) must end
# with a non-zero exit below 128 whose last stderr line says NEEDLE, leaving
# nothing in its output folder. Progress lines before it are allowed. With
# keep=partial set, logs may stay when their manifest says "partial": true.
fault_case() {
  local class=$1 shell=$2 needle=$3
  shift 3
  new_case
  local -a real=()
  local a
  for a in "$@"; do real+=("${a//@OUT@/$case_dir/run}"); done
  (eval "$shell"; exec timeout 120 nice -n 10 "$cli" "${real[@]}") </dev/null >"$logs/$n.out" 2>"$err"
  local rc=$? lines left
  lines=$(awk 'END { print NR }' "$err")
  left=$(list_under "$case_dir")
  local p1="" p2="" p3=""
  { [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; } && p1="exit $rc"
  last_line_has "$err" "$needle" || p2="last line does not say '$needle'"
  local partial
  partial=$(sed -n 's/.*"partial" *: *\([a-z]*\).*/\1/p' "$case_dir/run/manifest.json" 2>/dev/null)
  if [ -n "${keep:-}" ] && [ -n "$left" ]; then
    [ "$partial" != true ] && p3="left: $left (manifest partial: ${partial:-none})"
    left="$left (manifest partial: ${partial:-none})"
  elif [ -n "$left" ]; then
    p3="left: $left"
  fi
  verdict "$class" "$(shorten "($shell) $(quote_args h2o-cli "${real[@]}")")" "$(message_cell "$err" "$needle")" \
    "$rc" "$lines" "${left:-none}" "$p1" "$p2" "$p3"
}

# input_kept_case CLASS SOURCE NAME ARGS...: SOURCE copied to out/NAME (@IN@ in
# ARGS), then a command whose output is that same file: refused in one line,
# the file byte for byte as it was, nothing else written.
input_kept_case() {
  local class=$1 source=$2 name=$3
  shift 3
  new_case
  cp "$source" "$case_dir/$name"
  local before after
  before=$(cksum <"$case_dir/$name")
  local -a real=()
  local a
  for a in "$@"; do a=${a//@IN@/$case_dir/$name}; real+=("${a//@OUT@/$case_dir/run}"); done
  [ "$1" != convert ] && real+=(--threads 1)
  timeout 60 nice -n 10 "$cli" "${real[@]}" </dev/null >"$logs/$n.out" 2>"$err"
  local rc=$? lines left
  lines=$(awk 'END { print NR }' "$err")
  after=$(cksum <"$case_dir/$name")
  left=$(list_under "$case_dir" | sed "s/^$name\(, \)\?//; s/, $name\b//")
  local kept="input intact" p1="" p2="" p3=""
  [ "$before" != "$after" ] && kept="INPUT CHANGED" && p1="the input was overwritten"
  { [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; } && p2="exit $rc"
  [ "$lines" -ne 1 ] && p3="$lines lines on stderr"
  verdict "$class" "$(shorten "$(quote_args h2o-cli "${real[@]}")")" "$(message_cell "$err")" "$rc" "$lines" \
    "$kept; other files: ${left:-none}" "$p1" "$p2" "$p3" "${left:+left: $left}"
}

# run_folder_case CLASS MODE: a second stream into a run folder that holds an
# earlier run (MODE done), is held by a live run (busy), or holds a dead run's
# lock and temporaries (stale: taken over, the run succeeds).
run_folder_case() {
  local class=$1 mode=$2
  new_case
  local out=$case_dir/run bg=
  local -a base=(stream --quiet "${KJV[@]}" --threads 1 --questions 1 --out "$out")
  case $mode in
    done) timeout 60 "$cli" "${base[@]}" --max-new-tokens 2 </dev/null >/dev/null 2>&1 ;;
    busy)
      "$cli" "${base[@]}" --max-new-tokens 100000 </dev/null >/dev/null 2>&1 &
      bg=$! bg_pid=$!
      local i
      for ((i = 0; i < 300; i++)); do [ -e "$out/.h2o-run.lock" ] && break; sleep 0.1; done ;;
    stale)
      mkdir -p "$out"
      echo 999999999 >"$out/.h2o-run.lock"
      printf '{"step": 0, "pha' >"$out/steps.jsonl.tmp-999999999" ;;
  esac
  local before
  before=$(cat "$out"/manifest.json 2>/dev/null | cksum)
  timeout 60 nice -n 10 "$cli" "${base[@]}" --max-new-tokens 2 </dev/null >"$logs/$n.out" 2>"$err"
  local rc=$? lines
  lines=$(awk 'END { print NR }' "$err")
  [ -n "$bg" ] && { kill -TERM "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; bg_pid=; }
  local present p1="" p2="" p3=""
  present=$(list_under "$out")
  if [ "$mode" = stale ]; then
    accepted=$((accepted + 1))
    [ "$rc" -ne 0 ] && p1="exit $rc"
    [[ $present == *tmp-* || $present == *.h2o-run.lock* ]] && p2="the dead run's files stayed"
    verdict "$class" "h2o-cli \$SK --out out/run (out/run: .h2o-run.lock of pid 999999999, steps.jsonl.tmp-999999999)" \
      "$(message_cell "$err")" "$rc" "$lines" "accepted; out/run: ${present:-nothing}" "$p1" "$p2"
    return
  fi
  { [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; } && p1="exit $rc"
  [ "$lines" -ne 1 ] && p2="$lines lines on stderr"
  [ "$mode" = done ] && [ "$(cat "$out"/manifest.json 2>/dev/null | cksum)" != "$before" ] && p3="the earlier run was replaced"
  verdict "$class" "h2o-cli \$SK --out out/run (out/run: $([ "$mode" = done ] && echo "an earlier run" || echo "a live run's"))" \
    "$(message_cell "$err")" "$rc" "$lines" "out/run: ${present:-nothing}" "$p1" "$p2" "$p3"
}

# convert_signal_case CLASS SIGNAL: `convert` (stories110M to Q4_K_M, seconds)
# sent SIGNAL while writing: it must die of it (exit 128 + the signal through
# a shell) leaving no temporary and no output; after KILL, the temporary stays
# and the next convert writing there removes it.
convert_signal_case() {
  local class=$1 sig=$2
  new_case
  local -a real=(convert --model synthetic:stories110M --type q4_k_m --out "$case_dir/x.gguf")
  "$cli" "${real[@]}" </dev/null >"$logs/$n.out" 2>"$err" &
  bg_pid=$!
  local i
  for ((i = 0; i < 1200; i++)); do
    compgen -G "$case_dir/x.gguf.tmp-*" >/dev/null && break
    kill -0 "$bg_pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -s "$sig" "$bg_pid" 2>/dev/null
  wait "$bg_pid"
  local rc=$? lines left p1="" p2="" note=""
  bg_pid=
  lines=$(awk 'END { print NR }' "$err")
  if [ "$sig" = KILL ]; then
    left=$(list_under "$case_dir")
    timeout 60 "$cli" convert --model synthetic:stories260K --type f16 --out "$case_dir/x.gguf" </dev/null >/dev/null 2>&1
    note="after KILL: $left; after the next convert: $(list_under "$case_dir")"
    [[ $(list_under "$case_dir") == *tmp-* ]] && p1="the next convert left the dead one's temporary"
    verdict "$class" "h2o-cli convert --model synthetic:stories110M --type q4_k_m --out out/x.gguf (kill -$sig mid-write), then convert again" \
      "(killed)" "$rc" "$lines" "$note" "$p1"
    return
  fi
  left=$(list_under "$case_dir")
  [ "$rc" -lt 128 ] && p1="exit $rc, expected 128 + the signal"
  [ -n "$left" ] && p2="left: $left"
  verdict "$class" "h2o-cli convert --model synthetic:stories110M --type q4_k_m --out out/x.gguf (kill -$sig mid-write)" \
    "$(message_cell "$err")" "$rc" "$lines" "${left:-none}" "$p1" "$p2"
}

# sample_signal_case: `sample` of 10^7 ids interrupted (SIGINT): the ids it has
# are kept, and its manifest says partial.
sample_signal_case() {
  new_case
  local ids=$case_dir/ids.txt
  local -a real=(sample "${KJV[@]}" --threads 1 --temperature 1 --tokens 10000000 --out "$ids")
  "$cli" "${real[@]}" </dev/null >"$logs/$n.out" 2>"$err" &
  bg_pid=$!
  local i
  for ((i = 0; i < 600; i++)); do compgen -G "$ids.tmp-*" >/dev/null && break; sleep 0.05; done
  sleep 1
  kill -INT "$bg_pid" 2>/dev/null
  wait "$bg_pid"
  local rc=$? lines partial written p1="" p2=""
  bg_pid=
  lines=$(awk 'END { print NR }' "$err")
  partial=$(sed -n 's/.*"partial" *: *\([a-z]*\).*/\1/p' "$ids.manifest.json" 2>/dev/null)
  written=$(wc -w <"$ids" 2>/dev/null)
  [ "$rc" -ne 130 ] && p1="exit $rc, expected 130"
  [ "$partial" != true ] && p2="manifest partial: '${partial:-none}'"
  verdict "interrupted sample (SIGINT)" "$(shorten "$(quote_args h2o-cli "${real[@]}")") (kill -INT after ~1 s)" \
    "$(message_cell "$err")" "$rc" "$lines" "ids.txt: ${written:-0} ids; manifest partial: ${partial:-none}; $(list_under "$case_dir")" "$p1" "$p2"
}

# ---- the cases -------------------------------------------------------------------

echo "| class of bad input | command (short) | message (stderr, one line) | exit code | lines on stderr | output files left behind |"
echo "|---|---|---|---:|---:|---|"

# llama2.c checkpoints
run_case "llama2.c: truncated file (first 100000 bytes)" bad M "$in/truncated.bin"
run_case "llama2.c: zero-length file" bad M "$in/empty.bin"
run_case "llama2.c: header with negative dim" bad M "$in/negative-dim.bin"
run_case "llama2.c: header whose sizes overflow 64 bits" bad M "$in/overflow.bin"
run_case "llama2.c: header with vocab 0" bad M "$in/vocab0.bin"
run_case "llama2.c: trailing junk after the weights" bad M "$in/trailing.bin"
# GGUF
run_case "control: the generator's tiny GGUF, intact" valid - info --model "$in/valid.gguf"
run_case "GGUF: bad magic (GGUX)" bad M "$in/bad-magic.gguf"
run_case "GGUF: unsupported version 1" bad M "$in/version-1.gguf"
run_case "GGUF: unsupported version 4" bad M "$in/version-4.gguf"
run_case "GGUF: tensor offset past the end" bad M "$in/offset-past-end.gguf"
run_case "GGUF: string length 2^62" bad M "$in/huge-string.gguf"
run_case "GGUF: tensor count 2^62" bad M "$in/huge-tensor-count.gguf"
run_case "GGUF: metadata array count 2^61" bad M "$in/huge-array-count.gguf"
run_case "control: the generator's tiny Q8_0 GGUF, intact" valid - info --model "$in/q8_0.gguf"
run_case "GGUF: a quantisation type this reader does not know (IQ2_XXS)" bad M "$in/iq2_xxs.gguf"
run_case "GGUF: Q4_K rows of 32 values (K-quant blocks hold 256)" bad M "$in/q4_k-rows-of-32.gguf"
run_case "GGUF: Q8_0 tensor data cut short" bad M "$in/q8_0-truncated.gguf"
run_case "GGUF: a Q4_0 tensor retyped Q8_0 (overlaps the next)" bad M "$in/q4_0-retyped-q8_0.gguf"
run_case "GGUF: two tensors at one offset" bad M "$in/same-offset.gguf"
run_case "GGUF: a Q4_K tensor retyped Q4_0 (same size)" bad M "$in/q4_k-retyped-q4_0.gguf"
run_case "control: a GPT-NeoX GGUF from convert, intact" valid - info --model "$in/pythia.gguf"
run_case "GGUF: a GPT-NeoX file missing a bias (blk.1.ffn_up.bias)" bad M "$in/pythia-no-bias.gguf"
run_case "GGUF: a GPT-NeoX rotary part of 5 dimensions (half a pair)" bad M "$in/pythia-odd-rotary.gguf"
# safetensors
run_case "control: the generator's tiny safetensors, intact" valid - info --model "$in/hf/valid.safetensors"
run_case "safetensors: header length larger than the file" bad M "$in/hf/header-too-long.safetensors"
run_case "safetensors: header not JSON" bad M "$in/hf/header-not-json.safetensors"
run_case "safetensors: tensor data_offsets outside the file" bad M "$in/hf/offsets-outside.safetensors"
run_case "safetensors: header nested 100000 deep" bad M "$in/hf-deep"
# model path
run_case "model file missing" bad M "$in/nope.bin"
run_case "model path is a folder (no weights)" bad M "$in/empty-folder"
run_case "model missing (info)" bad - info --model "$in/nope.bin"
# tokenizers
run_case "tokenizer: random bytes" bad M "$A/kjv-1M.bin" --tokenizer "$in/random.model"
run_case "tokenizer: empty file" bad M "$A/kjv-1M.bin" --tokenizer "$in/empty.model"
run_case "tokenizer: 32000 pieces for a 2048-token model" bad M "$A/kjv-1M.bin" --tokenizer "$A/tokenizer.model"
run_case "tokenizer: 2048 pieces for a 512-token model" bad M "$A/stories260K.bin" --tokenizer "$A/kjv-tok2k.model"
run_case "tokenizer: random bytes (info)" bad - info --model "$A/kjv-1M.bin" --tokenizer "$in/random.model"
run_case "tokenizer: tokenizer.json of a WordPiece model" bad M "$A/kjv-1M.bin" --tokenizer "$in/wordpiece.json"
run_case "tokenizer: tokenizer.json beside the weights, 859 pieces for 512" bad M "$in/hf-big"
run_case "model: vocabulary-only GGUF (no tensors)" bad M "$in/vocab-only.gguf"
# tokenize (byte-level BPE vocabularies, tokenizer.json)
run_case "control: vocabulary-only GGUF as the tokenizer" valid - tokenize --tokenizer "$in/vocab-only.gguf" hehe
run_case "tokenize: GGUF merge without a space" bad - tokenize --tokenizer "$in/bad-merge.gguf" hello
run_case "tokenize: GGUF merge naming an unknown piece" bad - tokenize --tokenizer "$in/unknown-piece.gguf" hello
run_case "tokenize: unknown tokenizer.ggml.pre" bad - tokenize --tokenizer "$in/unknown-pre.gguf" hello
run_case "tokenize: tokenizer.json of a WordPiece model" bad - tokenize --tokenizer "$in/wordpiece.json" hello
run_case "control: tokenizer.json starting with a UTF-8 BOM" valid - tokenize --tokenizer "$in/bom-tokenizer.json" hehe
run_case "tokenize: neither TEXT nor --text-file" bad - tokenize --tokenizer "$A/kjv-tok2k.model"
run_case "tokenize: --text-file missing" bad - tokenize --tokenizer "$A/kjv-tok2k.model" --text-file "$in/nope.txt"
# long inputs: bounded work (O(n log n) merges), a progress line, under the 60 s timeout
if [ -f "$A/vocab/ggml-vocab-llama-bpe.gguf" ] && [ -f "$A/vocab/ggml-vocab-llama-spm.gguf" ]; then
  run_case "control: one 8 MB word, byte-level BPE (Llama-3)" valid - tokenize --tokenizer "$A/vocab/ggml-vocab-llama-bpe.gguf" --text-file "$in/word-8m.txt"
  run_case "control: one 8 MB word, SentencePiece (Llama-2 GGUF)" valid - tokenize --tokenizer "$A/vocab/ggml-vocab-llama-spm.gguf" --text-file "$in/word-8m.txt"
  run_case "control: 50 MB of text, byte-level BPE (Llama-3)" valid - tokenize --tokenizer "$A/vocab/ggml-vocab-llama-bpe.gguf" --text-file "$in/text-50m.txt"
fi
# prompts JSONL
run_case "prompts: malformed JSON on line 1" bad S --prompts "$in/malformed-first.jsonl"
run_case "prompts: malformed JSON on line 2, all questions read" bad S --prompts "$in/malformed.jsonl" --questions 0
run_case "prompts: malformed JSON on line 2 with --questions 1 (line 2 never read)" valid S --prompts "$in/malformed.jsonl" --questions 1
run_case "prompts: no \"turns\"" bad S --prompts "$in/no-turns.jsonl"
run_case "prompts: \"turns\" is a string" bad S --prompts "$in/turns-string.jsonl"
run_case "prompts: \"turns\" is empty" bad S --prompts "$in/turns-empty.jsonl"
run_case "prompts: empty turn" bad S --prompts "$in/empty-turn.jsonl"
run_case "prompts: invalid UTF-8" bad S --prompts "$in/bad-utf8.jsonl"
run_case "prompts: a 2 MiB line" bad S --prompts "$in/huge-line.jsonl"
run_case "prompts: a folder" bad S --prompts "$in/prompts-folder"
run_case "prompts: missing file" bad S --prompts "$in/nope.jsonl"
# token ids
run_case "ids file: not a number" bad EI --ids "$in/words.ids"
run_case "ids file: id >= vocabulary (2048)" bad EI --ids "$in/out-of-vocab.ids"
run_case "ids file: negative id" bad EI --ids "$in/negative.ids"
run_case "ids file: a folder" bad EI --ids "$in/prompts-folder"
run_case "--prompt-ids: id >= vocabulary" bad G --prompt-ids 1,99999
run_case "--prompt-ids: negative id" bad G --prompt-ids 1,-2
run_case "eval ids file: one id" bad EI --ids "$in/one.ids"
run_case "eval text: empty" bad EI --text "$in/empty.txt"
run_case "eval text: only a UTF-8 BOM" bad EI --text "$in/bom.txt"
# numeric flags
run_case "--budget 0" bad S --budget 0
run_case "--budget 2147483647" bad S --budget 2147483647
run_case "--window 2147483647" bad S --policies streaming --window 2147483647
run_case "--slack 2147483647" bad S --slack 2147483647
run_case "--budget beyond memory (stories15M, 16777216)" bad M synthetic:stories15M --budget 16777216
run_case "--sinks larger than --budget" bad S --budget 8 --sinks 16
run_case "--threads 0 (documented: all cores)" valid S --threads 0
run_case "--threads -1" bad S --threads -1
run_case "--threads 10000" bad S --threads 10000
run_case "--seed -1" bad S --seed -1
run_case "--seed 2^64" bad S --seed 18446744073709551616
run_case "--questions -1" bad S --questions -1
run_case "--max-new-tokens -1" bad S --max-new-tokens -1
run_case "--max-new-tokens 0" bad S --max-new-tokens 0
run_case "--temperature -1" bad S --temperature -1
run_case "--top-p 0" bad S --top-p 0
run_case "--top-p 2" bad S --top-p 2
run_case "--prefill-chunk 0" bad S --prefill-chunk 0
run_case "eval --budgets 0" bad E --budgets 0
run_case "eval --max-tokens -1" bad E --max-tokens -1
run_case "eval --max-tokens 1" bad E --max-tokens 1
run_case "eval --budgets 99999999999" bad E --budgets 99999999999
run_case "--heavy-ratio 0" bad G --heavy-ratio 0
run_case "--budget-ratio 1.5" bad G --budget-ratio 1.5
run_case "--budget-ratio with --budget" bad G --budget-ratio 0.5 --budget 10
run_case "--heavy-ratio with --policy streaming" bad G --policy streaming --heavy-ratio 0.5
run_case "stream --recent-ratio (a stream has no length)" bad S --recent-ratio 0.1
run_case "eval --ratios 0.1,x" bad E --ratios 0.1,x
run_case "eval --ratios 0 " bad E --ratios 0
run_case "eval --configs h2o_8_256 (a part missing)" bad E --configs h2o_8_256
run_case "eval --configs streaming_8_8 (no room)" bad E --configs streaming_8_8
run_case "eval --configs h2o_0_0_64 (recent 0)" bad E --configs h2o_0_0_64
run_case "eval --configs h2o_8_32_99999999999 (capacity past 2^24)" bad E --configs h2o_8_32_99999999999
run_case "eval --budget-ratio 0.001 (a budget of 0)" bad E --budget-ratio 0.001
run_case "generate --budget-ratio 0.01 (a budget of 0)" bad G --budget-ratio 0.01
run_case "eval --kv-bits k4 (a pane's form)" bad E --kv-bits k4
run_case "eval --kv-bits 32,4,2 (a list: --kv-sweep's)" bad E --kv-bits 32,4,2
run_case "eval --kv-sweep 16,5" bad E --kv-sweep 16,5
run_case "eval --kv-bits 4 --kv-sweep 32,4 (both)" bad E --kv-bits 4 --kv-sweep 32,4
run_case "a text file as the model" bad M "$A/mt_bench.jsonl"
run_case "eval --lengths 0" bad E --lengths 0
run_case "eval --lengths 8,-5 (negative)" bad E --lengths 8,-5
run_case "eval --lengths 8,x (not a number)" bad E --lengths 8,x
run_case "eval --lengths 16,8 (not increasing)" bad E --lengths 16,8
run_case "eval --lengths 99999999 (above 2^24)" bad E --lengths 99999999
run_case "eval --lengths past the ids file" bad E --lengths 8,100000
run_case "eval --lengths with --ratios" bad E --lengths 8,16 --ratios 0.5
run_case "eval --lengths with --max-tokens" bad E --lengths 8,16 --max-tokens 16
run_case "needle --depths 101" bad N --depths 101
run_case "needle --lengths past the haystack" bad N --lengths 64,99999999
run_case "needle longer than the room" bad N --lengths 4
run_case "needle --answer '' (empty)" bad N --answer ''
run_case "needle --needle and --needle-ids" bad N --needle x --needle-ids "$in/fine.ids"
run_case "needle --haystack-ids: not ids" bad N --haystack-ids "$A/mt_bench.jsonl"
run_case "needle --budgets 0" bad N --budgets 0
run_case "needle, the defaults (control)" valid N
run_case "sample --tokens 1" bad P --tokens 1 --out @OUT@
run_case "unknown policy in --policies" bad S --policies full,lru
run_case "unknown --policy" bad G --policy lru
run_case "unknown flag" bad S --bogus 1
run_case "non-numeric value (--budget abc)" bad S --budget abc
run_case "non-numeric value (--threads two)" bad S --threads two
# outputs
run_case "--out in /proc" bad SK --out /proc/forbidden
run_case "--out under a regular file" bad SK --out "$in/a-file/logs"
run_case "eval --csv in /proc" bad E --csv /proc/forbidden.csv
run_case "sample --out in /proc" bad P --out /proc/forbidden/ids.txt
run_case "sample --out under a regular file" bad P --out "$in/a-file/ids.txt"
run_case "eval --csv a folder" bad E --csv "$in/empty-folder"
run_case "eval --csv a device (/dev/null)" bad E --csv /dev/null
run_case "eval --csv one of the run's own logs" bad E --csv @OUT@/steps.csv
run_case "sample --out a folder" bad P --out "$in/empty-folder"
run_case "convert --out a folder" bad - convert --model "$A/stories260K.bin" --type f32 --out "$in/empty-folder"
input_kept_case "eval --csv the --ids file" "$in/fine.ids" ids.txt eval "${KJV[@]}" --ids @IN@ --csv @IN@ --out @OUT@
input_kept_case "sample --out the model file" "$A/stories260K.bin" model.bin sample --model @IN@ --tokens 8 --out @IN@
input_kept_case "convert --out the model file" "$A/stories260K.bin" model.bin convert --model @IN@ --type f16 --out @IN@
run_folder_case "stream --out: a folder holding an earlier run" done
run_folder_case "stream --out: a folder a live run holds" busy
run_folder_case "control: stream --out: a dead run's lock and temporary" stale
# faults
fault_case "full disk during stream (file size limit 20 KiB)" "ulimit -f 40" "write failed (disk full?)" \
  stream --quiet "${KJV[@]}" --threads 1 --questions 1 --max-new-tokens 100000 --out @OUT@
fault_case "full disk during eval (file size limit 20 KiB)" "ulimit -f 40" "write failed (disk full?)" \
  eval "${KJV[@]}" --threads 1 --ids "$in/fine.ids" --out @OUT@
fault_case "threads refused by the system (stack limit 1 TB)" "ulimit -s 1000000000" "--threads" \
  generate "${KJV[@]}" --threads 2 --max-new-tokens 2
keep=partial fault_case "--kv-limit too small for every session (logs kept, partial)" "" "--kv-limit" \
  stream --quiet --model synthetic:stories15M --threads 1 --questions 1 --max-new-tokens 400 --kv-limit 1 --out @OUT@
# interrupted runs
signal_case "interrupted run (SIGINT)" INT 130
signal_case "interrupted run (SIGTERM)" TERM 143
signal_case "interrupted run (SIGHUP)" HUP 129
sample_signal_case
convert_signal_case "interrupted convert (SIGTERM)" TERM
convert_signal_case "interrupted convert (SIGINT)" INT
convert_signal_case "interrupted convert (SIGHUP)" HUP
convert_signal_case "killed convert (SIGKILL), then convert again" KILL

echo
echo "Command prefixes: \$A = $A; in/ = the generated bad inputs; out/ = the case's fresh output folder."
for k in S SK M E EI G P; do
  echo "- \`\$$k\` = \`$(shorten "${BASE[$k]//@OUT@/out/run}")\`"
done
echo "- Unless a case sets them: \`--threads 1\`; stream \`--questions 1 --max-new-tokens 2\`; generate \`--max-new-tokens 2\`; eval \`--max-tokens 16\` (not beside \`--lengths\`, which refuses it); sample \`--tokens 8\`."
echo
if [ ${#suspicious[@]} -gt 0 ]; then
  echo "Looks wrong (${#suspicious[@]}):"
  for s in "${suspicious[@]}"; do echo "- $s"; done
else
  echo "Looks wrong: nothing."
fi
echo
echo "Rows: $((n - accepted)) bad inputs and faults, $accepted accepted inputs shown for reference (controls, documented meanings)."
echo "$n cases, $one_line one-line errors, $nonzero non-zero exits, $leftovers with files left behind"
