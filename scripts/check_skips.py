#!/usr/bin/env python3
"""Lists every test a CTest run skipped, with the reason the test gave, and
fails (exit 1) if one of them is not in the allowed list.

    scripts/check_skips.py JUNIT_XML [ALLOWED]

JUNIT_XML is what `ctest --output-junit` wrote (scripts/run_ctest.sh
writes BUILD_DIR/ctest-junit.xml and BUILD_DIR/ctest-junit-nats.xml);
ALLOWED defaults to tests/skips_allowed.txt: one CTest name or fnmatch
pattern per line, then the reason it may skip; '#' starts a comment. A GoogleTest skip (GTEST_SKIP) reaches CTest through
gtest_discover_tests' SKIP_REGULAR_EXPRESSION; its reason is the text after
the "file:line: Skipped" line of the test's output. Exit 0: every skip is
allowed (or none happened); 1: a skip that is not; 2: usage or unreadable
input.
"""
import fnmatch
import os
import sys
import xml.etree.ElementTree as ET


def allowed_patterns(path):
    patterns = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                patterns.append(line.split()[0])
    return patterns


def skip_reason(case):
    out = (case.findtext("system-out") or "").splitlines()
    for i, line in enumerate(out):
        if line.endswith(": Skipped"):
            reason = []
            for follow in out[i + 1:]:
                if follow.startswith("[  SKIPPED ]"):
                    break
                reason.append(follow.strip())
            return " ".join(r for r in reason if r) or "(no reason given)"
    skipped = case.find("skipped")
    message = skipped.get("message", "") if skipped is not None else ""
    return message or "(no reason given)"


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    junit = argv[1]
    allowed_file = argv[2] if len(argv) == 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests",
        "skips_allowed.txt")
    try:
        root = ET.parse(junit).getroot()
        patterns = allowed_patterns(allowed_file)
    except (OSError, ET.ParseError) as e:
        print(f"check_skips: {e}", file=sys.stderr)
        return 2
    skipped = [c for c in root.iter("testcase")
               if c.get("status") == "notrun" or c.find("skipped") is not None]
    ran = sum(1 for _ in root.iter("testcase"))
    bad = 0
    for case in skipped:
        name = case.get("name", "?")
        ok = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        bad += not ok
        verdict = "allowed" if ok else "NOT ALLOWED"
        print(f"skipped ({verdict}): {name}: {skip_reason(case)}")
    print(f"check_skips: {len(skipped)} of {ran} tests skipped, "
          f"{bad} not in {os.path.relpath(allowed_file)}")
    if bad:
        print("check_skips: a skip outside the list means a path this machine "
              "should test went untested: make it run, or (if it truly "
              "depends on the machine) list it with its reason",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
