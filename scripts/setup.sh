#!/usr/bin/env bash
# Installs fuseplan's dependencies by Debian package name (idempotent), then
# configures and builds into ./build. Usage: scripts/setup.sh [--no-install]
# Env: BUILD_DIR (default build), JOBS (default nproc), CMAKE_ARGS (extra),
# FUSEPLAN_TARGETS (build only these targets).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
packages=(
  build-essential cmake pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libboost-graph-dev libeigen3-dev nlohmann-json3-dev
  libbenchmark-dev libgtest-dev libgmock-dev libcli11-dev
  coinor-libcbc-dev libssl-dev libdnnl-dev libsleef-dev
  ocl-icd-opencl-dev  # libdnnl-dev's CMake config requires OpenCL (Debian builds oneDNN with its OpenCL GPU runtime)
  graphviz gnuplot-nox
  clang libclang-rt-14-dev
)
if [ "${1:-}" != "--no-install" ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cd "$here"
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" ${FUSEPLAN_TARGETS:+--target $FUSEPLAN_TARGETS}
if [ -n "${FUSEPLAN_TARGETS:-}" ]; then
  echo "built $FUSEPLAN_TARGETS in $here/$build (not the fuseplan CLI unless named)"
else
  echo "fuseplan built: $here/$build/cli/fuseplan"
fi
