#!/usr/bin/env python3
"""Tests of packaging/orderwire.service against the orderwire binary.

- UnitVerifies: `systemd-analyze verify` on a copy of the unit whose
  ExecStart names the built binary; any warning about the file (an unknown
  key, a value that does not parse) fails, not only a non-zero exit. Skipped,
  with the reason printed, where systemd-analyze is missing or cannot run.
- ExecStartServesTradesAndStopsCleanly: the unit's ExecStart line, parsed
  as systemd does (Environment= values substituted, continuation lines
  joined), with the state and configuration directories moved to temporary
  ones and the binary replaced by the built one, is run as it is, under the
  unit's UMask, LimitMEMLOCK and LimitNOFILE (and, when the test runs as
  root, as an unprivileged user, as the unit's User= would: then the memlock
  limit applies to io_uring's registered buffers). It must print its
  "listening on" banner with io_uring's registered buffers where io_uring is
  in use, trade (`orderwire submit`), stop on the unit's KillSignal with exit
  status 0 within the unit's TimeoutStopSec, leave its counters file, and
  start again on the same state. A flag renamed or removed in the CLI, a
  stop signal the service does not handle, a stop that takes longer than the
  unit allows, or a memlock limit too low for the ring fails it.
- WrittenPathsAreWritableUnderTheHardening: every path ExecStart makes the
  service write (--journal, --stats-json) lies in the unit's StateDirectory
  or ReadWritePaths (ProtectSystem=strict makes everything else read-only),
  and the configuration is read from /etc/orderwire.
- HardeningLeavesIoUringAndUdpAlone: no SystemCallFilter= that leaves out
  io_uring, and RestrictAddressFamilies= allows AF_INET and AF_INET6.

Usage: systemd_unit_test.py PATH_TO_ORDERWIRE PATH_TO_UNIT [unittest options]
Standard library only.
"""

import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ORDERWIRE = None  # set from argv in main()
UNIT = None

# Where the unit keeps its state and configuration (the test moves both).
STATE_ROOT = "/var/lib"
CONFIG_DIR = "/etc/orderwire"
NOBODY = 65534


def parse_unit(path):
    """The unit as {section: [(key, value), ...]}, with systemd's syntax:
    comments (# ;), continuation lines ending in a backslash, keys that may
    repeat."""
    sections = {}
    current = None
    pending = ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if pending:
                line = pending + " " + line.strip()
                pending = ""
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.endswith("\\"):
                pending = stripped[:-1].rstrip()
                continue
            if stripped.startswith("[") and stripped.endswith("]"):
                current = stripped[1:-1]
                sections.setdefault(current, [])
                continue
            key, _, value = stripped.partition("=")
            sections[current].append((key.strip(), value.strip()))
    return sections


def values(unit, section, key):
    return [v for k, v in unit.get(section, []) if k == key]


def last_value(unit, section, key):
    found = values(unit, section, key)
    return found[-1] if found else None


def parse_seconds(text):
    """A systemd time span as used in the unit: 60, 60s, 1min, 500ms, 1min 30s."""
    units = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "min": 60.0,
             "m": 60.0, "h": 3600.0}
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text):
        if unit not in units:
            raise ValueError(f"time span '{text}': unit '{unit}'")
        total += float(number) * units[unit]
    return total


def parse_bytes(text):
    """A systemd resource limit in bytes: 16M, 64K, 1G, 8388608."""
    match = re.fullmatch(r"(\d+)([KMGT]?)", text)
    if not match:
        raise ValueError(f"limit '{text}'")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(match.group(1)) * scale[match.group(2)]


def environment(unit):
    env = {}
    for value in values(unit, "Service", "Environment"):
        for assignment in shlex.split(value):
            name, _, val = assignment.partition("=")
            env[name] = val
    return env


def exec_start_argv(unit, env):
    """ExecStart as argv: its prefixes dropped, ${NAME} replaced by the
    variable's value as one word and $NAME split on whitespace, as systemd
    does."""
    lines = values(unit, "Service", "ExecStart")
    if len(lines) != 1:
        raise AssertionError(f"expected one ExecStart line, found {lines}")
    line = lines[0].lstrip("@-:+!")
    argv = []
    for word in shlex.split(line):
        if re.fullmatch(r"\$\{\w+\}", word):
            argv.append(env[word[2:-1]])
        elif re.fullmatch(r"\$\w+", word):
            argv.extend(env[word[1:]].split())
        else:
            argv.append(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], word))
    return argv


def flag_value(argv, flag):
    if flag not in argv:
        return None
    return argv[argv.index(flag) + 1]


