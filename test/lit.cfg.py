# lit configuration for the fbt compiler tests.
import os
import re
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FBT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "fuzz", "runtime", "reference", "simt"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fbt_obj_root, "test")

llvm_config.use_default_substitutions()
config.substitutions.append(("%specs", os.path.join(config.fbt_src_root, "specs")))

tool_dirs = [
    os.path.join(config.fbt_obj_root, "tools", "fbt-opt"),
    os.path.join(config.fbt_obj_root, "tools", "fbtc"),
    config.llvm_tools_dir,
]
tool_dirs.append(os.path.join(config.fbt_obj_root, "test", "simt"))
# fbtc replays an identical earlier compile (test/lib/fbtc_cached.py; compiles
# are deterministic): the suite compiles the same specs dozens of times.
fbtc_bin = os.path.join(config.fbt_obj_root, "tools", "fbtc", "fbtc")
fbtc = ToolSubst("fbtc", command="/usr/bin/python3 %s --cache %s %s" % (
    os.path.join(config.fbt_src_root, "test", "lib", "fbtc_cached.py"),
    os.path.join(config.fbt_obj_root, "test", "fbtc-cache"), fbtc_bin))
llvm_config.add_tool_substitutions(["fbt-opt", fbtc, "fbt-simt-check"], tool_dirs)
# The runtime CLI is %fbt: a bare `fbt` would also match `--emit=fbt`.
fbt_cli = os.path.join(config.fbt_obj_root, "tools", "fbt", "fbt")
config.substitutions.append(("%fbt", fbt_cli))

# End-to-end tests run the runtime CLI and compare with the PyTorch
# reference, which needs Debian's python3 (the one with python3-torch).
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%reference", os.path.join(config.fbt_src_root, "test", "reference")))
config.substitutions.append(("%e2e", os.path.join(config.fbt_src_root, "test", "e2e")))
if os.path.exists(fbt_cli):
    config.available_features.add("runtime")
# The Python module (python/, built with pybind11 when it is installed).
import glob
if glob.glob(os.path.join(config.fbt_obj_root, "python", "fbt", "_fbt*.so")):
    config.available_features.add("python-module")
# install/: `cmake --install` of this build, and a project built against it
# with the same CMake and compiler.
config.substitutions.append(("%build_dir", config.fbt_obj_root))
config.substitutions.append(("%cmake", config.cmake))
config.substitutions.append(("%cxx", config.cxx_compiler))
# Tokenizer oracles and the OpenAI client are npm packages, installed once
# into the build folder by test/npm.sh (pinned versions): node and npm.
if shutil.which("node") and shutil.which("npm"):
    config.available_features.add("node")
config.substitutions.append(("%npm_cache", os.path.join(config.fbt_obj_root, "test", "npm")))
config.substitutions.append(("%tokenizers", os.path.join(config.fbt_src_root, "test", "tokenizers")))
config.substitutions.append(("%serve", os.path.join(config.fbt_src_root, "test", "serve")))
config.substitutions.append(("%runtime_tests", os.path.join(config.fbt_obj_root, "test", "runtime", "fbt-runtime-tests")))
config.substitutions.append(("%npm_setup", os.path.join(config.fbt_src_root, "test", "npm.sh")))
# GPU end-to-end tests need a usable GPU; elsewhere lit reports them
# UNSUPPORTED. `fbt devices` exits 0 only when it can use one, and names its
# chip (%gpu_chip, what fbtc --target takes for it).
if os.path.exists(fbt_cli):
    devices = subprocess.run([fbt_cli, "devices"], capture_output=True, text=True)
    chip = re.search(r"\((sm_[0-9]+)[,)]", devices.stdout)
    if devices.returncode == 0 and chip:
        config.available_features.add("cuda-gpu")
        config.substitutions.append(("%gpu_chip", chip.group(1)))
# Data-parallel runs: Open MPI's mpirun, and an fbt built with the MPI engine
# (runtime/hal/mpi, which also builds the channel check). As root mpirun
# wants --allow-run-as-root; two ranks on a small machine need
# --oversubscribe and no binding; one OpenMP thread each, like 1 rank x 1.
if shutil.which("mpirun") and os.path.exists(
        os.path.join(config.fbt_obj_root, "test", "runtime", "fbt-mpi-channel-check")):
    config.available_features.add("mpi")
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe "
                             "--bind-to none -x OMP_NUM_THREADS=1"))
