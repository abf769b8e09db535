#!/usr/bin/env bash
# The script the project runs on a lent GPU machine (see tests/gpu/README.md for
# the exact device `run` calls; ../shared/docs/GPU.md for the why).
#
#   tests/gpu/run_on_device.sh probe          toolchain, carried deps, sm_90 kernel, copy bandwidth, transformers peer
#   tests/gpu/run_on_device.sh check          sm_90 no-Qt build of what it runs, device suites in one process, parity
#   tests/gpu/run_on_device.sh sanitize       compute-sanitizer memcheck + racecheck over the device suites
#   tests/gpu/run_on_device.sh bench [ARGS]   h2o-bench --backend cuda ARGS, copy bandwidth, transformers peer
#   (tests/gpu/simulate_here.sh runs any stage on a machine without a GPU, against --backend cuda-sim)
#   tests/gpu/run_on_device.sh selftest       no GPU needed: syntax and dry runs of the helpers (run it here)
#
# Each stage ends within H2O_STAGE_BUDGET_S (default 470 s, under the 8 minutes
# asked of a stage; one device command may run 600 s), appends its section to
# $OUT/results.md row by row as it goes, and writes its logs under $OUT (at most
# 5 files a stage; the tool returns 8), so a timeout still returns partial results.
# Exit: 0 all passed, 1 something failed, 2 usage, 3 the CUDA backend is not in this tree (check).
#
# Environment (defaults in brackets):
#   OUT [repo/out/gpu]  H2O_GPU_CARRY [repo/.gpu-carry]  H2O_DEPS_PREFIX [/opt/deps]
#   H2O_GPU_BUILD [repo/build]  H2O_CUDA_ARCH [90]  H2O_STAGE_BUDGET_S [470]
#   H2O_PEER_ARGS (extra peer_transformers.py args)  H2O_PEER_RESERVE_S [120] (bench: kept for the peer)  H2O_PEER=0 (no peer)
#   H2O_STUDIO_BENCH_ARGS (bench: h2o-bench-studio's args on the GPU; default Llama-2-7B, four panes, 1500 steps, an ask every 300)
#   H2O_SANITIZE_FILTER [*] (sanitize: a gtest filter, e.g. '*Kernels*' for the quick kernel suites)
#   H2O_CHECK_RACECHECK (check: the gtest filter racecheck runs over; "" for none; default the kernels this round changed)
#   H2O_BENCH_EXTRA_ARGS (bench: further h2o-bench runs, ';' between them; default GPT-NeoX and quantized KV at 8192)
#   H2O_BUILD_LIMIT_S [420] (the repo build's own cap)  H2O_GPU_FORCE_GTEST_SOURCE=1 (rebuild GTest from the carried sources)
#   H2O_GPU_FORCE_PY_UNPACK=1 (unpack .debs with Python, as where dpkg-deb is missing)
#   H2O_GPU_BACKEND [cuda]: the backend parity and bench run. cuda-sim (set by simulate_here.sh, no GPU)
#     runs the CUDA backend's own code through the SIMT emulation instead, bench with tiny shapes when
#     given no args, and the peer on its test doubles; the steps that need the GPU itself (nvidia-smi,
#     the probe's run, the device suites, compute-sanitizer) are then "skipped (simulated)", never a
#     pass. With cuda, a skipped device test is a failure, as ever.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-$ROOT/out/gpu}
CARRY=${H2O_GPU_CARRY:-$ROOT/.gpu-carry}
DEPS=${H2O_DEPS_PREFIX:-/opt/deps}
BUILD=${H2O_GPU_BUILD:-$ROOT/build}
ARCH=${H2O_CUDA_ARCH:-90}
STAGE_BUDGET_S=${H2O_STAGE_BUDGET_S:-470}
RESERVE_S=8                      # kept back at the end of a stage to close its section
ASSETS=$CARRY/assets
RESULTS=$OUT/results.md
MULTIARCH=x86_64-linux-gnu
JOBS=$(nproc 2>/dev/null || echo 4)
DEVICE_TARGETS="h2o_cuda_tests h2o-cli h2o-bench h2o-bench-studio"   # all that check and bench run
BACKEND=${H2O_GPU_BACKEND:-cuda}
case "$BACKEND" in cuda) SIMULATED=0 ;; cuda-sim) SIMULATED=1 ;; *) echo "run_on_device: H2O_GPU_BACKEND must be cuda or cuda-sim, got '$BACKEND'" >&2; exit 2 ;; esac
# Under simulation: tiny shapes (the emulation decodes stories260K at tens of tokens a second), f16 as on the GPU.
SIM_BENCH_ARGS="--shapes stories260K --dtype f16 --precision f16 --contexts 64 --budget 32 --tokens 8 --repeats 1 --batched"
# The app's pipeline beside the engine (h2o-bench-studio): Llama-2-7B, four panes, on the GPU; a few steps of stories260K simulated.
STUDIO_BENCH_ARGS=${H2O_STUDIO_BENCH_ARGS:-"--shapes llama2-7b --panes 4 --dtype f16 --precision f16 --steps 1500 --ask-every 300"}
SIM_STUDIO_BENCH_ARGS="--shapes stories260K --panes 2 --dtype f16 --precision f16 --steps 12"
# bench's further rows after h2o-bench ARGS, each an h2o-bench argument list (';' between runs): GPT-NeoX,
# the quantized KV at a long context against the f16 cache (its attention kernels in --op-times), and
# Llama-2-7B Q4_K_M at native precision (its 8-bit-input products; H2O_CUDA_INT8=0 for the f32 inputs).
BENCH_EXTRA_ARGS=${H2O_BENCH_EXTRA_ARGS-"--shapes pythia-1.4b --dtype f16 --precision f16 --contexts 2048 --budget 1024 --tokens 32 --repeats 2 --batched;--shapes llama2-7b --dtype f16 --precision f16 --policies full --contexts 8192 --kv-sweep 32,4,2 --tokens 16 --repeats 2 --op-times;--shapes llama2-7b --dtype q4_k_m --precision native --policies full --contexts 2048 --tokens 32 --repeats 2 --op-times"}
SIM_BENCH_EXTRA_ARGS="--shapes pythia-test --dtype f16 --precision f16 --contexts 64 --budget 32 --tokens 4 --repeats 1;--shapes stories260K --dtype f16 --precision f16 --policies full --contexts 96 --kv-sweep 32,4,2 --tokens 4 --repeats 1;--shapes test-256 --dtype q4_k_m --precision native --policies full --contexts 64 --tokens 4 --repeats 1"
# check's racecheck: the device tests of the kernels this round changed (the quantized KV's append,
# flush, cut and attention; GPT-NeoX's layernorm, bias and GELU; the 8-bit inputs' quantiser and
# products; the attention grid of (tile, split) pairs and the combine that writes 8-bit inputs).
# The sanitize stage runs every suite; the quantized KV's random-steps test (50 s under racecheck,
# the same kernels as its flush-and-cut test) is left to it.
CHECK_RACECHECK_FILTER=${H2O_CHECK_RACECHECK-"CudaLowBit.*:CudaGptNeox.SequentialResidualFullCache:CudaGptNeox.ParallelResidualFullCache:CudaMatvecInt8.*:*CudaAttention.*-CudaLowBit.RandomStepsKeepWhatTheCpuHeadKeeps"}
FAILS=0                          # failed steps in this stage
STAGE=""
STAGE_T0=$SECONDS
SECTION_AT=0                     # where this stage's section starts in results.md

