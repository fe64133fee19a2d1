#!/usr/bin/env bash
# `npm.sh CACHE [SET]`: installs a set of the npm packages the tests use
# (pinned) into CACHE/node_modules once; parallel tests wait for one install.
# Each set gets its own CACHE (the tests use %npm_cache and %npm_cache-llama).
#   default (no SET):
#     gpt-3-encoder, js-tiktoken   GPT-2 tokenizer oracles (test/tokenizers)
#     openai                       the official client, against fbt serve (test/serve)
#   llama:
#     node-llama-cpp               llama.cpp, the peer of `fbt export --gguf`
#                                  (test/e2e/gguf-export.test, bench/gguf_peer.py),
#                                  with only this machine's prebuilt CPU binaries:
#                                  its optional CUDA, Vulkan and other-CPU builds
#                                  would take 650 MB more. Its postinstall (which
#                                  may build llama.cpp) does not run; the tests load
#                                  the prebuilt binaries with build: "never".
set -euo pipefail
cache=$1
set_name=${2:-default}
options=()
case $set_name in
  default) packages=(gpt-3-encoder@1.1.4 js-tiktoken@1.0.21 openai@4.95.0) ;;
  llama)
    case $(uname -m) in
      x86_64) arch=x64 ;;
      aarch64) arch=arm64 ;;
      *) echo "npm.sh: no prebuilt node-llama-cpp for $(uname -m)" >&2; exit 1 ;;
    esac
    packages=(node-llama-cpp@3.21.1 "@node-llama-cpp/linux-$arch@3.21.1")
    options=(--omit=optional --ignore-scripts) ;;
  *) echo "npm.sh: unknown package set '$set_name' (default, llama)" >&2; exit 2 ;;
esac
ready() { [[ -f $cache/.installed ]] && [[ $(cat "$cache/.installed") == "${packages[*]}" ]]; }
ready && exit 0
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
ready && exit 0
(cd "$cache" && npm install --no-audit --no-fund --silent --no-save "${options[@]}" "${packages[@]}" >&2)
echo "${packages[*]}" > "$cache/.installed"
