"""Tests of bench/report.py: the bounds, the choice of runs, the CPU accounting and the
target verdicts that docs/benchmarks.md states. Standard library only; run by
./scripts/test (`python3 -m unittest discover -s bench -p 'test_*.py'`)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

MIB64 = 64 << 20
META = {"phase": "meta", "cpus": 2, "mtu": "1500", "switchml_tuning": {"count": 256},
        "args": {"runs": 5, "redo": 2, "max_bound": 40}}


def row(system, seconds, run, p=4, phase="sizes", loss=0.0, size=MIB64, **extra):
    r = {"phase": phase, "rate": "100mbit", "loss_pct": loss, "world": p, "bytes": size,
         "system": system, "run": run, "seconds": seconds, "verified": True}
    r.update(extra)
    return r


def runs(system, times, **extra):
    return [row(system, t, i, **extra) for i, t in enumerate(times)]


class Bounds(unittest.TestCase):
    def test_bounds_follow_the_wire_efficiency(self):
        r = report.Report(META, [])
        self.assertAlmostEqual(r.e_sml, 1024 / 1086)
        self.assertAlmostEqual(r.e_tcp, 1448 / 1514)
        # 64 MiB at 100 Mbit/s: S/B = 5.3687 s.
        self.assertAlmostEqual(r.bound_in(MIB64, 100e6), 5.6937, places=3)
        self.assertAlmostEqual(r.bound_ring(MIB64, 100e6, 4), 8.4204, places=3)
        self.assertAlmostEqual(r.bound_ring(MIB64, 100e6, 2), 5.6136, places=3)

    def test_settings_list_values_by_rate(self):
        rows = [row("switchml", 5.8, 0, window=128, burst_bytes=12500),
                {**row("switchml", 11.4, 0, window=64, burst_bytes=6250), "rate": "50mbit"}]
        r = report.Report(META, rows)
        self.assertEqual(r.per_rate("window"), "64 at 50 Mbit/s, 128 at 100 Mbit/s")
        self.assertEqual(r.per_rate("burst_bytes", " B"), "6250 B at 50 Mbit/s, 12500 B at 100 Mbit/s")

    def test_rates_parse_and_print(self):
        self.assertEqual(report.rate_bps("100mbit"), 100_000_000)
        self.assertEqual(report.rate_bps("1.5gbit"), 1_500_000_000)
        self.assertEqual(report.rate_name("50mbit"), "50 Mbit/s")
        with self.assertRaises(ValueError):
            report.rate_bps("fast")


class RunChoice(unittest.TestCase):
    def test_median_over_verified_runs_and_last_clean_attempt(self):
        rows = runs("switchml", [5.8, 5.7, 5.9, 9.9, 5.75])
        rows[3]["verified"] = False  # a wrong result is not a time
        # Run 0 measured again: the disturbed attempt is ignored, the clean one counts.
        rows.insert(0, row("switchml", 50.0, 0, disturbed=True))
        rows.append({**row("switchml", 0, 5), "error": "timed out"})
        rows[-1].pop("seconds")
        st = report.Report(META, rows).stat("sizes", "100mbit", 0.0, 4, MIB64, "switchml")
        self.assertEqual(st["runs"], 6)
        self.assertEqual(st["good"], 4)
        self.assertEqual(st["wrong"], 1)
        self.assertEqual(st["failed"], 1)
        self.assertAlmostEqual(st["seconds"], (5.75 + 5.8) / 2)

    def test_paired_ratio_pairs_runs_by_index(self):
        r = report.Report(META, runs("switchml", [1.0, 2.0, 4.0]) + runs("gloo", [1.5, 3.0, 6.0]))
        a = r.stat("sizes", "100mbit", 0.0, 4, MIB64, "switchml")
        b = r.stat("sizes", "100mbit", 0.0, 4, MIB64, "gloo")
        self.assertAlmostEqual(r.paired_ratio(a, b), 1.5)


class Cpu(unittest.TestCase):
    def test_switch_cpu_is_split_from_the_ranks_and_busy_is_the_whole_machine(self):
        # Ranks 2.0 CPU-s, the switch 3.0 over its life but 2.5 inside the timed region
        # (group 4.5); softirq 4.0 is already partly inside the group's time, so the machine
        # figure comes from /proc/stat alone.
        r = row("switchml", 6.0, 0, cpu_seconds=5.0, switch_cpu_seconds=3.0,
                group_cpu_seconds=4.5, softirq_cpu_seconds=4.0, host_util=0.75)
        st = report.Report(META, [r]).stat("sizes", "100mbit", 0.0, 4, MIB64, "switchml")
        self.assertAlmostEqual(st["ranks"], 2.0)
        self.assertAlmostEqual(st["switch"], 2.5)
        self.assertAlmostEqual(st["busy"], 0.75)

    def test_other_systems_have_no_switch(self):
        r = row("gloo", 9.0, 0, cpu_seconds=4.0, group_cpu_seconds=4.1, host_util=0.5)
        st = report.Report(META, [r]).stat("sizes", "100mbit", 0.0, 4, MIB64, "gloo")
        self.assertAlmostEqual(st["ranks"], 4.0)
        self.assertIsNone(st["switch"])


class Targets(unittest.TestCase):
    def verdicts(self, rows):
        text = report.Report(META, rows).targets()
        return {line.split("|")[1].strip(): line.split("|")[3].strip()
                for line in text.splitlines()[2:]}

    def test_targets_met_and_missed(self):
        rows = (runs("switchml", [5.80] * 5) + runs("gloo", [8.90] * 5)
                + runs("switchml", [5.75] * 5, p=3) + runs("gloo", [7.00] * 5, p=3))
        v = self.verdicts(rows)
        self.assertEqual(v["P = 4: ≥ 1.45× faster than Gloo (100 Mbit/s, 64 MiB)"], "yes")
        self.assertEqual(v["P = 4: switchml-rs ≥ 95% of its in-network bound"], "yes")
        self.assertEqual(v["P = 3: ≥ 1.3× faster than Gloo (100 Mbit/s, 64 MiB)"], "NO")
        self.assertEqual(v["every result checked against the expected sum"], "yes")

    def test_loss_target_uses_the_one_percent_row(self):
        rows = (runs("switchml", [6.0] * 5, phase="loss", loss=1.0)
                + runs("gloo", [7.8] * 5, phase="loss", loss=1.0)
                + runs("switchml", [5.7] * 5, phase="loss", loss=0.0)
                + runs("gloo", [9.0] * 5, phase="loss", loss=0.0))
        v = self.verdicts(rows)
        key = "1% loss per link direction: ≥ 1.35× faster than Gloo in the same run"
        self.assertEqual(v[key], "NO")  # 1.30×

    def test_a_wrong_result_fails_the_correctness_row(self):
        rows = runs("switchml", [5.8] * 5)
        rows[2]["verified"] = False
        self.assertEqual(self.verdicts(rows)["every result checked against the expected sum"], "NO")


class Document(unittest.TestCase):
    def test_doc_section_is_replaced_and_the_rest_kept(self):
        with tempfile.TemporaryDirectory() as d:
            results = os.path.join(d, "r.jsonl")
            with open(results, "w") as fh:
                for r in [META] + runs("switchml", [5.8] * 5) + runs("gloo", [8.9] * 5):
                    fh.write(json.dumps(r) + "\n")
            doc = os.path.join(d, "doc.md")
            with open(doc, "w") as fh:
                fh.write(f"head\n{report.BEGIN}\nold\n{report.END}\ntail\n")
            subprocess.run([sys.executable, report.__file__, results, "--doc", doc], check=True)
            with open(doc) as fh:
                text = fh.read()
            self.assertTrue(text.startswith("head\n" + report.BEGIN))
            self.assertTrue(text.endswith(report.END + "\ntail\n"))
            self.assertNotIn("\nold\n", text)
            self.assertIn("| 64 MiB | 5.800 | 98% | 8.900 |", text)


if __name__ == "__main__":
    unittest.main()
