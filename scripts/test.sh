#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, then the lit suite
# (compiler) and the GoogleTest suite (libraries, runtime) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=${FBT_BUILD_DIR:-build}

status=0
echo "== lit suite (compiler) =="
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" || status=1
echo "== GoogleTest suite (CTest) =="
ctest --test-dir "$BUILD_DIR" --output-on-failure || status=1
exit $status
