#!/usr/bin/env bash
# The GPU check: builds the runtime, then GPU-against-CPU numerics, a world of
# one through the NCCL engine against the same training run alone, training
# throughput and MFU against PyTorch (eager, torch.compile), and decode latency
# against the HBM floor and PyTorch; a report on stdout and, when $OUT is set,
# in $OUT/gpu_report.txt and $OUT/gpu_report.json, then kernel tuning (fbt tune,
# tuned against default). About 6 minutes; every stage has its own timeout and
# the whole run stays under GPU_CHECK_BUDGET seconds (default 540).
#
# Prepare where the compiler is (writes bench/gpu/, ignored by git):
#   /usr/bin/python3 bench/gpu_prepare.py            # --target sm_90, specs/124m.json
# then, on the GPU machine, from the repository root, with bench/gpu carried along:
#   bench/gpu_check.sh
# It needs CUDA, CMake, Ninja, a C++ compiler and python3 with torch; no MLIR/LLVM,
# no BLAS, no network. PYTHON picks the interpreter (default python3). The NCCL
# stage also needs mpirun and MPI's headers (Open MPI) and libnccl.so.2 (the
# loader's, FBT_NCCL's or PyTorch's); it is skipped, saying which is missing,
# without them.
#
# Without a GPU, or with GPU_CHECK_DRY=1, nothing is built: the stages run with
# build/tools/fbt/fbt on bundles prepared with `--target cpu` (a dry run of the
# script, e.g. `gpu_prepare.py --target cpu --model specs/tiny.json`).
# GPU_CHECK_EMULATED=1 rehearses the real run on the emulated GPU instead
# (test/emucuda; bundles from `gpu_prepare.py --emulated`): build/tools/fbt/fbt
# through the CUDA backend, its kernels run as their SIMT twins.
set -uo pipefail
cd "$(dirname "$0")/.."

START=$(date +%s)
export GPU_CHECK_DEADLINE=$((START + ${GPU_CHECK_BUDGET:-540}))
PYTHON=${PYTHON:-python3}
left() { echo $((GPU_CHECK_DEADLINE - $(date +%s))); }

if [[ -n ${GPU_CHECK_EMULATED:-} ]]; then
  export GPU_CHECK_GPU="NVIDIA H200 (emulated)"
  export FBT=${FBT:-$PWD/build/tools/fbt/fbt}
  export LD_LIBRARY_PATH=$PWD/build/test/emucuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export FBT_EMU_CUDA_TWINS=$PWD/bench/gpu/twins
  export GPU_CHECK_BUILD="skipped (the emulated driver of test/emucuda, with $FBT)"
elif [[ -z ${GPU_CHECK_DRY:-} ]] && nvidia-smi -L >/dev/null 2>&1; then
  export GPU_CHECK_GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  [[ -d /usr/local/cuda/bin ]] && export PATH=/usr/local/cuda/bin:$PATH
  LOG=${OUT:-/tmp}/gpu_build.log
  echo "== building the runtime into build-gpu (log: $LOG)"
  budget=$(( $(left) < 240 ? $(left) : 240 ))
  if timeout "$budget" bash -c 'cmake -G Ninja -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release \
         -DFBT_ENABLE_COMPILER=OFF -DFBT_ENABLE_TESTS=OFF -DFBT_HEADERS=$PWD/bench/gpu/include \
         && cmake --build build-gpu' \
       >"$LOG" 2>&1 && [[ -x build-gpu/tools/fbt/fbt ]]; then
    export GPU_CHECK_BUILD="ok in $(( $(date +%s) - START )) s"
  else
    export GPU_CHECK_BUILD="FAILED after $(( $(date +%s) - START )) s (see the log)"
    tail -n 25 "$LOG"
  fi
  export FBT=${FBT:-$PWD/build-gpu/tools/fbt/fbt}
else
  export GPU_CHECK_GPU=""
  export FBT=${FBT:-$PWD/build/tools/fbt/fbt}
  export GPU_CHECK_BUILD="skipped (no GPU: $FBT)"
fi
"$PYTHON" bench/gpu_check.py