# ---------------------------------------------------------------- helpers

die() { echo "run_on_device: $*" >&2; exit 2; }

# Seconds left in this stage's budget.
remaining() { echo $((STAGE_BUDGET_S - (SECONDS - STAGE_T0))); }

# One Markdown table cell: no pipes or newlines inside.
cell() { printf '%s' "$*" | tr '\n' ' ' | sed 's/|/\\|/g; s/  */ /g; s/ $//'; }

# Append a row to this stage's step table (and echo it, so the reply's output tail shows progress).
# After a sub-table the step table starts again with its header, so results.md stays valid Markdown.
STEP_HEADER=$'| step | result | s | detail |\n|---|---|---:|---|'
NEED_HEADER=1
row() {  # row STEP RESULT SECONDS DETAIL
  local line
  line="| $(cell "$1") | $(cell "$2") | $3 | $(cell "$4") |"
  if ((NEED_HEADER)); then printf '\n%s\n' "$STEP_HEADER" >>"$RESULTS"; NEED_HEADER=0; fi
  echo "$line" >>"$RESULTS"
  echo "$line"
  case "$2" in FAIL*) FAILS=$((FAILS + 1)) ;; esac
  STEP_RC=0  # a step's status is read once, by the row that reports it (see why)
}

# Under simulation (no GPU), a step that needs the device itself gets a "skipped (simulated)" row and
# returns 0; on a GPU machine it returns 1 and the caller runs the step.
skip_simulated() {  # skip_simulated STEP DETAIL
  ((SIMULATED)) || return 1
  row "$1" "skipped (simulated)" 0 "no GPU: H2O_GPU_BACKEND=cuda-sim (simulate_here.sh); $2"
}

# Run an external command with a time limit (min of MAX and what the stage has left),
# output appended to LOG. Sets STEP_RC and STEP_S; returns the command's status.
run_step() {  # run_step LOG MAX_S CMD...
  local log=$1 max=$2; shift 2
  local left=$(($(remaining) - RESERVE_S))
  local lim=$((max < left ? max : left))
  STEP_S=0
  if ((lim < 3)); then STEP_RC=124; echo "=== skipped (stage budget spent): $*" >>"$log"; return 124; fi
  echo "=== $(date -u +%T) limit ${lim}s: $*" >>"$log"
  local t0=$SECONDS
  STEP_RC=0
  timeout --kill-after=10 "$lim" "$@" >>"$log" 2>&1 || STEP_RC=$?
  STEP_S=$((SECONDS - t0))
  echo "=== exit $STEP_RC after ${STEP_S}s" >>"$log"
  return "$STEP_RC"
}

# The last N lines of a log that look like errors, for a table cell; says so when the last step timed out.
why() {  # why LOG [N]
  case "${STEP_RC:-0}" in 124 | 137) echo "time limit reached after ${STEP_S:-?}s;" ;; esac
  grep -aiE 'error|fail|not found|cannot|undefined|refused|not supported' "$1" 2>/dev/null | grep -v '^===' |
    tail -n "${2:-2}" | cut -c1-240 || true
}

# Start this stage's section in results.md; close it with its time and exit code on any exit.
begin_stage() {
  STAGE=$1
  mkdir -p "$OUT"
  SECTION_AT=$(stat -c %s "$RESULTS" 2>/dev/null || echo 0)
  {
    echo
    echo "## $STAGE — $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) (budget ${STAGE_BUDGET_S}s)$( ((SIMULATED)) && echo ' — SIMULATED: no GPU, H2O_GPU_BACKEND=cuda-sim')"
  } >>"$RESULTS"
  NEED_HEADER=1
  trap 'end_stage $?' EXIT
}

# A sub-table (parity, peer, bench, copy) goes between step rows: a title line, then the table
# written by whoever makes it; the next step row re-opens the step table.
subtable() {  # subtable TITLE
  printf '\n%s\n\n' "$1" >>"$RESULTS"
  NEED_HEADER=1
}
end_stage() {
  local rc=$1
  { echo; echo "_${STAGE}: exit ${rc}, ${FAILS} failed step(s), $((SECONDS - STAGE_T0)) s._"; } >>"$RESULTS"
  # The whole section once more on stdout: the reply's output tail then holds every table.
  echo "================ $RESULTS (this stage's section)"
  tail -c +$((SECTION_AT + 1)) "$RESULTS"
  echo "run_on_device: $STAGE done: exit $rc, $FAILS failed step(s), $((SECONDS - STAGE_T0)) s; results in $RESULTS"
}

