#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, build,
# compile the tiny spec for the CPU, train it on the embedded corpus (the loss
# falls), measure it in inference mode (held-out loss per pass and per
# decoding regime), then generate text in every decoding regime.
#
#   scripts/demo.sh [SPEC] [STEPS]
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: scripts/demo.sh [SPEC] [STEPS]   (default specs/tiny.json, 1500 steps)"
  echo "Installs what is missing, builds, then compiles, trains, evaluates and samples SPEC."
  exit 0
fi
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=${FBT_BUILD_DIR:-build}
SPEC=${1:-specs/tiny.json}
STEPS=${2:-1500}
NAME=$(basename "$SPEC" .json)
RUN=runs/$NAME
mkdir -p "$RUN"

echo "== the model =="
"$BUILD_DIR/tools/fbtc/fbtc" "$SPEC" --describe

echo "== compile for the CPU =="
"$BUILD_DIR/tools/fbtc/fbtc" "$SPEC" --target=cpu -o "$RUN/$NAME.fbtb"
"$BUILD_DIR/tools/fbt/fbt" inspect "$RUN/$NAME.fbtb"

echo "== train on the embedded corpus =="
"$BUILD_DIR/tools/fbt/fbt" train "$RUN/$NAME.fbtb" --steps "$STEPS" --out "$RUN"

echo "== evaluate on held-out text (inference mode) =="
"$BUILD_DIR/tools/fbt/fbt" eval "$RUN/$NAME.fbtb" --ckpt "$RUN/latest.safetensors" --quiet

echo "== generate =="
for mode in standard soft fused:2; do
  echo "-- $mode"
  "$BUILD_DIR/tools/fbt/fbt" generate "$RUN/$NAME.fbtb" --ckpt "$RUN/latest.safetensors" \
    --mode "$mode" --prompt "Once upon a time" --max-new-tokens 120 \
    --temperature 0.7 --top-k 40 --seed 1
done
