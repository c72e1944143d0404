"""Tests of the BMv2 replay that need no switch: replay.py's verdict against fake switch
runs, replay.sh's skip path, and (as root, where network namespaces work) the whole of
replay.sh with the fakes in fakes/ standing in for p4c-bm2-ss, simple_switch and
simple_switch_CLI.

    python3 -m unittest discover -s p4/replay -p 'test_*.py'
"""
import contextlib
import io
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

import replay

HERE = os.path.dirname(os.path.abspath(__file__))

# Frames are opaque to the verdict; short stand-ins keep the tests readable.
PING, PONG = bytes.fromhex("0101"), bytes.fromhex("0202")
RESULT = bytes.fromhex("0303")

EXPECTED = """
[liveness]
in 0 0001
out 0 00aa
[join]
in 1 0011
out 1 0111
[consumed]
in 2 0022
[multicast]
in 0 0033
out 0 0333
out 1 0333
out 2 0333
[dropped]
in 3 0044
[status]
in 2 0015
out 64 01000015
[status/cpu]
in 64 01400016
out 2 0016
"""
# The CPU port (p4/v1model/switchml.p4 CPU_PORT): `[status]` comes out there behind its
# packet_in header (port 2), and the replay, playing the controller, sends `[status/cpu]`
# (packet_out naming port 2, forward) back in on it.
CPU_PORT = 64


def vectors():
    return replay.load(EXPECTED)


def model_run():
    """What a switch that behaves exactly like the model sends: each vector's `out`."""
    return [(v, list(v["out"])) for v in vectors()]


def with_got(name, got):
    """The model's run with vector `name` answered by `got` instead."""
    return [(v, got if v["name"] == name else g) for v, g in model_run()]


class Verdict(unittest.TestCase):
    def test_a_run_equal_to_the_model_passes(self):
        status, report = replay.verdict(model_run())
        self.assertEqual(status, replay.AGREE, report)
        self.assertEqual(report[-1], "7 passed, 0 failed")

    def test_replicas_in_another_order_pass(self):
        v = vectors()[3]
        status, _ = replay.verdict(with_got("multicast", list(reversed(v["out"]))))
        self.assertEqual(status, replay.AGREE)

    def test_a_switch_that_sends_nothing_fails_even_where_nothing_is_expected(self):
        status, report = replay.verdict([(v, []) for v in vectors()])
        self.assertEqual(status, replay.NO_SWITCH)
        self.assertIn("liveness", report[0])

    def test_nothing_at_all_fails_without_a_liveness_vector(self):
        run = [(v, []) for v in vectors() if v["name"] != "liveness"]
        status, report = replay.verdict(run)
        self.assertEqual(status, replay.NO_SWITCH)
        self.assertIn("none got one", report[0])

    def test_a_live_switch_that_answers_nothing_else_fails(self):
        run = [(v, g if v["name"] == "liveness" else []) for v, g in model_run()]
        status, _ = replay.verdict(run)
        self.assertEqual(status, replay.NO_SWITCH)

    def test_an_empty_run_fails(self):
        self.assertEqual(replay.verdict([])[0], replay.NO_SWITCH)

    def test_a_wrong_liveness_answer_fails(self):
        status, _ = replay.verdict(with_got("liveness", [(0, bytes.fromhex("00ab"))]))
        self.assertEqual(status, replay.NO_SWITCH)

    def test_a_missing_replica_fails(self):
        v = vectors()[3]
        status, report = replay.verdict(with_got("multicast", v["out"][:2]))
        self.assertEqual(status, replay.DIFFER)
        self.assertIn("[multicast] differs", report)
        self.assertTrue(any(line.startswith("  missing: model out 2 ") for line in report))
        self.assertEqual(report[-1], "6 passed, 1 failed")

    def test_an_extra_frame_where_nothing_is_expected_fails(self):
        status, report = replay.verdict(with_got("dropped", [(3, PING)]))
        self.assertEqual(status, replay.DIFFER)
        self.assertIn("  extra:   bmv2  out 3 0101", report)

    def test_a_duplicate_frame_fails(self):
        v = vectors()[1]
        status, _ = replay.verdict(with_got("join", v["out"] * 2))
        self.assertEqual(status, replay.DIFFER)

    def test_a_frame_on_another_port_fails(self):
        status, report = replay.verdict(with_got("join", [(2, bytes.fromhex("0111"))]))
        self.assertEqual(status, replay.DIFFER)
        self.assertIn("  missing: model out 1 0111", report)
        self.assertIn("  extra:   bmv2  out 2 0111", report)

    def test_different_bytes_fail(self):
        status, _ = replay.verdict(with_got("join", [(1, bytes.fromhex("0112"))]))
        self.assertEqual(status, replay.DIFFER)


