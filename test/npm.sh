#!/usr/bin/env bash
# `npm.sh CACHE`: installs the npm packages the tests use (pinned) into
# CACHE/node_modules once; parallel tests wait for one install.
#   gpt-3-encoder, js-tiktoken   GPT-2 tokenizer oracles (test/tokenizers)
#   openai                       the official client, against fbt serve (test/serve)
set -euo pipefail
cache=$1
packages=(gpt-3-encoder@1.1.4 js-tiktoken@1.0.21 openai@4.95.0)
ready() { [[ -f $cache/.installed ]] && [[ $(cat "$cache/.installed") == "${packages[*]}" ]]; }
ready && exit 0
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
ready && exit 0
(cd "$cache" && npm install --no-audit --no-fund --silent --no-save "${packages[@]}" >&2)
echo "${packages[*]}" > "$cache/.installed"
