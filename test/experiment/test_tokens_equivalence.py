"""The tokens-equivalence multiplier (scripts/tokens_equivalence.py) on
curves whose answers are known exactly."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import tokens_equivalence as te  # noqa: E402

MULTS = [1, 1.5, 2, 3]


def log_linear(m):
    """A plain curve exactly linear in log tokens."""
    return 2.0 - 0.5 * math.log(m)


class Multiplier(unittest.TestCase):
    def test_log_linear_curve_is_inverted_exactly(self):
        plain = [(m, log_linear(m)) for m in MULTS]
        for want in (1.0, 1.2, 1.5, 1.7, 2.0, 2.5, 2.99, 3.0):
            got, bound = te.multiplier(plain, log_linear(want))
            self.assertIsNone(bound)
            self.assertAlmostEqual(got, want, places=12)

    def test_interpolates_in_log_tokens_not_tokens(self):
        # Loss 1/m at 1x and 2x; halfway in loss is sqrt(2)x in log tokens
        # (1.5x if it interpolated in tokens).
        got, bound = te.multiplier([(1, 1.0), (2, 0.5)], 0.75)
        self.assertIsNone(bound)
        self.assertAlmostEqual(got, math.sqrt(2), places=12)

    def test_worse_than_the_smallest_baseline(self):
        plain = [(m, log_linear(m)) for m in MULTS]
        self.assertEqual(te.multiplier(plain, log_linear(1) + 1e-9), (None, "<"))
        self.assertEqual(te.multiplier(plain, 5.0), (None, "<"))
        self.assertEqual(te.label(None, "<", plain), "< 1x")

    def test_better_than_every_baseline(self):
        plain = [(m, log_linear(m)) for m in MULTS]
        self.assertEqual(te.multiplier(plain, log_linear(3) - 1e-9), (None, ">"))
        self.assertEqual(te.multiplier(plain, 0.0), (None, ">"))
        self.assertEqual(te.label(None, ">", plain), "> 3x")

    def test_the_first_crossing_of_a_noisy_curve(self):
        # 2x is worse than 1.5x (noise): 0.82 is first reached between 1x and 1.5x.
        plain = [(1, 1.0), (1.5, 0.8), (2, 0.85), (3, 0.7)]
        got, _ = te.multiplier(plain, 0.82)
        self.assertAlmostEqual(got, 1.5 ** 0.9, places=12)
        # 0.75 lies only between 2x and 3x.
        got, _ = te.multiplier(plain, 0.75)
        self.assertAlmostEqual(got, math.exp(math.log(2) + (0.85 - 0.75) / 0.15 * math.log(1.5)),
                               places=12)

    def test_order_of_the_baselines_does_not_matter(self):
        plain = [(m, log_linear(m)) for m in MULTS]
        got, _ = te.multiplier(list(reversed(plain)), log_linear(2.2))
        self.assertAlmostEqual(got, 2.2, places=12)

    def test_bad_input(self):
        with self.assertRaises(ValueError):
            te.multiplier([], 1.0)
        with self.assertRaises(ValueError):
            te.multiplier([(0, 1.0)], 1.0)
        with self.assertRaises(ValueError):
            te.multiplier([(1, float("nan"))], 1.0)


if __name__ == "__main__":
    unittest.main()
