#!/usr/bin/env python3
"""A tour of fbt from Python, on the tiny spec and the embedded corpus.

    PYTHONPATH=build/python /usr/bin/python3 docs/python/tour.py [--steps N] [--out DIR]

Compiles tiny, trains it (about a minute on 2 cores at the default 1500 steps),
compares the three decoding regimes on the corpus's test part, generates in each,
probes every layer's residual stream for a quantity of the whole prefix, and plots
the size of the state fed back along a soft generation (DIR/state-norm.png).
Each step prints what it measured and how long it took.
"""
import argparse
import os
import time

import numpy as np

import fbt

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "specs", "tiny.json")


class Stages:
    """Prints each stage's name, and how long the one before it took."""

    def __init__(self):
        self.started = None

    def __call__(self, name):
        now = time.perf_counter()
        if self.started is not None:
            print("  (%.1f s)" % (now - self.started))
        print("\n== %s" % name)
        self.started = now


def ridge_r2(fit_x, fit_y, score_x, score_y):
    """Test R^2 of a ridge probe, its strength chosen on a fifth of the fit rows."""
    cut = len(fit_x) * 4 // 5
    best = None
    for lam in (1e-3, 1e-2, 1e-1, 1, 10, 100):
        w = solve(fit_x[:cut], fit_y[:cut], lam)
        err = np.mean((fit_x[cut:] @ w[:-1] + w[-1] - fit_y[cut:]) ** 2)
        if best is None or err < best[0]:
            best = (err, lam)
    w = solve(fit_x, fit_y, best[1])
    pred = score_x @ w[:-1] + w[-1]
    return 1 - np.mean((pred - score_y) ** 2) / np.var(score_y)


def solve(x, y, lam):
    mu, sd = x.mean(0), x.std(0) + 1e-6
    z = (x - mu) / sd
    a = z.T @ z + lam * len(z) * np.eye(z.shape[1])
    w = np.linalg.solve(a, z.T @ (y - y.mean()))
    # Back to the raw features: the bias last.
    return np.append(w / sd, y.mean() - (mu / sd) @ w)


def in_word(ids):
    """Bytes since the last space or newline at each position (the window's
    start counts as one): a quantity of the prefix, not of the current byte."""
    out, c = np.zeros(len(ids)), 0
    for i, b in enumerate(ids):
        c = 0 if b in (10, 32) else c + 1
        out[i] = c
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--out", default="runs/tour")
    p.add_argument("--windows", type=int, default=512, help="test windows per regime")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    stage = Stages()

    stage("compile")
    bundle = fbt.compile(SPEC, target="cpu", with_states=True,
                         output=os.path.join(args.out, "tiny.fbtb"))
    d = bundle.describe()
    print("%s: %d parameters (%d in the feedback path), %d steps compiled" %
          (bundle.name, d["params"]["total"], d["params"]["feedback"], len(bundle.steps)))

    stage("train %d steps" % args.steps)
    def progress(record):
        if "val_loss" in record:
            print("  step %d: validation (K=%d) %.3f" %
                  (record["step"], record["val_passes"], record["val_pass_losses"][-1]))
    session, summary = fbt.train(bundle, steps=args.steps, eval_every=max(1, args.steps // 3),
                                 out=os.path.join(args.out, "run"), progress=progress)
    print("train loss (pass 1) %.3f -> %.3f, %.0f tokens/s" %
          (summary["first_loss"], summary["last_loss"], summary["tokens_per_s"]))

    stage("the three regimes on the test part")
    corpus = fbt.default_corpus()
    report = session.evaluate(corpus["test"], regimes=["standard", "soft", "fused:2", "fused:3"],
                              windows=args.windows)
    print("%d windows of %d tokens, each after a plain prompt of %d" %
          (report["windows"], report["window_length"], report["prompt_length"]))
    for name, r in report["regimes"].items():
        diff = r.get("minus_standard")
        print("  %-8s %.4f +- %.4f nats%s" % (name, r["loss"], r["se"],
              "" if diff is None else "   minus standard %+.4f +- %.4f" % (diff["mean"], diff["se"])))

    stage("generation")
    prompt = "Tom had 3 red apples."
    for mode in ("standard", "soft", "fused:2"):
        print("  %-8s %r" % (mode, prompt + session.generate(prompt, mode=mode, max_new_tokens=48)))

    stage("probing the residual stream for the position in the word (bytes since a space)")
    test = corpus["test"]
    t = session.config["inference"]["max_prompt_length"]
    starts = np.linspace(0, len(test) - t - 1, 96).astype(int)
    rows = np.stack([test[s:s + t] for s in starts])
    target = np.stack([in_word(r) for r in rows])
    half = len(rows) // 2
    rng = np.random.default_rng(0)
    floor = rng.standard_normal((256, session.config["hidden_size"]))  # the current byte only
    for mode in ("standard", "fused:2"):
        st = session.states(rows, mode=mode)[-1]  # the last pass: [L + 1, N, T, D]
        r2 = [ridge_r2(st[l, :half].reshape(-1, st.shape[-1]), target[:half].ravel(),
                       st[l, half:].reshape(-1, st.shape[-1]), target[half:].ravel())
              for l in range(st.shape[0])]
        print("  %-8s test R^2 by layer (0 = the fused embedding, %d = top): %s" %
              (mode, st.shape[0] - 1, " ".join("%.3f" % v for v in r2)))
    r2 = ridge_r2(floor[rows[:half]].reshape(-1, floor.shape[1]), target[:half].ravel(),
                  floor[rows[half:]].reshape(-1, floor.shape[1]), target[half:].ravel())
    print("  floor (random features of the current byte) %.3f" % r2)

    stage("the state's norm along a soft generation")
    prompt = "12+7=19\n3+5="
    curves, steps = {}, {}
    for mode in ("soft", "standard"):
        text, states = session.generate(prompt, mode=mode, max_new_tokens=160, return_states=True)
        curves[mode] = np.linalg.norm(states, axis=1)
        steps[mode] = np.linalg.norm(np.diff(states, axis=0), axis=1)
        print("  %-8s %d tokens, norm %.2f at the first, %.2f at the last, range %.2f to %.2f" %
              (mode, len(states), curves[mode][0], curves[mode][-1], curves[mode].min(),
               curves[mode].max()))
    print("  (tiny's state is taken after the final norm, so its size is the norm's gain's;"
          " the lower panel shows how far it moves from token to token)")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    for mode, norms in curves.items():
        top.plot(np.arange(1, len(norms) + 1), norms, label=mode)
        bottom.plot(np.arange(2, len(norms) + 1), steps[mode], label=mode)
    top.set_ylabel("||state||")
    top.set_title("tiny, %d steps: the top-layer state each generated token carries on" %
                  args.steps)
    top.legend()
    bottom.set_ylabel("||state - previous||")
    bottom.set_xlabel("generated token")
    fig.tight_layout()
    png = os.path.join(args.out, "state-norm.png")
    fig.savefig(png, dpi=120)
    print("  wrote %s" % png)
    stage("done")


if __name__ == "__main__":
    main()
