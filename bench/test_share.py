"""Tests of the share phase's arithmetic and report (bench/share_phase.py,
bench/share_report.py): Jain's index, tc's output, and the table from a made-up row. The
phase itself needs root, the testbed and iperf3, so it is run by hand (docs/benchmarks.md),
not here. Standard library only; run by ./scripts/test."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import share_phase  # noqa: E402
import share_report  # noqa: E402

# `tc -s qdisc show` in a namespace of the testbed (iproute2 6.1), a noqueue and a tbf.
TC = """qdisc noqueue 0: dev v1 root refcnt 2
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc tbf 8021: dev p0 root refcnt 3 rate 100Mbit burst 12500b lat 20ms
 Sent 108600 bytes 100 pkt (dropped 7, overlimits 12 requeues 0)
 backlog 85020b 78p requeues 0
qdisc tbf 8022: dev p1 root refcnt 3 rate 100Mbit burst 12500b lat 20ms
 Sent 5 bytes 1 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 12Kb 3p requeues 0
"""


class Arithmetic(unittest.TestCase):
    def test_jain_is_one_when_equal_and_one_over_n_when_one_has_all(self):
        self.assertAlmostEqual(share_phase.jain([40e6, 40e6]), 1.0)
        self.assertAlmostEqual(share_phase.jain([80e6, 0.0]), 0.5)
        self.assertAlmostEqual(share_phase.jain([60e6, 30e6]), 0.9)
        self.assertIsNone(share_phase.jain([0.0, 0.0]))

    def test_tc_output_gives_each_tbf_queue_its_counts(self):
        got = share_phase.parse_qdiscs("nb-sw", TC)
        self.assertEqual(got, {"nb-sw/p0": (100, 7, 85020, 78), "nb-sw/p1": (1, 0, 12000, 3)})


def made_up_row():
    series = {"1": [(t, 60e6) for t in range(1, 21)], "tcp": [(t, 35e6) for t in range(6, 21)]}
    return {
        "phase": "share", "scenario": "tcp", "variant": "off", "rate_bps": 100e6,
        "lead_seconds": 5, "series_bps": series,
        "goodput_bps": {"1": 60e6, "tcp": 35e6}, "goodput_alone_bps": {"1": 94e6},
        "jain": share_phase.jain([60e6, 35e6]), "collapse": False, "failed": {},
        "allreduce_seconds_shared": {"1": [8.5, 8.7]}, "allreduce_seconds_alone": {"1": [5.8]},
        "qdisc": {"up_sent": 1000, "up_dropped": 10, "down_sent": 900, "down_dropped": 0,
                  "down_steady_sent": 800, "down_steady_dropped": 0,
                  "max_backlog_bytes": {"nb-sw/p0": 1000}},
        "rtt": [{"rank": 0, "ms": [(6.0, 90.0), (8.0, 15.0), (9.0, 17.0)], "sent_received": [10, 10]}],
        "tcp": {"congestion": "cubic", "retransmits": 3, "received_bps": 35e6},
    }


class Table(unittest.TestCase):
    def test_the_table_has_a_line_per_participant_with_its_share_of_the_link(self):
        md = share_report.markdown([made_up_row()], {})
        lines = [x for x in md.splitlines() if x.startswith("| tcp") or x.startswith("|  |")]
        self.assertEqual(len(lines), 2, md)
        self.assertIn("| 60.0 | 94.0 | 64% |", lines[0])
        self.assertIn("8.60 / 5.80", lines[0])
        self.assertIn("w0: 16.0 / 17.0, 0.0%", lines[0])
        self.assertIn("10 / 0 (0.99% / 0.00%)", lines[0])
        self.assertIn("| TCP | 35.0 |", lines[1])


if __name__ == "__main__":
    unittest.main()