class FakeSwitch(unittest.TestCase):
    """replay.replay with fake switches in place of the AF_PACKET exchange."""

    def test_a_dead_switch_gets_only_the_liveness_frame_and_fails(self):
        sent = []

        def dead(port, frame):
            sent.append((port, frame))
            return []

        status, _ = replay.verdict(replay.replay(vectors(), dead))
        self.assertEqual(status, replay.NO_SWITCH)
        self.assertEqual(sent, [vectors()[0]["in"]])

    def test_a_switch_that_answers_like_the_model_passes(self):
        answers = {v["in"]: v["out"] for v in vectors()}
        status, report = replay.verdict(replay.replay(vectors(), lambda p, f: answers[(p, f)]))
        self.assertEqual(status, replay.AGREE, report)

    def test_a_switch_that_echoes_every_frame_fails(self):
        status, _ = replay.verdict(replay.replay(vectors(), lambda p, f: [(p, f)]))
        self.assertEqual(status, replay.NO_SWITCH)  # the liveness answer is wrong


class CpuPort(unittest.TestCase):
    """The replay plays the controller: what the switch sends the CPU port is compared like
    any frame, and the controller's frame goes in on the CPU port as the next vector."""

    def test_a_switch_that_answers_a_status_itself_fails(self):
        # The old data plane answered Status on the sender's port, not the CPU port.
        status, report = replay.verdict(with_got("status", [(2, bytes.fromhex("0016"))]))
        self.assertEqual(status, replay.DIFFER)
        self.assertIn(f"  missing: model out {CPU_PORT} 01000015", report)
        self.assertIn("  extra:   bmv2  out 2 0016", report)

    def test_the_controllers_frame_goes_in_on_the_cpu_port(self):
        sent = []

        def switch(port, frame):
            sent.append(port)
            return {v["in"]: list(v["out"]) for v in vectors()}[(port, frame)]

        status, report = replay.verdict(replay.replay(vectors(), switch))
        self.assertEqual(status, replay.AGREE, report)
        self.assertEqual(sent[-2:], [2, CPU_PORT])

    def test_a_controller_frame_the_switch_does_not_forward_fails(self):
        status, report = replay.verdict(with_got("status/cpu", []))
        self.assertEqual(status, replay.DIFFER)
        self.assertIn("[status/cpu] differs", report)


class Frames(unittest.TestCase):
    def test_diff_is_empty_only_for_equal_multisets(self):
        self.assertEqual(replay.diff([(0, PING), (1, PONG)], [(1, PONG), (0, PING)]), [])
        self.assertEqual(len(replay.diff([(0, PING)], [(0, PING), (0, PING)])), 1)
        self.assertEqual(len(replay.diff([(0, RESULT)], [])), 1)

    def test_frames_are_compared_whole_status_reply_counters_included(self):
        # The controller's StatusReply is the model's, counters and all: nothing is zeroed.
        reply = bytes(42) + bytes([1, 0x16]) + bytes(18) + b"\x07" * 232
        [v] = replay.load(f"[s/cpu]\nin {CPU_PORT} 0140{reply.hex()}\nout 2 {reply.hex()}\n")
        self.assertEqual(v["out"], [(2, reply)])
        self.assertEqual(replay.diff(v["out"], [(2, reply[:-1] + b"\x00")])[0][:10], "  missing:")

    def test_interfaces_name_the_cpu_port(self):
        self.assertEqual(
            replay.interfaces(["h0", "h1", "h2", "h3", f"{CPU_PORT}=hcpu"]),
            {0: "h0", 1: "h1", 2: "h2", 3: "h3", CPU_PORT: "hcpu"},
        )

    def test_load_rejects_a_vector_without_input(self):
        with self.assertRaises(ValueError):
            replay.load("[a]\nout 0 00\n")
        with self.assertRaises(ValueError):
            replay.load("in 0 00\n")


# What simple_switch_CLI 1.15 printed loading a bed (issue 31), trimmed: the `#` line of the
# old commands.txt drew `*** Unknown syntax`, which replay.sh did not catch.
CLI_ACCEPTS = """Obtaining JSON from switch...
Done
Control utility for runtime P4 table manipulation
RuntimeCmd: Adding entry to exact match table SwitchmlIngress.classifier.job_table
match key:           EXACT-00:07
action:              SwitchmlIngress.classifier.set_job
runtime data:        00:04	00:00:00:00
Entry has been added with handle 0
RuntimeCmd: Creating multicast group 1
RuntimeCmd: Creating node with rid 1 , port map 1 and lag map
node was created with handle 0
RuntimeCmd: Associating node 0 to multicast group 1
RuntimeCmd: Setting default action of SwitchmlIngress.switch_config
RuntimeCmd: """


