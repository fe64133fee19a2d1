"""scripts/merge_seeds.py on made-up results: seeds run apart merge into one
file whose tables cover them all; a file of another experiment (a field other
than the runs differs) or one holding a seed already merged is refused,
naming the field or the seed."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import merge_seeds  # noqa: E402


def results(seeds, steps=100):
    return {"command": ["scripts/experiment.py", "--seeds", str(len(seeds))], "commit": "abc",
            "spec": {"name": "tiny"}, "plain_spec": {"name": "tiny-plain"}, "steps": steps,
            "splits": ["test"], "report_split": "test", "schedule_weights": {"1": 1.0},
            "describe": {}, "data": {"name": "d"}, "depth": None, "seeds": list(seeds),
            "runs": {str(s): {"fbt": {"seed": s}} for s in seeds}}


class MergeSeeds(unittest.TestCase):
    def test_seeds_run_apart_merge(self):
        m = merge_seeds.merge(results([1, 2]), [results([3])], ["a.json", "b.json"])
        self.assertEqual(m["seeds"], [1, 2, 3])
        self.assertEqual(sorted(m["runs"]), ["1", "2", "3"])
        self.assertEqual(m["runs"]["3"]["fbt"]["seed"], 3)
        self.assertEqual([x["seeds"] for x in m["merged"]], [[1, 2], [3]])
        self.assertEqual(m["command"], results([1, 2])["command"])

    def test_another_experiment_is_refused_by_field(self):
        with self.assertRaisesRegex(ValueError, "b.json: 'steps' differs from a.json's"):
            merge_seeds.merge(results([1]), [results([2], steps=200)], ["a.json", "b.json"])

    def test_a_seed_twice_is_refused(self):
        with self.assertRaisesRegex(ValueError, "b.json: seed 2 is in both"):
            merge_seeds.merge(results([1, 2]), [results([2])], ["a.json", "b.json"])


if __name__ == "__main__":
    unittest.main()
