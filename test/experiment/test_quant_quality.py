"""The rounding scripts/quant_quality.py applies, against values worked out
from the forms' definitions: bfloat16 to nearest even, int8 groups of 32
(llama.cpp's Q8_0 rule) with a shorter last group, one scale per row, and
which tensors each form leaves alone."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import quant_quality as qq  # noqa: E402


class Rounding(unittest.TestCase):
    def test_bf16_nearest_even(self):
        x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 1 + 2**-7 + 2**-9], np.float32)
        self.assertEqual(qq.bf16(x).tolist(), [1.0, 1.0, 1 + 2**-6, -2.5, 1 + 2**-7])

    def test_int8_groups_of_32_with_a_shorter_last(self):
        row = np.concatenate([np.linspace(-4, 3.75, 32), [0.5, -1.0, 0.25]]).astype(np.float32)
        w = qq.int8_groups(row[None, :], 32)[0]
        d = np.float32(np.float16(4 / 127))
        self.assertAlmostEqual(w[0], -127 * d, places=6)     # -4 / d = -127
        self.assertAlmostEqual(w[31], 119 * d, places=6)     # 3.75 / d = 119.06
        d2 = np.float32(np.float16(1 / 127))                 # the last 3: max|x| = 1
        self.assertAlmostEqual(w[32], 64 * d2, places=6)     # 0.5 / d2 = 63.5: away from 0
        self.assertAlmostEqual(w[33], -127 * d2, places=6)
        self.assertTrue(np.all(np.abs(w - row) <= 0.5 * np.maximum(d, d2) + 1e-6))
        self.assertEqual(qq.int8_groups(np.zeros((2, 40), np.float32), 32).tolist(),
                         np.zeros((2, 40)).tolist())

    def test_one_scale_per_row(self):
        w = np.array([[1.0, 0.5, -0.25], [100.0, 1.0, 0.0]], np.float32)
        r = qq.rounded("model.layers.0.mlp.up_proj.weight", w, "int8-row")
        self.assertAlmostEqual(r[0, 1], 64 * np.float32(np.float16(1 / 127)), places=6)
        self.assertEqual(r[1, 1], 1 * np.float32(np.float16(100 / 127)))  # 1 / (100/127) = 1.27

    def test_what_each_form_leaves_alone(self):
        m = np.random.RandomState(0).randn(4, 64).astype(np.float32)
        v = np.random.RandomState(1).randn(64).astype(np.float32)
        for form in qq.FORMS:
            self.assertIs(qq.rounded("model.norm.weight", v, form), v)  # vectors
            self.assertIs(qq.rounded("optimizer.adam_m.model.embed_tokens.weight", m, form), m)
        self.assertIs(qq.rounded("feedback.gate_proj.weight", m, "int8-g32-trunk"), m)
        self.assertFalse(np.array_equal(qq.rounded("feedback.gate_proj.weight", m, "int8-g32"), m))
        self.assertIs(qq.rounded("model.embed_tokens.weight", m, "f32"), m)


if __name__ == "__main__":
    unittest.main()
