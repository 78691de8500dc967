#!/usr/bin/env python3
"""End-to-end test of `orderwire encode` and `orderwire decode`, and of the
exit statuses of every subcommand.

The frames are built by an encoder written here, independently of the C++
codec, from the tables of docs/PROTOCOL.md (field names, types and order typed by
hand, packed with struct '<'). Random frames of every kind go through
`orderwire decode`; its JSON must equal the Python model; that JSON goes
through `orderwire encode` and must give back the same bytes. The hex and
datagram modes and the error paths (non-zero exit, nothing on stdout, the
byte offset named on stderr) are checked the same way.

ExitStatus checks the one rule of every subcommand, from a table: 0 for
--help, 1 for a failure (bad input data, an I/O error, a server that does not
answer...), 2 for a usage error (unknown flag, missing required flag, a flag
value that does not parse or is out of range: the message names the flag and
the value).

Usage: cli_roundtrip_test.py PATH_TO_ORDERWIRE [unittest options]
Standard library only.
"""

import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ORDERWIRE = None  # set from argv in main()

# docs/PROTOCOL.md, "Commands" and "Reports": kind byte, body fields in order with
# their struct codes (Q u64, q i64, I u32, H u16, B u8), and the frame size
# the table states (checked against the fields below).
KINDS = {
    "NewLimit": (0x01, 47, [
        ("account_id", "Q"), ("client_order_id", "Q"), ("instrument_id", "I"),
        ("side", "B"), ("time_in_force", "B"), ("price", "q"),
        ("quantity", "Q")]),
    "NewMarket": (0x02, 38, [
        ("account_id", "Q"), ("client_order_id", "Q"), ("instrument_id", "I"),
        ("side", "B"), ("quantity", "Q")]),
    "CancelByOrder": (0x03, 25, [("account_id", "Q"), ("order_id", "Q")]),
    "CancelByClient": (0x04, 25, [
        ("account_id", "Q"), ("client_order_id", "Q")]),
    "Replace": (0x05, 49, [
        ("account_id", "Q"), ("order_id", "Q"), ("new_client_order_id", "Q"),
        ("price", "q"), ("quantity", "Q")]),
    "Accepted": (0x41, 55, [
        ("order_id", "Q"), ("account_id", "Q"), ("client_order_id", "Q"),
        ("instrument_id", "I"), ("side", "B"), ("time_in_force", "B"),
        ("price", "q"), ("quantity", "Q")]),
    "Rejected": (0x42, 36, [
        ("account_id", "Q"), ("client_order_id", "Q"), ("order_id", "Q"),
        ("command_kind", "B"), ("reason", "H")]),
    "Filled": (0x43, 71, [
        ("order_id", "Q"), ("account_id", "Q"), ("client_order_id", "Q"),
        ("match_id", "Q"), ("instrument_id", "I"), ("side", "B"),
        ("liquidity", "B"), ("price", "q"), ("quantity", "Q"),
        ("leaves_quantity", "Q")]),
    "Cancelled": (0x44, 46, [
        ("order_id", "Q"), ("account_id", "Q"), ("client_order_id", "Q"),
        ("instrument_id", "I"), ("cancelled_quantity", "Q"), ("reason", "B")]),
    "Replaced": (0x45, 50, [
        ("order_id", "Q"), ("account_id", "Q"), ("client_order_id", "Q"),
        ("price", "q"), ("quantity", "Q"), ("priority_kept", "B")]),
    "SequenceGap": (0x46, 17, [("expected_sequence", "Q")]),
    "ReportsGone": (0x47, 25, [("resend_command", "Q"), ("resend_from", "Q")]),
    "Busy": (0x48, 18, [("expected_sequence", "Q"), ("cause", "B")]),
    "MassCancel": (0x06, 31, [
        ("account_id", "Q"), ("request_id", "Q"), ("instrument_id", "I"),
        ("side", "B"), ("scope", "B")]),
    "MassCancelDone": (0x49, 35, [
        ("account_id", "Q"), ("request_id", "Q"), ("instrument_id", "I"),
        ("side", "B"), ("scope", "B"), ("cancelled_orders", "I")]),
    "Heartbeat": (0x07, 17, [("nonce", "Q")]),
    "HeartbeatAck": (0x4A, 33, [
        ("nonce", "Q"), ("expected_sequence", "Q"), ("next_report", "Q")]),
    "Goodbye": (0x08, 25, [("account_id", "Q"), ("request_id", "Q")]),
    "SessionClosed": (0x4B, 30, [
        ("account_id", "Q"), ("request_id", "Q"), ("reason", "B"),
        ("cancelled_orders", "I")]),
    "OrderStatusRequest": (0x09, 33, [
        ("account_id", "Q"), ("order_id", "Q"), ("client_order_id", "Q")]),
    "OrderStatus": (0x4C, 63, [
        ("order_id", "Q"), ("account_id", "Q"), ("client_order_id", "Q"),
        ("instrument_id", "I"), ("side", "B"), ("state", "B"), ("price", "q"),
        ("leaves_quantity", "Q"), ("executed_quantity", "Q")]),
}

FRAME_HEADER = "<QB"  # sequence u64, kind u8
DATAGRAM_HEADER = "<2sBBIHH"  # magic, version, flags, session_id, count, rsvd
MAX_DATAGRAM = 1472


def body_format(kind_name):
    return "<" + "".join(code for _, code in KINDS[kind_name][2])


def encode(model):
    """The frame bytes of a model: {"kind", "sequence", field: value...}."""
    kind_byte, _, fields = KINDS[model["kind"]]
    return (struct.pack(FRAME_HEADER, model["sequence"], kind_byte) +
            struct.pack(body_format(model["kind"]),
                        *(model[name] for name, _ in fields)))


def datagram(session_id, frames, count=None):
    """A datagram of already encoded frames."""
    header = struct.pack(DATAGRAM_HEADER, b"OW", 1, 0, session_id,
                         len(frames) if count is None else count, 0)
    return header + b"".join(frames)


def random_value(rng, code):
    bits = struct.calcsize("<" + code) * 8
    signed = code == "q"  # the only signed type in the protocol (i64)
    pick = rng.randrange(6)
    if pick == 0:
        unsigned = 0
    elif pick == 1:
        unsigned = 1
    elif pick == 2:
        unsigned = (1 << bits) - 2
    elif pick == 3:
        unsigned = (1 << bits) - 1
    elif pick == 4:
        unsigned = 1 << (bits - 1)
    else:
        unsigned = rng.getrandbits(bits)
    if signed and unsigned >= 1 << (bits - 1):
        return unsigned - (1 << bits)
    return unsigned


def random_model(rng, kind_name=None):
    if kind_name is None:
        kind_name = rng.choice(sorted(KINDS))
    model = {"kind": kind_name,
             "sequence": random_value(rng, "Q")}
    for name, code in KINDS[kind_name][2]:
        model[name] = random_value(rng, code)
    return model


def run(args, stdin_bytes, stdout=subprocess.PIPE, cwd=None):
    return subprocess.run([ORDERWIRE] + args, input=stdin_bytes,
                          stdout=stdout, stderr=subprocess.PIPE,
                          timeout=60, check=False, cwd=cwd)


