"""The experiment report's statistics (scripts/experiment_report.py) on
made-up raw results with known answers: each seed's tokens-equivalence from
its own plain curve, the t-interval over seeds, FLOPs-equivalence as tokens x
the FLOPs-per-token ratio, paired differences, and a regime outside the
curve in some seed reported as such."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import experiment_report as er  # noqa: E402


def run(kind, mult, loss_by_regime, fpt):
    regimes = {}
    for name, loss in loss_by_regime.items():
        regimes[name] = {"loss": loss, "se": 0.01, "se_documents": 0.02, "bpb": loss / math.log(2)}
        if name != "standard":
            regimes[name]["minus_standard"] = {"mean": loss - loss_by_regime["standard"],
                                               "se": 0.001, "se_documents": 0.002}
    return {"kind": kind, "steps": int(100 * (mult or 1)), "tokens": 1000 * (mult or 1),
            "multiplier": mult, "flops_per_token": fpt, "train_seconds": 1.0,
            "losses": {"test": {"regimes": regimes, "passes": [1.0, 0.9]}},
            "metrics": {"evals": [], "last_step": None}}


def raw(soft_multipliers):
    """Plain losses 2 - ln(m) (so a loss L matches m = exp(2 - L)); the FBT's
    soft regime placed at the given multiplier per seed."""
    runs = {}
    for seed, m in zip((1, 2, 3), soft_multipliers):
        results = {"fbt": run("fbt", None, {"standard": 2.1, "soft": 2 - math.log(m)}, 3.0)}
        for mult in (1, 1.5, 2, 3):
            label = "same-tokens" if mult == 1 else "plain-%gx" % mult
            results[label] = run("plain", mult, {"standard": 2 - math.log(mult)}, 1.0)
        runs[str(seed)] = results
    return {"seeds": [1, 2, 3], "splits": ["test"], "runs": runs, "command": ["x"],
            "commit": "c", "spec": {"name": "t"}, "schedule_weights": {"1": 1.0},
            "data": {"name": "d"}, "depth": None,
            "describe": {"fbt": {"training": {"tokens_per_step": 10}, "inference": {
                "decode_flops_per_token": 100, "soft_extra_flops_per_token": 5}}}}


class Statistics(unittest.TestCase):
    def test_t_interval(self):
        s = er.stats([1.0, 2.0, 3.0])
        self.assertAlmostEqual(s["mean"], 2.0)
        self.assertAlmostEqual(s["sd"], 1.0)
        self.assertAlmostEqual(s["half"], 4.303 / math.sqrt(3), places=6)
        self.assertEqual((s["lo"], s["hi"]), (1.0, 3.0))
        self.assertIsNone(er.stats([5.0])["half"])

    def test_each_seed_its_own_curve(self):
        eq = er.equivalence(raw([1.2, 1.5, 1.8]), "test")
        ms, labels = eq["soft"]
        for got, want in zip(ms, [1.2, 1.5, 1.8]):
            self.assertAlmostEqual(got, want, places=9)
        self.assertEqual(labels, ["1.20x", "1.50x", "1.80x"])
        self.assertEqual(eq["standard"][1], ["< 1x"] * 3)

    def test_tables(self):
        t = er.tables(raw([1.2, 1.5, 1.8]))
        half = 4.303 * 0.3 / math.sqrt(3)
        md = t["tokens_equivalence.md"]
        # Tokens 1.5x [1.5 - half, 1.5 + half]; FLOPs: x 1/3 (plain 1, FBT 3 per token).
        self.assertIn("| soft | 1.50 [%.2f, %.2f] (1.20 to 1.80)x | 0.50 [%.2f, %.2f] (0.40 to 0.60)x | "
                      "105 |" % (1.5 - half, 1.5 + half, (1.5 - half) / 3, (1.5 + half) / 3), md)
        self.assertIn("| standard | outside the curve in 3 of 3 seeds |", md)
        paired = sum(2 - math.log(m) - 2.1 for m in (1.2, 1.5, 1.8)) / 3
        self.assertIn("| soft | %+.4f [" % paired, t["report.md"])

    def test_bounds_in_some_seeds(self):
        md = er.tables(raw([1.2, 1.5, 4.0]))["tokens_equivalence.md"]
        self.assertIn("| soft | outside the curve in 1 of 3 seeds |", md)
        self.assertIn("1.20x, 1.50x, > 3x", md)


def depth_raw(primary_accuracy, other_accuracy):
    """Depth results at k = 1, 2: the FBT's fused:2 at 0.5 in every seed, the
    same-flops control at `primary_accuracy` per seed, same-tokens at
    `other_accuracy` (better than the primary: no choice after the fact)."""
    r = raw([1.2, 1.5, 1.8])
    r["depth"] = {"ops": "perm5", "eval_k": [1, 2], "mix": 0.5}
    for seed, p in zip(("1", "2", "3"), primary_accuracy):
        def depth(acc):
            return {k: {"problems": 10, "regimes": {reg: {"accuracy": a} for reg, a in acc.items()}}
                    for k in ("1", "2")}
        runs = r["runs"][seed]
        runs["fbt"]["depth"] = depth({"standard": 0.4, "fused:2": 0.5})
        runs["same-tokens"]["depth"] = depth({"standard": other_accuracy})
        runs["same-flops"] = dict(runs["same-tokens"], depth=depth({"standard": p}))
    return r


class DepthGain(unittest.TestCase):
    def test_the_primary_control_is_fixed_not_the_best(self):
        md = er.gain_table(depth_raw([0.3, 0.3, 0.3], 0.45))
        self.assertIn("fused:2 minus same-flops, the primary control", md[0])
        self.assertTrue(md[2].startswith("| 1 | +0.200 [+0.200, +0.200] (+0.200 to +0.200) | "
                                         "0.300 [0.300, 0.300]"), md[2])
        self.assertIn("| same-tokens +0.050 [", md[2])
        self.assertFalse(any("at chance" in line for line in md))

    def test_a_control_at_chance_makes_growth_with_k_untested(self):
        md = er.gain_table(depth_raw([0.15, 0.2, 0.25], 0.45))
        self.assertIn("same-flops is at chance (its interval holds the guessing rate, 0.20) at "
                      "k = 1, 2: a gain that grows with k is untested there", md[-1])


def contraction_raw(ratio, seeds=3):
    """Runs whose state changes shrink by `ratio` a pass (d_1 = 0.5), with a
    soft loss that drifts above standard's along the positions."""
    runs = {}
    for i in range(seeds):
        d = [0.5 * (ratio + 0.01 * i) ** k for k in range(63)]
        runs[str(i)] = {"fbt": {"contraction": {
            "contraction": d, "prompts": 64, "prompt_length": 256, "sequences": 16,
            "soft_state_rms": [1.0 + 0.01 * t for t in range(100)],
            "soft_loss_by_position": [1.0 + 0.01 * t for t in range(200)],
            "standard_loss_by_position": [1.0] * 200}}}
    return {"runs": runs}


