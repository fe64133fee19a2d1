"""The stages of the GPU check and its report (bench/gpu_check.sh runs this).

  1. numerics   tiny spec, GPU against the CPU results bench/gpu_prepare.py stored:
                a training step (K = 1, 2) and teacher-forced decoding (standard, soft),
                with the default bf16 GEMMs and, where the runtime has a switch for
                them, exact fp32 GEMMs (bench/gpu_numerics.py check)
  2. NCCL       tiny spec, `fbt train --accumulate 2` as a world of one through the
                NCCL engine (mpirun -np 1, FBT_CHANNEL=nccl) against the same run
                without mpirun: the same losses and checkpoint (compare_runs.py);
                skipped where mpirun, libnccl.so.2 or the engine is missing
  3. training   `fbt bench --train K` against the PyTorch peer (bench/gpu_peer.py) in
                eager mode and under torch.compile: tokens/s, MFU, ratios
  4. decoding   `fbt bench --decode standard|soft` at each prepared batch against the
                HBM floor (weights + KV cache read once per step) and the PyTorch peer;
                the first batch again with bf16 inference weights against the bf16
                weights' floor, and with an f16 KV cache too
  5. tuning     `fbt tune` on the model with kernel variants (train_k2 and the
                first batch's standard decode), then `fbt bench` tuned against
                default, alternating: K = 2 training and that batch's decode
Every command runs under its own timeout, clamped to GPU_CHECK_DEADLINE (epoch
seconds); a stage that fails says why and the next one runs. The report goes to
stdout and, when $OUT is set, to $OUT/gpu_report.txt and $OUT/gpu_report.json
(rewritten after every stage, so a cut-short run still leaves one).
Without a GPU (or with GPU_CHECK_DRY=1) the stages run only on bundles prepared
with --target cpu: a dry run of this script, not a measurement.
"""

import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.environ.get("GPU_CHECK_DIR", os.path.join(ROOT, "bench", "gpu"))
FBT = os.environ.get("FBT", os.path.join(ROOT, "build-gpu", "tools", "fbt", "fbt"))
PY = sys.executable
START = time.time()
DEADLINE = float(os.environ.get("GPU_CHECK_DEADLINE", START + 420))

PEAK_FLOPS = 989e12  # H200 dense bf16 tensor-core peak, FLOP/s
HBM_BYTES_PER_S = 4.8e12  # H200 HBM3e bandwidth
TRAIN_STEPS, DECODE_PROMPT, DECODE_TOKENS = 8, 512, 64
TIMEOUT = {"numerics": 60, "nccl": 45, "fbt_train": 60, "peer_eager": 75, "peer_compile": 120,
           "fbt_decode": 40, "peer_decode": 60, "tune": 150}
NCCL_STEPS = 20  # of the tiny spec: well under a second each on a GPU


class Report:
    def __init__(self):
        self.lines, self.data, self.failures = [], {}, []

    def say(self, line=""):
        print(line)
        sys.stdout.flush()
        self.lines.append(line)

    def fail(self, what, why):
        self.failures.append("%s: %s" % (what, why))
        self.say("  FAILED %s: %s" % (what, why))

    def save(self):
        out = os.environ.get("OUT")
        if not out:
            return
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "gpu_report.txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")
        with open(os.path.join(out, "gpu_report.json"), "w") as f:
            json.dump(dict(self.data, failures=self.failures), f, indent=1)


def run(cmd, timeout, env=None, stderr=None):
    """(ok, stdout, why): the command in its own process group, killed whole on timeout.
    `stderr`, a list, gets the command's whole stderr appended."""
    timeout = min(timeout, DEADLINE - time.time() - 5)
    if timeout < 10:
        return False, "", "out of time (the run's deadline is near)"
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         universal_newlines=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return False, out, "timed out after %.0f s" % timeout
    if stderr is not None:
        stderr.append(err)
    if p.returncode != 0:
        tail = (err.strip() or out.strip() or "no output").splitlines()[-1]
        return False, out, "exit status %d: %s" % (p.returncode, tail.strip())
    return True, out, ""


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.startswith("{")]


