"""kill_train.py FBT BUNDLE WORKDIR (--at POINT... | --random N [--seed S]):
kills `fbt train` with SIGKILL and checks what it leaves.

--at POINT: for each point of a checkpoint's replacement (write: half
written; fsync; rename; directory: renamed, before the directory's fsync),
trains with FBT_FAULT=stop-save:POINT (runtime/base/FaultInjection.h), so the trainer
stops itself there on its second save, and kills it while it is stopped: the
kill lands mid-save every time.
--random N: N kills at random moments of one run that is resumed after each
(a stress test: most kills land between saves, some inside one); each
resume must run until the next kill.

After every kill, latest.safetensors must be a whole checkpoint (header,
sizes, finite values), and a resume from it must run: it removes the dead
process's temporary file, and the metrics read as one run (each step once).
Prints one line per kill, then `N of N kills left a checkpoint that resumes`.
"""
import array
import glob
import json
import math
import os
import random
import signal
import struct
import subprocess
import sys
import time

if len(sys.argv) < 5 or "--help" in sys.argv or "-h" in sys.argv:
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 else 2)
fbt, bundle, work = sys.argv[1:4]
mode = sys.argv[4]


def checkpoint_step(path):
    """The step of a whole, finite checkpoint; raises if it is not one."""
    d = open(path, "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    header = json.loads(d[8:8 + n])
    meta = header.pop("__metadata__")
    if 8 + n + max(t["data_offsets"][1] for t in header.values()) != len(d):
        raise ValueError("its size disagrees with its header")
    values = array.array("f")
    values.frombytes(d[8 + n:8 + n + (len(d) - 8 - n) // 4 * 4])
    if not all(map(math.isfinite, values)):
        raise ValueError("non-finite values")
    return int(meta["fbt.step"])


def wait_stopped(pid, limit=120):
    end = time.time() + limit
    while time.time() < end:
        try:
            state = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state == "T":
            return True
        time.sleep(0.01)
    return False


def train(run, extra, env=None):
    return subprocess.Popen([fbt, "train", bundle, "--steps", "100000", "--save-every", "1",
                             "--eval-batches", "1", "--out", run, "--quiet"] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def check_resumes(run):
    """Resumes one step past latest; returns (step, whether it resumed as one run)."""
    step = checkpoint_step(os.path.join(run, "latest.safetensors"))
    subprocess.run([fbt, "train", bundle, "--resume", run, "--stop-after", str(step + 1),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    steps = [r["step"] for r in map(json.loads, open(os.path.join(run, "metrics.jsonl")))
             if "loss" in r]
    clean = not glob.glob(os.path.join(run, "*.tmp.*"))
    return step, steps == list(range(1, step + 2)) and clean


good = total = 0
if mode == "--at":
    for point in sys.argv[5:]:
        run = os.path.join(work, point)
        p = train(run, [], dict(os.environ, FBT_FAULT="stop-save:" + point))
        if not wait_stopped(p.pid):
            sys.exit("%s: the trainer never stopped at the hook" % point)
        tmp = bool(glob.glob(os.path.join(run, "latest.safetensors.tmp.*")))
        p.send_signal(signal.SIGKILL)
        p.wait()
        total += 1
        try:
            step, ok = check_resumes(run)
            good += ok
            print("%s: killed mid-save (temporary file %s), latest holds step %d, resumes %s"
                  % (point, "present" if tmp else "renamed", step, "as one run" if ok else "BADLY"))
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            print("%s: BROKEN: %s" % (point, e))
else:
    n = int(sys.argv[5])
    rng = random.Random(int(sys.argv[7]) if len(sys.argv) > 7 else 1)
    run = os.path.join(work, "random")
    p = train(run, [])
    while not os.path.exists(os.path.join(run, "latest.safetensors")):
        time.sleep(0.01)
    for i in range(n):
        time.sleep(rng.uniform(0, 0.3))
        p.send_signal(signal.SIGKILL)
        code = p.wait()
        total += 1
        try:
            # The resume (every kill after the first) ran until it was killed.
            if code != -signal.SIGKILL:
                raise ValueError("the trainer exited %d before the kill: %s"
                                 % (code, p.stderr.read().decode().strip()))
            step = checkpoint_step(os.path.join(run, "latest.safetensors"))
            good += 1
            # A temporary file left behind: the kill landed inside a save.
            inside = bool(glob.glob(os.path.join(run, "latest.safetensors.tmp.*")))
            print("kill %d: latest holds step %d%s" % (i + 1, step, ", killed mid-save" if inside else ""))
        except Exception as e:  # noqa: BLE001
            print("kill %d: BROKEN: %s" % (i + 1, e))
        p = train(run, ["--resume", run])
    p.send_signal(signal.SIGKILL)
    p.wait()
    step, ok = check_resumes(run)
    good -= not ok
    print("after the last kill: resumes from step %d %s" % (step, "as one run" if ok else "BADLY"))
print("%d of %d kills left a checkpoint that resumes" % (good, total))
sys.exit(0 if good == total else 1)
