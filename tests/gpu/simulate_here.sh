#!/usr/bin/env bash
# Runs a stage of tests/gpu/run_on_device.sh HERE (the Debian 12 development machine,
# as root, no GPU), the way the GPU machine will: the carried .debs unpacked into a
# scratch prefix, and this machine's own copies of the same dependencies made unusable
# inside a private mount namespace, so that the build can only succeed with the carry.
#
#   tests/gpu/simulate_here.sh probe|check|sanitize|bench|selftest [args]
#
# Without a GPU, the stages run against --backend cuda-sim (H2O_GPU_BACKEND, see
# run_on_device.sh): parity through the CUDA backend's own code in the SIMT emulation,
# bench on tiny shapes, the peer on its test doubles; what needs the device itself
# (nvidia-smi, the probe's run, the device suites, compute-sanitizer) is reported
# "skipped (simulated)".
#
# Hidden (bind-mounted over, in this process's namespace only): the headers, CMake
# config files, .pc folders, static GTest libraries, SentencePiece libraries, GoogleTest
# sources and the pkg-config program. Not hidden: libssl.so/libcrypto.so, which are
# links to the libssl3 the system itself runs on (cmake, git, curl need it); for those
# the script shows from the CMake cache and ldd that the build used the carried copy.
# Scratch: OUT=/tmp/h2o-gpu-sim/out, deps /tmp/h2o-gpu-sim/deps, build /tmp/h2o-gpu-sim/build.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SIM=${H2O_SIM_DIR:-/tmp/h2o-gpu-sim}
[ "$(id -u)" = 0 ] || { echo "simulate_here: needs root (unshare -m, mount --bind)" >&2; exit 2; }
(($# >= 1)) || { echo "usage: $0 probe|check|sanitize|bench|selftest [args]" >&2; exit 2; }
export H2O_GPU_BACKEND=${H2O_GPU_BACKEND:-cuda-sim}
# ccache where this machine has it (CMake reads these variables): a second simulation rebuilds little.
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache} CMAKE_CUDA_COMPILER_LAUNCHER=${CMAKE_CUDA_COMPILER_LAUNCHER:-ccache}
fi

# Step: a clean scratch prefix each time, so nothing from an earlier run helps.
rm -rf "$SIM/deps" "$SIM/out"
mkdir -p "$SIM/out" "$SIM/empty"
printf '#!/bin/sh\necho "hidden by simulate_here.sh" >&2\nexit 127\n' >"$SIM/hidden-program"
chmod +x "$SIM/hidden-program"
: >"$SIM/empty-file"

# Step: in a private mount namespace, hide the system's copies, then run the stage there.
exec unshare -m bash -euo pipefail -c '
  SIM=$1; HERE=$2; shift 2
  mount --make-rprivate /
  hide_dir() { [ -d "$1" ] && mount --bind "$SIM/empty" "$1" && echo "hidden: $1"; return 0; }
  hide_file() { [ -e "$1" ] && mount --bind "$SIM/empty-file" "$(readlink -f "$1")" && echo "hidden: $1"; return 0; }
  for d in /usr/include/nlohmann /usr/include/gtest /usr/include/gmock /usr/include/openssl \
           /usr/include/x86_64-linux-gnu/openssl /usr/include/CLI /usr/share/cmake/nlohmann_json \
           /usr/share/cmake/CLI11 /usr/lib/x86_64-linux-gnu/cmake/GTest /usr/src/googletest \
           /usr/lib/x86_64-linux-gnu/cmake/simdjson /usr/lib/x86_64-linux-gnu/cmake/zstd \
           /usr/lib/x86_64-linux-gnu/pkgconfig /usr/share/pkgconfig; do hide_dir "$d"; done
  for f in /usr/include/sentencepiece_processor.h /usr/include/sentencepiece_trainer.h \
           /usr/include/pcre2.h /usr/include/utf8proc.h /usr/include/simdjson.h \
           /usr/lib/x86_64-linux-gnu/libsimdjson.so.14 /usr/include/zstd.h /usr/include/zdict.h \
           /usr/include/zstd_errors.h /usr/lib/x86_64-linux-gnu/libzstd.a \
           /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/x86_64-linux-gnu/libgtest_main.a \
           /usr/lib/x86_64-linux-gnu/libgmock.a /usr/lib/x86_64-linux-gnu/libgmock_main.a \
           /usr/lib/x86_64-linux-gnu/libsentencepiece.so.0 /usr/lib/x86_64-linux-gnu/libsentencepiece_train.so.0; do
    hide_file "$f"
  done
  [ -e /usr/bin/pkgconf ] && mount --bind "$SIM/hidden-program" /usr/bin/pkgconf && echo "hidden: /usr/bin/pkgconf (and pkg-config)"
  OUT=$SIM/out H2O_DEPS_PREFIX=$SIM/deps H2O_GPU_BUILD=${H2O_GPU_BUILD:-$SIM/build} \
    H2O_STAGE_BUDGET_S=${H2O_STAGE_BUDGET_S:-1800} H2O_BUILD_LIMIT_S=${H2O_BUILD_LIMIT_S:-1200} bash "$HERE/run_on_device.sh" "$@" && rc=0 || rc=$?
  # What the built programs load (check/bench): the carried libcrypto, SentencePiece and simdjson, not the system copies.
  for exe in "${H2O_GPU_BUILD:-$SIM/build}/app/h2o-cli" "${H2O_GPU_BUILD:-$SIM/build}/tests/h2o_tests"; do
    [ -x "$exe" ] && { echo "ldd $exe:"; ldd "$exe" | grep -E "crypto|ssl|sentencepiece|simdjson|zstd" || true; }
  done
  exit $rc
' _ "$SIM" "$HERE" "$@"