def fp32_switch():
    """NAME=VALUE that makes the runtime's GEMMs exact fp32, or None where the runtime has
    no such switch (GPU_CHECK_FP32_ENV overrides)."""
    if os.environ.get("GPU_CHECK_FP32_ENV"):
        return os.environ["GPU_CHECK_FP32_ENV"]
    for d, _, names in os.walk(os.path.join(ROOT, "runtime")):
        for n in names:
            if n.endswith(".cpp"):
                with open(os.path.join(d, n), errors="replace") as f:
                    if 'getenv("FBT_GEMM_COMPUTE")' in f.read():
                        return "FBT_GEMM_COMPUTE=fp32"
    return None


def numerics(rep, prep):
    rep.say("== 1. numerics: GPU against CPU, tiny spec (train step K=1,2; decoding)")
    t = prep["tiny"]
    runs = [("bf16", None)]
    switch = fp32_switch()
    if switch:
        runs.append(("fp32", switch))
    rep.data["numerics"] = {}
    for precision, env in runs:
        rep.say("  %s%s; tolerances per line (error <= tolerance)" % (
            precision, " GEMMs and f32 storage (%s)" % env if env else
            " (the default: bf16 training activations, bf16 tensor-core GEMMs, fp32 "
            "accumulation, parameters and optimizer state)"))
        bundle = t["bundle"] if precision == "bf16" else t.get("bundle_f32", t["bundle"])
        with tempfile.NamedTemporaryFile(suffix=".json") as js:
            cmd = [PY, os.path.join(ROOT, "bench", "gpu_numerics.py"), "check",
                   os.path.join(DIR, t["numerics"]), FBT, os.path.join(DIR, bundle),
                   "--precision", precision, "--json", js.name] + (["--env", env] if env else [])
            ok, out, why = run(cmd, TIMEOUT["numerics"])
            for line in out.splitlines():
                rep.say(line)
            try:
                with open(js.name) as f:
                    res = json.load(f)
            except ValueError:
                res = None
        if res is None:
            rep.fail("numerics (%s)" % precision, why or "no results")
            continue
        rep.data["numerics"][precision] = res
        bad = [c["check"] for c in res["checks"] if not c["ok"]]
        if bad:
            rep.failures.append("numerics (%s): %d checks failed: %s" % (
                precision, len(bad), ", ".join(bad[:5])))
    if not switch:
        rep.say("  exact fp32 GEMMs: skipped, the runtime has no FBT_GEMM_COMPUTE switch "
                "(GPU_CHECK_FP32_ENV=NAME=VALUE names another)")


