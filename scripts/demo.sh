#!/usr/bin/env bash
# The main job on the embedded default: install, build, compile the tiny spec
# and show what was compiled.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=${FBT_BUILD_DIR:-build}
SPEC=${1:-specs/tiny.json}

"$BUILD_DIR/tools/fbtc/fbtc" "$SPEC" --describe
"$BUILD_DIR/tools/fbtc/fbtc" "$SPEC" --emit=fbt
