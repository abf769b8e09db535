# Sourced by scripts/speed.sh and scripts/batched_speed.sh: the GGUF files of synthetic weights both
# time, written once with this project's converter (the Llama-2 vocabulary from the assets) under
# one folder and one name per shape and type, so that every script and thread count times the same file.
#
#   synthetic_gguf_folder SCRIPT FOLDER   checks the vocabulary is there, makes FOLDER (exit 1 naming SCRIPT)
#   synthetic_gguf CLI FOLDER SHAPE TYPE  prints FOLDER/SHAPE-TYPE.gguf, converting it first if absent
synthetic_gguf_vocab=${H2O_ASSETS:-../shared/assets}/vocab/ggml-vocab-llama-spm.gguf

synthetic_gguf_folder() {
  [ -f "$synthetic_gguf_vocab" ] || { echo "$1: $synthetic_gguf_vocab not found (set H2O_ASSETS)" >&2; exit 1; }
  mkdir -p "$2"
}

synthetic_gguf() {
  local file=$2/$3-$4.gguf
  [ -f "$file" ] || "$1" convert --model "synthetic:$3:dtype=$4" --type "$4" --vocab "$synthetic_gguf_vocab" --out "$file" >&2
  echo "$file"
}
