#!/usr/bin/env python3
"""The online backup of docs/OPERATIONS.md ("Backup and restore"), run as
written.

A server runs with small segments and frequent snapshots; a client trades
so that several segments are closed and snapshots written. While the server
still runs, the shell block of OPERATIONS.md that starts with
"J=/var/lib/orderwire/journal" runs under `bash -e` with J and B pointed at
the live journal and a backup directory and `orderwire` at the built binary:
its `replay --verify` and `replay` must succeed. Then the copy must restore:
`serve` on it starts from a snapshot, reports the missing checkpoint, ends
at the copy's last record and takes a new session's commands. The claim
that a copy of the closed segments with CHECKPOINT is refused is checked
too. A change to the procedure that breaks the copy (copying CHECKPOINT,
leaving out the snapshots of a pruned journal, copying the live segment
half-written...) fails it.

Usage: online_backup_test.py PATH_TO_ORDERWIRE PATH_TO_OPERATIONS_MD
       [unittest options]
Standard library only.
"""

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ORDERWIRE = None
OPERATIONS = None


def backup_block():
    with open(OPERATIONS, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    found = [b for b in blocks if b.startswith("J=/var/lib/orderwire/journal")]
    if len(found) != 1:
        raise AssertionError("OPERATIONS.md has no single backup block "
                             "starting with J=/var/lib/orderwire/journal")
    return found[0]


class Server:
    def __init__(self, journal, extra=()):
        self.proc = subprocess.Popen(
            [ORDERWIRE, "serve", "--journal", journal, "--listen",
             "127.0.0.1:0", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        self.port = None
        deadline = time.monotonic() + 60
        with self.cond:
            while self.port is None and time.monotonic() < deadline:
                for line in self.lines:
                    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                    if m:
                        self.port = int(m.group(1))
                if self.proc.poll() is not None:
                    break
                self.cond.wait(0.1)
        if self.port is None:
            self.stop()
            raise AssertionError("serve did not start:\n" + self.text())

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def text(self):
        with self.cond:
            return "\n".join(self.lines)

    def wait_for(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while time.monotonic() < deadline:
                if any(re.search(pattern, l) for l in self.lines):
                    return True
                self.cond.wait(0.1)
        return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self.thread.join(10)
        self.proc.stderr.close()
        return code


def durable_index(checkpoint):
    """CHECKPOINT's durable_index (docs/JOURNAL.md "Checkpoint": u64 at
    byte 32)."""
    with open(checkpoint, "rb") as f:
        return struct.unpack_from("<Q", f.read(72), 32)[0]


def submit(port, session, count):
    run = subprocess.run(
        [ORDERWIRE, "submit", "--session", str(session), "--target",
         f"127.0.0.1:{port}", "--workload", "mixed", "--count", str(count),
         "--seed", str(session), "--json"],
        capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise AssertionError(f"submit failed: {run.stderr}")
    return json.loads(run.stdout)


class OnlineBackup(unittest.TestCase):

    def test_TheDocumentedCopyOfARunningJournalVerifiesAndRestores(self):
        block = backup_block()
        with tempfile.TemporaryDirectory() as tmp:
            journal = os.path.join(tmp, "journal")
            backup = os.path.join(tmp, "backup")
            bin_dir = os.path.join(tmp, "bin")
            os.makedirs(bin_dir)
            os.symlink(os.path.abspath(ORDERWIRE),
                       os.path.join(bin_dir, "orderwire"))
            server = Server(journal, ["--segment-size", "262144",
                                      "--snapshot-every", "5000"])
            try:
                self.assertEqual(submit(server.port, 1, 20000)["acknowledged"],
                                 20000)
                self.assertTrue(server.wait_for(r"snapshot at index \d+ "
                                                r"written", 30), server.text())
                segments = sorted(f for f in os.listdir(journal)
                                  if f.endswith(".owj"))
                self.assertGreaterEqual(len(segments), 3, segments)

                # The block as written, J and B moved, the server running.
                first, _, rest = block.partition("\n")
                self.assertTrue(first.startswith("J=") and " B=" in first,
                                first)
                script = f"J={journal} B={backup}\n" + rest
                env = dict(os.environ,
                           PATH=bin_dir + os.pathsep + os.environ["PATH"])
                run = subprocess.run(["bash", "-e", "-c", script], env=env,
                                     capture_output=True, text=True,
                                     timeout=300)
                self.assertEqual(run.returncode, 0,
                                 f"the backup block failed:\n{run.stdout}\n"
                                 f"{run.stderr}")
                self.assertIn("every checksum and index checked", run.stdout)
                self.assertFalse(os.path.exists(
                    os.path.join(backup, "CHECKPOINT")))
                copied = sorted(f for f in os.listdir(backup)
                                if f.endswith(".owj"))
                self.assertEqual(copied, segments[:-1])
                last_copied = int(re.search(
                    r"final index (\d+)", run.stdout).group(1))

                # The claim: the closed segments with a CHECKPOINT that
                # names a group of the live segment are refused. The
                # checkpoint lags the durable index by up to a second: trade
                # on until it is past the copy's end.
                checkpoint = os.path.join(journal, "CHECKPOINT")
                deadline = time.monotonic() + 30
                session = 3
                while durable_index(checkpoint) <= last_copied:
                    self.assertLess(time.monotonic(), deadline,
                                    "the checkpoint never passed index "
                                    f"{last_copied}")
                    submit(server.port, session, 200)
                    session += 1
                    time.sleep(0.3)
                with_checkpoint = os.path.join(tmp, "with-checkpoint")
                shutil.copytree(backup, with_checkpoint)
                shutil.copy(os.path.join(journal, "CHECKPOINT"),
                            with_checkpoint)
                refused = subprocess.run(
                    [ORDERWIRE, "replay", "--journal", with_checkpoint,
                     "--verify"], capture_output=True, text=True, timeout=120)
                self.assertEqual(refused.returncode, 1, refused.stderr)
                self.assertIn("but its checkpoint", refused.stderr)
            finally:
                self.assertEqual(server.stop(), 0, server.text())

            # Restore: serve on the copy.
            restored = Server(backup)
            try:
                banner = restored.text()
                self.assertIn(f"last index {last_copied}", banner)
                self.assertIn("no checkpoint", banner)
                self.assertIn("started from snapshot", banner)
                self.assertEqual(submit(restored.port, 2, 1000)["acknowledged"],
                                 1000)
            finally:
                self.assertEqual(restored.stop(), 0, restored.text())


def main():
    global ORDERWIRE, OPERATIONS
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ORDERWIRE = sys.argv[1]
    OPERATIONS = sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)


if __name__ == "__main__":
    main()