class EncoderSelfCheck(unittest.TestCase):
    """The Python encoder itself reproduces docs/PROTOCOL.md."""

    def test_field_lists_add_up_to_the_stated_frame_sizes(self):
        for name, (_, frame_size, _) in KINDS.items():
            self.assertEqual(
                struct.calcsize(FRAME_HEADER) +
                struct.calcsize(body_format(name)), frame_size, name)
        self.assertEqual(struct.calcsize(DATAGRAM_HEADER), 12)

    def test_reproduces_golden_frames_and_datagram(self):
        new_limit = {"kind": "NewLimit", "sequence": 1, "account_id": 7,
                     "client_order_id": 1001, "instrument_id": 42, "side": 1,
                     "time_in_force": 1, "price": 10050, "quantity": 300}
        self.assertEqual(
            encode(new_limit).hex(),
            "0100000000000000010700000000000000e9030000000000002a000000010142"
            "270000000000002c01000000000000")
        filled = {"kind": "Filled", "sequence": 3, "order_id": 3,
                  "account_id": 7, "client_order_id": 1001, "match_id": 1,
                  "instrument_id": 42, "side": 1, "liquidity": 1,
                  "price": 10050, "quantity": 250, "leaves_quantity": 50}
        self.assertEqual(
            encode(filled).hex(),
            "03000000000000004303000000000000000700000000000000e9030000000000"
            "0001000000000000002a00000001014227000000000000fa0000000000000032"
            "00000000000000")
        goodbye = {"kind": "Goodbye", "sequence": 8, "account_id": 7,
                   "request_id": 43}
        self.assertEqual(encode(goodbye).hex(),
                         "08000000000000000807000000000000002b00000000000000")
        session_closed = {"kind": "SessionClosed", "sequence": 7,
                          "account_id": 7, "request_id": 43, "reason": 1,
                          "cancelled_orders": 2}
        self.assertEqual(
            encode(session_closed).hex(),
            "07000000000000004b07000000000000002b000000000000000102000000")
        order_status_request = {"kind": "OrderStatusRequest", "sequence": 9,
                                "account_id": 7, "order_id": 3,
                                "client_order_id": 1003}
        self.assertEqual(
            encode(order_status_request).hex(),
            "09000000000000000907000000000000000300000000000000eb030000000000"
            "00")
        order_status = {"kind": "OrderStatus", "sequence": 8, "order_id": 3,
                        "account_id": 7, "client_order_id": 1003,
                        "instrument_id": 42, "side": 1, "state": 1,
                        "price": 10049, "leaves_quantity": 200,
                        "executed_quantity": 100}
        self.assertEqual(
            encode(order_status).hex(),
            "08000000000000004c03000000000000000700000000000000eb030000000000"
            "002a00000001014127000000000000c8000000000000006400000000000000")
        cancel = {"kind": "CancelByClient", "sequence": 2, "account_id": 7,
                  "client_order_id": 1001}
        self.assertEqual(
            datagram(0xCAFE, [encode(new_limit), encode(cancel)]).hex(),
            "4f570100feca0000020000000100000000000000010700000000000000e90300"
            "00000000002a000000010142270000000000002c010000000000000200000000"
            "000000040700000000000000e903000000000000")


class RoundTrip(unittest.TestCase):

    def setUp(self):
        self.rng = random.Random(20240601)
        # Every kind several times, then a random mix.
        self.models = [random_model(self.rng, k) for k in sorted(KINDS)
                       for _ in range(5)]
        self.models += [random_model(self.rng) for _ in range(300)]
        self.frames = [encode(m) for m in self.models]

    def assert_json_lines_equal_models(self, stdout, models):
        lines = stdout.decode("utf-8").splitlines()
        self.assertEqual(len(lines), len(models))
        for line, model in zip(lines, models):
            obj = json.loads(line)
            self.assertEqual(obj, model, line)
            # "kind", "sequence", then the body fields in wire order.
            self.assertEqual(
                list(obj), ["kind", "sequence"] +
                [name for name, _ in KINDS[model["kind"]][2]], line)

    def test_binary_frames_decode_to_the_model_and_encode_back(self):
        binary = b"".join(self.frames)
        decoded = run(["decode"], binary)
        self.assertEqual(decoded.returncode, 0, decoded.stderr)
        self.assert_json_lines_equal_models(decoded.stdout, self.models)
        encoded = run(["encode"], decoded.stdout)
        self.assertEqual(encoded.returncode, 0, encoded.stderr)
        self.assertEqual(encoded.stdout, binary)

    def test_encode_reads_the_models_written_by_python(self):
        lines = "".join(json.dumps(m) + "\n" for m in self.models)
        encoded = run(["encode"], lines.encode())
        self.assertEqual(encoded.returncode, 0, encoded.stderr)
        self.assertEqual(encoded.stdout, b"".join(self.frames))

    def test_hex_mode_round_trips(self):
        # One frame per line, and several frames on one line.
        hex_lines = "".join(f.hex() + "\n" for f in self.frames[:100])
        hex_lines += "".join(f.hex() for f in self.frames[100:]) + "\n"
        decoded = run(["decode", "--hex"], hex_lines.encode())
        self.assertEqual(decoded.returncode, 0, decoded.stderr)
        self.assert_json_lines_equal_models(decoded.stdout, self.models)
        encoded = run(["encode", "--hex"], decoded.stdout)
        self.assertEqual(encoded.returncode, 0, encoded.stderr)
        self.assertEqual(encoded.stdout.decode(),
                         "".join(f.hex() + "\n" for f in self.frames))

    def test_datagram_mode_prints_each_header_then_its_frames(self):
        datagrams = []
        expected = []
        pending = []
        session = 0x12345678

        def flush():
            d = datagram(session, [encode(m) for m in pending])
            self.assertLessEqual(len(d), MAX_DATAGRAM)
            datagrams.append(d)
            expected.append({"kind": "Datagram", "magic": "OW", "version": 1,
                             "flags": 0, "session_id": session,
                             "frame_count": len(pending), "reserved": 0,
                             "size": len(d)})
            expected.extend(pending)

        size = 12
        for m in self.models:
            frame_size = KINDS[m["kind"]][1]
            if size + frame_size > MAX_DATAGRAM:
                flush()
                pending, size = [], 12
            pending.append(m)
            size += frame_size
        flush()
        self.assertGreater(len(datagrams), 5)
        text = "".join(d.hex() + "\n" for d in datagrams)
        decoded = run(["decode", "--datagram"], text.encode())
        self.assertEqual(decoded.returncode, 0, decoded.stderr)
        lines = decoded.stdout.decode().splitlines()
        self.assertEqual([json.loads(line) for line in lines], expected)


class Errors(unittest.TestCase):
    """Bad input: exit status non-zero, nothing on stdout, offset on stderr."""

    def setUp(self):
        rng = random.Random(7)
        self.models = [random_model(rng, k) for k in sorted(KINDS)]
        self.frames = [encode(m) for m in self.models]
        self.binary = b"".join(self.frames)

    def assert_fails_at(self, args, stdin_bytes, offset, *needles):
        result = run(args, stdin_bytes)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(result.stdout, b"")
        stderr = result.stderr.decode()
        self.assertIn("byte offset %d" % offset, stderr)
        for needle in needles:
            self.assertIn(needle, stderr)

    def test_truncated_input_names_the_offset_of_the_cut_frame(self):
        last = len(self.binary) - len(self.frames[-1])
        for cut in (1, 8, len(self.frames[-1]) - 1):
            with self.subTest(cut=cut):
                self.assert_fails_at(["decode"], self.binary[:last + cut],
                                     last, "truncated")

    def test_truncated_hex_line_names_the_line_and_offset(self):
        text = (self.frames[0].hex() + "\n" +
                (self.frames[1] + self.frames[2][:-1]).hex() + "\n")
        self.assert_fails_at(["decode", "--hex"], text.encode(),
                             len(self.frames[1]), "line 2")

    def test_unknown_kind_names_its_offset(self):
        for kind in (0x00, 0x0A, 0x40, 0x4D, 0x7F, 0xFF):
            with self.subTest(kind=kind):
                bad = bytearray(self.binary)
                at = len(self.frames[0]) + len(self.frames[1])
                bad[at + 8] = kind
                self.assert_fails_at(["decode"], bytes(bad), at)

    def test_bad_datagrams_name_the_offset(self):
        frames = self.frames[:3]
        good = datagram(1, frames)
        after_first = 12 + len(frames[0])
        cases = [
            ("bad magic", b"XW" + good[2:], 0),
            ("bad version", good[:2] + b"\x02" + good[3:], 2),
            ("undefined flag bit", good[:3] + b"\x02" + good[4:], 3),
            ("reserved", good[:10] + b"\x01\x00" + good[12:], 10),
            ("zero count", datagram(1, frames, count=0), 8),
            ("count too big", datagram(1, frames, count=4), len(good)),
            ("count too small", datagram(1, frames, count=1), after_first),
            ("truncated frame", good[:-1], 12 + len(frames[0]) +
             len(frames[1])),
            ("header cut", good[:7], 7),
            ("oversize", datagram(1, frames * 40), MAX_DATAGRAM),
        ]
        unknown = bytearray(good)
        unknown[after_first + 8] = 0x99
        cases.append(("unknown kind", bytes(unknown), after_first))
        for what, data, offset in cases:
            with self.subTest(what):
                text = datagram(1, frames).hex() + "\n" + data.hex() + "\n"
                self.assert_fails_at(["decode", "--datagram"], text.encode(),
                                     offset, "line 2")

    def test_bad_json_fails_naming_the_line(self):
        lines = (json.dumps(self.models[0]) + "\n" +
                 '{"kind":"NewLimit","sequence":1}\n')
        result = run(["encode"], lines.encode())
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(result.stdout, b"")
        self.assertIn("line 2", result.stderr.decode())