# Find a CUDA tool on PATH or in the usual toolkit folders.
cuda_tool() {  # cuda_tool NAME
  command -v "$1" 2>/dev/null && return 0
  local d
  for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /usr/local/cuda-*/bin /opt/nvidia/*/bin; do
    [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}

# ---------------------------------------------------------------- carried dependencies

# Unpack every carried .deb into $DEPS (never into /), make the result relocatable, and set the
# environment that points CMake, pkg-config and the loader at it. Sets DEPS_NOTE.
unpack_deps() {  # unpack_deps LOG
  local log=$1 f n=0 how=dpkg-deb
  # Step: refuse a prefix that would overwrite the system.
  case "$DEPS" in "" | / | /usr | /usr/* | /bin* | /lib* | /etc*) die "refusing to unpack into '$DEPS'" ;; esac
  # Step: the carry must be there (tests/gpu/prepare_carry.sh, carry: [".gpu-carry"]).
  compgen -G "$CARRY/debs/*.deb" >/dev/null || { DEPS_NOTE="no .deb in $CARRY/debs (run tests/gpu/prepare_carry.sh; carry .gpu-carry)"; return 1; }
  mkdir -p "$DEPS"
  if ! command -v dpkg-deb >/dev/null || [ "${H2O_GPU_FORCE_PY_UNPACK:-0}" = 1 ]; then how=python; fi
  for f in "$CARRY"/debs/*.deb; do
    # Step: dpkg-deb -x is `dpkg -x`; where dpkg is missing, Python reads the ar + tar.xz itself.
    if [ "$how" = dpkg-deb ]; then dpkg-deb -x "$f" "$DEPS" >>"$log" 2>&1 || return 1
    else python3 "$HERE/unpack_deb.py" "$f" "$DEPS" >>"$log" 2>&1 || return 1; fi
    n=$((n + 1))
  done
  # Step: Debian keeps openssl/configuration.h in include/<multiarch>, which the compiler only
  # searches under /usr: copy it beside the other headers so -I$DEPS/usr/include suffices.
  if [ -d "$DEPS/usr/include/$MULTIARCH" ]; then cp -r "$DEPS/usr/include/$MULTIARCH/." "$DEPS/usr/include/"; fi
  # Step: the .pc files say prefix=/usr; point them at $DEPS/usr (CMake's config files are relocatable already).
  find "$DEPS" -name '*.pc' -exec sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr(/|\$)#\\1=$DEPS/usr\\2#" {} +
  DEPS_NOTE="$n packages into $DEPS ($how)"
  deps_env
}

# CMake, pkg-config and the loader see $DEPS first.
deps_env() {
  export PKG_CONFIG_PATH="$DEPS/usr/lib/$MULTIARCH/pkgconfig:$DEPS/usr/share/pkgconfig"
  export LD_LIBRARY_PATH="$DEPS/usr/lib/$MULTIARCH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  PREFIXES=${PREFIXES:-$DEPS/usr}
  # Our pkgconf when it runs here (deterministic), else the machine's pkg-config.
  if "$DEPS/usr/bin/pkgconf" --version >/dev/null 2>&1; then PKGCONF=$DEPS/usr/bin/pkgconf
  else PKGCONF=$(command -v pkg-config || command -v pkgconf || echo pkg-config-not-found); fi
}

# Every carried shared library must resolve its dependencies and symbols here. A SentencePiece
# that will not load is switched off (it is optional in CMakeLists.txt) rather than fought.
check_libs() {  # check_libs LOG ; sets LIBS_NOTE, returns 1 on problems
  local log=$1 so out bad=() n=0
  for so in "$DEPS"/usr/lib/"$MULTIARCH"/*.so.*; do
    [ -L "$so" ] && continue
    n=$((n + 1))
    # (Captured first: `| grep -q` under pipefail can report a match as a failure.)
    out=$(ldd -r "$so" 2>&1 || true)
    printf '%s\n' "$out" >>"$log"
    if grep -qE 'not found|undefined symbol' <<<"$out"; then bad+=("$(basename "$so")"); fi
  done
  LIBS_NOTE="$n libraries resolve"
  ((${#bad[@]} == 0)) && return 0
  LIBS_NOTE="unresolved: ${bad[*]}"
  if [[ " ${bad[*]} " == *sentencepiece* ]]; then
    mv -f "$DEPS/usr/lib/$MULTIARCH/pkgconfig/sentencepiece.pc" "$DEPS/usr/lib/$MULTIARCH/pkgconfig/sentencepiece.pc.off" 2>/dev/null || true
    LIBS_NOTE="$LIBS_NOTE; SentencePiece switched off for this build"
  fi
  return 1
}

# The CMake generator: Ninja where it is (it is on the GPU image), else Makefiles.
generator() { if command -v ninja >/dev/null; then echo Ninja; else echo "Unix Makefiles"; fi; }

# Configure + build + run tests/gpu/deps_smoke against $DEPS. If the prebuilt libgtest.a will not
# link with this machine's compiler, rebuild GoogleTest from the carried sources and try again.
deps_smoke() {  # deps_smoke LOG ; sets SMOKE_NOTE
  local log=$1 dir=/tmp/h2o-deps-smoke attempt
  for attempt in prebuilt source; do
    if [ "$attempt" = source ] || [ "${H2O_GPU_FORCE_GTEST_SOURCE:-0}" = 1 ]; then
      build_gtest_from_source "$log" || { SMOKE_NOTE="GoogleTest from source failed: $(why "$log" 1)"; return 1; }
      attempt=source
    fi
    rm -rf "$dir"
    if run_step "$log" 120 cmake -S "$HERE/deps_smoke" -B "$dir" -G "$(generator)" -DCMAKE_BUILD_TYPE=Release \
         "-DCMAKE_PREFIX_PATH=$PREFIXES" "-DPKG_CONFIG_EXECUTABLE=$PKGCONF" &&
       run_step "$log" 120 cmake --build "$dir" -j "$JOBS" &&
       H2O_ASSETS=$ASSETS run_step "$log" 60 "$dir/deps_smoke"; then
      SMOKE_NOTE="$(grep -aE '^\[  PASSED  \]' "$log" | tail -1) $(grep -aE '^\[  SKIPPED \]' "$log" | tail -1) (GoogleTest: $attempt)"
      return 0
    fi
    [ "$attempt" = source ] && break
  done
  SMOKE_NOTE="$(why "$log" 2)"
  return 1
}

# GoogleTest built here from the carried googletest sources into $DEPS/gtest, searched first.
build_gtest_from_source() {  # LOG
  local log=$1 src=$DEPS/usr/src/googletest
  [ -f "$src/CMakeLists.txt" ] || { echo "no GoogleTest sources at $src" >>"$log"; return 1; }
  [ -f "$DEPS/gtest/.built" ] && { PREFIXES="$DEPS/gtest;$DEPS/usr"; return 0; }
  run_step "$log" 120 cmake -S "$src" -B /tmp/h2o-gtest-build -G "$(generator)" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_GMOCK=OFF -DINSTALL_GTEST=ON "-DCMAKE_INSTALL_PREFIX=$DEPS/gtest" &&
    run_step "$log" 180 cmake --build /tmp/h2o-gtest-build -j "$JOBS" &&
    run_step "$log" 60 cmake --install /tmp/h2o-gtest-build || return 1
  touch "$DEPS/gtest/.built"
  PREFIXES="$DEPS/gtest;$DEPS/usr"
}

# Unpack, check and smoke-test the carried dependencies, one row each. Returns 1 if unusable.
prepare_deps() {  # prepare_deps LOG
  local log=$1 t0=$SECONDS
  if unpack_deps "$log"; then row "deps: unpack" ok $((SECONDS - t0)) "$DEPS_NOTE"
  else row "deps: unpack" FAIL $((SECONDS - t0)) "${DEPS_NOTE:-$(why "$log" 1)}"; return 1; fi
  t0=$SECONDS
  if check_libs "$log"; then row "deps: libraries load" ok $((SECONDS - t0)) "$LIBS_NOTE"
  else row "deps: libraries load" FAIL $((SECONDS - t0)) "$LIBS_NOTE"; fi
  t0=$SECONDS
  if deps_smoke "$log"; then row "deps: smoke build + run" ok $((SECONDS - t0)) "$SMOKE_NOTE; $(found_note "$log")"
  else row "deps: smoke build + run" FAIL $((SECONDS - t0)) "$SMOKE_NOTE"; fi
  return 0
}

# Where the smoke project found each dependency (its "deps:" status lines).
found_note() {  # LOG
  local lines outside
  lines=$(grep -a -- '-- deps: ' "$1" | tail -9 || true)
  outside=$(echo "$lines" | grep -v "$DEPS" | sed 's/.*deps: //' | cut -d= -f1 | tr '\n' ' ' || true)
  if [ -z "$lines" ]; then echo "no deps lines"; elif [ -z "${outside// /}" ]; then echo "every dependency found under $DEPS"
  else echo "not under $DEPS: $outside"; fi
}

# ---------------------------------------------------------------- the repo's build

# Configure the repo for sm_$ARCH without Qt against $DEPS. Sets CONFIGURE_NOTE and HAVE_BACKEND.
configure_repo() {  # LOG
  local log=$1
  HAVE_BACKEND=0
  run_step "$log" 180 cmake -S "$ROOT" -B "$BUILD" -G "$(generator)" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CUDA_ARCHITECTURES=$ARCH" -DH2O_GUI=OFF "-DCMAKE_PREFIX_PATH=$PREFIXES" \
    "-DPKG_CONFIG_EXECUTABLE=$PKGCONF" || { CONFIGURE_NOTE=$(why "$log" 2); return 1; }
  local summary cache=$BUILD/CMakeCache.txt keys k v outside=""
  summary=$(grep -a 'H2O Studio: CUDA backend' "$log" | tail -1 | sed 's/^-- //' || true)
  # Where each dependency came from, read back from the cache.
  keys="nlohmann_json_DIR CLI11_DIR GTest_DIR OPENSSL_INCLUDE_DIR OPENSSL_CRYPTO_LIBRARY pkgcfg_lib_SENTENCEPIECE_sentencepiece"
  for k in $keys; do
    v=$(grep -a "^$k:" "$cache" | cut -d= -f2- || true)
    echo "found: $k=$v" >>"$log"
    [ -n "$v" ] && [[ "$v" != "$DEPS"* ]] && outside="$outside $k"
  done
  [ -f "$ROOT/kernels/CMakeLists.txt" ] && [[ "$summary" == *"CUDA backend ON"* ]] && HAVE_BACKEND=1
  # The CUDA compiler CMake settled on (a plain variable in CMakeLists.txt, so read from CMakeFiles).
  v=$(grep -ahE 'set\(CMAKE_CUDA_COMPILER(_VERSION)? "' "$BUILD"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null |
      head -2 | cut -d'"' -f2 | tr '\n' ' ' || true)
  CONFIGURE_NOTE="$summary; ${outside:+NOT under $DEPS:$outside}${outside:-deps under $DEPS}; CUDA compiler ${v:-none}"
  return 0
}

# Build the given targets (all when none).
build_repo() {  # LOG [TARGET...]
  local log=$1; shift
  local targets=()
  (($#)) && targets=(--target "$@")
  run_step "$log" "${H2O_BUILD_LIMIT_S:-420}" cmake --build "$BUILD" -j "$JOBS" "${targets[@]}"
}

# The tiny sm_$ARCH probe program (vector add + copy bandwidth); sets PROBE_BIN.
build_probe_cuda() {  # LOG
  local nvcc
  nvcc=$(cuda_tool nvcc) || { echo "nvcc not found" >>"$1"; return 1; }
  PROBE_BIN=/tmp/h2o-probe-cuda
  # (-gencode, not -arch: the same form works for sm_90 and sm_90a, see the library's HOPPER.md.)
  run_step "$1" 120 "$nvcc" -O2 "-gencode=arch=compute_$ARCH,code=sm_$ARCH" -o "$PROBE_BIN" "$HERE/probe_cuda.cu"
}

# Run the probe program; sets COPY_GBPS (cudaMemcpy D2D, read+write bytes) and PROBE_NOTE.
run_probe_cuda() {  # LOG [ARGS...]
  local log=$1; shift
  local tmp=/tmp/h2o-probe-cuda.out rc=0
  rm -f "$tmp"
  run_step "$log" 120 bash -c 'set -o pipefail; "$0" "$@" | tee '"$tmp" "$PROBE_BIN" "$@" || rc=$?
  COPY_GBPS=$(grep -a '^d2d_memcpy_gbps:' "$tmp" 2>/dev/null | awk '{print $2}' || true)
  PROBE_NOTE="$(grep -a '^vector add:' "$tmp" 2>/dev/null || echo 'vector add: no output'); D2D memcpy ${COPY_GBPS:-?} GB/s, copy kernel $(grep -a '^d2d_kernel_gbps:' "$tmp" 2>/dev/null | awk '{print $2}' || echo '?') GB/s (read+write, median)"
  return "$rc"
}

# The transformers peer: table rows appended to results.md as each measurement lands.
run_peer() {  # LOG JSON MAX_S
  local log=$1 json=$2 max=$3 left
  [ "${H2O_PEER:-1}" = 0 ] && { row "transformers peer" skipped 0 "H2O_PEER=0"; return 0; }
  left=$(($(remaining) - RESERVE_S - 5))
  ((left < max)) && max=$left
  ((max < 30)) && { row "transformers peer" skipped 0 "stage budget spent"; return 0; }
  local pypath=${PYTHONPATH:-} what="random weights, fp16, greedy, default cache"
  # Under simulation: the peer's whole code path on the test doubles of torch/transformers (numbers that mean nothing).
  ((SIMULATED)) && pypath=$HERE/fakes && what="SIMULATED: tests/gpu/fakes stand in for torch and transformers, no number here means anything"
  subtable "Transformers peer (\`LlamaForCausalLM\`, $what; tests/gpu/peer_transformers.py):"
  # The peer stops itself at its deadline and writes what it has; the timeout is the backstop.
  local args=(--md "$RESULTS" --json "$json" --deadline-s $((max - 40)))
  [ -n "${COPY_GBPS:-}" ] && args+=(--copy-gbps "$COPY_GBPS")
  # shellcheck disable=SC2206  # H2O_PEER_ARGS is a list of words on purpose
  [ -n "${H2O_PEER_ARGS:-}" ] && args+=($H2O_PEER_ARGS)
  local t0=$SECONDS
  if PYTHONPATH=$pypath PYTHONUNBUFFERED=1 run_step "$log" "$max" python3 "$HERE/peer_transformers.py" "${args[@]}"; then
    row "transformers peer" ok $((SECONDS - t0)) "table above; log $(basename "$log")$( ((SIMULATED)) && echo '; test doubles: the script ran, nothing was measured')"
  else
    row "transformers peer" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "table above; $(why "$log" 2)"
  fi
}

# ---------------------------------------------------------------- stage 0: probe

stage_probe() {
  begin_stage probe
  local log=$OUT/probe.log t0 v
  : >"$log"

  # Step: the machine itself (OS, kernel, cores, glibc, host compiler): what the carried debs must run on.
  t0=$SECONDS
  local os glibc cxx
  os=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo '?')
  glibc=$(ldd --version 2>&1 | head -1 | sed 's/^ldd //' || true)
  cxx=$(c++ --version 2>/dev/null | head -1 || true)
  v="$os; kernel $(uname -r); $(nproc) cores; glibc: $glibc; c++: ${cxx:-none}"
  { echo "=== system"; echo "$v"; free -g || true; df -h /tmp || true; } >>"$log" 2>&1
  row "system" ok $((SECONDS - t0)) "$v"

  # Step: the GPU as nvidia-smi reports it (read-only queries; the card's settings are never touched).
  t0=$SECONDS
  if skip_simulated "nvidia-smi" "not queried"; then :
  elif command -v nvidia-smi >/dev/null; then
    run_step "$log" 30 nvidia-smi -q || true
    v=$(timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu,persistence_mode --format=csv,noheader 2>&1 | head -1 || true)
    row "nvidia-smi" ok $((SECONDS - t0)) "name, memory, driver, cc, SM clock now/max, mem clock now/max, power limit, temp, persistence: $v"
  else
    row "nvidia-smi" FAIL 0 "not found"
  fi

  # Step: the toolchain versions the build depends on.
  t0=$SECONDS
  local nvcc nvcc_v cs ncu cmake_v ninja_v
  nvcc=$(cuda_tool nvcc || true)
  nvcc_v=""
  if [ -n "$nvcc" ]; then nvcc_v=$("$nvcc" --version 2>&1 | grep -a release | sed 's/.*release/release/' || true); fi
  cs=$(cuda_tool compute-sanitizer || true)
  ncu=$(cuda_tool ncu || true)
  cmake_v=$(cmake --version 2>/dev/null | head -1 | awk '{print $3}' || true)
  ninja_v=$(ninja --version 2>/dev/null || true)
  v="nvcc: ${nvcc:-not found} ${nvcc_v}; cmake ${cmake_v:-not found}; ninja ${ninja_v:-not found}; compute-sanitizer: ${cs:-not found}; ncu: ${ncu:-not found}"
  echo "=== toolchain: $v" >>"$log"
  row "toolchain" ok $((SECONDS - t0)) "$v"

  # Step: python3's torch and transformers (the peer's), and whether torch sees the GPU.
  t0=$SECONDS
  v=$(timeout 120 python3 -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "transformers", transformers.__version__)' 2>&1 | tail -1 || true)
  echo "=== python: $v" >>"$log"
  case "$v" in *"available True"*) row "python peer stack" ok $((SECONDS - t0)) "$v" ;;
    *) skip_simulated "python peer stack" "$v" || row "python peer stack" FAIL $((SECONDS - t0)) "$v" ;; esac

  # Step: the carried Debian deps: unpack into $DEPS, check they load, build and run a program using all.
  prepare_deps "$log" || true

  # Step: a no-Qt configure of the repo for sm_$ARCH against $DEPS (no build: that is the check stage).
  t0=$SECONDS
  if [ -n "${PREFIXES:-}" ] && configure_repo "$log"; then row "repo configure (no Qt, sm_$ARCH)" ok $((SECONDS - t0)) "$CONFIGURE_NOTE"
  else row "repo configure (no Qt, sm_$ARCH)" FAIL $((SECONDS - t0)) "${CONFIGURE_NOTE:-deps not unpacked}"; fi

  # Step: a tiny sm_$ARCH kernel compiled and run (vector add checked on the host), and the copy bandwidth.
  t0=$SECONDS
  if build_probe_cuda "$log"; then
    if skip_simulated "sm_$ARCH kernel + D2D copy" "built for sm_$ARCH in $((SECONDS - t0)) s, not run"; then :
    elif run_probe_cuda "$log" --mib 1024 --reps 20 --warmup 3; then row "sm_$ARCH kernel + D2D copy" ok $((SECONDS - t0)) "$PROBE_NOTE"
    else row "sm_$ARCH kernel + D2D copy" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$PROBE_NOTE; $(why "$log" 1)"; fi
    if ((!SIMULATED)) && grep -aq '^|' /tmp/h2o-probe-cuda.out 2>/dev/null; then
      subtable "Device-to-device copy (tests/gpu/probe_cuda.cu; GB/s count bytes read + written):"
      grep -a '^|' /tmp/h2o-probe-cuda.out >>"$RESULTS"
    fi
  elif ! cuda_tool nvcc >/dev/null; then
    skip_simulated "sm_$ARCH kernel + D2D copy" "no nvcc here either" || row "sm_$ARCH kernel + D2D copy" FAIL 0 "nvcc not found"
  else
    row "sm_$ARCH kernel + D2D copy" FAIL $((SECONDS - t0)) "nvcc build failed: $(why "$log" 1)"
  fi

  # Step: the transformers peer at the four shapes, contexts 512 and 2048 (last: it takes the most time).
  run_peer "$OUT/probe-peer.log" "$OUT/probe-peer.json" 300

  ((FAILS == 0))
}

# ---------------------------------------------------------------- stage 1: check

stage_check() {
  begin_stage check
  local blog=$OUT/check-build.log tlog=$OUT/check-tests.log plog=$OUT/check-parity.log t0
  : >"$blog"; : >"$tlog"; : >"$plog"

  # Step: the carried deps (the build needs them; a failure here ends the stage).
  prepare_deps "$blog" || return 1

  # Step: configure for sm_$ARCH without Qt; say plainly when the CUDA backend is not in the tree.
  t0=$SECONDS
  if configure_repo "$blog"; then row "configure (no Qt, sm_$ARCH)" ok $((SECONDS - t0)) "$CONFIGURE_NOTE"
  else row "configure (no Qt, sm_$ARCH)" FAIL $((SECONDS - t0)) "$CONFIGURE_NOTE"; return 1; fi
  local targets=$DEVICE_TARGETS
  if ((HAVE_BACKEND == 0)); then
    if ((SIMULATED)); then
      targets="h2o-cli h2o-bench"  # cuda-sim needs no nvcc; the device test program does
      row "CUDA backend" "skipped (simulated)" 0 "configure says: ${CONFIGURE_NOTE%%;*} (no nvcc here): cuda-sim only, no h2o_cuda_tests"
    else
      row "CUDA backend" "FAIL (absent)" 0 "kernels/CMakeLists.txt $([ -f "$ROOT/kernels/CMakeLists.txt" ] && echo present || echo missing); configure says: ${CONFIGURE_NOTE%%;*}. The CUDA backend is not in this tree yet; the rest runs to show what does"
    fi
  fi

  # Step: build only what this stage runs: the device test program, the CLI (parity) and the bench.
  t0=$SECONDS
  if build_repo "$blog" $targets; then row "build ($targets)" ok $((SECONDS - t0)) "$(grep -ac 'warning:' "$blog" || true) compiler warnings; log check-build.log"
  else row "build" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$(why "$blog" 2)"; return 1; fi
  export H2O_ASSETS=$ASSETS

  # Step: the device suites in one process (the emulated suites ran on CI already; ctest would start
  # one process per test). A skipped test on a GPU machine means it did not see the device: not a pass.
  t0=$SECONDS
  local rc=0 exe=$BUILD/tests/cuda/h2o_cuda_tests summary skipped
  if [ -x "$exe" ]; then run_step "$tlog" 240 "$exe" --gtest_brief=1 || rc=$STEP_RC; fi
  summary=$(grep -aE '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$tlog" | tail -2 | tr '\n' ' ' || true)
  skipped=$(grep -aE '^\[  SKIPPED \] [0-9]+ test' "$tlog" | tail -1 | awk '{print $4}' || true)
  if [ ! -x "$exe" ] && skip_simulated "device suites (h2o_cuda_tests)" "not built (no nvcc)"; then :
  elif ((rc == 0 && ${skipped:-0} > 0)) && skip_simulated "device suites (h2o_cuda_tests)" "$summary; $skipped skipped, as they must be without a device"; then :
  elif ((rc == 0 && ${skipped:-0} > 0)); then
    row "device suites (h2o_cuda_tests)" "FAIL ($skipped skipped)" $((SECONDS - t0)) "$summary; skipped on a GPU machine: $(grep -aE '^\[  SKIPPED \] [A-Za-z]' "$tlog" | head -3 | awk '{print $4}' | tr '\n' ' ')"
  elif ((rc == 0)); then row "device suites (h2o_cuda_tests)" ok $((SECONDS - t0)) "$summary; none skipped"
  else row "device suites (h2o_cuda_tests)" "FAIL (exit $rc)" $((SECONDS - t0)) "$summary; $(grep -aE '^\[  FAILED  \] [A-Za-z]' "$tlog" | head -4 | awk '{print $4}' | tr '\n' ' ')"; fi

  # Step: parity: the shared greedy references through h2o-cli, cpu (control) and cuda (cuda-sim
  # under simulation: ~10x the CPU's time, a minute or two for all seven cases on 2 cores).
  t0=$SECONDS
  local parity_s=200 case_s=120
  ((SIMULATED)) && parity_s=900 case_s=300
  subtable "Parity: the shared greedy references through \`h2o-cli generate --prefill-chunk 1 --print-ids\` (flags as tests/app/test_reference_greedy.cpp), f32; cpu is the control:"
  if run_step "$plog" "$parity_s" python3 "$HERE/parity.py" --cli "$BUILD/app/h2o-cli" --assets "$ASSETS" --backends "cpu,$BACKEND" --timeout "$case_s" --md "$RESULTS"; then
    row "parity (cpu, $BACKEND)" ok $((SECONDS - t0)) "every case identical to the reference"
  else
    row "parity (cpu, $BACKEND)" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "table above; log check-parity.log"
  fi

  # Step: racecheck over the tests of the kernels this round changed (capped; sanitize runs them all).
  quick_racecheck "$tlog"

  ((HAVE_BACKEND == 0 && !SIMULATED)) && return 3
  ((FAILS == 0))
}

# check's racecheck: CHECK_RACECHECK_FILTER's device tests under compute-sanitizer racecheck, within
# H2O_CHECK_RACECHECK_S (default 90 s); "not available" where the machine refuses the tool.
quick_racecheck() {  # LOG
  local log=$1 cs t0=$SECONDS exe=$BUILD/tests/cuda/h2o_cuda_tests from part
  [ -n "$CHECK_RACECHECK_FILTER" ] || return 0
  skip_simulated "racecheck (changed kernels)" "racecheck watches the device itself" && return 0
  if ! cs=$(cuda_tool compute-sanitizer); then row "racecheck (changed kernels)" "not available" 0 "compute-sanitizer not found"; return 0; fi
  if [ ! -x "$exe" ]; then row "racecheck (changed kernels)" "FAIL (no tests)" 0 "h2o_cuda_tests was not built"; return 0; fi
  from=$(($(stat -c %s "$log") + 1))
  if run_step "$log" "${H2O_CHECK_RACECHECK_S:-90}" "$cs" --tool racecheck --error-exitcode 17 "$exe" --gtest_brief=1 --gtest_filter="$CHECK_RACECHECK_FILTER"; then
    part=$(tail -c +"$from" "$log" | grep -aE 'RACECHECK SUMMARY|^\[  PASSED  \]' | tail -2 | tr '\n' ' ' || true)
    row "racecheck (changed kernels)" ok $((SECONDS - t0)) "$CHECK_RACECHECK_FILTER: $part"
  elif tail -c +"$from" "$log" | grep -aqiE 'device not supported|not supported on this|unable to|refused'; then
    row "racecheck (changed kernels)" "not available" $((SECONDS - t0)) "refused here: $(tail -c +"$from" "$log" | grep -aiE 'not supported|unable|refused' | head -1 | cut -c1-160)"
  elif [[ $STEP_RC == 124 || $STEP_RC == 137 ]] && ! tail -c +"$from" "$log" | grep -aqiE 'race reported|RACECHECK SUMMARY: [1-9]'; then
    # The time cap, not a race (--gtest_brief prints no passed test, so how far it got is not known here).
    row "racecheck (changed kernels)" "partial (time)" $((SECONDS - t0)) "$CHECK_RACECHECK_FILTER: no race reported before the ${H2O_CHECK_RACECHECK_S:-90} s cap"
  else
    row "racecheck (changed kernels)" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$CHECK_RACECHECK_FILTER: $(why "$log" 2)"
  fi
}

# The device test program (the emulated suites are CI's; under a sanitizer they would only cost time).
cuda_test_bins() {
  local exe=$BUILD/tests/cuda/h2o_cuda_tests
  [ -x "$exe" ] && echo "$exe"
}

sanitizers() {  # LOG
  local log=$1 cs t0 tool exe bins rc note
  t0=$SECONDS
  skip_simulated "compute-sanitizer" "memcheck and racecheck watch the device itself" && return 0
  if ! cs=$(cuda_tool compute-sanitizer); then row "compute-sanitizer" "not available" 0 "not found on this machine"; return 0; fi
  # Step: does this machine let compute-sanitizer see the device (gVisor refuses: "Device not supported")?
  if [ -z "${PROBE_BIN:-}" ]; then build_probe_cuda "$log" || true; fi
  if [ -z "${PROBE_BIN:-}" ] || ! run_step "$log" 90 "$cs" --tool memcheck --error-exitcode 17 "$PROBE_BIN" --mib 16 --reps 2 --warmup 1; then
    row "compute-sanitizer" "not available" $((SECONDS - t0)) "refused on the probe program here: $(why "$log" 1)"
    return 0
  fi
  echo "=== $("$cs" --version 2>&1 | tail -1)" >>"$log"
  bins=$(cuda_test_bins || true)
  if [ -z "$bins" ]; then row "compute-sanitizer" "FAIL (no tests)" $((SECONDS - t0)) "works here (probe clean), but no gtest program lists *Cuda* tests"; return 0; fi
  # Step: memcheck (with device leak check), then racecheck: each over every Cuda test, the rest of the budget shared.
  for tool in memcheck racecheck; do
    t0=$SECONDS
    note=""
    rc=0
    for exe in $bins; do
      local extra=() from
      [ "$tool" = memcheck ] && extra=(--leak-check full)
      from=$(($(stat -c %s "$log") + 1))  # this run's part of the log, for its note
      run_step "$log" 300 "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 17 "$exe" --gtest_filter="${H2O_SANITIZE_FILTER:-*}" || rc=$STEP_RC
      note="$note $(basename "$exe"): $(tail -c +"$from" "$log" | grep -ac '^\[       OK' || true) tests ran clean; $(tail -c +"$from" "$log" | grep -aE '^\[  PASSED  \]|ERROR SUMMARY|RACECHECK SUMMARY|[0-9]+ hazard' | tail -2 | tr '\n' ' ' || true)"
    done
    if ((rc == 0)); then row "compute-sanitizer $tool" ok $((SECONDS - t0)) "$note"
    elif ((rc == 124 || rc == 137)); then row "compute-sanitizer $tool" "FAIL (time)" $((SECONDS - t0)) "stage budget ran out;$note"
    else row "compute-sanitizer $tool" "FAIL (exit $rc)" $((SECONDS - t0)) "$note"; fi
  done
}

# ---------------------------------------------------------------- stage 2: sanitize

stage_sanitize() {
  begin_stage sanitize
  local blog=$OUT/sanitize-build.log slog=$OUT/sanitize.log t0
  : >"$blog"; : >"$slog"
  # Step: deps, configure and the device test program (reused when the machine is still warm).
  prepare_deps "$blog" || return 1
  t0=$SECONDS
  if ! configure_repo "$blog"; then row "configure (no Qt, sm_$ARCH)" FAIL $((SECONDS - t0)) "$CONFIGURE_NOTE"; return 1; fi
  if ((HAVE_BACKEND == 0)) && skip_simulated "build h2o_cuda_tests" "no nvcc here"; then :
  elif build_repo "$blog" h2o_cuda_tests; then row "build h2o_cuda_tests" ok $((SECONDS - t0)) ""
  else row "build h2o_cuda_tests" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$(why "$blog" 2)"; return 1; fi
  export H2O_ASSETS=$ASSETS
  # Step: compute-sanitizer memcheck (leak check on) and racecheck over the device suites.
  sanitizers "$slog"
  ((FAILS == 0))
}

# ---------------------------------------------------------------- stage 3: bench

stage_bench() {
  begin_stage bench
  local blog=$OUT/bench-build.log log=$OUT/bench.log t0 rc=0
  : >"$blog"; : >"$log"
  # Seconds kept for the peer after the bench (it skips the shapes its deadline leaves no time for).
  local peer_reserve=${H2O_PEER_RESERVE_S:-120}
  [ "${H2O_PEER:-1}" = 0 ] && peer_reserve=0

  # Step: deps, configure, and build only what the benchmark needs.
  prepare_deps "$blog" || return 1
  t0=$SECONDS
  if configure_repo "$blog"; then row "configure (no Qt, sm_$ARCH)" ok $((SECONDS - t0)) "$CONFIGURE_NOTE"
  else row "configure (no Qt, sm_$ARCH)" FAIL $((SECONDS - t0)) "$CONFIGURE_NOTE"; return 1; fi
  t0=$SECONDS
  local have_bench=1
  local targets
  targets=$(cmake --build "$BUILD" --target help 2>/dev/null || true)
  if ! grep -qE '(^|[[:space:]])h2o-bench(:|[[:space:]]|$)' <<<"$targets"; then
    have_bench=0
    row "h2o-bench" "FAIL (absent)" 0 "no h2o-bench target in this tree yet; the peer still runs"
  elif build_repo "$blog" h2o-bench; then row "build h2o-bench" ok $((SECONDS - t0)) ""
  else have_bench=0; row "build h2o-bench" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$(why "$blog" 2)"; fi
  local have_studio=0
  if grep -qE '(^|[[:space:]])h2o-bench-studio(:|[[:space:]]|$)' <<<"$targets"; then
    t0=$SECONDS
    if build_repo "$blog" h2o-bench-studio; then have_studio=1; row "build h2o-bench-studio" ok $((SECONDS - t0)) ""
    else row "build h2o-bench-studio" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$(why "$blog" 2)"; fi
  fi

  # Step: the copy bandwidth in this same lease, the roofline the bench and the peer are read against.
  t0=$SECONDS
  if skip_simulated "D2D copy bandwidth" "h2o-bench measures the emulation's host copies instead"; then :
  elif build_probe_cuda "$blog" && run_probe_cuda "$blog" --mib 1024 --reps 10 --warmup 2; then row "D2D copy bandwidth" ok $((SECONDS - t0)) "$PROBE_NOTE"
  else row "D2D copy bandwidth" FAIL $((SECONDS - t0)) "$(why "$blog" 1)"; fi

  # Step: the benchmark itself, extra args passed through; its Markdown table goes into results.md.
  if ((have_bench)); then
    t0=$SECONDS
    local limit=$(($(remaining) - RESERVE_S - peer_reserve))
    ((limit < 30)) && limit=30
    export H2O_ASSETS=$ASSETS
    # shellcheck disable=SC2086  # SIM_BENCH_ARGS is a list of words on purpose
    (($# == 0 && SIMULATED)) && set -- $SIM_BENCH_ARGS
    run_step "$log" "$limit" "$BUILD/app/h2o-bench" --backend "$BACKEND" "$@" || rc=$STEP_RC
    subtable "h2o-bench --backend $BACKEND $*:"
    # Its Markdown tables, one blank line between tables.
    awk '/^\|/ { print; t = 1; next } t { print ""; t = 0 }' "$log" >>"$RESULTS"
    grep -aq '^|' "$log" || echo "(no table printed; see bench.log)" >>"$RESULTS"
    if ((rc == 0)); then row "h2o-bench --backend $BACKEND" ok $((SECONDS - t0)) "table above; log bench.log"
    else row "h2o-bench --backend $BACKEND" "FAIL (exit $rc)" $((SECONDS - t0)) "$(why "$log" 2)"; fi
  fi

  # Step: the app's pipeline on the engine (history, analyzer, snapshots, recording spool) against the engine alone.
  if ((have_studio)); then
    t0=$SECONDS
    local slog=$OUT/bench-studio.log slimit=$(($(remaining) - RESERVE_S - peer_reserve)) srgs
    ((slimit < 30)) && slimit=30
    srgs=$STUDIO_BENCH_ARGS
    ((SIMULATED)) && srgs=$SIM_STUDIO_BENCH_ARGS
    # shellcheck disable=SC2086  # a list of words on purpose
    if run_step "$slog" "$slimit" "$BUILD/app/h2o-bench-studio" --backend "$BACKEND" $srgs; then
      subtable "h2o-bench-studio --backend $BACKEND $srgs:"
      awk '/^\|/ { print; t = 1; next } t { print ""; t = 0 }' "$slog" >>"$RESULTS"
      row "h2o-bench-studio --backend $BACKEND" ok $((SECONDS - t0)) "table above; log bench-studio.log"
    else row "h2o-bench-studio --backend $BACKEND" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$(why "$slog" 2)"; fi
  fi

  # Step: the further h2o-bench rows, in what the stage has left after the app's pipeline.
  ((have_bench)) && extra_benches "$log" "$peer_reserve"

  # Step: the transformers peer again, in the same lease, with the copy bandwidth measured above.
  run_peer "$OUT/bench-peer.log" "$OUT/bench-peer.json" 400
  ((FAILS == 0))
}

# bench's further h2o-bench runs (BENCH_EXTRA_ARGS, SIM_BENCH_EXTRA_ARGS under simulation), each
# appended to LOG with its table copied into results.md, each within what the stage has left.
extra_benches() {  # LOG PEER_RESERVE_S
  local log=$1 reserve=$2 list=$BENCH_EXTRA_ARGS args t0 limit from
  ((SIMULATED)) && list=$SIM_BENCH_EXTRA_ARGS
  local IFS=';'
  for args in $list; do
    IFS=' '
    [ -n "${args// /}" ] || continue
    t0=$SECONDS
    limit=$(($(remaining) - RESERVE_S - reserve))
    if ((limit < 30)); then row "h2o-bench $args" "skipped (time)" 0 "the stage's budget is spent"; continue; fi
    from=$(($(stat -c %s "$log") + 1))
    # shellcheck disable=SC2086  # a list of words on purpose
    if run_step "$log" "$limit" "$BUILD/app/h2o-bench" --backend "$BACKEND" $args; then
      subtable "h2o-bench --backend $BACKEND $args:"
      tail -c +"$from" "$log" | awk '/^\|/ { print; t = 1; next } t { print ""; t = 0 }' >>"$RESULTS"
      row "h2o-bench $args" ok $((SECONDS - t0)) "table above; log bench.log"
    else row "h2o-bench $args" "FAIL (exit $STEP_RC)" $((SECONDS - t0)) "$(why "$log" 2)"; fi
  done
}

# ---------------------------------------------------------------- selftest (no GPU)

# What can be checked anywhere: shell syntax, Python syntax, the helpers' dry runs.
stage_selftest() {
  begin_stage selftest
  local log=$OUT/selftest.log t0
  : >"$log"
  t0=$SECONDS
  if run_step "$log" 30 bash -n "$HERE/run_on_device.sh" && run_step "$log" 30 bash -n "$HERE/prepare_carry.sh" && run_step "$log" 30 bash -n "$HERE/simulate_here.sh"; then row "bash -n" ok $((SECONDS - t0)) "run_on_device.sh, prepare_carry.sh, simulate_here.sh"
  else row "bash -n" FAIL $((SECONDS - t0)) "$(why "$log" 2)"; fi
  t0=$SECONDS
  if run_step "$log" 30 python3 -m py_compile "$HERE/peer_transformers.py" "$HERE/parity.py" "$HERE/unpack_deb.py"; then row "py_compile" ok $((SECONDS - t0)) "peer_transformers.py, parity.py, unpack_deb.py"
  else row "py_compile" FAIL $((SECONDS - t0)) "$(why "$log" 2)"; fi
  t0=$SECONDS
  if run_step "$log" 30 python3 "$HERE/peer_transformers.py" --dry-run; then row "peer --dry-run" ok $((SECONDS - t0)) "$(grep -ac '^| ' "$log") table lines"
  else row "peer --dry-run" FAIL $((SECONDS - t0)) "$(why "$log" 2)"; fi
  # Step: the peer's whole code path against test doubles of torch and transformers (tests/gpu/fakes).
  t0=$SECONDS
  if PYTHONPATH=$HERE/fakes run_step "$log" 60 python3 "$HERE/peer_transformers.py" --steps 4 --warmup 1 --gen-repeats 1 &&
     PYTHONPATH=$HERE/fakes run_step "$log" 60 python3 "$HERE/peer_transformers.py" --deadline-s 0 &&
     [ "$(grep -ac 'skipped: deadline' "$log")" = 8 ]; then row "peer on fake torch" ok $((SECONDS - t0)) "all shapes measured; deadline 0 skips all 8 rows"
  else row "peer on fake torch" FAIL $((SECONDS - t0)) "$(why "$log" 2)"; fi
  t0=$SECONDS
  if run_step "$log" 30 python3 "$HERE/parity.py" --dry-run --cli "$BUILD/app/h2o-cli" --assets "${H2O_ASSETS:-$ASSETS}" --backends "cpu,$BACKEND"; then row "parity --dry-run" ok $((SECONDS - t0)) "$(grep -ac 'generate --model' "$log") commands"
  else row "parity --dry-run" FAIL $((SECONDS - t0)) "$(why "$log" 2)"; fi
  ((FAILS == 0))
}

# ---------------------------------------------------------------- main

# Step: one stage per call (each fits one device command); extra args go to the bench.
(($# >= 1)) || die "usage: $0 probe|check|sanitize|bench [h2o-bench args...]|selftest"
cmd=$1; shift
mkdir -p "$OUT"
cd "$ROOT"
case "$cmd" in
  probe) stage_probe ;;
  check) stage_check ;;
  sanitize) stage_sanitize ;;
  bench) stage_bench "$@" ;;
  selftest) stage_selftest ;;
  *) die "unknown stage '$cmd' (probe|check|sanitize|bench|selftest)" ;;
esac
