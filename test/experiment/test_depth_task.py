"""The depth task's generator (scripts/depth_task.py): answers right,
difficulty as asked, and no held-out problem (question or solved example)
ever in the training text."""

import json
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import depth_task as dt  # noqa: E402


def affine_answer(question):
    """An independent solver: compose the updates as affine maps x -> a x + b
    (mod 10), then apply the composition to the start."""
    a, b = 1, 0
    for op in question[2:]:
        m, c = {"+": (1, 1), "-": (1, -1), "*": (3, 0), "/": (7, 0)}[op]
        a, b = m * a, m * b + c
    return str((a * int(question[1]) + b) % 10)


def composed_answer(question):
    """An independent solver for perm5: compose the permutations as maps
    (the later applied after the earlier), then apply the composition."""
    start, perms = question[1:].split(":")
    total = list(range(5))
    for perm in perms.split("|"):
        step = dict((int(p[0]), int(p[1])) for p in perm.split(" "))
        total = [step[total[i]] for i in range(5)]
    return str(total[int(start)])


class Permutations(unittest.TestCase):
    def test_worked_example_and_composition(self):
        self.assertEqual(dt.solve("$0:04 11 22 33 40|00 12 24 33 41"), "1")  # 0 -> 4 -> 1
        self.assertEqual(dt.depth("$3:04 11 22 33 40|00 12 24 33 41"), 2)
        self.assertEqual(dt.perm_text("31402"), "03 11 24 30 42")
        rng = random.Random(11)
        for _ in range(2000):
            q = dt.random_question(rng, rng.randint(1, 10), dt.PERM)
            self.assertEqual(dt.solve(q), composed_answer(q), q)

    def test_order_matters(self):
        rng = random.Random(5)
        differ = 0
        for _ in range(200):
            q = dt.random_question(rng, 3, dt.PERM)
            start, perms = q.split(":")
            differ += dt.solve(q) != dt.solve(start + ":" + "|".join(reversed(perms.split("|"))))
        self.assertGreater(differ, 100)

    def test_held_out_sets_and_prompts(self):
        # Every k >= 2 holds far more than 200 held-out problems; k = 1 holds
        # its eighth of 600; a prompt of k = 8 fits 128 bytes.
        self.assertLess(len(dt.heldout_questions(1, 1000, 3, ops=dt.PERM)), 200)
        for k in (2, 3, 8):
            probs = dt.eval_problems(k, 200, seed=3, ops=dt.PERM)
            self.assertEqual(len(probs), 200)
            self.assertEqual(len({p["prompt"] for p in probs}), 200)
            for p in probs:
                empty, question = p["prompt"].split("\n")
                self.assertEqual(empty, "")
                self.assertTrue(dt.is_heldout(question[:-1]))
                self.assertEqual(p["answer"], composed_answer(question[:-1]))
                self.assertLess(len(p["prompt"]), 128)

    def test_bad_permutation(self):
        with self.assertRaises(ValueError):
            dt.solve("$3:04 11 22 33 41")


class Answers(unittest.TestCase):
    def test_worked_examples(self):
        self.assertEqual(dt.solve("$7++-+"), "9")   # 8, 9, 8, 9
        self.assertEqual(dt.solve("$4+*-"), "4")    # 5, 5, 4
        self.assertEqual(dt.solve("$9+"), "0")
        self.assertEqual(dt.solve("$0-"), "9")
        self.assertEqual(dt.solve("$7/"), "9")
        self.assertEqual(dt.solve("$3*/"), "3")     # 7 = 1/3 mod 10
        self.assertEqual(dt.depth("$0-+*+"), 4)

    def test_agrees_with_affine_composition(self):
        rng = random.Random(7)
        for ops in ("+-", "+-*", "+-*/", "+*"):
            for _ in range(2000):
                q = dt.random_question(rng, rng.randint(1, 12), ops)
                self.assertTrue(set(q[2:]) <= set(ops))
                self.assertEqual(dt.solve(q), affine_answer(q), q)

    def test_order_matters_with_multiplication(self):
        # The same updates in another order give another answer: a bag of
        # updates does not decide it.
        self.assertNotEqual(dt.solve("$2+*"), dt.solve("$2*+"))

    def test_bad_questions(self):
        for q in ("7+3", "$+", "$", "$7x", "$a+"):
            with self.assertRaises(ValueError):
                dt.solve(q)

    def test_eval_problems(self):
        for ops, k in (("+-", 5), ("+-", 8), ("+-*", 3), ("+-*/", 6)):
            probs = dt.eval_problems(k, 50, seed=3, ops=ops)
            self.assertEqual(len(probs), min(50, len(dt.heldout_questions(k, 1000, 3, ops=ops))))
            questions = [p["prompt"].split("\n")[-1] for p in probs]
            self.assertEqual(len(set(questions)), len(questions))
            for p in probs:
                self.assertEqual(p["k"], k)
                self.assertEqual(p["terminator"], "\n")
                lines = p["prompt"].split("\n")
                self.assertEqual(len(lines), 3)
                for line in lines[:2]:
                    q, a = line.split("=")
                    self.assertEqual(a, affine_answer(q))
                    self.assertEqual(dt.depth(q), k)
                    self.assertTrue(dt.is_heldout(q))
                self.assertTrue(lines[2].endswith("="))
                self.assertTrue(dt.is_heldout(lines[2][:-1]))
                self.assertEqual(p["answer"], affine_answer(lines[2][:-1]))
                self.assertEqual(dt.depth(lines[2][:-1]), k)

    def test_small_depths_ask_every_held_out_problem(self):
        qs = dt.heldout_questions(5, 1000, seed=1, ops="+-")
        every = ["$%d%s" % (s, "".join(u)) for s in range(10)
                 for u in __import__("itertools").product("+-", repeat=5)]
        self.assertEqual(sorted(qs), sorted(q for q in every if dt.is_heldout(q)))
        self.assertTrue(20 <= len(qs) <= 60, len(qs))