class StderrReader:
    """Collects a process's standard error on a thread; wait_for() a regex."""

    def __init__(self, stream):
        self.lines = []
        self.closed = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, args=(stream,),
                                       daemon=True)
        self.thread.start()

    def _run(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, pattern, timeout):
        """The first match of `pattern` in a line; None once `timeout`
        seconds passed or the stream ended without one."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    match = re.search(pattern, line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self.cond.wait(left)

    def text(self):
        with self.cond:
            return "\n".join(self.lines)


class SystemdUnit(unittest.TestCase):

    def setUp(self):
        self.unit = parse_unit(UNIT)

    def test_UnitVerifies(self):
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            self.skipTest("systemd-analyze is not installed (Debian package "
                          "systemd); the unit was not verified")
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "orderwire.service")
            with open(UNIT, encoding="utf-8") as f:
                text = f.read()
            binary = exec_start_argv(self.unit, environment(self.unit))[0]
            with open(copy, "w", encoding="utf-8") as f:
                f.write(text.replace(binary, os.path.abspath(ORDERWIRE)))
            run = subprocess.run([analyze, "verify", "--man=no", copy],
                                 capture_output=True, text=True, timeout=60)
            output = (run.stdout + run.stderr).strip()
            cannot_run = ("Failed to initialize manager", "Failed to setup",
                          "Operation not permitted")
            if run.returncode != 0 and copy not in output and any(
                    c in output for c in cannot_run):
                self.skipTest(f"systemd-analyze cannot run here: {output}")
            # Unknown keys and bad values are warnings with exit status 0:
            # any line about the file fails.
            self.assertEqual(run.returncode, 0, output)
            self.assertNotIn("orderwire.service", output, output)

    def test_WrittenPathsAreWritableUnderTheHardening(self):
        argv = exec_start_argv(self.unit, environment(self.unit))
        self.assertEqual(last_value(self.unit, "Service", "ProtectSystem"),
                         "strict")
        writable = [os.path.join(STATE_ROOT, d)
                    for v in values(self.unit, "Service", "StateDirectory")
                    for d in v.split()]
        writable += [p.lstrip("-") for v in values(self.unit, "Service",
                                                   "ReadWritePaths")
                     for p in v.split()]
        self.assertIn("/var/lib/orderwire", writable)
        for flag in ("--journal", "--stats-json"):
            path = flag_value(argv, flag)
            self.assertIsNotNone(path, f"ExecStart has no {flag}")
            self.assertTrue(
                any(path.startswith(w.rstrip("/") + "/") for w in writable),
                f"{flag} {path} is outside the writable paths {writable}")
        config = flag_value(argv, "--config")
        self.assertIsNotNone(config, "ExecStart has no --config")
        self.assertTrue(config.startswith(CONFIG_DIR + "/"), config)

    def test_HardeningLeavesIoUringAndUdpAlone(self):
        for value in values(self.unit, "Service", "SystemCallFilter"):
            if value.startswith("~"):
                self.assertNotIn("io_uring", value)
                self.assertNotIn("@io-uring", value)
            else:
                self.assertTrue(
                    "@io-uring" in value or all(
                        s in value for s in ("io_uring_setup",
                                             "io_uring_enter",
                                             "io_uring_register")),
                    f"SystemCallFilter={value} blocks io_uring")
        families = " ".join(values(self.unit, "Service",
                                   "RestrictAddressFamilies")).split()
        if families:
            self.assertNotIn("~", "".join(families))
            self.assertIn("AF_INET", families)
            self.assertIn("AF_INET6", families)

    def test_ExecStartServesTradesAndStopsCleanly(self):
        env = environment(self.unit)
        # What an operator's drop-in would do: another address (any free
        # port on loopback: this machine is shared).
        self.assertIn("ORDERWIRE_LISTEN", env)
        env["ORDERWIRE_LISTEN"] = "127.0.0.1:0"
        self.assertIn("ORDERWIRE_METRICS", env)
        env["ORDERWIRE_METRICS"] = "127.0.0.1:0"
        argv = exec_start_argv(self.unit, env)
        stop_signal = getattr(signal, last_value(self.unit, "Service",
                                                 "KillSignal") or "SIGTERM")
        stop_timeout = parse_seconds(
            last_value(self.unit, "Service", "TimeoutStopSec") or "90")
        umask = int(last_value(self.unit, "Service", "UMask") or "0022", 8)
        memlock = last_value(self.unit, "Service", "LimitMEMLOCK")
        nofile = last_value(self.unit, "Service", "LimitNOFILE")

        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            state_root = os.path.join(tmp, "state")
            config_dir = os.path.join(tmp, "etc")
            os.makedirs(config_dir)
            for d in values(self.unit, "Service", "StateDirectory"):
                os.makedirs(os.path.join(state_root, d))
            mapping = {os.path.join(STATE_ROOT, ""): state_root + "/",
                       CONFIG_DIR + "/": config_dir + "/"}

            def relocate(arg):
                for old, new in mapping.items():
                    if arg.startswith(old):
                        return new + arg[len(old):]
                return arg

            # A copy of the binary in the 0755 directory: the build tree
            # may sit in a directory only root can enter (a clone in a
            # mktemp -d), and the service runs as another user below.
            binary = os.path.join(tmp, "orderwire")
            shutil.copy2(os.path.abspath(ORDERWIRE), binary)
            os.chmod(binary, 0o755)
            command = [binary] + [relocate(a) for a in argv[1:]]
            # The configuration: comments only, so the defaults apply
            # (loopback) in the key = value format and in TOML alike.
            with open(flag_value(command, "--config"), "w") as f:
                f.write("# orderwire configuration for the unit test: "
                        "the defaults\n")
            os.chmod(flag_value(command, "--config"), 0o644)

            as_user = []
            if os.geteuid() == 0 and shutil.which("setpriv"):
                # As the unit's User= would: no capabilities, so the
                # memlock limit applies to io_uring.
                as_user = ["setpriv", f"--reuid={NOBODY}",
                           f"--regid={NOBODY}", "--clear-groups",
                           "--inh-caps=-all", "--"]
                for d in values(self.unit, "Service", "StateDirectory"):
                    os.chown(os.path.join(state_root, d), NOBODY, NOBODY)

            def limits():
                os.umask(umask)
                if memlock is not None:
                    # At most the hard limit this process has (raising it
                    # needs CAP_SYS_RESOURCE): buffers that fit under a
                    # lower limit fit under the unit's.
                    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
                    m = parse_bytes(memlock)
                    if hard != resource.RLIM_INFINITY:
                        m = min(m, hard)
                    resource.setrlimit(resource.RLIMIT_MEMLOCK, (m, m))
                if nofile is not None:
                    n = int(nofile.split(":")[-1])
                    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

            def start():
                proc = subprocess.Popen(as_user + command,
                                        stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True,
                                        preexec_fn=limits)
                # A failed assertion before stop() must not leave it running.
                self.addCleanup(lambda: proc.poll() is None and
                                (proc.kill(), proc.wait()))
                reader = StderrReader(proc.stderr)
                match = reader.wait_for(r"listening on 127\.0\.0\.1:(\d+)", 60)
                if match is None:
                    proc.kill()
                    proc.wait()
                    self.fail(f"no 'listening on' banner from {command} "
                              f"(exit {proc.returncode}):\n{reader.text()}")
                return proc, reader, int(match.group(1))

            def submit(port, session):
                run = subprocess.run(
                    [ORDERWIRE, "submit", "--session", str(session),
                     "--target", f"127.0.0.1:{port}", "--workload", "mixed",
                     "--count", "2000", "--seed", str(session), "--json"],
                    capture_output=True, text=True, timeout=120)
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(json.loads(run.stdout)["acknowledged"], 2000)

            def stop(proc, reader):
                began = time.monotonic()
                proc.send_signal(stop_signal)
                try:
                    code = proc.wait(timeout=stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    self.fail(f"not stopped by {stop_signal.name} within "
                              f"TimeoutStopSec ({stop_timeout} s):\n"
                              f"{reader.text()}")
                reader.thread.join(10)
                proc.stderr.close()
                self.assertEqual(code, 0, reader.text())
                self.assertLess(time.monotonic() - began, stop_timeout)
                self.assertIn("stopped cleanly", reader.text())

            proc, reader, port = start()
            banner = reader.text()
            if re.search(r"; io_uring, ", banner):
                self.assertIn("registered buffers", banner,
                              f"LimitMEMLOCK={memlock} too low for the "
                              f"ring's buffers:\n{banner}")
            submit(port, 1)
            # The metrics the unit serves: scraped as Prometheus would.
            metrics = re.search(r"metrics at (http://127\.0\.0\.1:\d+"
                                r"/metrics)", banner)
            self.assertIsNotNone(metrics, banner)
            if shutil.which("curl"):
                scrape = subprocess.run(
                    ["curl", "--silent", "--show-error", "--fail",
                     "--max-time", "10", metrics.group(1)],
                    capture_output=True, text=True, timeout=30)
                self.assertEqual(scrape.returncode, 0, scrape.stderr)
                self.assertRegex(scrape.stdout,
                                 r"(?m)^orderwire_journal_durable_index 2000$")
            else:
                print("packaging: curl is not installed; the metrics "
                      "endpoint was not scraped", file=sys.stderr)
            stop(proc, reader)

            journal = flag_value(command, "--journal")
            # docs/OPERATIONS.md: the journal is the service user's alone
            # (0750, no access for others), by the unit's UMask.
            self.assertEqual(os.stat(journal).st_mode & 0o027, 0,
                             f"journal directory mode "
                             f"{os.stat(journal).st_mode & 0o777:o} "
                             f"under UMask={umask:o}")
            with open(flag_value(command, "--stats-json")) as f:
                stats = json.load(f)
            self.assertEqual(stats["durable_index"], 2000)
            self.assertEqual(stats["last_index"], 2000)

            # Restart=on-failure relies on the same line starting again on
            # its own state (the configuration the journal pins included).
            proc, reader, port = start()
            self.assertIn("recovered", reader.text())
            self.assertIn("last index 2000", reader.text())
            submit(port, 2)
            stop(proc, reader)


def main():
    global ORDERWIRE, UNIT
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ORDERWIRE = sys.argv[1]
    UNIT = sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)


if __name__ == "__main__":
    main()