def mpirun_command():
    """mpirun with what a launch of one rank on this machine needs, or None."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None
    cmd = [mpirun]
    ok, out, _ = run([mpirun, "--version"], 20)
    if "Open MPI" in out:  # Open MPI wants these as root, and binds ranks to cores
        cmd += (["--allow-run-as-root"] if os.geteuid() == 0 else []) + ["--bind-to", "none"]
        if not shutil.which("ssh") and not shutil.which("rsh"):
            # It looks for a remote shell even to start ranks here (containers
            # often have none); a launch on this machine never calls it.
            cmd += ["--mca", "plm_rsh_agent", "false"]
    # A local launch inherits the environment; -x says so for every MPI.
    for name in ("LD_LIBRARY_PATH", "FBT_EMU_CUDA_TWINS", "FBT_NCCL", "NCCL_DEBUG"):
        if os.environ.get(name):
            cmd += ["-x", name]
    return cmd


def nccl(rep, prep):
    """A world of one through the NCCL engine against the same run alone. On CPU
    bundles (a dry run) the MPI engine stands in, to exercise the stage."""
    rep.say("")
    gpu = prep["target"] != "cpu"
    engine = "nccl" if gpu else "mpi"
    emulated = bool(os.environ.get("GPU_CHECK_EMULATED"))
    steps = 1 if emulated else NCCL_STEPS  # the emulator takes many seconds a step
    rep.say("== 2. data parallelism: fbt train --accumulate 2, %d steps of the tiny spec, as a "
            "world of one through the %s engine (mpirun -np 1, FBT_CHANNEL=%s) against the "
            "same run without mpirun" % (steps, engine.upper() if gpu else "MPI", engine))
    res = rep.data["nccl"] = {"engine": engine, "steps": steps}

    def skip(why):
        res["skipped"] = why
        rep.say("  SKIPPED: %s" % why)

    mpirun = mpirun_command()
    if not mpirun:
        return skip("no mpirun here (Open MPI: openmpi-bin and libopenmpi-dev, then rebuild "
                    "the runtime so that it has the MPI and NCCL engines)")
    work = tempfile.mkdtemp(prefix="fbt-nccl-")
    bundle = os.path.join(DIR, prep["tiny"]["bundle"])
    train = ["train", bundle, "--steps", str(steps), "--accumulate", "2", "--val-fraction", "0",
             "--quiet", "--out"]
    ok, out, why = run([FBT] + train + [os.path.join(work, "alone")], TIMEOUT["nccl"])
    if not ok:
        return rep.fail("data parallelism (the run alone)", why)
    env = dict(os.environ, FBT_CHANNEL=engine)
    if gpu and not emulated and not os.environ.get("FBT_NCCL"):
        found = nccl_library()
        if found:
            env["FBT_NCCL"] = found
            mpirun += ["-x", "FBT_NCCL"]
            rep.say("  NCCL: %s" % found)
    started, err = time.time(), []
    ok, out, why = run(mpirun + ["-x", "FBT_CHANNEL", "-np", "1", FBT] + train +
                       [os.path.join(work, engine)], TIMEOUT["nccl"], env=env, stderr=err)
    said = next((l for l in "".join(err).splitlines() if l.startswith("fbt: error:")), why)
    # What this machine lacks, in the runtime's words (NCCL is loaded only then).
    if not ok and "has no such engine" in said:
        return skip("this fbt has no %s engine: its build found no MPI (libopenmpi-dev)%s "
                    "(%s)" % (engine, " or no nccl.h" if gpu else "", said))
    if not ok and "no NCCL was found" in said:
        return skip(said[len("fbt: error: "):] if said.startswith("fbt: error:") else said)
    if not ok:
        return rep.fail("data parallelism (mpirun -np 1)", said)
    res["seconds"] = time.time() - started
    compare = os.path.join(ROOT, "test", "e2e", "compare_runs.py")
    ok, out, why = run([PY, compare, os.path.join(work, "alone"), os.path.join(work, engine)],
                       30)
    for line in out.splitlines():
        rep.say("  " + line)
    res.update(report=out.strip(), passed=ok)
    if not ok and gpu and differences(out):
        # A GPU whose kernels add in a varying order (atomics) differs from
        # itself: then the yardstick is two runs alone, not 1e-5.
        run([FBT] + train + [os.path.join(work, "again")], TIMEOUT["nccl"])
        _, again, _ = run([PY, compare, os.path.join(work, "alone"), os.path.join(work, "again"),
                           "--tol", "0"], 30)
        res["alone_against_alone"] = again.strip()
        noise = differences(again)
        res["passed"] = bool(noise) and max(differences(out)) <= 2 * max(noise)
        rep.say("  two runs alone: %s; %s twice that" % (
            again.strip().splitlines()[0] if again.strip() else "no comparison",
            "within" if res["passed"] else "beyond"))
    rep.say("  %s: world of one through %s, %.1f s under mpirun" % (
        "PASS" if res["passed"] else "FAIL", engine, res["seconds"]))
    if not res["passed"]:
        rep.failures.append("data parallelism (%s): %s" % (engine, why or "see above"))


def nccl_library():
    """libnccl.so.2 where the loader finds it (None: the runtime finds it too), else
    PyTorch's (pip's nvidia-nccl), else None."""
    try:
        ctypes.CDLL("libnccl.so.2")
        return None
    except OSError:
        pass
    try:
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
        for d in (spec.submodule_search_locations or []) if spec else []:
            path = os.path.join(d, "nccl", "lib", "libnccl.so.2")
            if os.path.exists(path):
                return path
    except ImportError:
        pass
    return None


def differences(report):
    """The largest relative differences compare_runs.py printed (steps, evals, weights)."""
    first = report.strip().splitlines()[0] if report.strip() else ""
    return [float(v) for v in re.findall(r"\b(?:steps|evals|weights) ([0-9.e+-]+)", first)]


def training(rep, prep, describe, spec):
    rep.say("")
    rep.say("== 3. training throughput: %s, batch %d x %d tokens, %d timed steps" % (
        prep["model"], spec["training"]["batch_size"], spec["training"]["sequence_length"],
        TRAIN_STEPS))
    flops = {p["k"]: p["flops_per_token"] for p in describe["training"]["passes"]}
    rep.say("  MFU = tokens/s x FLOPs per token (fbtc --describe: %s) / %.0f TFLOP/s "
            "(H200 dense bf16)" % (", ".join("K=%d %.3g" % kv for kv in sorted(flops.items())),
                                   PEAK_FLOPS / 1e12))
    rep.say("  peers: bench/torch_fbt.py, fp32 params, torch.autocast(bf16) forward, fused "
            "AdamW; compile = torch.compile per block and on the head")
    rows = []
    for k in (1, 2):
        ok, out, why = run([FBT, "bench", os.path.join(DIR, prep["train_bundle"]), "--train",
                            str(k), "--warmup", "2", "--steps", str(TRAIN_STEPS)],
                           TIMEOUT["fbt_train"])
        r = json_lines(out)
        if ok and r:
            rows.append(dict(impl="fbt", k=k, tokens_per_s=r[0]["tokens_per_s"],
                             step_ms=r[0]["step_ms"], gemm_share=r[0].get("gemm_share"),
                             device=r[0].get("device", "")))
        else:
            rep.fail("fbt bench --train %d" % k, why or "no JSON line")
    for impl, mode, limit in (("torch eager", "none", TIMEOUT["peer_eager"]),
                              ("torch compile", "regional", TIMEOUT["peer_compile"])):
        ok, out, why = run([PY, os.path.join(ROOT, "bench", "gpu_peer.py"), "train",
                            os.path.join(DIR, "model.json"), "--passes", "1", "2",
                            "--steps", str(TRAIN_STEPS), "--compile", mode], limit)
        got = json_lines(out)
        for r in got:
            rows.append(dict(impl=impl, k=r["passes"], tokens_per_s=r["tokens_per_s"],
                             step_ms=r["step_ms"], warmup_s=r["warmup_s"]))
        if not ok or len(got) < 2:
            rep.fail(impl, why or "missing results")
    fbt = {r["k"]: r["tokens_per_s"] for r in rows if r["impl"] == "fbt"}
    devices = sorted({r["device"] for r in rows if r.get("device")})
    if devices:
        rep.say("  fbt ran on: %s" % ", ".join(devices))
    rep.say("  %-14s %2s %12s %10s %7s %10s" % ("", "K", "tokens/s", "ms/step", "MFU",
                                                "fbt/this"))
    for r in rows:
        r["mfu"] = r["tokens_per_s"] * flops[r["k"]] / PEAK_FLOPS
        r["fbt_over"] = fbt[r["k"]] / r["tokens_per_s"] if r["k"] in fbt else None
        rep.say("  %-14s %2d %12.0f %10.2f %6.1f%% %10s%s" % (
            r["impl"], r["k"], r["tokens_per_s"], r["step_ms"], 100 * r["mfu"],
            "%.2fx" % r["fbt_over"] if r["fbt_over"] and r["impl"] != "fbt" else "-",
            "   (3 warm-up steps with compiling: %.0f s)" % r["warmup_s"]
            if r["impl"] == "torch compile" else ""))
    rep.data["train"] = rows
    return rows


def kv_dtype(bundle):
    """The element type of the bundle's KV cache, from `fbt inspect --json` (None if unknown)."""
    ok, out, _ = run([FBT, "inspect", bundle, "--json"], 30)
    try:
        inputs = json.loads(out)["steps"]["decode_step"]["inputs"]
    except (ValueError, KeyError):
        return None
    return next((i["dtype"] for i in inputs if i["name"] == "k_cache.0"), None)


