#!/usr/bin/env python3
"""The checks of scripts/torture.py catch what they claim to catch.

The reliability run asserts three invariants through its Accounting: no
acknowledged command missing from the journal (lost), no command journaled
twice (duplicated), and every report a client received reproduced by
`replay --reports-dir`. A run on a correct service shows 0, 0 and equal, which
a checker that checks nothing would show too. Here each is fed a run that
breaks it, built with the real orderwire binary (a journal written by
`journal write`, the client's reports taken from its replay), and must
report it; an unbroken run must pass. And the run's verdict: a broken
invariant always fails it, a missed target only when `--strict` or
`--strict-rows` requires it.

Usage: accounting_test.py ORDERWIRE_BINARY
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import torture  # noqa: E402

BINARY = None
COMMANDS = 500


class RecordedClient:
    """What Accounting reads of a finished `submit`: its session, exit
    status, JSON summary and the file of reports it received."""

    class _Proc:
        def __init__(self, returncode):
            self.returncode = returncode

    def __init__(self, session, reports, acknowledged, returncode=0):
        self.session = session
        self.reports = reports
        self.proc = self._Proc(returncode)
        self._acknowledged = acknowledged

    def summary(self):
        return {"acknowledged": self._acknowledged}

    def stderr(self):
        return "recorded client"

    def error(self):
        return self.stderr()


class AccountingTest(unittest.TestCase):
    def setUp(self):
        self.tool = torture.Tool(BINARY)
        self.work = tempfile.mkdtemp(prefix="torture-accounting.")
        self.frames = subprocess.run(
            [BINARY, "gen", "--workload", "mixed", "--count", str(COMMANDS),
             "--seed", "1"], capture_output=True, check=True).stdout

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def journal(self, name, frames):
        """A journal of FRAMES as session 1, and the reports its replay
        gives session 1 (what a client that saw everything received)."""
        journal = os.path.join(self.work, name)
        subprocess.run([BINARY, "journal", "write", "--journal", journal,
                        "--session", "1", "--durability", "none"],
                       input=frames, capture_output=True, check=True)
        replay = os.path.join(self.work, name + "-replay")
        subprocess.run([BINARY, "replay", "--journal", journal,
                        "--reports-dir", replay], capture_output=True)
        reports = os.path.join(self.work, name + "-client.bin")
        source = os.path.join(replay, "session-1.bin")
        if os.path.exists(source):
            shutil.copy(source, reports)
        else:
            open(reports, "wb").close()
        return journal, reports

    def account(self, journal, client):
        return torture.Accounting(self.tool, self.work, "t", journal, [client])

    def test_a_whole_run_passes(self):
        journal, reports = self.journal("whole", self.frames)
        acct = self.account(journal, RecordedClient(1, reports, COMMANDS))
        self.assertTrue(acct.ok, acct.problems)
        self.assertEqual((acct.lost, acct.duplicated, acct.identical), (0, 0, 1))

    def test_a_client_that_heard_less_passes(self):
        # Reports can still come for a session after its client stopped.
        journal, reports = self.journal("prefix", self.frames)
        with open(reports, "r+b") as f:
            f.truncate(os.path.getsize(reports) // 2)
        acct = self.account(journal, RecordedClient(1, reports, COMMANDS // 2))
        self.assertTrue(acct.ok, acct.problems)
        self.assertGreater(acct.tail_bytes, 0)

    def test_acknowledged_commands_missing_from_the_journal_are_lost(self):
        frames = torture.split_frames(self.frames)
        journal, reports = self.journal("short", b"".join(frames[:400]))
        acct = self.account(journal, RecordedClient(1, reports, COMMANDS))
        self.assertFalse(acct.ok)
        self.assertEqual(acct.lost, COMMANDS - 400)

    def test_a_command_journaled_twice_is_duplicated(self):
        frames = torture.split_frames(self.frames)
        journal, reports = self.journal(
            "twice", b"".join(frames + frames[-3:]))
        acct = self.account(journal, RecordedClient(1, reports, COMMANDS))
        self.assertFalse(acct.ok)
        self.assertEqual(acct.duplicated, 3)

    def test_a_report_the_replay_does_not_reproduce_is_caught(self):
        journal, reports = self.journal("differ", self.frames)
        with open(reports, "r+b") as f:
            f.seek(os.path.getsize(reports) // 2)
            byte = f.read(1)[0]
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte ^ 1]))
        acct = self.account(journal, RecordedClient(1, reports, COMMANDS))
        self.assertFalse(acct.ok)
        self.assertEqual(acct.identical, 0)
        self.assertTrue(any("differ" in p for p in acct.problems), acct.problems)

    def test_a_client_that_did_not_finish_is_caught(self):
        journal, reports = self.journal("unfinished", self.frames)
        acct = self.account(journal,
                            RecordedClient(1, reports, COMMANDS, returncode=1))
        self.assertFalse(acct.ok)
        self.assertEqual(acct.unfinished, 1)


class VerdictTest(unittest.TestCase):
    """Which rows fail the run: broken invariants always, missed targets
    only when required."""

    @staticmethod
    def row(key, target_met=True, invariants_ok=True, skipped=""):
        r = torture.Row(key, key, "-", "-")
        r.target_met = target_met
        r.invariants_ok = invariants_ok
        r.skipped = skipped
        return r

    def test_a_missed_target_is_reported_not_failed(self):
        rows = [self.row("kill"), self.row("damage:truncate", target_met=False)]
        self.assertEqual(torture.verdict(rows, False, ""), ([], []))

    def test_a_broken_invariant_always_fails(self):
        rows = [self.row("kill", invariants_ok=False)]
        self.assertEqual(torture.verdict(rows, False, ""), (["kill"], []))

    def test_strict_requires_every_target_but_skips(self):
        rows = [self.row("flood", target_met=False),
                self.row("diskfull", target_met=None, skipped="no loop")]
        self.assertEqual(torture.verdict(rows, True, ""), ([], ["flood"]))

    def test_strict_rows_name_rows_or_scenarios(self):
        rows = [self.row("damage:flip"), self.row("damage:lock", target_met=False),
                self.row("flood", target_met=False)]
        self.assertEqual(torture.verdict(rows, False, "damage:flip,flood"),
                         ([], ["flood"]))
        self.assertEqual(torture.verdict(rows, False, "damage"),
                         ([], ["damage:lock"]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: accounting_test.py ORDERWIRE_BINARY", file=sys.stderr)
        sys.exit(2)
    BINARY = sys.argv.pop(1)
    unittest.main()
