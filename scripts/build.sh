#!/usr/bin/env bash
# Configures (once) and builds fbt with Ninja into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${FBT_BUILD_DIR:-build}
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DFBT_ENABLE_FUZZERS=ON "$@"
fi
cmake --build "$BUILD_DIR" -- -j"${FBT_JOBS:-$(nproc)}"