def decoding(rep, prep, describe, spec):
    rep.say("")
    inf = spec["inference"]
    prompt = min(DECODE_PROMPT, inf["max_prompt_length"])
    tokens = min(DECODE_TOKENS, inf["max_sequence_length"] - prompt)
    kv = kv_dtype(os.path.join(DIR, prep["train_bundle"]))
    elem = {"f32": 4, "bf16": 2, "f16": 2}.get(kv or "f32", 4)
    kv_per_token = describe["inference"]["kv_bytes_per_token_fp32"] * elem // 4
    weights = {"standard": 4 * describe["params"]["shared"],
               "soft": 4 * describe["params"]["total"]}
    context = prompt + (tokens + 1) / 2.0  # the mean number of keys a decode step reads
    rep.say("== 4. decode latency: %s, prompt %d, %d new tokens, greedy" % (
        prep["model"], prompt, tokens))
    rep.say("  floor = (fp32 weights read once: standard %.1f MB, soft %.1f MB (+ W_U, W_G) "
            "+ batch x %.0f keys x %d B of %s KV cache) / %.1f TB/s" % (
                weights["standard"] / 1e6, weights["soft"] / 1e6, context, kv_per_token,
                kv or "f32 (assumed)", HBM_BYTES_PER_S / 1e12))
    rep.say("  peer: bench/torch_fbt.py decode, eager, fp32 weights, KV cache; ms are per "
            "decode step (one token for each of the batch's rows)")
    rep.say("  %5s %-9s %11s %10s %9s %13s %10s" % ("batch", "mode", "fbt ms", "floor ms",
                                                   "floor/fbt", "torch ms", "torch/fbt"))
    rows = []
    for b, bundle in sorted(prep["decode_bundles"].items(), key=lambda kv: int(kv[0])):
        ours = {}
        for mode in ("standard", "soft"):
            ok, out, why = run([FBT, "bench", os.path.join(DIR, bundle), "--decode", mode,
                                "--tokens", str(prompt), "--steps", str(tokens), "--warmup", "1"],
                               TIMEOUT["fbt_decode"])
            r = json_lines(out)
            if ok and r:
                ours[mode] = r[0]["ms_per_token"]
            else:
                rep.fail("fbt bench --decode %s (batch %s)" % (mode, b), why or "no JSON line")
        ok, out, why = run([PY, os.path.join(ROOT, "bench", "gpu_peer.py"), "decode",
                            os.path.join(DIR, "model.json"), "--batch", b, "--prompt",
                            str(prompt), "--tokens", str(tokens)], TIMEOUT["peer_decode"])
        peer = (json_lines(out) or [{}])[0]
        if not ok:
            rep.fail("torch decode (batch %s)" % b, why)
        for mode in ("standard", "soft"):
            floor = 1e3 * (weights[mode] + int(b) * context * kv_per_token) / HBM_BYTES_PER_S
            r = dict(batch=int(b), mode=mode, fbt_ms=ours.get(mode), floor_ms=floor,
                     torch_ms=peer.get(mode))
            r["floor_over_fbt"] = floor / r["fbt_ms"] if r["fbt_ms"] else None
            r["torch_over_fbt"] = (r["torch_ms"] / r["fbt_ms"]
                                   if r["fbt_ms"] and r["torch_ms"] else None)
            rows.append(r)
            rep.say("  %5s %-9s %11s %10.4f %9s %13s %10s" % (
                b, mode, fmt(r["fbt_ms"], "%.4f"), floor, fmt(r["floor_over_fbt"], "%.2f"),
                fmt(r["torch_ms"], "%.4f"), fmt(r["torch_over_fbt"], "%.2fx")))
        rep.say("  %5s soft/standard: fbt %s, torch %s" % (
            b, ratio(ours, "soft", "standard"), ratio(peer, "soft", "standard")))
    rows += decoding_bf16(rep, prep, describe, prompt, tokens, context, kv_per_token)
    rep.data["decode"] = rows
    return rows


