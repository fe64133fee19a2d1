#!/usr/bin/env bash
# Runs the tests: installs what is missing, builds, then the lit suite
# (compiler, tools, end to end) and the GoogleTest suite (libraries,
# runtime) through CTest.
#
#   scripts/test.sh           every test (what CI runs)
#   scripts/test.sh --quick   every component's fast tests: lit leaves out
#                             the tests marked `REQUIRES: long-tests`
#                             (experiments, tuning, install, the GGUF peer,
#                             the emulated GPU end to end, fuzzers)
#
# lit gives each test at most FBT_LIT_TIMEOUT seconds (default 900).
set -euo pipefail
cd "$(dirname "$0")/.."

lit_args=(-sv)
case "${1:-}" in
  "") ;;
  --quick) lit_args+=(--param quick=1) ;;
  -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown option '$1' (expected --quick)" >&2; exit 2 ;;
esac

scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=${FBT_BUILD_DIR:-build}

status=0
echo "== lit suite (compiler, tools, end to end) =="
/usr/lib/llvm-22/bin/lit "${lit_args[@]}" "$BUILD_DIR/test" || status=1
echo "== GoogleTest suite (CTest) =="
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" || status=1
exit $status
