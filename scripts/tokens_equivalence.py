#!/usr/bin/env python3
"""Tokens-equivalence: how many training tokens a plain transformer needs to
match an FBT regime's held-out loss.

Given plain baselines of the same spec (fusion "none") trained on multiples
m of the FBT run's tokens (each with its own full schedule) and their
held-out losses L(m), the multiplier of an FBT regime with loss L is the m
at which the plain curve reaches L, interpolated linearly in log tokens
between the two baselines that bracket it:

    log m = log m_i + (L_i - L) / (L_i - L_{i+1}) * (log m_{i+1} - log m_i)

where i + 1 is the first baseline (in order of tokens) whose loss is at or
below L. A regime worse than the smallest baseline gets "< m_0 x" (no
multiplier); one better than every baseline gets "> m_max x".

The experiment report (scripts/experiment_report.py) takes each seed's
multiplier from table() on that seed's plain curve, and plots with plot().
"""

import math


def multiplier(plain, loss):
    """The plain multiplier matching `loss`.

    plain: [(multiplier, loss)] of the plain baselines (any order; at least
    one). Returns (value, bound): value is the interpolated multiplier, or
    None outside the measured range, where bound is "<" (worse than the
    smallest baseline) or ">" (better than every baseline); bound is None
    when value is set.
    """
    pts = sorted((float(m), float(l)) for m, l in plain)
    if not pts:
        raise ValueError("no plain baselines")
    if any(m <= 0 for m, _ in pts):
        raise ValueError("multipliers must be positive")
    if any(not math.isfinite(l) for _, l in pts) or not math.isfinite(loss):
        raise ValueError("losses must be finite")
    m0, l0 = pts[0]
    if loss > l0:
        return None, "<"
    if loss == l0:
        return m0, None
    for (ma, la), (mb, lb) in zip(pts, pts[1:]):
        if lb <= loss:  # the first baseline at or below: la > loss >= lb
            t = (la - loss) / (la - lb)
            return math.exp(math.log(ma) + t * (math.log(mb) - math.log(ma))), None
    return None, ">"


def label(value, bound, plain):
    """The table's cell: "1.84x", "< 1x", "> 3x"."""
    ms = sorted(float(m) for m, _ in plain)
    if value is not None:
        return "%.2fx" % value
    edge = ms[0] if bound == "<" else ms[-1]
    return "%s %.3gx" % (bound, edge)


def table(plain, regimes):
    """Rows for each FBT regime: {regime, loss, multiplier, bound, label}.

    plain: [(multiplier, loss)]; regimes: {name: loss} in report order.
    """
    rows = []
    for name, loss in regimes.items():
        value, bound = multiplier(plain, loss)
        rows.append({"regime": name, "loss": loss, "multiplier": value, "bound": bound,
                     "label": label(value, bound, plain)})
    return rows


def plot(path, plain, rows, fbt_tokens, title=""):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = [m * fbt_tokens for m, _ in plain]
    ax.plot(xs, [l for _, l in plain], marker="o", color="black", label="plain (fusion none)")
    for m, l in plain:
        ax.annotate("%.3gx" % m, (m * fbt_tokens, l), textcoords="offset points", xytext=(4, 4),
                    fontsize=8)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(rows):
        c = colors[i % len(colors)]
        ax.scatter([fbt_tokens], [r["loss"]], color=c, marker="*", s=90, zorder=3,
                   label="FBT %s: %s" % (r["regime"], r["label"]))
        end = r["multiplier"] * fbt_tokens if r["multiplier"] is not None else (
            xs[-1] if r["bound"] == ">" else fbt_tokens)
        ax.plot([fbt_tokens, end], [r["loss"], r["loss"]], color=c, linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("training tokens")
    ax.set_ylabel("held-out loss (nats/token)")
    ax.set_title("Tokens-equivalence" + (": " + title if title else ""))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