def decoding_bf16(rep, prep, describe, prompt, tokens, context, kv_per_token):
    """The first batch's decode with bf16 inference weights (fbtc
    --inference-weights=bf16) against the floor of bf16 weights; then with
    an f16 KV cache too (--inference-kv-cache=f16), the cache's half of the
    floor halved."""
    rows = []
    kv16 = describe["inference"]["kv_bytes_per_token_fp32"] // 2
    for key, label, kv in (("decode_bf16_bundle", "bf16w", kv_per_token),
                           ("decode_bf16_kv16_bundle", "bf16w kv16", kv16)):
        if prep.get(key):
            rows += decoding_narrow(rep, prep[key], describe, prompt, tokens, context, kv, label)
    return rows


def decoding_narrow(rep, given, describe, prompt, tokens, context, kv_per_token, label):
    """One prepared bundle of bf16 weights: standard and soft decode against
    the floor of its bytes (bf16 weights and `kv_per_token` per cached key)."""
    b = int(given["batch"])
    weights = {"standard": 2 * describe["params"]["shared"],
               "soft": 2 * describe["params"]["total"]}
    rep.say("  %s (floor: standard %.1f MB, soft %.1f MB of bf16 weights + %d B per cached "
            "key):" % (label, weights["standard"] / 1e6, weights["soft"] / 1e6, kv_per_token))
    rows = []
    for mode in ("standard", "soft"):
        ok, out, why = run([FBT, "bench", os.path.join(DIR, given["bundle"]), "--decode", mode,
                            "--tokens", str(prompt), "--steps", str(tokens), "--warmup", "1"],
                           TIMEOUT["fbt_decode"])
        r = json_lines(out)
        if not (ok and r):
            rep.fail("fbt bench --decode %s (batch %d, %s)" % (mode, b, label),
                     why or "no JSON line")
        floor = 1e3 * (weights[mode] + b * context * kv_per_token) / HBM_BYTES_PER_S
        row = dict(batch=b, mode=mode + " " + label, fbt_ms=r[0]["ms_per_token"] if ok and r else None,
                   floor_ms=floor, torch_ms=None, torch_over_fbt=None)
        row["floor_over_fbt"] = floor / row["fbt_ms"] if row["fbt_ms"] else None
        rows.append(row)
        rep.say("  %5s %-9s %11s %10.4f %9s" % (b, row["mode"], fmt(row["fbt_ms"], "%.4f"), floor,
                                               fmt(row["floor_over_fbt"], "%.2f")))
    return rows


