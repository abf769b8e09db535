#!/usr/bin/env bash
# Runs HERE, on the development machine (Debian 12, no GPU): fills the ignored
# folder .gpu-carry/ that the device tool's `carry` sends along with the
# checkout, so that tests/gpu/run_on_device.sh can build and check there.
#
#   .gpu-carry/debs/     Debian 12 packages the no-Qt build needs (unpacked there
#                        with dpkg -x into /opt/deps, never into /)
#   .gpu-carry/assets/   the shared assets the GPU run reads (H2O_ASSETS there)
#   .gpu-carry/MANIFEST.txt  what is in it, with sizes and sha256
#
# Usage: tests/gpu/prepare_carry.sh        (H2O_ASSETS: default ../shared/assets)
set -euo pipefail

# The repo root, so the script works from any current directory.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY="$ROOT/.gpu-carry"
ASSETS_SRC=${H2O_ASSETS:-$ROOT/../shared/assets}
# The device tool sends at most 64 MiB in all; the carry keeps well under that.
CARRY_LIMIT_MIB=${CARRY_LIMIT_MIB:-40}

# What the no-Qt build's find_package / pkg_check_modules calls need (CMakeLists.txt,
# core/, app/, tests/):
#   nlohmann_json 3 (CONFIG)           -> nlohmann-json3-dev
#   simdjson 3 (CONFIG; core/recording reads recordings with it) -> libsimdjson-dev + libsimdjson14
#   libzstd (pkg-config; recordings' payloads, core/recording/step_payload.cpp) -> libzstd-dev + libzstd1
#   CLI11 (CONFIG; app/ links CLI11::CLI11, so it is required in practice) -> libcli11-dev
#   OpenSSL Crypto (core/sha256.cpp)   -> libssl-dev + libssl3 (runtime, matching version)
#   PkgConfig (pkg-config program)     -> pkgconf pkgconf-bin libpkgconf3
#   sentencepiece (pkg-config, optional) -> libsentencepiece-dev + libsentencepiece0
#   GTest (tests/)                     -> libgtest-dev (prebuilt static libs) + googletest
#                                         (its sources: rebuilt there if the prebuilt .a will not link)
# Not carried: libprotobuf-lite32 (Debian 12's libsentencepiece0 links protobuf-lite
# statically: `ldd libsentencepiece.so.0` names no protobuf), libgmock-dev (GTestConfig
# includes GMockTargets OPTIONAL; no test uses gmock).
# Carried for a tokenizer change that may add them: libpcre2-dev + libpcre2-8-0,
# libutf8proc-dev + libutf8proc2.
PACKAGES=(nlohmann-json3-dev libsimdjson-dev libsimdjson14 libzstd-dev libzstd1 libcli11-dev libssl-dev libssl3 pkgconf pkgconf-bin libpkgconf3
          libsentencepiece-dev libsentencepiece0 libgtest-dev googletest
          libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2)
# The assets the GPU run needs (parity references, the demo model, its tokenizer),
# plus two small ones the CLI's defaults read (stream prompts, the Llama-2 tokenizer).
ASSET_FILES=(stories260K.bin kjv-1M.bin kjv-tok2k.model mt_bench.jsonl tokenizer.model)
ASSET_DIRS=(reference)

die() { echo "prepare_carry: $*" >&2; exit 1; }

# Step: the carry must be ignored by git, or the tool would send it twice and `git status` would show it.
cd "$ROOT"
git check-ignore -q .gpu-carry/ || die "/.gpu-carry/ is not in .gitignore (add it first)"

# Step: this works on Debian only (apt-get download); say so plainly elsewhere.
command -v apt-get >/dev/null || die "apt-get not found: run this on the Debian development machine"

# Step: start from an empty folder so that no stale package version travels.
rm -rf "$CARRY"
mkdir -p "$CARRY/debs" "$CARRY/assets"

# Step: download the .deb files (no install); refresh the package lists once if apt cannot find one.
download() { (cd "$CARRY/debs" && apt-get -q -o APT::Sandbox::User=root download "${PACKAGES[@]}"); }
if ! download; then
  echo "prepare_carry: apt-get download failed; running apt-get update once and retrying" >&2
  apt-get -q update
  download || die "apt-get download failed for: ${PACKAGES[*]}"
fi
# Step: every package named must have arrived as exactly one .deb.
for p in "${PACKAGES[@]}"; do
  n=$(find "$CARRY/debs" -maxdepth 1 -name "${p}_*.deb" | wc -l)
  [ "$n" -eq 1 ] || die "expected one ${p}_*.deb, found $n"
done

# Step: copy the assets (the device tool does not send ../shared).
[ -d "$ASSETS_SRC" ] || die "assets folder not found: $ASSETS_SRC (set H2O_ASSETS)"
for f in "${ASSET_FILES[@]}"; do
  [ -f "$ASSETS_SRC/$f" ] || die "asset missing: $ASSETS_SRC/$f"
  cp "$ASSETS_SRC/$f" "$CARRY/assets/"
done
for d in "${ASSET_DIRS[@]}"; do
  [ -d "$ASSETS_SRC/$d" ] || die "asset folder missing: $ASSETS_SRC/$d"
  cp -r "$ASSETS_SRC/$d" "$CARRY/assets/"
done

# Step: a manifest, so the device run (and a reader) can tell what was carried.
{
  echo "# .gpu-carry, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "# packages (name version):"
  for f in "$CARRY"/debs/*.deb; do echo "deb $(dpkg-deb -f "$f" Package) $(dpkg-deb -f "$f" Version)"; done
  echo "# sha256 and bytes of every file:"
  (cd "$CARRY" && find debs assets -type f | sort | while read -r f; do
     echo "$(sha256sum "$f" | cut -c1-64) $(stat -c %s "$f") $f"; done)
} >"$CARRY/MANIFEST.txt"

# Step: keep the carry small: it and the checkout travel together under 64 MiB.
carry_kib=$(du -sk "$CARRY" | cut -f1)
tree_kib=$(git ls-files -co --exclude-standard -z | du -ck --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "prepare_carry: .gpu-carry is $((carry_kib / 1024)) MiB ($(find "$CARRY/debs" -name '*.deb' | wc -l) packages," \
     "$(find "$CARRY/assets" -type f | wc -l) asset files); the checkout that travels with it is $((tree_kib / 1024)) MiB"
[ "$carry_kib" -le $((CARRY_LIMIT_MIB * 1024)) ] || die "carry is over ${CARRY_LIMIT_MIB} MiB"
[ $((carry_kib + tree_kib)) -le $((60 * 1024)) ] || die "carry + checkout is over 60 MiB (the tool's limit is 64)"
echo "prepare_carry: done; device calls name carry: [\".gpu-carry\"] (see tests/gpu/README.md)"