class HeldOut(unittest.TestCase):
    def build(self, d, **kw):
        # 40 training documents, then 3 validation and 2 test documents.
        base = ["".join("line %d.%d of some text\n" % (j, i) for i in range(100))
                for j in range(40)]
        held = ["".join("held-out line %d.%d\n" % (j, i) for i in range(100)) for j in range(5)]
        path = os.path.join(d, "base.jsonl")
        with open(path, "w") as f:
            for doc in base + held:
                f.write(json.dumps({"text": doc}) + "\n")
        return base, held, dt.build(path, 3, 2, os.path.join(d, "task"), problems=100, **kw)

    def documents(self, task):
        with open(task["data"]) as f:
            return [json.loads(l)["text"] for l in f]

    def asked(self, task):
        for k, path in task["problems"].items():
            with open(path) as f:
                for line in f:
                    yield int(k), json.loads(line)

    def test_no_held_out_problem_in_the_training_text(self):
        for ops in ("+-", "+-*"):
            with tempfile.TemporaryDirectory() as d:
                base, held, task = self.build(d, fraction=0.3, ops=ops)
                text = "".join(self.documents(task))
                train_lines = set(text.splitlines())
                task_lines = [l for l in train_lines if l.startswith("$")]
                self.assertGreater(len(task_lines), 700)
                for l in task_lines:  # training problems are right and not held out
                    q, a = l.split("=")
                    self.assertEqual(a, affine_answer(q))
                    self.assertFalse(dt.is_heldout(q))
                    self.assertTrue(set(q[2:]) <= set(ops))
                self.assertEqual(sorted({dt.depth(l.split("=")[0]) for l in task_lines}),
                                 list(range(1, 9)))
                asked = 0
                for k, p in self.asked(task):
                    for q in p["prompt"].split("\n"):
                        self.assertNotIn(q.split("=")[0] + "=", text)
                    asked += 1
                self.assertGreater(asked, 300)
                # Depths too small to hold problems out are trained, not asked.
                self.assertEqual(task["eval_k"], [int(k) for k in task["problems"]])
                self.assertEqual(task["eval_k"], list(range(3 if ops == "+-" else 2, 9)))

    def test_easy_levels_are_drawn_most(self):
        rng = random.Random(2)
        lines = dt.training_lines(rng, 200000, list(range(1, 9)), dt.default_weights(range(1, 9)))
        counts = [sum(1 for l in lines if dt.depth(l.split("=")[0]) == k) for k in range(1, 9)]
        self.assertEqual(counts, sorted(counts, reverse=True))
        self.assertGreater(counts[0], 3 * counts[-1])

    def test_the_held_out_parts_and_the_mix(self):
        with tempfile.TemporaryDirectory() as d:
            base, held, task = self.build(d, fraction=0.25)
            docs = self.documents(task)
            self.assertEqual(docs[40:], held)  # unchanged, exactly, and last
            # fbt's cuts (runtime/text/DataSplits.h) fall at the first
            # validation and the first test document.
            starts, n = [], 0
            for doc in docs:
                starts.append(n)
                n += 1 + len(doc.encode())
            at = lambda target: min(s for s in starts + [n] if s >= target)  # noqa: E731
            test = at(n - int(task["test_fraction"] * n))
            self.assertEqual(test, starts[43])
            self.assertEqual(at(test - int(task["val_fraction"] * n)), starts[40])
            # Each base document's lines in order, the task's lines between them.
            for mixed, doc in zip(docs[:40], base):
                self.assertEqual([l for l in mixed.splitlines() if not l.startswith("$")],
                                 doc.splitlines())
            train = "".join(docs[:40])
            share = task["task_bytes"] / len(train)
            self.assertTrue(0.24 <= share <= 0.27, share)

    def test_probe_data_is_held_out_and_solved(self):
        for ops in ("+-", dt.PERM):
            with tempfile.TemporaryDirectory() as d:
                _, _, task = self.build(d, fraction=0.1, ops=ops)
                probe = task["probe"]
                docs = self.documents({"data": probe["data"]})
                lines = [l for doc in docs for l in doc.splitlines()]
                self.assertGreater(len(lines), 300)
                for l in lines:  # held out, every line, and solved
                    q, a = l.split("=")
                    self.assertTrue(dt.is_heldout(q))
                    self.assertEqual(a, dt.solve(q))
                # The last 40% of the documents are the test part, the 40%
                # before them validation, cut where fbt cuts.
                starts, n = [], 0
                for doc in docs:
                    starts.append(n)
                    n += 1 + len(doc.encode())
                held = len(docs) * 2 // 5
                at = lambda target: min(s for s in starts + [n] if s >= target)  # noqa: E731
                test = at(n - int(probe["test_fraction"] * n))
                self.assertEqual(test, starts[len(docs) - held])
                self.assertEqual(at(test - int(probe["val_fraction"] * n)),
                                 starts[len(docs) - 2 * held])

    def test_deterministic(self):
        with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
            _, _, a = self.build(d1, fraction=0.1)
            _, _, b = self.build(d2, fraction=0.1)
            for x, y in [(a["data"], b["data"]),
                         (a["probe"]["data"], b["probe"]["data"])] + list(zip(a["problems"].values(),
                                                            b["problems"].values())):
                with open(x, "rb") as f, open(y, "rb") as g:
                    self.assertEqual(f.read(), g.read())


if __name__ == "__main__":
    unittest.main()