class Help(unittest.TestCase):

    def test_help_describes_encode_and_decode(self):
        for command, flags in (("encode", ["--hex"]),
                               ("decode", ["--hex", "--datagram"])):
            with self.subTest(command):
                result = run([command, "--help"], b"")
                self.assertEqual(result.returncode, 0, result.stderr)
                text = result.stdout.decode()
                self.assertIn("orderwire " + command, text)
                for flag in flags:
                    self.assertIn(flag, text)

    def test_nested_help_is_generated_from_the_flag_tables(self):
        cases = (
            (["journal", "--help"], "usage: orderwire journal <command>",
             ["write ", "inspect ", "prune ", "follow "]),
            (["journal", "write", "--help"], "usage: orderwire journal write",
             ["--journal DIR", "--durability MODE", "(default: batch)",
              "--segment-size BYTES", "--accept-loss", "--help"]),
            (["snapshot", "--help"], "usage: orderwire snapshot",
             ["--journal DIR", "--at-index N", "inspect "]),
            (["snapshot", "inspect", "--help"],
             "usage: orderwire snapshot inspect FILE", ["--help"]),
            (["serve", "--help"], "usage: orderwire serve",
             ["--nats-start-timeout-s S", "(default: 30)",
              "waiting for NATS: ..."]),
        )
        for args, usage, names in cases:
            with self.subTest(" ".join(args)):
                result = run(args, b"")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stderr, b"")
                text = result.stdout.decode()
                self.assertIn(usage, text)
                for name in names:
                    self.assertIn(name, text)