def tuning(rep, prep):
    rep.say("")
    if "tune_bundle" not in prep:
        rep.fail("tuning", "no bundle with variants prepared (rerun bench/gpu_prepare.py)")
        return []
    bundle = os.path.join(DIR, prep["tune_bundle"])
    cache = os.path.join(tempfile.mkdtemp(prefix="fbt-tune-"), "cache.json")
    # Half of what is left for measuring and comparing, the rest for the benches.
    budget = int(max(15, min(60, (DEADLINE - time.time() - 60) / 3)))
    rep.say("== 5. tuning: fbt tune %s --steps train_k2,prefill,decode_step_plain "
            "--budget %d, then fbt bench tuned against default (alternating)" % (
                prep["tune_bundle"], budget))
    ok, out, why = run([FBT, "tune", bundle, "--cache", cache, "--steps",
                        "train_k2,prefill,decode_step_plain", "--budget", str(budget),
                        "--repeats", "3", "--json"], TIMEOUT["tune"])
    try:
        report = json.loads(out)
    except ValueError:
        rep.fail("fbt tune", why or "no JSON")
        return []
    changed = [k for k in report["kernels"] if k["measured"] and k["chosen"] != k["name"]]
    rejected = [(v["symbol"], v["rejected"]) for k in report["kernels"] for v in k["variants"]
                if "rejected" in v]
    gemms = [g for g in report["gemms"] if g["chosen"] != 0]
    rep.say("  %d kernels with variants, %d measured, %d changed; %d variants rejected; "
            "%d GEMM shapes, %d changed%s" % (
                len(report["kernels"]), sum(k["measured"] for k in report["kernels"]),
                len(changed), len(rejected), len(report["gemms"]), len(gemms),
                " (budget ran out)" if report["out_of_budget"] else ""))
    for k in sorted(changed, key=lambda k: -k["speedup"])[:8]:
        cfg = next(v["config"] for v in k["variants"] if v["symbol"] == k["chosen"])
        rep.say("    %-26s %-30s %.2fx" % (k["name"], ",".join(
            "%s=%d" % kv for kv in sorted(cfg.items())), k["speedup"]))
    for g in sorted(gemms, key=lambda g: -g["speedup"])[:5]:
        rep.say("    GEMM %-34s algorithm %d of %d  %.2fx" % (g["shape"], g["chosen"],
                                                               g["algorithms"], g["speedup"]))
    for sym, reason in rejected[:5]:
        rep.say("    rejected %s: %s" % (sym, reason[:100]))
    for name, t in sorted(report["steps"].items()):
        rep.say("    fbt tune's own timing: %-16s default %.3f ms, tuned %.3f ms (%.3fx)" % (
            name, t["default_ms"], t["tuned_ms"], t["speedup"]))
    batch = prep.get("tune_batch", 1)
    work = [("train K=2", ["--train", "2", "--warmup", "2", "--steps", str(TRAIN_STEPS)],
             "tokens_per_s", TIMEOUT["fbt_train"]),
            ("decode batch %s standard" % batch,
             ["--decode", "standard", "--steps", str(DECODE_TOKENS), "--warmup", "1"],
             "ms_per_token", TIMEOUT["fbt_decode"])]
    rows = []
    rep.say("  %-24s %14s %14s %9s" % ("", "default", "tuned", "speedup"))
    for label, args, key, limit in work:
        best = {}
        for _ in range(2):
            for which, flag in (("default", ["--no-tune"]), ("tuned", ["--tune-cache", cache])):
                ok, out, why = run([FBT, "bench", bundle] + args + flag, limit)
                r = json_lines(out)
                if not ok or not r:
                    rep.fail("fbt bench %s (%s)" % (label, which), why or "no JSON line")
                    continue
                v = r[0][key]
                keep = max if key == "tokens_per_s" else min
                best[which] = keep(best[which], v) if which in best else v
        if "default" in best and "tuned" in best:
            speedup = (best["tuned"] / best["default"] if key == "tokens_per_s"
                       else best["default"] / best["tuned"])
            rows.append(dict(work=label, unit=key, speedup=speedup, **best))
            rep.say("  %-24s %14.3f %14.3f %8.3fx  (%s, best of 2)" % (
                label, best["default"], best["tuned"], speedup, key))
    rep.data["tuning"] = dict(rows=rows, changed=[(k["name"], k["chosen"], k["speedup"])
                                                  for k in changed],
                              rejected=rejected, gemms_changed=len(gemms),
                              steps=report["steps"])
    return rows


