#!/usr/bin/env python3
"""scripts/check_skips.py on made-up CTest JUnit files: a skip outside the
allowed list fails the run and is named with its reason; an allowed skip, a
pattern, and a run without skips pass; a missing file is a usage error."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "check_skips.py")

CASE_SKIPPED = """<testcase name="{name}" status="notrun">
<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
<system-out>[ RUN      ] {name}
/src/x_test.cc:12: Skipped
no io_uring on this kernel
[  SKIPPED ] {name} (0 ms)
</system-out></testcase>"""
CASE_RUN = """<testcase name="{name}" status="run"><system-out>[ OK ]
</system-out></testcase>"""


def junit(cases):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite>'
            + "".join(cases) + "</testsuite>")


class CheckSkipsTest(unittest.TestCase):
    def run_check(self, xml, allowed):
        with tempfile.TemporaryDirectory() as d:
            j = os.path.join(d, "j.xml")
            a = os.path.join(d, "allowed.txt")
            with open(j, "w") as f:
                f.write(xml)
            with open(a, "w") as f:
                f.write(allowed)
            return subprocess.run([sys.executable, SCRIPT, j, a],
                                  capture_output=True, text=True)

    def test_a_skip_outside_the_list_fails_naming_test_and_reason(self):
        r = self.run_check(junit([CASE_SKIPPED.format(name="W.Uring"),
                                  CASE_RUN.format(name="W.Other")]),
                           "# nothing allowed\n")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("NOT ALLOWED): W.Uring: no io_uring on this kernel",
                      r.stdout)

    def test_an_allowed_skip_passes(self):
        r = self.run_check(junit([CASE_SKIPPED.format(name="W.Uring")]),
                           "W.Uring   the kernel may lack it\n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("(allowed): W.Uring", r.stdout)

    def test_a_pattern_allows_only_what_it_matches(self):
        r = self.run_check(junit([CASE_SKIPPED.format(name="W.Uring"),
                                  CASE_SKIPPED.format(name="X.Direct")]),
                           "W.*   why\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("NOT ALLOWED): X.Direct", r.stdout)
        self.assertIn("(allowed): W.Uring", r.stdout)

    def test_no_skip_passes(self):
        r = self.run_check(junit([CASE_RUN.format(name="W.Runs")]), "")
        self.assertEqual(r.returncode, 0)
        self.assertIn("0 of 1 tests skipped", r.stdout)

    def test_a_missing_file_is_a_usage_error(self):
        r = subprocess.run([sys.executable, SCRIPT, "/nonexistent.xml"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
