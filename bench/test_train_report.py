"""Tests of bench/train_report.py: time to the target accuracy, the step medians, the
ratios and the doc section it replaces. Standard library only; run by ./scripts/test
(`python3 -m unittest discover -s bench -p 'test_*.py'`)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_report  # noqa: E402

META = {"phase": "meta", "cpus": 2, "mtu": "1500", "git": "abc1234", "date": "today",
        "switchml_tuning": {"count": 256},
        "args": {"target": 0.9, "rate": "100mbit", "steps": 12}}
MODEL = {"hidden": 1024, "parameters": 1_126_410, "gradient_bytes": 4_505_640}


def run(system, step, run=0, world=4, evals=None, ranks=2, **extra):
    """A training run of 12 steps of `step` seconds each on every rank."""
    r = {"phase": "train", "system": system, "world": world, "run": run, **MODEL,
         "step_seconds": [step] * 12, "rank_step_seconds": [[step] * 12] * ranks,
         "evals": evals or [[4, 0.5], [8, 0.92], [12, 0.95]], "final_accuracy": 0.95,
         "stats": [{"retransmissions": 1}] * ranks if system == "switchml" else None,
         "host_util": 0.5}
    r.update(extra)
    return r


class TimeToTarget(unittest.TestCase):
    def test_first_evaluation_at_or_above_the_target(self):
        evals = [[5, 0.80], [10, 0.95], [15, 0.94], [20, 0.97]]
        self.assertEqual(train_report.steps_to_target(evals, 0.95), 10)
        self.assertEqual(train_report.steps_to_target(evals, 0.96), 20)
        self.assertIsNone(train_report.steps_to_target(evals, 0.99))

    def test_slowest_rank_over_the_first_steps(self):
        ranks = [[1.0, 1.0, 1.0, 9.0], [0.5, 2.0, 1.0, 9.0]]
        self.assertAlmostEqual(train_report.time_to_target(ranks, 3), 3.5)
        self.assertIsNone(train_report.time_to_target(ranks, None))

    def test_step_median_skips_the_warm_up(self):
        steps = [9.0] * 5 + [1.0] * 6
        self.assertEqual(train_report.step_median(steps), 1.0)
        # Too few steps to drop any: all of them count.
        self.assertEqual(train_report.step_median([9.0, 1.0, 1.0]), 1.0)


class Table(unittest.TestCase):
    def rows(self):
        return [run("gloo", 0.6, run=k) for k in range(3)] + \
            [run("switchml", s, run=k) for k, s in enumerate((0.4, 0.5, 0.3))]

    def test_medians_and_ratios(self):
        r = train_report.TrainReport(META, self.rows()).row(4)
        self.assertAlmostEqual(r["gloo_step_seconds"], 0.6)
        self.assertAlmostEqual(r["switchml_step_seconds"], 0.4)
        self.assertAlmostEqual(r["step_ratio"], 1.5)
        # Paired ratios 1.5, 1.2, 2.0: median 1.5.
        self.assertAlmostEqual(r["step_ratio_paired"], 1.5)
        # Target 0.9 first met at step 8: 8 steps of the run's step time.
        self.assertAlmostEqual(r["gloo_time_to_target"], 4.8)
        self.assertAlmostEqual(r["switchml_time_to_target"], 3.2)
        self.assertAlmostEqual(r["tta_ratio"], 1.5)
        self.assertEqual(r["reached"], {"gloo": 3, "switchml": 3})

    def test_bounds_use_the_gradient_bytes(self):
        r = train_report.TrainReport(META, self.rows()).row(4)
        s_over_b = MODEL["gradient_bytes"] * 8 / 100e6
        self.assertAlmostEqual(r["bound_in"], s_over_b * 1086 / 1024)
        self.assertAlmostEqual(r["bound_ring"], 1.5 * s_over_b * 1514 / 1448)

    def test_failed_and_unreached_runs(self):
        rows = self.rows() + [{"phase": "train", "system": "gloo", "world": 4, "run": 3,
                               "error": "timed out"}]
        rows[0]["evals"] = [[12, 0.5]]  # never reaches the target
        t = train_report.TrainReport(META, rows)
        self.assertEqual(t.failed[(4, "gloo")], 1)
        r = t.row(4)
        self.assertEqual(r["reached"]["gloo"], 2)
        self.assertAlmostEqual(r["gloo_time_to_target"], 4.8)
        md = t.markdown()
        self.assertIn("| 4 | 0.600 | 0.400 | 1.50× (1.50×) |", md)
        self.assertIn("1,126,410 parameters", md)
        self.assertIn("(1/0)", md)

    def test_markdown_lists_each_run(self):
        md = train_report.TrainReport(META, self.rows()).markdown()
        self.assertIn("- P = 4: 0.600 / 0.400 (1.50×); 0.600 / 0.500 (1.20×); "
                      "0.600 / 0.300 (2.00×)", md)


class Doc(unittest.TestCase):
    def test_replace_keeps_the_rest_and_the_markers(self):
        text = f"head\n{train_report.BEGIN}\nold\n{train_report.END}\ntail\n"
        out = train_report.replace_section(text, "\nnew\n")
        self.assertEqual(out, f"head\n{train_report.BEGIN}\nnew\n{train_report.END}\ntail\n")
        with self.assertRaises(ValueError):
            train_report.replace_section("no markers", "x")

    def test_command_line_writes_the_doc(self):
        with tempfile.TemporaryDirectory() as d:
            results = os.path.join(d, "r.jsonl")
            with open(results, "w") as f:
                for r in [META] + Table().rows():
                    f.write(json.dumps(r) + "\n")
            doc = os.path.join(d, "doc.md")
            with open(doc, "w") as f:
                f.write(f"a\n{train_report.BEGIN}{train_report.END}\nb\n")
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_report.py")
            subprocess.run([sys.executable, script, results, "--doc", doc], check=True)
            with open(doc) as f:
                text = f.read()
            self.assertTrue(text.startswith("a\n"))
            self.assertTrue(text.endswith("\nb\n"))
            self.assertIn("1.50×", text)


if __name__ == "__main__":
    unittest.main()