config.substitutions.append(("%mpi_channel_check", os.path.join(
    config.fbt_obj_root, "test", "runtime", "fbt-mpi-channel-check")))
# The emulated CUDA driver and cuBLASLt (test/emucuda): %emucuda runs a
# command with them where the runtime looks for NVIDIA's; the kernels of a
# GPU bundle run as the SIMT twin FBT_EMU_CUDA_TWIN names.
emucuda = os.path.join(config.fbt_obj_root, "test", "emucuda", "lib")
if os.path.exists(os.path.join(emucuda, "libcuda.so.1")):
    config.available_features.add("emucuda")
config.substitutions.append(("%emucuda", "env LD_LIBRARY_PATH=" + emucuda))
# PTX needs LLVM's NVPTX backend (Debian's LLVM has it).
llc = os.path.join(config.llvm_tools_dir, "llc")
if os.path.exists(llc) and "nvptx64" in subprocess.run(
        [llc, "--version"], capture_output=True, text=True).stdout:
    config.available_features.add("nvptx")
# Cubins need the CUDA toolkit's ptxas (fbtc looks in the same places).
ptxas = os.environ.get("FBT_PTXAS") or shutil.which("ptxas")
for d in [os.path.join(os.environ.get("CUDA_HOME", ""), "bin"), "/usr/local/cuda/bin"]:
    if not ptxas and os.access(os.path.join(d, "ptxas"), os.X_OK):
        ptxas = os.path.join(d, "ptxas")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0:
    config.available_features.add("torch")
# The experiment runner's report plots with Debian's python3-matplotlib.
if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True).returncode == 0:
    config.available_features.add("matplotlib")
# The CPU can run kernels built for cascadelake (AVX-512 with VNNI: fbtc --cpu=cascadelake's
# int8 dot): the flags /proc/cpuinfo lists.
try:
    with open("/proc/cpuinfo") as f:
        cpu_flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    cpu_flags = []
if {"avx512f", "avx512cd", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= set(cpu_flags):
    config.available_features.add("avx512-vnni")
config.substitutions.append(("%scripts", os.path.join(config.fbt_src_root, "scripts")))
config.substitutions.append(("%src_root", config.fbt_src_root))
config.substitutions.append(("%build", config.fbt_obj_root))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The spec reader's fuzzer runs (briefly) where it was built.
spec_fuzzer = os.path.join(config.fbt_obj_root, "test", "fuzz", "spec_fuzzer")
if config.fbt_fuzzers.upper() in ("ON", "TRUE", "1", "YES") and os.path.exists(spec_fuzzer):
    config.available_features.add("fuzzer")
    config.substitutions.append(("%spec_fuzzer", spec_fuzzer))
    for name in ("request", "schema", "prompts", "bundle", "safetensors", "tokens", "tune_cache"):
        config.substitutions.append(("%" + name + "_fuzzer",
                                     os.path.join(config.fbt_obj_root, "test", "fuzz",
                                                  name + "_fuzzer")))
    config.substitutions.append(("%fuzz", os.path.join(config.fbt_src_root, "test", "fuzz")))

# Two speeds. `lit --param quick=1` (scripts/test.sh --quick) leaves out the
# long tests, which say `REQUIRES: long-tests` and why: whole experiments,
# the tuner's measurements, the install, the GGUF peer, the emulated GPU end
# to end, the fuzzers. Every other test is a component's fast check.
if lit_config.params.get("quick", "0") in ("0", "", "false", "no"):
    config.available_features.add("long-tests")

# A per-test time limit (FBT_LIT_TIMEOUT seconds, default 900), so a hung
# test fails by name instead of stalling the suite; lit needs psutil for it
# (Debian's python3-psutil, scripts/install-deps.sh).
try:
    import psutil  # noqa: F401
    lit_config.maxIndividualTestTime = int(os.environ.get("FBT_LIT_TIMEOUT", "900"))
except ImportError:
    lit_config.warning("python3-psutil is missing: no per-test time limit")