def free_udp_port():
    """A UDP port on 127.0.0.1 that nothing listens on (just now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Two whole command frames of one session (sequences 1 and 2), and a cut one.
GOOD_COMMANDS = (
    encode({"kind": "CancelByOrder", "sequence": 1, "account_id": 7,
            "order_id": 1}) +
    encode({"kind": "CancelByOrder", "sequence": 2, "account_id": 7,
            "order_id": 2}))
CUT_COMMANDS = GOOD_COMMANDS[:-1]
# A command whose sequence is not the session's next one.
OUT_OF_ORDER = encode({"kind": "CancelByOrder", "sequence": 5,
                       "account_id": 7, "order_id": 1})

# (subcommand, arguments, stdin, expected exit status, text stderr must hold)
# for every subcommand: --help (0), usage errors (2), failures (1). In the
# arguments, {tmp} is a scratch directory, {port} a UDP port nothing listens
# on. "DEVFULL" as stdin means: standard output is /dev/full.
EXIT_CASES = [
    # orderwire itself
    ("orderwire", [], b"", 2, "usage: orderwire"),
    ("orderwire", ["--help"], b"", 0, ""),
    ("orderwire", ["frobnicate"], b"", 2, "unknown command 'frobnicate'"),
    # encode
    ("encode", ["--help"], b"", 0, ""),
    ("encode", ["--bogus"], b"", 2, "unknown flag '--bogus'"),
    ("encode", ["extra"], b"", 2, "unexpected argument 'extra'"),
    ("encode", ["--hex=1"], b"", 2, "--hex"),
    ("encode", [], b'{"kind":"NewLimit"}\n', 1, "line 1"),
    # a repeated key (JSON parsers keep or overwrite them; this format
    # rejects them, naming the line, the column of the second and the key)
    ("encode", [], b'{"kind":"CancelByOrder","sequence":1,"account_id":7,'
     b'"order_id":1,"order_id":2}\n', 1,
     'line 1: column 65: key "order_id" appears twice'),
    ("encode", [], b'{"kind":"CancelByOrder","sequence":1,"account_id":7,'
     b'"order_id":1} x\n', 1, "line 1: column 66: unexpected text after"),
    # decode
    ("decode", ["--help"], b"", 0, ""),
    ("decode", ["--hex", "--datagram"], b"", 2, "exclusive"),
    ("decode", ["--nope"], b"", 2, "unknown flag '--nope'"),
    ("decode", [], CUT_COMMANDS, 1, "byte offset 25: truncated"),
    ("decode", ["--hex"], b"zz\n", 1, "line 1, column 0"),
    # bench-decode
    ("bench-decode", ["--help"], b"", 0, ""),
    ("bench-decode", ["--count", "x"], b"", 2, "--count: 'x'"),
    ("bench-decode", ["--count", "0"], b"", 2, "--count: 0"),
    ("bench-decode", ["--passes", "0"], b"", 2, "--passes: 0"),
    ("bench-decode", ["--seed", "-1"], b"", 2, "--seed: '-1'"),
    ("bench-decode", ["--count", "100", "--passes", "1"], "DEVFULL", 1,
     "writing standard output"),
    # match
    ("match", ["--help"], b"", 0, ""),
    ("match", ["--book", "x"], b"", 2, "--book: 'x' is not an integer"),
    ("match", ["--book", "-1"], b"", 2, "--book: -1 is out of range"),
    ("match", ["--book"], b"", 2, "--book' needs a value"),
    ("match", ["--config", "/nonexistent/ow.conf", "--book", "x"], b"", 2,
     "--book: 'x'"),
    ("match", [], OUT_OF_ORDER, 1, "byte offset 0: frame sequence 5"),
    ("match", [], CUT_COMMANDS, 1, "byte offset 25: truncated"),
    ("match", ["--config", "/nonexistent/ow.conf"], GOOD_COMMANDS, 1,
     "cannot open"),
    ("match", [], GOOD_COMMANDS + b"", 0, ""),
    # gen
    ("gen", ["--help"], b"", 0, ""),
    ("gen", ["--count", "x"], b"", 2, "--count: 'x'"),
    ("gen", ["--seed", "1.5"], b"", 2, "--seed: '1.5'"),
    ("gen", ["--workload", "nope"], b"", 2, "--workload: unknown workload"),
    ("gen", ["--count", "10"], "DEVFULL", 1, "writing standard output"),
    # journal
    ("journal", [], b"", 2, "usage: orderwire journal"),
    ("journal", ["--help"], b"", 0, ""),
    ("journal", ["frobnicate"], b"", 2, "unknown command 'frobnicate'"),
    # journal write
    ("journal", ["write", "--help"], b"", 0, ""),
    ("journal", ["write"], b"", 2, "--journal DIR is required"),
    ("journal", ["write", "--journal", "{tmp}/j", "--segment-size", "x"], b"",
     2, "--segment-size: 'x'"),
    ("journal", ["write", "--journal", "{tmp}/j", "--segment-size", "10"], b"",
     2, "--segment-size: 10 is out of range"),
    ("journal", ["write", "--journal", "{tmp}/j", "--session", "x"], b"", 2,
     "--session: 'x'"),
    ("journal", ["write", "--journal", "{tmp}/j", "--durability", "fast"],
     b"", 2, "--durability: unknown durability mode 'fast'"),
    ("journal", ["write", "--journal", "{tmp}/j"], CUT_COMMANDS, 1,
     "byte offset 25: truncated"),
    ("journal", ["write", "--journal", "{tmp}/file/j"], GOOD_COMMANDS, 1, ""),
    # journal inspect
    ("journal", ["inspect", "--help"], b"", 0, ""),
    ("journal", ["inspect"], b"", 2, "give one journal directory"),
    ("journal", ["inspect", "a", "b"], b"", 2, "give one journal directory"),
    ("journal", ["inspect", "{tmp}/j", "--records=yes"], b"", 2,
     "takes no value"),
    ("journal", ["inspect", "{tmp}/nope"], b"", 1, ""),
    # replay
    ("replay", ["--help"], b"", 0, ""),
    ("replay", [], b"", 2, "--journal DIR is required"),
    ("replay", ["--journal", "{tmp}/j", "--book", "x"], b"", 2,
     "--book: 'x' is not an integer"),
    ("replay", ["--journal", "{tmp}/j", "--json"], b"", 2,
     "--json needs --reports"),
    ("replay", ["--journal", "{tmp}/j", "--verify", "--book", "3"], b"", 2,
     "--verify"),
    ("replay", ["--journal", "{tmp}/nope"], b"", 1, "does not exist"),
    ("replay", ["--journal", "{tmp}/nope", "--verify"], b"", 1,
     "does not exist"),
    # --accept-loss accepts lost records, not a journal that is not there.
    ("replay", ["--journal", "{tmp}/nope", "--verify", "--accept-loss"], b"",
     1, "does not exist"),
    # md from-journal
    ("md", [], b"", 2, "usage: orderwire md"),
    ("md", ["from-journal", "--help"], b"", 0, ""),
    ("md", ["from-journal"], b"", 2, "--journal DIR is required"),
    ("md", ["from-journal", "--journal", "{tmp}/j", "--from", "0"], b"", 2,
     "--from: 0 is out of range"),
    ("md", ["from-journal", "--journal", "{tmp}/j", "--count", "x"], b"", 2,
     "--count: 'x'"),
    ("md", ["from-journal", "--journal", "{tmp}/nope"], b"", 1,
     "does not exist"),
    ("md", ["from-journal", "--journal", "{tmp}/nope", "--accept-loss"], b"",
     1, "does not exist"),
    # md watch, record, print (docs/OPERATIONS.md "The live feed")
    ("md", ["watch", "--help"], b"", 0, ""),
    ("md", ["record", "--help"], b"", 0, ""),
    ("md", ["print", "--help"], b"", 0, ""),
    ("md", ["watch"], b"", 2, "--target HOST:PORT is required"),
    ("md", ["watch", "--target", "127.0.0.1:9"], b"", 2,
     "--request HOST:PORT is required"),
    ("md", ["watch", "--target", "127.0.0.1:9", "--request", "127.0.0.1:9",
            "--depth", "51"], b"", 2, "--depth"),
    ("md", ["record", "--target", "127.0.0.1:9", "--request", "127.0.0.1:9"],
     b"", 2, "--output FILE is required"),
    ("md", ["print"], b"", 2, "one FILE is required"),
    ("md", ["print", "{tmp}/nope"], b"", 1, "cannot open"),
    # The parser's own errors (CLI11), each naming its culprit.
    ("journal", ["write", "--journal"], b"", 2,
     "orderwire journal write: flag '--journal' needs a value (DIR)"),
    ("journal", ["inspect", "{tmp}/nope", "--bogus"], b"", 2,
     "orderwire journal inspect: unknown flag '--bogus'"),
    ("journal", ["inspect", "{tmp}/nope", "--records", "--records"], b"", 2,
     "flag '--records' given twice"),
    ("match", ["--book", "0x10"], b"", 2, "--book: '0x10' is not an integer"),
    ("match", ["--book=4", "extra"], b"", 2,
     "orderwire match: unexpected argument 'extra'"),
    ("snapshot", ["--journal", "{tmp}/j", "inspect", "{tmp}/file"], b"", 2,
     "--journal is a flag of 'orderwire snapshot', not of "
     "'orderwire snapshot inspect'"),
    ("snapshot", ["frobnicate"], b"", 2,
     "orderwire snapshot: unexpected argument 'frobnicate'"),
    # snapshot
    ("snapshot", ["--help"], b"", 0, ""),
    ("snapshot", [], b"", 2, "--journal DIR is required"),
    ("snapshot", ["--journal", "{tmp}/j", "--at-index", "0"], b"", 2,
     "--at-index: 0 is out of range"),
    ("snapshot", ["--journal", "{tmp}/j", "--at-index", "x"], b"", 2,
     "--at-index: 'x'"),
    ("snapshot", ["--journal", "{tmp}/nope"], b"", 1, "does not exist"),
    ("snapshot", ["inspect", "--help"], b"", 0, ""),
    ("snapshot", ["inspect"], b"", 2, "give one snapshot file"),
    ("snapshot", ["inspect", "{tmp}/nope.ows"], b"", 1, "nope.ows"),
    ("snapshot", ["inspect", "{tmp}/file"], b"", 1,
     "damaged at offset"),
    # config convert (an old key = value file to TOML)
    ("config", ["convert", "--help"], b"", 0, ""),
    ("config", [], b"", 2, "config convert OLD"),
    ("config", ["convert"], b"", 2, "give one configuration file"),
    ("config", ["convert", "{tmp}/nope.conf"], b"", 1, "cannot open"),
    ("config", ["convert", "{tmp}/file"], b"", 1,
     "line 1: expected 'key = value', got 'not a directory'"),
    # cluster (no NATS on port 1: a failure, not a usage error)
    ("cluster", ["status", "--help"], b"", 0, ""),
    ("cluster", [], b"", 2, "cluster status"),
    ("cluster", ["status", "--timeout-ms", "0"], b"", 2,
     "--timeout-ms: 0 is out of range"),
    ("cluster", ["status", "--engine-name", "a.b"], b"", 1,
     "engine name 'a.b': character 2"),
    ("cluster", ["status", "--nats", "nats://127.0.0.1:1",
                 "--timeout-ms", "300"], b"", 1, "connect to NATS"),
    # serve
    ("serve", ["--help"], b"", 0, ""),
    ("serve", [], b"", 2, "--journal DIR is required"),
    ("serve", ["--journal", "{tmp}/j", "--segment-size", "10"], b"", 2,
     "--segment-size: 10 is out of range"),
    ("serve", ["--journal", "{tmp}/j", "--stats-interval", "x"], b"", 2,
     "--stats-interval: 'x' is not a number"),
    ("serve", ["--journal", "{tmp}/j", "--durability", "fast"], b"", 2,
     "--durability: unknown durability mode 'fast'"),
    ("serve", ["--journal", "{tmp}/j", "--durability", "fast"], b"", 2,
     "or replicated"),
    # --durability replicated and its flags (docs/SERVICE.md "Durability").
    ("serve", ["--journal", "{tmp}/j", "--durability", "replicated"], b"", 2,
     "--durability replicated needs --nats nats://HOST:PORT"),
    ("serve", ["--journal", "{tmp}/j", "--nats", "nats://127.0.0.1:1"], b"",
     2, "--nats needs --durability replicated (given: batch)"),
    ("serve", ["--journal", "{tmp}/j", "--durability", "sync",
               "--replicas", "3"], b"", 2,
     "--replicas needs --durability replicated (given: sync)"),
    ("serve", ["--journal", "{tmp}/j", "--durability", "replicated",
               "--nats", "nats://127.0.0.1:1", "--replicas", "2"], b"", 2,
     "--replicas: 2: the journal stream has 1 or 3"),
    ("serve", ["--journal", "{tmp}/j", "--durability", "replicated",
               "--nats", "nats://127.0.0.1:1", "--replication-window", "0"],
     b"", 2, "--replication-window: 0 is out of range"),
    # A replicated primary's start waits for NATS for up to
    # --nats-start-timeout-s (docs/REPLICATION.md "Starting a replicated
    # primary"): nobody listens on port 1, so it gives up after 1 s (its
    # journal, opened first, in a directory of its own).
    ("serve", ["--journal", "{tmp}/j", "--nats-start-timeout-s", "5"], b"",
     2, "--nats-start-timeout-s needs --durability replicated (given: batch)"),
    ("serve", ["--journal", "{tmp}/j", "--durability", "replicated",
               "--nats", "nats://127.0.0.1:1", "--nats-start-timeout-s",
               "x"], b"", 2,
     "--nats-start-timeout-s: 'x' is not a non-negative integer"),
    ("serve", ["--journal", "{tmp}/replicated", "--durability", "replicated",
               "--nats", "nats://127.0.0.1:1", "--nats-start-timeout-s", "1",
               "--listen", "127.0.0.1:{port}", "--quiet"], b"", 1,
     "NATS did not answer within the start timeout (1 s): opening the "
     "journal stream orderwire_main_journal"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--nats-start-timeout-s", "5"], b"", 2,
     "--nats-start-timeout-s is the primary's"),
    ("serve", ["--journal", "{tmp}/j", "--listen", "nonsense"], b"", 2,
     "--listen"),
    ("serve", ["--journal", "{tmp}/j", "--listen", "127.0.0.1:{port}",
               "--config", "/nonexistent/ow.conf"], b"", 1, "cannot open"),
    ("serve", ["--journal", "{tmp}/file/j", "--listen", "127.0.0.1:{port}",
               "--quiet"], b"", 1, ""),
    ("serve", ["--journal", "{tmp}/j", "--reconfigure=yes"], b"", 2,
     "takes no value"),
    # A new configuration would reach this node's journal only
    # (docs/REPLICATION.md "Configuration changes").
    ("serve", ["--journal", "{tmp}/j", "--durability", "replicated",
               "--nats", "nats://127.0.0.1:1", "--reconfigure"], b"", 2,
     "--reconfigure is not available with --durability replicated or "
     "--standby"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--reconfigure"], b"", 2,
     "--reconfigure is not available with --durability replicated or "
     "--standby"),
    # --standby: the hot standby (docs/REPLICATION.md "The standby").
    ("serve", ["--standby", "--journal", "{tmp}/j"], b"", 2,
     "--nats nats://HOST:PORT[,...] is required"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--retain", "8"], b"", 2,
     "--retain is not available with --standby"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--snapshot-every", "30s"], b"", 2,
     "--snapshot-every with --standby takes a number of records"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--engine-name", "a.b"], b"", 2,
     "--engine-name: engine name 'a.b': character 2"),
    ("serve", ["--standby", "--journal", "{tmp}/file/j", "--nats",
               "nats://127.0.0.1:1", "--quiet"], b"", 1, "file/j"),
    # --seed-snapshot (docs/REPLICATION.md "Seeding a new standby from a
    # snapshot"): only with --standby, only into an empty directory, only
    # from a file that verifies; each refused before anything is written.
    ("serve", ["--journal", "{tmp}/j", "--seed-snapshot", "{tmp}/s.ows"],
     b"", 2, "--seed-snapshot needs --standby"),
    ("serve", ["--standby", "--journal", "{tmp}", "--nats",
               "nats://127.0.0.1:1", "--seed-snapshot", "{tmp}/s.ows"], b"", 2,
     "the directory is not empty"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--seed-snapshot", "{tmp}/file"], b"", 2,
     "--seed-snapshot: cannot seed journal"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--seed-snapshot", "{tmp}/s.ows",
               "--no-snapshot"], b"", 2, "--seed-snapshot with --no-snapshot"),
    # --standby takes over (docs/REPLICATION.md "The takeover"): the
    # primary's flags are its own once it serves; --lease is the primary's.
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--lease"], b"", 2,
     "--lease is the primary's"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--no-takeover", "--lease-ms", "1000"],
     b"", 2, "--lease-ms is for the primary a standby becomes"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--replicas", "2"], b"", 2,
     "--replicas: 2: the journal stream has 1 or 3"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--lease-ms", "50"], b"", 2,
     "--lease-ms: 50 is out of range"),
    ("serve", ["--standby", "--journal", "{tmp}/j", "--nats",
               "nats://127.0.0.1:1", "--listen", "nonsense"], b"", 2,
     "--listen"),
    # --snapshot-every: a number of records or a duration, nothing else.
    ("serve", ["--journal", "{tmp}/j", "--snapshot-every", "10x"], b"", 2,
     "--snapshot-every: '10x' is neither a number of records"),
    ("serve", ["--journal", "{tmp}/j", "--snapshot-every", "0"], b"", 2,
     "--snapshot-every: '0' is neither"),
    ("serve", ["--journal", "{tmp}/j", "--snapshot-every", "s"], b"", 2,
     "e.g. 30s, 5m, 1h, 500ms"),
    ("serve", ["--journal", "{tmp}/j", "--snapshot-every", "-5"], b"", 2,
     "--snapshot-every: '-5'"),
    ("serve", ["--journal", "{tmp}/j", "--no-snapshot=yes"], b"", 2,
     "takes no value"),
    # A counters file that cannot be written is an error at start, not a
    # silent gap while the service runs.
    ("serve", ["--journal", "{tmp}/j-stats", "--listen", "127.0.0.1:{port}",
               "--stats-json", "/nonexistent/dir/stats.json"], b"", 1,
     "--stats-json /nonexistent/dir/stats.json"),
    # submit
    ("submit", ["--help"], b"", 0, ""),
    ("submit", ["--count", "x"], b"", 2, "--session ID is required"),
    ("submit", ["--session", "1", "--workload", "wl1", "--count", "x"], b"",
     2, "--count: 'x'"),
    ("submit", ["--session", "1", "--input", "in.bin", "--count", "x"], b"",
     2, "--count: 'x'"),
    ("submit", ["--session", "x", "--workload", "wl1"], b"", 2,
     "--session: 'x'"),
    ("submit", ["--session", "1", "--workload", "wl1", "--window", "0"], b"",
     2, "--window: 0 is out of range"),
    ("submit", ["--session", "1"], b"", 2, "give either --workload"),
    ("submit", ["--session", "1", "--workload", "nope"], b"", 2,
     "--workload: unknown workload 'nope'"),
    ("submit", ["--session", "1", "--input", "{tmp}/nope"], b"", 1,
     "cannot open"),
    ("submit", ["--session", "1", "--workload", "wl1", "--first-sequence",
                "0"], b"", 2, "--first-sequence"),
    ("submit", ["--session", "1", "--workload", "wl1", "--first-report",
                "x"], b"", 2, "--first-report"),
    ("submit", ["--session", "1", "--workload", "wl1", "--first-sequence",
                "5"], b"", 2, "give --first-report R too"),
    ("submit", ["--session", "1", "--workload", "wl1", "--count", "3",
                "--target", "127.0.0.1:{port}", "--timeout-ms", "20",
                "--give-up-ms", "300"], b"", 1, ""),
]


class ResumedSubmit(unittest.TestCase):
    """A session continued by a second `submit` after the service restarts
    (--first-sequence, --first-report): the two runs' reports, back to back,
    are byte for byte the session's report stream that a replay of the
    journal gives. A run that does not say which report it expects next
    cannot take the service's reports and fails."""

    def test_two_runs_are_one_session(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal = os.path.join(tmp, "j")

            def submit(seed, first_sequence, first_report, out):
                port = free_udp_port()
                server, first = start_serve(journal, port)
                self.assertIn("listening on", first)
                result = run(["submit", "--session", "5", "--workload", "wl1",
                              "--count", "300", "--seed", str(seed),
                              "--first-sequence", str(first_sequence),
                              "--first-report", str(first_report),
                              "--target", "127.0.0.1:%d" % port, "--json",
                              "--give-up-ms", "1500", "--reports", out], b"")
                self.assertEqual(stop_serve(server)[0], 0)
                return result

            part1 = os.path.join(tmp, "part1.bin")
            result = submit(1, 1, 1, part1)
            self.assertEqual(result.returncode, 0, result.stderr)
            reports1 = json.loads(result.stdout)["reports"]
            self.assertGreaterEqual(reports1, 300)

            part2 = os.path.join(tmp, "part2.bin")
            result = submit(2, 301, reports1 + 1, part2)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(json.loads(result.stdout)["acknowledged"], 300)

            replayed = os.path.join(tmp, "replay")
            result = run(["replay", "--journal", journal, "--reports-dir",
                          replayed], b"")
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(replayed, "session-5.bin"), "rb") as f:
                whole = f.read()
            with open(part1, "rb") as f1, open(part2, "rb") as f2:
                self.assertEqual(whole, f1.read() + f2.read())

            # The next command, but the first report again: every report
            # the service sends is newer than the one this run waits for.
            stale = submit(3, 601, 1, os.path.join(tmp, "stale.bin"))
            self.assertEqual(stale.returncode, 1, stale.stderr)