class Contraction(unittest.TestCase):
    def test_a_map_that_does_not_contract_shows(self):
        md = er.contraction_table(contraction_raw(1.05))
        row = next(line for line in md if line.startswith("| 2 |"))
        self.assertIn("| 1.060 [", row)  # the ratio's mean over the seeds, above 1
        self.assertTrue(md[0].startswith("64 prompts of 256 tokens"), md[0])

    def test_changes_at_rounding_say_nothing(self):
        md = er.contraction_table(contraction_raw(0.3))
        self.assertIn("| 32 | ", "\n".join(md))
        row = next(line for line in md if line.startswith("| 32 |"))
        self.assertIn("f32 rounding", row)
        row = next(line for line in md if line.startswith("| 2 |"))
        self.assertIn("| 0.310 [", row)

    def test_a_soft_loss_that_drifts_grows_along_the_positions(self):
        md = er.contraction_table(contraction_raw(0.5))
        last = md[-1].split(" | ")
        self.assertTrue(last[0].startswith("| +0.245"), last)
        self.assertTrue(last[-1].startswith("+1.745"), last)

    def test_no_measurement_no_table(self):
        self.assertEqual(er.contraction_table({"runs": {"1": {"fbt": {}}}}), [])


if __name__ == "__main__":
    unittest.main()
