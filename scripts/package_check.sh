#!/usr/bin/env bash
# Proves the Debian package on a clean system (docs/PACKAGING.md): builds it
# (`cpack -G DEB`), checks it with lintian, creates a fresh Debian 12 root with
# debootstrap (Debian's own packages, from the mirror this machine uses; no
# CUDA toolkit in it), installs the package there with `apt-get install ./….deb`,
# and there: no installed program links a CUDA library; `h2o-cli --version`;
# `h2o-cli stream --questions 1` on the installed demo; `--backend cuda` is one
# line and exit 1 (the module is there, the CUDA runtime is not); the app,
# started by its menu entry's own command line under xvfb-run, to a screenshot
# at step 200; desktop-file-validate and appstreamcli validate on the installed
# files. Writes $OUT/results.md (each step, its time, what it said) and the
# screenshot. Root only (debootstrap, chroot); CI does not run it (it downloads
# a root: about 5 minutes of the run, more for the first build).
#
#   scripts/package_check.sh [PACKAGE.deb]   with a .deb: check that one, build none
#
#   BUILD [build-deb] (the package's build folder)   OUT [$BUILD/package-check]
#   ROOT [/var/tmp/h2o-package-root] (the Debian root, made afresh each run)
#   MIRROR [the first deb.debian.org-style URI of /etc/apt/sources*, else http://deb.debian.org/debian]
#   H2O_ASSETS [../shared/assets] (the demo the package carries)
#   H2O_CUDA_ARCHITECTURES [desktop]   JOBS [nproc]   CACHE [/var/cache/h2o-debootstrap] (downloaded .debs)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUILD=${BUILD:-$REPO/build-deb}
OUT=${OUT:-$BUILD/package-check}
ROOT=${ROOT:-/var/tmp/h2o-package-root}
CACHE=${CACHE:-/var/cache/h2o-debootstrap}
JOBS=${JOBS:-$(nproc)}
export H2O_ASSETS=${H2O_ASSETS:-$REPO/../shared/assets}
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
RESULTS=$OUT/results.md
FAILS=0
T0=$SECONDS

(($(id -u) == 0)) || { echo "package_check: needs root (debootstrap, chroot)" >&2; exit 2; }
for tool in debootstrap lintian dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "package_check: $tool not found (apt-get install debootstrap lintian dpkg-dev)" >&2; exit 2; }
done
mkdir -p "$OUT"
: >"$RESULTS"
echo "# package_check — $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) cores" >>"$RESULTS"
printf '\n| step | result | s | detail |\n|---|---|---:|---|\n' >>"$RESULTS"

# One row of the results: STEP RESULT SECONDS DETAIL (the detail's pipes escaped, one line).
row() {
  local detail
  detail=$(printf '%s' "$4" | tr '\n' ' ' | sed 's/|/\\|/g; s/  */ /g' | cut -c1-400)
  echo "| $1 | $2 | $3 | $detail |" | tee -a "$RESULTS"
  [[ $2 == FAIL* ]] && FAILS=$((FAILS + 1))
  return 0
}
# step NAME LOG CMD...: runs CMD (output to $OUT/LOG), a row with its time; returns its status.
step() {
  local name=$1 log=$OUT/$2 t0=$SECONDS rc=0
  shift 2
  "$@" >"$log" 2>&1 || rc=$?
  if ((rc == 0)); then row "$name" ok $((SECONDS - t0)) "$(tail -n 1 "$log")"
  else row "$name" "FAIL (exit $rc)" $((SECONDS - t0)) "$(tail -n 3 "$log")"; fi
  return "$rc"
}
in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

unmount_root() {
  for m in "$ROOT/dev/pts" "$ROOT/dev" "$ROOT/proc" "$ROOT/sys"; do
    mountpoint -q "$m" 2>/dev/null && umount -l "$m"
  done
  return 0
}
finish() {
  unmount_root
  printf '\n_package_check: %d failed step(s), %d s in all._\n' "$FAILS" $((SECONDS - T0)) >>"$RESULTS"
  echo "package_check: $FAILS failed step(s), $((SECONDS - T0)) s; $RESULTS"
}
trap finish EXIT