class CliComplaints(unittest.TestCase):
    def test_a_clean_session_has_no_complaint(self):
        self.assertEqual(replay.cli_complaints(CLI_ACCEPTS), [])

    def test_every_kind_of_complaint_is_caught(self):
        for bad in (
            "RuntimeCmd: *** Unknown syntax: # Generated by `cargo run ...`; do not edit.",
            "RuntimeCmd: Error: Invalid table name (lane_alignmen)",
            "RuntimeCmd: RuntimeCmd: Invalid table operation (DUPLICATE_ENTRY)",
            "Invalid PRE operation (INVALID_MGRP)",
            "Could not connect to thrift client on port 9090",
            "Traceback (most recent call last):",
        ):
            text = CLI_ACCEPTS.replace("RuntimeCmd: Creating multicast group 1", bad)
            self.assertEqual(replay.cli_complaints(text), [bad], bad)

    def test_the_cli_log_mode_exits_1_on_a_complaint_and_0_without(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "cli.log")
            for text, status in ((CLI_ACCEPTS, 0), (CLI_ACCEPTS + "\n*** Unknown syntax: x\n", 1)):
                with open(log, "w") as f:
                    f.write(text)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    self.assertEqual(replay.main(["replay.py", "--cli-log", log]), status)
                self.assertEqual(bool(out.getvalue()), bool(status))

    def test_the_generated_commands_draw_no_complaint_from_the_fake_cli(self):
        """The fake CLI answers as the real one does, a `#` line with `Unknown syntax`; the
        committed commands.txt loads without a complaint, and a comment would not."""
        with open(os.path.join(HERE, "commands.txt")) as f:
            commands = f.read()
        with socket.create_server(("127.0.0.1", 0)) as thrift:
            port = str(thrift.getsockname()[1])

            def load(text):
                run = subprocess.run(
                    [os.path.join(HERE, "fakes", "simple_switch_CLI"), "--thrift-port", port],
                    input=text, capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(run.returncode, 0, run.stderr)
                return replay.cli_complaints(run.stdout)

            self.assertEqual(load(commands), [])
            self.assertEqual(len(load("# a comment\n" + commands)), 1)


class SkipPath(unittest.TestCase):
    def test_without_the_tools_replay_sh_skips_with_77_and_says_so(self):
        with tempfile.TemporaryDirectory() as empty:
            run = subprocess.run(
                ["/bin/bash", os.path.join(HERE, "replay.sh")],
                env={"PATH": empty, "TMPDIR": empty},
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(os.listdir(empty), [], "the skip path wrote something")
        self.assertEqual(run.returncode, 77, run.stderr)
        self.assertIn("SKIP", run.stderr)
        self.assertIn("p4c-bm2-ss", run.stderr)
        self.assertIn("simple_switch", run.stderr)
        self.assertIn("nothing was checked", run.stderr)
        self.assertEqual(run.stdout, "")


def namespaces_work():
    """Root, the tools replay.sh needs besides BMv2, and permission to make a namespace."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "cargo")):
        return False
    probe = f"switchml-replay-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return made


@unittest.skipUnless(namespaces_work(), "needs root, ip, cargo and network namespaces")
class FakeBmv2(unittest.TestCase):
    """replay.sh end to end: namespace, veths, every bed, replay.py on AF_PACKET sockets."""

    def run_replay(self, mode, cli=""):
        env = dict(os.environ)
        env.update(
            PATH=os.path.join(HERE, "fakes") + os.pathsep + env["PATH"],
            FAKE_SWITCH_MODE=mode,
            FAKE_CLI_MODE=cli,
            REPLAY_QUIET="0.05",
        )
        run = subprocess.run(
            [os.path.join(HERE, "replay.sh")], env=env, capture_output=True, text=True,
            timeout=600,
        )
        logs = run.stdout.splitlines()[0].removeprefix("replay.sh: logs in ")
        self.assertTrue(os.path.isdir(logs), run.stdout)
        self.addCleanup(shutil.rmtree, logs, True)
        return run, logs

    def test_a_switch_that_never_answers_fails_with_3_and_keeps_its_log(self):
        run, logs = self.run_replay("dead")
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("did not answer the liveness check", run.stderr)
        self.assertIn(f"logs kept in {logs}", run.stderr)
        self.assertTrue(os.path.isfile(os.path.join(logs, "wire.switch.log")))
        self.assertNotIn("passed", run.stdout)

    def test_a_table_entry_the_cli_refuses_fails_with_3(self):
        run, logs = self.run_replay("model", cli="refuse")
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("simple_switch_CLI complained", run.stderr)
        self.assertIn("Invalid table name (lane_alignment)", run.stderr)
        self.assertNotIn("passed", run.stdout)

    def test_one_wrong_multicast_fails_its_bed_and_only_it(self):
        run, logs = self.run_replay("wrong")
        self.assertEqual(run.returncode, 1, run.stderr)
        # Beds are numbered in switch.txt's order; find the k = 256 one by its name.
        bed = re.search(r"\[(scenario-\d+-multi_pass_k256)\] DIFFERS", run.stdout)
        self.assertIsNotNone(bed, run.stdout)
        self.assertEqual(run.stdout.count("DIFFERS"), 1, run.stdout)
        self.assertRegex(run.stdout, r"\[wire\] \d+ passed, 0 failed")
        # Every other bed ran and passed: the model's own beds, the tiered ones included.
        for other in ("multi_pass_k100", "multi_pass_four_ranks", "tiered_parent",
                      "tiered_child0", "tiered_child1"):
            self.assertRegex(run.stdout, rf"\[scenario-\d+-{other}\] \d+ passed, 0 failed")
        with open(os.path.join(logs, bed.group(1) + ".replay.log")) as f:
            report = f.read()
        self.assertIn("missing: model out 2 ", report)
        self.assertIn("extra:   bmv2  out 2 ", report)


if __name__ == "__main__":
    unittest.main()