def fmt(x, f):
    return f % x if x is not None else "-"


def ratio(d, a, b):
    return "%.3f" % (d[a] / d[b]) if d.get(a) and d.get(b) else "-"


def summary(rep, train_rows, decode_rows, tune_rows=()):
    rep.say("")
    rep.say("== summary")
    first = len(rep.lines)
    for p, res in sorted(rep.data.get("numerics", {}).items()):
        n_ok = sum(c["ok"] for c in res["checks"])
        rep.say("  numerics %s: %s (%d of %d checks)" % (p, "PASS" if res["passed"] else "FAIL",
                                                         n_ok, len(res["checks"])))
    n = rep.data.get("nccl")
    if n:
        rep.say("  data parallelism (%s, world of one): %s" % (
            n["engine"], "SKIPPED (%s)" % n["skipped"] if "skipped" in n else
            "PASS" if n.get("passed") else "FAIL"))
    by = {(r["impl"], r["k"]): r for r in train_rows}
    for k in (1, 2):
        if ("fbt", k) in by:
            parts = ["MFU %.1f%%" % (100 * by["fbt", k]["mfu"])]
            for impl in ("torch eager", "torch compile"):
                if (impl, k) in by:
                    parts.append("fbt/%s %.2fx" % (impl.split()[1], by[impl, k]["fbt_over"]))
            rep.say("  training K=%d: %s" % (k, ", ".join(parts)))
    for r in decode_rows:
        if r["fbt_ms"]:
            rep.say("  decode batch %d %s: %.4f ms/step, %.0f%% of the HBM floor's speed" % (
                r["batch"], r["mode"], r["fbt_ms"], 100 * r["floor_over_fbt"]))
    for r in tune_rows:
        rep.say("  tuned against default, %s: %.3fx" % (r["work"], r["speedup"]))
    rep.say("  %s; %.0f s" % ("%d failures: %s" % (len(rep.failures), "; ".join(rep.failures))
                              if rep.failures else "no failures", time.time() - START))
    rep.data["summary"] = [l.strip() for l in rep.lines[first:]]