# ---- the package
build_package() {
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DH2O_NATIVE=OFF -DH2O_TESTS=OFF "-DH2O_CUDA_ARCHITECTURES=${H2O_CUDA_ARCHITECTURES:-desktop}" "${launcher[@]}" &&
    cmake --build "$BUILD" -j "$JOBS" &&
    (cd "$BUILD" && rm -f h2o-studio_*.deb && cpack -G DEB)
}
if (($# > 0)); then
  DEB=$(realpath "$1")
  row "package" "given" 0 "$DEB"
else
  step "build the package (cmake, cpack -G DEB)" build.log build_package || exit 1
  DEB=$(ls "$BUILD"/h2o-studio_*_amd64.deb)
fi
row "package file" ok 0 "$(basename "$DEB"), $(du -k "$DEB" | cut -f1) KiB; $(dpkg-deb -f "$DEB" Installed-Size) KiB installed"
dpkg-deb -f "$DEB" Depends Suggests >"$OUT/control.txt"
lint() {
  lintian --tag-display-limit 0 "$DEB" >"$OUT/lintian-tags.txt" || true
  cat "$OUT/lintian-tags.txt"
  local errors warnings
  errors=$(grep -c '^E:' "$OUT/lintian-tags.txt" || true)
  warnings=$(grep -c '^W:' "$OUT/lintian-tags.txt" || true)
  echo "errors $errors, warnings $warnings"
  ((errors == 0))
}
step "lintian (no errors)" lintian.log lint || true

# ---- a clean Debian 12 root
make_root() {
  unmount_root
  rm -rf "$ROOT"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase --cache-dir="$CACHE" bookworm "$ROOT" "$MIRROR" &&
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf" &&
    mount -t proc proc "$ROOT/proc" && mount -t sysfs sys "$ROOT/sys" &&
    mount --bind /dev "$ROOT/dev" && mount --bind /dev/pts "$ROOT/dev/pts" &&
    echo "Debian $(cat "$ROOT/etc/debian_version") from $MIRROR"
}
step "debootstrap bookworm (minbase)" debootstrap.log make_root || exit 1
no_cuda() {
  if in_root sh -c 'ls -d /usr/local/cuda* 2>/dev/null || ldconfig -p | grep -E "libcuda|libcudart|libcublas"'; then
    echo "CUDA is in the root"
    return 1
  fi
  echo "no CUDA toolkit, runtime or driver in the root"
}
step "the root has no CUDA" no-cuda.log no_cuda || true

cp "$DEB" "$ROOT/tmp/"
install_deb() {
  in_root apt-get update -q && DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q "/tmp/$(basename "$DEB")" &&
    in_root dpkg-query -W -f='${Package} ${Version}, ${Installed-Size} KiB installed\n' h2o-studio
}
step "apt-get install ./$(basename "$DEB")" install.log install_deb || exit 1

# ---- in the root
no_cuda_linked() {
  local progs
  progs=$(in_root dpkg -L h2o-studio | grep '^/usr/bin/')
  for p in $progs; do
    if in_root ldd "$p" | grep -E 'libcuda|libcudart|libcublas|not found'; then echo "$p links CUDA (or misses a library)"; return 1; fi
  done
  echo "ldd of $(echo $progs): no CUDA library, nothing missing"
}
step "ldd of every installed program" ldd.log no_cuda_linked || true
# The programs say the package's version (a stale build folder packaged would not).
same_version() {
  local said
  said=$(in_root h2o-cli --version)
  echo "$said"
  [[ $said == "h2o-cli $(dpkg-deb -f "$DEB" Version)" ]]
}
step "h2o-cli --version is the package's" version.log same_version || true
stream() { in_root sh -c 'cd /tmp && h2o-cli stream --questions 1 --max-new-tokens 48'; }
step "h2o-cli stream --questions 1 (the installed demo)" stream.log stream || true
cuda_line() {
  local rc=0
  in_root sh -c 'cd /tmp && h2o-cli info --backend cuda --model /usr/share/h2o-studio/kjv-1M.bin' \
    >"$OUT/cuda.out" 2>"$OUT/cuda.err" || rc=$?
  cat "$OUT/cuda.err"
  ((rc == 1)) && [[ $(wc -l <"$OUT/cuda.err") -eq 1 ]] && grep -q '^h2o-cli: --backend: cuda: ' "$OUT/cuda.err"
}
step "h2o-cli --backend cuda: one line, exit 1" cuda.log cuda_line || true

tools() { DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q xvfb xauth desktop-file-utils appstream; }
step "install the checking tools (xvfb, desktop-file-utils, appstream)" tools.log tools || true
# The app as its menu entry starts it: the desktop file's Exec line, field codes (%f) dropped.
app() {
  local desktop exec
  desktop=$(in_root sh -c 'ls /usr/share/applications/*.desktop' | head -1)
  exec=$(in_root sed -n 's/^Exec=//p' "$desktop" | sed 's/ *%[fFuU]//g')
  echo "menu entry $desktop: Exec=$exec"
  in_root sh -c "cd /tmp && xvfb-run -a -s '-screen 0 1920x1080x24' $exec --no-settings --window-size 1600x900 \
    --autoplay-steps 200 --screenshot /tmp/package-check-step200.png" &&
    cp "$ROOT/tmp/package-check-step200.png" "$OUT/" && echo "screenshot: $OUT/package-check-step200.png"
}
step "the app from its menu entry, step 200 under xvfb-run" app.log app || true
validate() {
  in_root sh -c 'desktop-file-validate /usr/share/applications/*.desktop && echo "desktop-file-validate: no errors" &&
                 appstreamcli validate --no-net /usr/share/metainfo/*.metainfo.xml'
}
step "desktop-file-validate, appstreamcli validate" validate.log validate || true
sizes() {
  local module
  module=$(in_root sh -c 'ls /usr/lib/*/h2o-studio/h2o-cuda.so')
  in_root sh -c "dpkg -L h2o-studio | while read -r f; do [ -f \"\$f\" ] && echo \"\$f\"; done | xargs du -cb | tail -1" |
    awk -v m="$(in_root du -b "$module" | cut -f1)" \
        '{printf "installed %.1f MiB; the CUDA module %.1f MiB; without it %.1f MiB\n", $1 / 1048576, m / 1048576, ($1 - m) / 1048576}'
}
step "installed sizes" sizes.log sizes || true
exit $((FAILS > 0))
