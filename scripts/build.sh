#!/usr/bin/env bash
# Configures (once) and builds fbt with Ninja into build/.
#
#   scripts/build.sh [CMAKE_OPTION...]   (options apply when it configures)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: scripts/build.sh [CMAKE_OPTION...]"
  echo "Configures build/ (FBT_BUILD_DIR) with Ninja once, passing CMAKE_OPTIONs, then builds"
  echo "it on FBT_JOBS jobs (default: every core)."
  exit 0
fi
cd "$(dirname "$0")/.."

BUILD_DIR=${FBT_BUILD_DIR:-build}
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DFBT_ENABLE_FUZZERS=ON "$@"
fi
cmake --build "$BUILD_DIR" -- -j"${FBT_JOBS:-$(nproc)}"