class FailoverSubmit(unittest.TestCase):
    """`submit --target A,B`: serve A stops (SIGINT) mid-run, serve B opens
    the same journal on B's port; submit says it fails over, finishes on B,
    counts the failover, and its reports are byte for byte the replay of
    the journal. Bad target lists are usage errors naming the target."""

    def test_a_run_moves_to_the_second_target_and_finishes(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal = os.path.join(tmp, "j")
            port_a, port_b = free_udp_port(), free_udp_port()
            while port_b == port_a:
                port_b = free_udp_port()
            server_a, first = start_serve(journal, port_a)
            self.assertIn("listening on", first)
            out = os.path.join(tmp, "reports.bin")
            client = subprocess.Popen(
                [ORDERWIRE, "submit", "--session", "5", "--workload", "wl1",
                 "--count", "4000", "--seed", "3", "--rate", "4000",
                 "--window", "128",
                 "--target", "127.0.0.1:%d,127.0.0.1:%d" % (port_a, port_b),
                 "--failover-timeout-ms", "300", "--json", "--reports", out],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            time.sleep(0.4)
            self.assertIsNone(client.poll(), "submit ended before the stop")
            self.assertEqual(stop_serve(server_a)[0], 0)
            server_b, first = start_serve(journal, port_b)
            self.assertIn("listening on", first)
            stdout, stderr = client.communicate(timeout=60)
            self.assertEqual(stop_serve(server_b)[0], 0)
            self.assertEqual(client.returncode, 0, stderr.decode())
            self.assertIn("failing over to 127.0.0.1:%d" % port_b,
                          stderr.decode())
            summary = json.loads(stdout)
            self.assertEqual(summary["acknowledged"], 4000)
            self.assertGreaterEqual(summary["failovers"], 1)
            self.assertEqual(summary["target"], "127.0.0.1:%d" % port_b)

            replayed = os.path.join(tmp, "replay")
            result = run(["replay", "--journal", journal, "--reports-dir",
                          replayed], b"")
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(replayed, "session-5.bin"), "rb") as f:
                whole = f.read()
            with open(out, "rb") as f:
                self.assertEqual(f.read(), whole)

    def test_bad_target_lists_are_usage_errors(self):
        cases = [
            ("127.0.0.1:7400,", "target 2 of 2"),
            ("127.0.0.1:7400,nowhere", "target 2 of 2 ('nowhere')"),
            ("127.0.0.1:7400,127.0.0.1:7400", "repeats target 1"),
            ("127.0.0.1:7400,[::1]:7400", "address family"),
        ]
        for targets, needle in cases:
            result = run(["submit", "--session", "1", "--workload", "wl1",
                          "--count", "1", "--target", targets], b"")
            self.assertEqual(result.returncode, 2, (targets, result.stderr))
            self.assertIn("--target", result.stderr.decode())
            self.assertIn(needle, result.stderr.decode())


class ExitStatus(unittest.TestCase):
    """0 success, 1 failure, 2 usage error: the same for every subcommand."""

    def test_every_subcommand_follows_the_rule(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A regular file where a directory is needed: an I/O failure.
            with open(os.path.join(tmp, "file"), "wb") as f:
                f.write(b"not a directory")
            port = str(free_udp_port())
            for command, args, stdin, expected, needle in EXIT_CASES:
                argv = [] if command == "orderwire" else [command]
                argv += [a.replace("{tmp}", tmp).replace("{port}", port)
                         for a in args]
                with self.subTest(argv=" ".join(argv)):
                    if stdin == "DEVFULL":
                        with open("/dev/full", "wb") as full:
                            result = run(argv, b"", stdout=full, cwd=tmp)
                    else:
                        result = run(argv, stdin, cwd=tmp)
                    stderr = result.stderr.decode(errors="replace")
                    self.assertEqual(result.returncode, expected, stderr)
                    self.assertIn(needle, stderr)
                    if expected == 0 and "--help" in argv:
                        self.assertIn(b"usage: orderwire", result.stdout)
                    if expected != 0:
                        self.assertTrue(stderr, "an error says why")
            self.assertFalse(os.path.exists(os.path.join(tmp, "j")),
                             "no case was meant to create a journal")

    def test_every_subcommand_is_in_the_table(self):
        result = run(["--help"], b"")
        listed = [line.split()[0] for line in
                  result.stdout.decode().split("commands:\n")[1]
                  .split("\n\n")[0].splitlines()]
        self.assertGreater(len(listed), 5)
        for name in listed:
            with self.subTest(name):
                cases = [c for c in EXIT_CASES if c[0] == name]
                self.assertEqual(
                    {0, 1, 2} & {c[3] for c in cases}, {0, 1, 2}, name)

    def test_top_level_help_documents_the_exit_statuses(self):
        result = run(["--help"], b"")
        self.assertEqual(result.returncode, 0)
        text = result.stdout.decode()
        self.assertIn("exit status:", text)
        for line in ("0  success", "1  failure", "2  usage error"):
            self.assertIn(line, text)
        self.assertEqual(run([], b"").stdout, b"")


class ServeQuiet(unittest.TestCase):
    """`serve --quiet` drops the banner, never the news that recovery cut a
    torn tail off the journal."""

    def test_a_torn_tail_is_reported_even_when_quiet(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal = os.path.join(tmp, "j")
            frames = run(["gen", "--workload", "mixed", "--count", "1000",
                          "--seed", "1"], b"").stdout
            written = run(["journal", "write", "--journal", journal], frames)
            self.assertEqual(written.returncode, 0, written.stderr)
            inspect = run(["journal", "inspect", journal], b"").stdout.decode()
            used = int(inspect.split("(to offset ")[1].split(")")[0])
            segment = os.path.join(journal, sorted(
                f for f in os.listdir(journal) if f.endswith(".owj"))[-1])
            # Cut the last group short, as a crash leaves it: the end of its
            # write never arrived (zeros; the preallocated file keeps its
            # size), and the checkpoint had not caught up with it.
            with open(segment, "r+b") as f:
                f.seek(used - 4000)
                f.write(bytes(4000))
            os.remove(os.path.join(journal, "CHECKPOINT"))
            server = subprocess.Popen(
                [ORDERWIRE, "serve", "--journal", journal, "--listen",
                 "127.0.0.1:%d" % free_udp_port(), "--quiet"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            try:
                # The first line, if any comes within 10 s (a server that
                # says nothing must fail this test, not hang it).
                ready, _, _ = select.select([server.stderr], [], [], 10)
                first = server.stderr.readline().decode() if ready else ""
            finally:
                server.send_signal(2)  # SIGINT: a clean stop
                _, rest = server.communicate(timeout=30)
            self.assertIn("torn tail", first)
            self.assertNotIn("listening on", first + rest.decode())
            self.assertEqual(server.returncode, 0)


def start_serve(journal, port, *extra):
    """`orderwire serve` on 127.0.0.1:port; returns (process, the first
    text on its standard error: the banner once it listens, or the error;
    one write, read unbuffered so communicate() later loses nothing)."""
    server = subprocess.Popen(
        [ORDERWIRE, "serve", "--journal", journal, "--listen",
         "127.0.0.1:%d" % port] + list(extra),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    ready, _, _ = select.select([server.stderr], [], [], 10)
    first = os.read(server.stderr.fileno(), 65536).decode() if ready else ""
    return server, first


def stop_serve(server):
    server.send_signal(2)  # SIGINT: a clean stop
    _, rest = server.communicate(timeout=30)
    return server.returncode, rest.decode()


class ConfigurationPinned(unittest.TestCase):
    """The journal pins the configuration: a restart with another one fails
    (exit 1) naming the differences; --reconfigure changes it from the next
    index; replay, with no --config, gives every session the reports it
    received live, before and after the change."""

    def test_restart_refused_then_reconfigured_and_replayed_byte_for_byte(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal = os.path.join(tmp, "j")
            narrow = os.path.join(tmp, "narrow.toml")
            wide = os.path.join(tmp, "wide.toml")
            with open(narrow, "w") as f:
                f.write("[engine]\nmax_price = 1000\n")
            with open(wide, "w") as f:
                f.write("[engine]\nmax_price = 5000\n")
            # One NewLimit at price 2000: valid only under the wide limits.
            order = os.path.join(tmp, "order.bin")
            with open(order, "wb") as f:
                f.write(encode({"kind": "NewLimit", "sequence": 1,
                                "account_id": 1, "client_order_id": 1,
                                "instrument_id": 2, "side": 1,
                                "time_in_force": 1, "price": 2000,
                                "quantity": 10}))

            def submit(port, session):
                received = os.path.join(tmp, "live-%d.bin" % session)
                result = run(["submit", "--session", str(session), "--input",
                              order, "--target", "127.0.0.1:%d" % port,
                              "--reports", received], b"")
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(received, "rb") as f:
                    return f.read()

            port = free_udp_port()
            server, first = start_serve(journal, port, "--config", narrow)
            self.assertIn("listening on", first)
            live1 = submit(port, 1)
            self.assertEqual(stop_serve(server)[0], 0)
            self.assertEqual(live1[8], 0x42)  # Rejected (InvalidPrice)

            # Another configuration: refused, naming the difference.
            refused = run(["serve", "--journal", journal, "--listen",
                           "127.0.0.1:%d" % free_udp_port(), "--config",
                           wide], b"")
            self.assertEqual(refused.returncode, 1, refused.stderr)
            self.assertIn(b"max_price: 1000 -> 5000", refused.stderr)
            self.assertIn(b"--reconfigure", refused.stderr)

            port = free_udp_port()
            server, first = start_serve(journal, port, "--config", wide,
                                        "--reconfigure")
            self.assertIn("listening on", first)
            self.assertIn("reconfigured from index 2: max_price: 1000 -> 5000",
                          first)
            live2 = submit(port, 2)
            self.assertEqual(stop_serve(server)[0], 0)
            self.assertEqual(live2[8], 0x41)  # Accepted

            # Replay without --config: the journal's own, segment by segment.
            replayed = os.path.join(tmp, "replay")
            result = run(["replay", "--journal", journal, "--reports-dir",
                          replayed], b"")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(b"reconfigured from index 2", result.stdout)
            for session, live in ((1, live1), (2, live2)):
                with open(os.path.join(replayed, "session-%d.bin" % session),
                          "rb") as f:
                    self.assertEqual(f.read(), live, session)
            # A --config that differs from what the journal pins: a note,
            # and the journal's own configuration is used.
            noted = run(["replay", "--journal", journal, "--config", narrow,
                         "--reports-dir", os.path.join(tmp, "replay2")], b"")
            self.assertEqual(noted.returncode, 0, noted.stderr)
            self.assertIn(b"note: segment", noted.stderr)
            with open(os.path.join(tmp, "replay2", "session-2.bin"),
                      "rb") as f:
                self.assertEqual(f.read(), live2)
            self.assertEqual(
                run(["replay", "--journal", journal, "--verify"], b"")
                .returncode, 0)
            inspect = run(["journal", "inspect", journal], b"").stdout
            self.assertIn(b"max_price = 1000", inspect)
            self.assertIn(b"max_price = 5000", inspect)

            # From a snapshot taken under the first configuration: the
            # replay still changes it where the next segment pins the new
            # one, so session 2's order is Accepted as it was live.
            made = run(["snapshot", "--journal", journal, "--at-index", "1"],
                       b"")
            self.assertEqual(made.returncode, 0, made.stderr)
            from_snapshot = os.path.join(tmp, "replay3")
            result = run(["replay", "--journal", journal, "--reports-dir",
                          from_snapshot], b"")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(b"from snapshot", result.stderr)
            self.assertIn(b"reconfigured from index 2", result.stdout)
            self.assertEqual(os.listdir(from_snapshot), ["session-2.bin"])
            with open(os.path.join(from_snapshot, "session-2.bin"),
                      "rb") as f:
                self.assertEqual(f.read(), live2)
class KeyedSubmit(unittest.TestCase):
    """`submit --key-file` against `serve --config` with a keyed session
    (docs/PROTOCOL.md "Authenticated datagrams"): the keyed client trades;
    one without the key, or with another key, is refused, hears nothing and
    says why; the server names each refusal (--log-refusals) and counts it."""

    KEY = "5a" * 32
    OTHER_KEY = "a5" * 32

    def test_submit_with_the_key_trades_and_without_it_is_explained(self):
        with tempfile.TemporaryDirectory() as tmp:
            key = os.path.join(tmp, "7.key")
            with open(key, "w") as f:
                f.write("# session 7\n%s\n" % self.KEY)
            os.chmod(key, 0o600)
            other = os.path.join(tmp, "other.key")
            with open(other, "w") as f:
                f.write(self.OTHER_KEY + "\n")
            os.chmod(other, 0o644)  # readable by others: a warning
            config = os.path.join(tmp, "service.toml")
            with open(config, "w") as f:
                # A relative key_file is read from the config's directory.
                f.write("[sessions.7]\n"
                        "accounts = \"any\"\n"
                        "key_file = \"7.key\"\n")
            port = free_udp_port()
            target = "127.0.0.1:%d" % port
            server = subprocess.Popen(
                [ORDERWIRE, "serve", "--journal", os.path.join(tmp, "j"),
                 "--listen", target, "--config", config, "--durability",
                 "none", "--log-refusals"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            try:
                ready, _, _ = select.select([server.stderr], [], [], 10)
                self.assertTrue(ready, "serve said nothing in 10 s")
                self.assertIn("listening on", server.stderr.readline().decode())
                keyed = run(["submit", "--session", "7", "--target", target,
                             "--workload", "mixed", "--count", "2000",
                             "--seed", "1", "--key-file", key, "--json"], b"")
                self.assertEqual(keyed.returncode, 0, keyed.stderr)
                summary = json.loads(keyed.stdout)
                self.assertEqual(summary["acknowledged"], 2000)
                self.assertEqual(summary["bad_mac_datagrams"], 0)

                plain = run(["submit", "--session", "7", "--target", target,
                             "--workload", "mixed", "--count", "5", "--seed",
                             "2", "--give-up-ms", "1500"], b"")
                self.assertEqual(plain.returncode, 1)
                err = plain.stderr.decode()
                self.assertIn("likely causes", err)
                self.assertIn("MissingMac: give --key-file", err)
                self.assertIn("UnknownSession", err)

                wrong = run(["submit", "--session", "7", "--target", target,
                             "--workload", "mixed", "--count", "5", "--seed",
                             "2", "--give-up-ms", "1500", "--key-file",
                             other], b"")
                self.assertEqual(wrong.returncode, 1)
                err = wrong.stderr.decode()
                self.assertIn("chmod 600", err)
                self.assertIn("the key is wrong (BadMac)", err)
            finally:
                server.send_signal(2)  # SIGINT: a clean stop
                _, rest = server.communicate(timeout=30)
            log = rest.decode()
            self.assertEqual(server.returncode, 0, log)
            self.assertIn("refused a datagram for session 7 from 127.0.0.1:",
                          log)
            self.assertIn(": MissingMac, the session is keyed", log)
            self.assertIn(": BadMac, the MAC does not verify", log)
            self.assertRegex(log, r"dropped refused +MissingMac +[1-9]")
            self.assertRegex(log, r"dropped refused +BadMac +[1-9]")

    def test_serve_names_the_place_and_file_of_a_bad_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            key = os.path.join(tmp, "bad.key")
            with open(key, "w") as f:
                f.write("not a key\n")
            config = os.path.join(tmp, "service.toml")
            with open(config, "w") as f:
                f.write("[sessions.7]\n"
                        "accounts = \"any\"\n"
                        "key_file = \"%s\"\n" % key)
            result = run(["serve", "--journal", os.path.join(tmp, "j"),
                          "--listen", "127.0.0.1:%d" % free_udp_port(),
                          "--config", config], b"")
            self.assertEqual(result.returncode, 1)
            err = result.stderr.decode()
            self.assertIn("config %s:3:12: sessions.7.key_file: " % config,
                          err)
            self.assertIn(key + ":1:", err)


class Snapshots(unittest.TestCase):
    """`orderwire snapshot` writes the state at an index; `replay` starts
    from the newest valid one and writes, for every session, exactly the
    reports the full replay gives after it; a damaged snapshot is named and
    the previous one used; `snapshot inspect` verifies a file or says where
    it is damaged."""

    def journal(self, tmp):
        journal = os.path.join(tmp, "j")
        # Two sessions, 4000 records, several segments.
        for session, seed in ((1, 1), (2, 2)):
            frames = run(["gen", "--workload", "mixed", "--count", "2000",
                          "--seed", str(seed)], b"").stdout
            written = run(["journal", "write", "--journal", journal,
                           "--segment-size", "65536", "--session",
                           str(session)], frames)
            self.assertEqual(written.returncode, 0, written.stderr)
        return journal

    def replay(self, journal, out, *flags):
        result = run(["replay", "--journal", journal, "--reports-dir", out] +
                     list(flags), b"")
        self.assertEqual(result.returncode, 0, result.stderr)
        files = {}
        for name in sorted(os.listdir(out)):
            with open(os.path.join(out, name), "rb") as f:
                files[name] = f.read()
        return files, result.stderr.decode()

    def assert_tails(self, full, tail):
        self.assertEqual(set(tail) - set(full), set())
        self.assertTrue(any(tail.values()), "the tail has reports")
        self.assertLess(sum(map(len, tail.values())),
                        sum(map(len, full.values())))
        for name, data in tail.items():
            self.assertEqual(full[name][len(full[name]) - len(data):], data,
                             name)

    def test_replay_from_a_snapshot_writes_the_full_replays_tail(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal = self.journal(tmp)
            full, _ = self.replay(journal, os.path.join(tmp, "full"))
            self.assertEqual(len(full), 2)
            paths = {}
            for index in (1500, 3100):
                made = run(["snapshot", "--journal", journal, "--at-index",
                            str(index)], b"")
                self.assertEqual(made.returncode, 0, made.stderr)
                paths[index] = os.path.join(journal, "snapshots",
                                            "%020d.ows" % index)
                self.assertIn(paths[index], made.stdout.decode())
            self.assertFalse([f for f in os.listdir(
                os.path.join(journal, "snapshots")) if f.endswith(".tmp")])

            tail, err = self.replay(journal, os.path.join(tmp, "t1"))
            self.assertIn("from snapshot %s (index 3100" % paths[3100], err)
            self.assert_tails(full, tail)
            tail_3100 = tail

            # --no-snapshot: the full replay again.
            again, err = self.replay(journal, os.path.join(tmp, "t2"),
                                     "--no-snapshot")
            self.assertEqual(again, full)
            self.assertNotIn("from snapshot", err)

            # The newest damaged: named, the previous one used.
            with open(paths[3100], "r+b") as f:
                f.seek(3000)
                byte = f.read(1)
                f.seek(3000)
                f.write(bytes([byte[0] ^ 0x40]))
            tail, err = self.replay(journal, os.path.join(tmp, "t3"))
            self.assertIn("snapshot %s: damaged at offset" % paths[3100], err)
            self.assertIn("using the previous one", err)
            self.assertIn("from snapshot %s (index 1500" % paths[1500], err)
            self.assert_tails(full, tail)
            for name in tail_3100:
                self.assertGreater(len(tail[name]), len(tail_3100[name]))

            inspect = run(["snapshot", "inspect", paths[1500]], b"")
            self.assertEqual(inspect.returncode, 0, inspect.stderr)
            text = inspect.stdout.decode()
            self.assertIn("index 1500 (last record included)", text)
            self.assertIn("every checksum and cross-reference verified", text)
            for section in ("config", "stats", "sessions", "reports",
                            "orders"):
                self.assertIn(section, text)
            bad = run(["snapshot", "inspect", paths[3100]], b"")
            self.assertEqual(bad.returncode, 1)
            self.assertIn("damaged at offset", bad.stderr.decode())
            self.assertIn("section crc", bad.stderr.decode())

            # A snapshot from a journal's full length, then past its end.
            made = run(["snapshot", "--journal", journal], b"")
            self.assertEqual(made.returncode, 0, made.stderr)
            self.assertIn("%020d.ows" % 4000, made.stdout.decode())
            past = run(["snapshot", "--journal", journal, "--at-index",
                        "4001"], b"")
            self.assertEqual(past.returncode, 1)
            self.assertIn("ends at index 4000, before --at-index 4001",
                          past.stderr.decode())


class JournalLoss(unittest.TestCase):
    """Records the journal's checkpoint says were durable that are gone:
    replay --verify and serve refuse (exit 1) naming the indexes and the
    file, --accept-loss goes on and says so loudly, and a second server
    cannot share a journal even after its LOCK file was deleted."""

    def journal(self, tmp):
        journal = os.path.join(tmp, "j")
        frames = run(["gen", "--workload", "mixed", "--count", "3000",
                      "--seed", "1"], b"").stdout
        written = run(["journal", "write", "--journal", journal,
                       "--segment-size", "65536", "--durability", "sync"],
                      frames)
        self.assertEqual(written.returncode, 0, written.stderr)
        segments = sorted(f for f in os.listdir(journal)
                          if f.endswith(".owj"))
        self.assertGreater(len(segments), 2)
        return journal, [os.path.join(journal, f) for f in segments]

    def serve(self, journal, *flags):
        return subprocess.Popen(
            [ORDERWIRE, "serve", "--journal", journal, "--listen",
             "127.0.0.1:%d" % free_udp_port()] + list(flags),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)

    def first_line_then_stop(self, server):
        try:
            ready, _, _ = select.select([server.stderr], [], [], 10)
            first = server.stderr.readline().decode() if ready else ""
        finally:
            server.send_signal(2)
            _, rest = server.communicate(timeout=30)
        return first, rest.decode()

    def test_a_deleted_last_segment_is_refused_unless_accepted(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal, segments = self.journal(tmp)
            first_lost = int(os.path.basename(segments[-1])[:20])
            os.remove(segments[-1])
            missing = "records %d..3000 are missing" % first_lost
            for command in (["replay", "--journal", journal, "--verify"],
                            ["replay", "--journal", journal]):
                result = run(command, b"")
                self.assertEqual(result.returncode, 1, command)
                self.assertIn(missing, result.stderr.decode())
                self.assertIn(os.path.basename(segments[-1]),
                              result.stderr.decode())
                self.assertIn("--accept-loss", result.stderr.decode())
            server = self.serve(journal, "--quiet")
            _, err = server.communicate(timeout=30)
            self.assertEqual(server.returncode, 1)
            self.assertIn(missing, err.decode())

            accepted = run(["replay", "--journal", journal, "--verify",
                            "--accept-loss"], b"")
            self.assertEqual(accepted.returncode, 0, accepted.stderr)
            self.assertIn("DATA LOSS ACCEPTED", accepted.stderr.decode())
            self.assertIn(missing, accepted.stderr.decode())

            # serve --accept-loss starts, says so even with --quiet, and
            # re-bases the checkpoint: the next check is clean.
            first, _ = self.first_line_then_stop(
                self.serve(journal, "--quiet", "--accept-loss"))
            self.assertIn("DATA LOSS ACCEPTED", first)
            self.assertIn(missing, first)
            clean = run(["replay", "--journal", journal, "--verify"], b"")
            self.assertEqual(clean.returncode, 0, clean.stderr)

    def test_a_last_segment_truncated_at_a_group_boundary_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal, segments = self.journal(tmp)
            inspect = run(["journal", "inspect", journal], b"").stdout.decode()
            used = int(inspect.split("(to offset ")[-1].split(")")[0])
            os.truncate(segments[-1], used - 4096)  # one group less
            result = run(["replay", "--journal", journal, "--verify"], b"")
            self.assertEqual(result.returncode, 1)
            self.assertIn("shorter than the 65536 bytes its header promises",
                          result.stderr.decode())
            server = self.serve(journal)
            _, err = server.communicate(timeout=30)
            self.assertEqual(server.returncode, 1)
            self.assertIn(segments[-1], err.decode())

    def test_deleting_the_lock_file_does_not_let_a_second_server_in(self):
        with tempfile.TemporaryDirectory() as tmp:
            journal = os.path.join(tmp, "j")
            first = self.serve(journal)
            try:
                ready, _, _ = select.select([first.stderr], [], [], 10)
                self.assertTrue(ready)
                self.assertIn("listening on", first.stderr.readline().decode())
                os.remove(os.path.join(journal, "LOCK"))
                second = self.serve(journal)
                _, err = second.communicate(timeout=30)
                self.assertEqual(second.returncode, 1)
                self.assertIn("open for appending by another writer",
                              err.decode())
            finally:
                first.send_signal(2)
                first.communicate(timeout=30)
            self.assertEqual(first.returncode, 0)


def main():
    global ORDERWIRE
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    ORDERWIRE = os.path.abspath(sys.argv.pop(1))
    program = unittest.main(exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
