#!/usr/bin/env bash
# Installs every Debian package fbt's build and tests need. Idempotent: a
# second run on a ready machine only checks.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: scripts/install-deps.sh"
  echo "Installs the Debian packages fbt's build and tests need (root or sudo); a second run"
  echo "on a ready machine only checks."
  exit 0
fi

packages=(
  cmake ninja-build ccache
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
  libclang-rt-22-dev      # libFuzzer and sanitizers
  libgtest-dev            # unit tests
  libopenblas-dev         # CPU GEMMs
  libopenmpi-dev openmpi-bin  # data-parallel training: ranks joined by MPI
  python3-torch           # the independent numerics reference
  python3-matplotlib      # the experiment report's plots
  libpcre2-dev            # GPT-2 BPE's pre-tokenizing pattern (Unicode classes)
  libsentencepiece-dev    # SentencePiece tokenizers
  sentencepiece           # spm_train, spm_encode: a test model and its ids
  libcpp-httplib-dev      # fbt serve
  nlohmann-json3-dev      # JSON: manifests, safetensors headers, metrics, requests
  libcli11-dev            # fbt's command lines
  curl                    # fbt serve's tests
  python3-psutil          # lit's per-test time limit
  python3-jsonschema      # structured output: replies validated against their schemas
  pybind11-dev            # the Python module
  python3-dev             # its headers and embedding
  python3-pytest          # its tests
  python3-numpy           # its arrays
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