def main():
    rep = Report()
    if not os.path.exists(os.path.join(DIR, "prepared.json")):
        rep.fail("setup", "no %s: run bench/gpu_prepare.py where the compiler is and carry "
                 "bench/gpu along" % os.path.join(DIR, "prepared.json"))
        rep.save()
        return 1
    with open(os.path.join(DIR, "prepared.json")) as f:
        prep = json.load(f)
    with open(os.path.join(DIR, prep["describe"])) as f:
        describe = json.load(f)
    with open(os.path.join(DIR, "model.json")) as f:
        spec = json.load(f)
    gpu = os.environ.get("GPU_CHECK_GPU", "")
    try:
        import torch
        tv = torch.__version__
    except ImportError:
        tv = "none"
    rep.data["header"] = dict(gpu=gpu, torch=tv, target=prep["target"], model=prep["model"],
                              build=os.environ.get("GPU_CHECK_BUILD", ""))
    rep.say("fbt GPU check: %s; bundles for %s; torch %s; runtime build: %s" % (
        gpu or "no GPU", prep["target"], tv, os.environ.get("GPU_CHECK_BUILD", "not built here")))
    if not gpu and prep["target"] != "cpu":
        rep.say("no GPU: every stage skipped (the bundles are for %s; prepare with --target cpu "
                "for a dry run)" % prep["target"])
        rep.save()
        return 1
    if not gpu:
        rep.say("DRY RUN: no GPU; the stages run on CPU bundles and the peer on the CPU, to "
                "exercise this script: these are not GPU figures")
    if not os.access(FBT, os.X_OK):
        rep.fail("runtime", "no fbt binary at %s" % FBT)
    stages = [lambda: numerics(rep, prep), lambda: nccl(rep, prep),
              lambda: training(rep, prep, describe, spec),
              lambda: decoding(rep, prep, describe, spec), lambda: tuning(rep, prep)]
    results = []
    for stage in stages:
        try:
            results.append(stage())
        except Exception as e:  # report and go on to the next stage
            rep.fail("stage", "%s: %s" % (type(e).__name__, e))
            results.append([])
        rep.save()
    summary(rep, results[2] or [], results[3] or [], results[4] or [])
    rep.save()
    return 1 if rep.failures else 0


if __name__ == "__main__":
    sys.exit(main())
