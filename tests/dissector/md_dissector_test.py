#!/usr/bin/env python3
"""Checks tools/wireshark/orderwire_md.lua with tshark on market-data packets.

Everything the test knows of the feed comes from the C++ sources, printed by
feed_layouts: the packet header and body layouts (feed/packet.h), every
message kind's layout, size and carriers (feed/messages.h, feed/kind_table.h),
the enumeration names (feed/types.h, codec/types.h), the check causes in
their order (CheckCause) and docs/MARKETDATA-GOLDEN.md's golden packets
(tests/feed/golden.h). The test encodes messages with those layouts (checked
against the golden messages), builds packets, well-formed and with each
malformation of docs/MARKETDATA.md "Checks", writes them into a pcap file
(Ethernet, IPv4, UDP) and runs tshark with the dissector on it:

  * -T pdml: every orderwire_md field (name, value, position, width,
    enumeration name), decoded here from the C++ layouts, and every expert
    info (field it hangs on, expert field, severity, group, message) must be
    exactly what is expected, and nothing more; so the Lua cannot drift from
    the layouts;
  * -T fields: the Protocol and Info columns of the golden packets;
  * -G fields, with orderwire.lua and orderwire_md.lua both installed in a
    plugins folder: both load, and each layout field has its type;
  * -o orderwire_md.udp_ports, -o orderwire_md.session and
    --disable-heuristic: the preferences and the heuristic registration;
  * -Y: the display filters docs/WIRESHARK.md shows for the feed.

Exit status: 0 pass, 1 fail, 77 skipped (no tshark, or a tshark without Lua);
CTest maps 77 to "skipped" (SKIP_RETURN_CODE).

usage: md_dissector_test.py --layouts BIN --dissector LUA
                            --order-entry-dissector LUA --work-dir DIR
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

SKIP = 77
PAYLOAD_OFFSET = 14 + 20 + 8  # Ethernet + IPv4 + UDP headers
HEURISTIC = (9000, 9001)  # not registered: the heuristic finds the packet
FEED_PORT = 7401  # registered with -o orderwire_md.udp_ports:7401
PORT_OPTION = ("-o", "orderwire_md.udp_ports:%d" % FEED_PORT)
P = "orderwire_md."
HEX_SHOW = {P + "magic": "0x%04x", P + "type": "0x%02x", P + "kind": "0x%02x",
            P + "session": "0x%016x"}
BYTES_FIELDS = {P + "extra", P + "skipped"}

L = {}  # feed_layouts' output (Main)
KINDS = {}  # name -> kind entry of L
KIND_BY_CODE = {}


def Fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def Skip(message):
    print("SKIPPED: " + message)
    sys.exit(SKIP)


def Unpack(field, data, offset):
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[field["size"]]
    if field["signed"]:
        fmt = fmt.lower()
    return struct.unpack_from("<" + fmt, data, offset)[0]


def Pack(field, value):
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[field["size"]]
    if field["signed"]:
        fmt = fmt.lower()
    return struct.pack("<" + fmt, value)


# --- Building packets from the layouts -------------------------------------

def Message(kind, **values):
    """A message of `kind` (name), fields from `values` (missing ones 0, or
    1 for an enumeration: a defined value)."""
    entry = KINDS[kind]
    data = bytes([entry["code"]])
    for field in entry["fields"]:
        default = 1 if field["enum"] else 0
        data += Pack(field, values.pop(field["name"], default))
    assert not values, values
    assert len(data) == entry["size"]
    return data


def Block(message, length=None):
    return struct.pack("<H", len(message) if length is None else length) + \
        message


def Header(type_, session=0x0123456789ABCDEF, sequence=1, count=0, token=0,
           magic=b"OM", version=1):
    values = {"magic": struct.unpack("<H", magic)[0], "version": version,
              "type": type_, "session": session, "sequence": sequence,
              "count": count, "token": token}
    return b"".join(Pack(f, values[f["name"]]) for f in L["header"])


def Body(layout, **values):
    return b"".join(Pack(f, values[f["name"]]) for f in L[layout])


T2 = 1700000000000250000


class Case:
    def __init__(self, name, payload, ports=HEURISTIC, experts=(), info=None,
                 decoded=True, caplen=None):
        self.name, self.payload, self.ports = name, payload, ports
        self.experts = list(experts)
        self.info, self.decoded, self.caplen = info, decoded, caplen


def Err(on, abbr, message):
    return (P + on if on else "orderwire_md", P + abbr, "Error", "Malformed",
            message)


def Warn(on, message):
    return (P + on, P + "invalid_enum", "Warning", "Protocol", message)


def Note(message):
    return (P + "message", P + "unknown_kind", "Note", "Undecoded", message)


# --- What the dissector must show, decoded here from the layouts ------------

def Show(name, field, value):
    if name in HEX_SHOW:
        return HEX_SHOW[name] % value
    return str(value)


def FieldRow(field, data, offset, base):
    name = P + field["name"]
    value = Unpack(field, data, offset)
    if field["name"] == "magic":
        value = struct.unpack_from(">H", data, offset)[0]  # shown big-endian
    enum = None
    if field["enum"]:
        names = L["enums"][field["enum"]]
        enum = names.get(str(value), "Unknown")
    return (name, Show(name, field, value), base + offset, field["size"], enum)


def ExpectBlocks(data, type_, out):
    count = Unpack(L["header"][5], data, 20)
    sequence = Unpack(L["header"][4], data, 12)
    numbering = "position" if type_ == 4 else "sequence"
    pos = 24
    for n in range(1, count + 1):
        available = len(data) - pos
        if available == 0:
            return
        rows = []
        length = struct.unpack_from("<H", data, pos)[0] if available >= 2 \
            else None
        size = min(available, 2 + (length or 0))
        if length is not None:
            rows.append((P + "length", str(length), pos, 2, None))
        rows.append((P + "message_sequence", str(sequence + n - 1), None, 0,
                     None))
        label = "Message %d" % n
        if length is None or available < 2 + length:
            out["messages"].append((label, pos, size, rows))
            return
        body = pos + 2
        if length >= 1:
            code = data[body]
            rows.append(FieldRow(L["message_header"][0], data, body, 0))
            entry = KIND_BY_CODE.get(code)
            if entry:
                label += ": %s (0x%02x), %s %d" % (entry["name"], code,
                                                    numbering,
                                                    sequence + n - 1)
                for field in entry["fields"]:
                    if field["offset"] + field["size"] > length:
                        break
                    rows.append(FieldRow(field, data, body + field["offset"],
                                         0))
                if length > entry["size"]:
                    rows.append((P + "extra", None, body + entry["size"],
                                 length - entry["size"], None))
            else:
                label += ": unknown kind 0x%02x, %s %d, skipped" % (
                    code, numbering, sequence + n - 1)
                if length >= L["limits"]["min_message"]:
                    rows.append(FieldRow(L["message_header"][1], data,
                                         body + 1, 0))
                if length > L["limits"]["min_message"]:
                    rows.append((P + "skipped", None, body + 9, length - 9,
                                 None))
        else:
            label += ", empty"
        out["messages"].append((label, pos, size, rows))
        pos = body + length
    if pos < len(data):
        out["extras"].append((P + "trailing", pos, len(data) - pos))


def Expectation(case):
    data = case.payload[:case.caplen] if case.caplen else case.payload
    out = {"header": [], "body": [], "messages": [], "extras": [],
           "experts": case.experts}
    for field in L["header"]:
        if field["offset"] + field["size"] <= len(data):
            out["header"].append(FieldRow(field, data, field["offset"], 0))
    if len(data) < 24:
        return out
    type_ = data[3]
    if data[:2] != b"OM" or data[2] != 1 or \
            str(type_) not in L["enums"]["type"]:
        if len(data) > 24:
            out["extras"].append((P + "undecoded", 24, len(data) - 24))
        return out
    if type_ in (1, 4):
        ExpectBlocks(data, type_, out)
        return out
    layout = {5: "refused", 0x12: "snapshot_request"}.get(type_)
    stop = 24
    for field in L[layout] if layout else []:
        if field["offset"] + field["size"] <= len(data):
            out["body"].append(FieldRow(field, data, field["offset"], 0))
        stop = field["offset"] + field["size"]
    if stop < len(data):
        out["extras"].append((P + "trailing", stop, len(data) - stop))
    return out


def Observe(proto):
    def Rel(element):
        return int(element.get("pos")) - PAYLOAD_OFFSET

    def Row(element):
        name = element.get("name")
        enum = None
        if name in ENUM_FIELDS:
            enum = element.get("showname").split(": ", 1)[1].rsplit(" (",
                                                                    1)[0]
        if name == P + "message_sequence":
            return (name, element.get("show"), None, 0, None)
        show = None if name in BYTES_FIELDS else element.get("show")
        return (name, show, Rel(element), int(element.get("size")), enum)

    experts = []

    def Collect(element, on):
        for child in element:
            if child.get("name") == "_ws.expert":
                fields = {f.get("name"): f for f in child}
                abbr = [n for n in fields if n.startswith(P)]
                experts.append((
                    on, abbr[0] if len(abbr) == 1 else abbr,
                    fields["_ws.expert.severity"].get("showname").split(
                        ": ", 1)[1],
                    fields["_ws.expert.group"].get("showname").split(
                        ": ", 1)[1],
                    fields["_ws.expert.message"].get("show")))
            elif child.get("name", "").startswith("orderwire_md"):
                Collect(child, child.get("name"))

    Collect(proto, "orderwire_md")
    out = {"header": [], "body": [], "messages": [], "extras": [],
           "experts": experts}
    header = {P + f["name"] for f in L["header"]}
    body = {P + f["name"] for f in L["refused"] + L["snapshot_request"]}
    for child in proto:
        name = child.get("name")
        if name in header:
            out["header"].append(Row(child))
        elif name in body:
            out["body"].append(Row(child))
        elif name == P + "message":
            rows = [Row(f) for f in child
                    if f.get("name") not in ("_ws.expert", "_ws.malformed")]
            out["messages"].append((child.get("showname"), Rel(child),
                                    int(child.get("size")), rows))
        elif name not in ("_ws.expert", "_ws.malformed"):
            out["extras"].append((name, Rel(child), int(child.get("size"))))
    return out


ENUM_FIELDS = set()


def Golden(name):
    return bytes.fromhex(L["golden"][name])


def Cases():
    g = {k: Golden(k) for k in L["golden"]}
    msg = {
        "reduced": g["OrderReduced"], "deleted": g["OrderDeleted"],
        "replaced": g["OrderReplaced"], "halted": g["TradingStatusHalted"],
        "executed": Message("OrderExecuted", timestamp=T2, order_id=1,
                            instrument_id=42, side=1, match_id=1, price=10050,
                            quantity=300),
        "added": Message("OrderAdded", timestamp=T2, order_id=2,
                         instrument_id=42, side=2, price=10040, quantity=100),
        "start": Message("SnapshotStart", timestamp=T2, feed_sequence=6,
                         instrument_id=42, message_count=5),
        "end_of_feed": Message("SystemEvent", timestamp=T2, event=2),
        "unlisted": Message("TradingStatus", timestamp=T2, instrument_id=43,
                            state=3),
        "extreme": Message("OrderAdded", timestamp=2**64 - 1,
                           order_id=2**64 - 1, instrument_id=2**32 - 1,
                           side=1, price=-2**63, quantity=2**64 - 1),
        "bad_side": Message("OrderAdded", timestamp=T2, order_id=3,
                            instrument_id=42, side=3, price=1, quantity=1),
        "bad_state": Message("TradingStatus", timestamp=T2, instrument_id=42,
                             state=0),
        "bad_event": Message("SystemEvent", timestamp=T2, event=9),
    }
    unknown = bytes([0x50]) + struct.pack("<Q", T2) + b"\x01\x02\x03"
    unknown9 = bytes([0x7E]) + struct.pack("<Q", T2)
    reply = g["ExecutedAdded"][:22] + b"\x07\x00" + g["ExecutedAdded"][24:]

    def Data(blocks, sequence=7, count=None, token=0, type_=1, tail=b""):
        count = len(blocks) if count is None else count
        return Header(type_, sequence=sequence, count=count, token=token) + \
            b"".join(blocks) + tail

    def Refused(reason, token=3, count=0, size=17):
        body = Body("refused", reason=reason, first_retained=1,
                    next_sequence=7) + bytes(4)
        return Header(5, sequence=9, count=count, token=token) + body[:size]

    def SnapReq(sequence=0, count=0, token=8, size=4):
        return Header(0x12, session=0, sequence=sequence, count=count,
                      token=token) + (struct.pack("<I", 42) + b"\x09")[:size]

    largest = [Block(msg["executed"])] * 29 + [Block(msg["deleted"]),
                                               Block(unknown[:11])]
    cases = [Case("golden " + k, g[k], info=i) for k, i in [
        ("StartOfFeed", "Data: SystemEvent #1, InstrumentDirectory #2, "
         "TradingStatus #3, OrderAdded #4"),
        ("ExecutedAdded", "Data: OrderExecuted #5, OrderAdded #6"),
        ("Heartbeat", "Heartbeat, next 7"),
        ("EndOfSession", "EndOfSession, next 7"),
        ("RetransmitRequest5", "RetransmitRequest #5 count 2, token 7"),
        ("RetransmitRequest9", "RetransmitRequest #9 count 4, token 9"),
        ("RefusedBeyondEnd", "Refused BeyondEnd, sequence 9, token 9"),
        ("RetransmitRequest1", "RetransmitRequest #1 count 10, token 10"),
        ("RefusedNotRetained", "Refused NotRetained, sequence 1, token 10"),
        ("SnapshotRequest", "SnapshotRequest instrument 42, token 8"),
        ("SnapshotReply", "Snapshot token 8: SnapshotStart #1, "
         "InstrumentDirectory #2, TradingStatus #3, OrderAdded #4, "
         "SnapshotEnd #5")]]
    cases += [
        Case("golden retransmission reply", reply,
             info="Data token 7: OrderExecuted #5, OrderAdded #6"),
        Case("the other golden kinds",
             Data([Block(msg[k]) for k in ("reduced", "deleted", "replaced",
                                           "halted")]),
             info="Data: OrderReduced #7, OrderDeleted #8, OrderReplaced #9, "
                  "TradingStatus #10"),
        Case("every other enumeration value, extremes",
             Data([Block(msg["end_of_feed"]), Block(msg["unlisted"]),
                   Block(msg["extreme"])], sequence=2**64 - 3),
             info="Data: SystemEvent #18446744073709551613, TradingStatus "
                  "#18446744073709551614, OrderAdded #18446744073709551615"),
        Case("SnapshotRequest for all instruments",
             Header(0x12, session=0, sequence=0, token=1) + bytes(4),
             info="SnapshotRequest all instruments, token 1"),
        Case("a packet of exactly 1452 bytes", Data(largest),
             experts=[Note("UnknownKind: block 31 has kind 0x50, which "
                           "version 1 does not define; skipped, its sequence "
                           "number used")]),
        Case("unknown kinds skipped, extra bytes ignored",
             Data([Block(msg["deleted"]), Block(unknown), Block(unknown9),
                   Block(msg["deleted"] + b"\xaa\xbb\xcc\xdd")]),
             experts=[Note("UnknownKind: block 2 has kind 0x50, which "
                           "version 1 does not define; skipped, its sequence "
                           "number used"),
                      Note("UnknownKind: block 3 has kind 0x7e, which "
                           "version 1 does not define; skipped, its sequence "
                           "number used")],
             info="Data: OrderDeleted #7, 0x50 #8, 0x7e #9, OrderDeleted #10"),
        Case("undefined enumeration values",
             Data([Block(msg[k]) for k in ("bad_side", "bad_state",
                                           "bad_event")]),
             experts=[Warn("side", "side 3 is not defined by "
                           "docs/MARKETDATA.md (OrderAdded)"),
                      Warn("state", "state 0 is not defined by "
                           "docs/MARKETDATA.md (TradingStatus)"),
                      Warn("event", "event 9 is not defined by "
                           "docs/MARKETDATA.md (SystemEvent)")]),
    ]
    for reason in range(3, 8):
        experts = []
        if reason == 7:
            experts = [Warn("reason", "reason 7 is reserved, taken as "
                            "Unavailable (Refused)")]
        cases.append(Case("Refused reason %d" % reason, Refused(reason),
                          experts=experts))
    cases += MalformedCases(g, msg, Data, Refused, SnapReq)
    return cases


def Misplaced(Data, type_, misplaced):
    """A packet of `type_` holding every kind it may not carry, with
    MisplacedKind on each block."""
    kinds = [k for k in L["kinds"] if misplaced(k)]
    type_name = L["enums"]["type"][str(type_)]
    blocks = [Block(Message(k["name"], timestamp=T2)) for k in kinds]
    experts = [Err("message", "misplaced_kind", "MisplacedKind: block %d: %s "
                   "in a %s packet" % (n, k["name"], type_name))
               for n, k in enumerate(kinds, start=1)]
    assert kinds
    return Case("%s in a %s packet" % (", ".join(k["name"] for k in kinds),
                                       type_name),
                Data(blocks, sequence=1, token=8 if type_ == 4 else 0,
                     type_=type_), experts=experts)


def MalformedCases(g, msg, Data, Refused, SnapReq):
    executed, added = Block(msg["executed"]), Block(msg["added"])
    start = Block(msg["start"])
    oversize = [executed] * 30 + [Block(msg["deleted"])] * 2
    return [
        Case("oversize", Data(oversize),
             experts=[Err("", "oversize", "Oversize: packet is 1510 bytes, "
                          "the limit is 1452")]),
        Case("truncated header", g["Heartbeat"][:20], ports=(40000, FEED_PORT),
             experts=[Err("", "truncated", "Truncated: packet has 20 bytes, "
                          "a packet header needs 24")],
             info="20 bytes [Malformed: Truncated]"),
        Case("bad magic", b"OX" + g["StartOfFeed"][2:],
             ports=(FEED_PORT, 40000),
             experts=[Err("magic", "bad_magic", 'BadMagic: packet starts '
                          '0x4f58, not "OM" (0x4f4d)')],
             info="139 bytes [Malformed: BadMagic]"),
        Case("bad version", g["Heartbeat"][:2] + b"\x02" + g["Heartbeat"][3:],
             ports=(FEED_PORT, 40000),
             experts=[Err("version", "bad_version", "BadVersion: version 2, "
                          "this dissector knows version 1")]),
        Case("bad type", Header(6, count=1) + executed,
             experts=[Err("type", "bad_type", "BadType: type 0x06, which "
                          "docs/MARKETDATA.md does not define")],
             info="type 0x06 [Malformed: BadType]"),
        Case("Heartbeat with a token", Header(2, sequence=7, token=5),
             experts=[Err("token", "bad_token", "BadToken: token 5 in a "
                          "Heartbeat packet, must be 0")]),
        Case("Snapshot without a token", Data([start], sequence=1, type_=4),
             experts=[Err("token", "bad_token", "BadToken: token 0 in a "
                          "Snapshot packet, must not be 0")]),
        Case("Refused without a token", Refused(2, token=0),
             experts=[Err("token", "bad_token", "BadToken: token 0 in a "
                          "Refused packet, must not be 0")]),
        Case("Data with sequence 0", Data([added], sequence=0),
             experts=[Err("sequence", "bad_sequence", "BadSequence: sequence "
                          "0 in a Data packet, must not be 0")]),
        Case("SnapshotRequest with a sequence", SnapReq(sequence=3),
             experts=[Err("sequence", "bad_sequence", "BadSequence: sequence "
                          "3 in a SnapshotRequest packet, must be 0")]),
        Case("EndOfSession with a count", Header(3, sequence=7, count=2),
             experts=[Err("count", "bad_count", "BadCount: count 2 in a "
                          "EndOfSession packet, must be 0")]),
        Case("Refused with a count", Refused(1, count=1),
             experts=[Err("count", "bad_count", "BadCount: count 1 in a "
                          "Refused packet, must be 0")]),
        Case("Data with count 0", Data([], count=0),
             experts=[Err("count", "zero_count", "ZeroCount: count 0 in a "
                          "Data packet, must not be 0")],
             info="Data: no messages [Malformed: ZeroCount]"),
        Case("RetransmitRequest with count 0",
             Header(0x11, sequence=5, count=0, token=7),
             experts=[Err("count", "zero_count", "ZeroCount: count 0 in a "
                          "RetransmitRequest packet, must not be 0")]),
        Case("Refused body of 16 bytes", Refused(2, size=16),
             experts=[Err("", "truncated", "Truncated: a Refused body needs "
                          "17 bytes, the packet has 16 bytes after its "
                          "header")]),
        Case("Refused body of 18 bytes", Refused(2, size=18),
             experts=[Err("trailing", "trailing_bytes", "TrailingBytes: 1 "
                          "byte after the Refused body")]),
        Case("SnapshotRequest body of 3 bytes", SnapReq(size=3),
             experts=[Err("", "truncated", "Truncated: a SnapshotRequest "
                          "body needs 4 bytes, the packet has 3 bytes after "
                          "its header")]),
        Case("SnapshotRequest body of 5 bytes", SnapReq(size=5),
             experts=[Err("trailing", "trailing_bytes", "TrailingBytes: 1 "
                          "byte after the SnapshotRequest body")]),
        Case("Heartbeat with a body", Header(2, sequence=7) + b"\x00\x00",
             experts=[Err("trailing", "trailing_bytes", "TrailingBytes: 2 "
                          "bytes after the header")]),
        Case("RetransmitRequest with a body", g["RetransmitRequest5"] + b"\x01",
             experts=[Err("trailing", "trailing_bytes", "TrailingBytes: 1 "
                          "byte after the header")]),
        Case("truncated block", Data([added, executed[:20]]),
             experts=[Err("message", "truncated", "Truncated: block 2 needs "
                          "48 bytes, 20 bytes left")],
             info="Data: OrderAdded #7 [Malformed: Truncated]"),
        Case("no room for a block length", Data([added], count=2, tail=b"\x05"),
             experts=[Err("message", "truncated", "Truncated: block 2 needs a "
                          "2-byte length, 1 byte left")]),
        Case("fewer blocks than count", Data([added, added], count=3),
             experts=[Err("count", "count_mismatch", "CountMismatch: count is "
                          "3, the packet ends after 2 blocks")]),
        Case("block length below 9", Data([Block(b"\x01\x01\x02\x03")]),
             experts=[Err("message", "bad_length", "BadLength: block 1: "
                          "length 4, a message needs 9")]),
        Case("block length below its kind's size",
             Data([Block(msg["added"][:30])]),
             experts=[Err("message", "bad_length", "BadLength: block 1: "
                          "length 30, OrderAdded needs 38")]),
        # Every kind in each packet type that may not carry it.
        Misplaced(Data, 1, lambda kind: not kind["in_data"]),
        Misplaced(Data, 4, lambda kind: not kind["in_snapshot"]),
        Case("bytes after the blocks", Data([added], tail=b"\x00\x01\x02"),
             experts=[Err("trailing", "trailing_bytes", "TrailingBytes: 3 "
                          "bytes after the 1 block count announces")]),
        Case("several causes, in the order of Checks",
             Data([Block(b"\x01\x01\x02\x03"), executed], sequence=0,
                  type_=4, tail=b"\x00\x00"),
             # In tree order (the sequence field comes before the token);
             # the Info column lists the causes in the order of Checks.
             experts=[Err("sequence", "bad_sequence", "BadSequence: sequence "
                          "0 in a Snapshot packet, must not be 0"),
                      Err("token", "bad_token", "BadToken: token 0 in a "
                          "Snapshot packet, must not be 0"),
                      Err("message", "bad_length", "BadLength: block 1: "
                          "length 4, a message needs 9"),
                      Err("message", "misplaced_kind", "MisplacedKind: block "
                          "2: OrderExecuted in a Snapshot packet"),
                      Err("trailing", "trailing_bytes", "TrailingBytes: 2 "
                          "bytes after the 2 blocks count announces")],
             info="Snapshot: 0x01 #0, OrderExecuted #1 [Malformed: BadToken, "
                  "BadSequence, BadLength, MisplacedKind, TrailingBytes]"),
        Case("cut short by the capture", Data([added, executed]), caplen=60,
             experts=[("orderwire_md", P + "short_capture", "Warning",
                       "Undecoded", "the capture holds 60 of the packet's 112 "
                       "bytes; nothing past byte 60 is checked")]),
        Case("not the feed, heuristic port", b"hello, not orderwire_md at all",
             decoded=False),
        Case("version 2, heuristic port",
             g["Heartbeat"][:2] + b"\x02" + g["Heartbeat"][3:], decoded=False),
        Case("a 23-byte OM1 packet, heuristic port", g["Heartbeat"][:23],
             decoded=False),
    ]


def WritePcap(path, cases):
    """Writes one Ethernet/IPv4/UDP packet per case (classic pcap format)."""
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for number, case in enumerate(cases, start=1):
            udp = struct.pack(">HHHH", case.ports[0], case.ports[1],
                              8 + len(case.payload), 0) + case.payload
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), number,
                             0, 64, 17, 0, bytes([127, 0, 0, 1]),
                             bytes([127, 0, 0, 1]))
            checksum = sum(struct.unpack(">10H", ip))
            while checksum > 0xFFFF:
                checksum = (checksum & 0xFFFF) + (checksum >> 16)
            ip = ip[:10] + struct.pack(">H", ~checksum & 0xFFFF) + ip[12:]
            packet = bytes(12) + b"\x08\x00" + ip + udp
            captured = packet
            if case.caplen is not None:
                captured = packet[:PAYLOAD_OFFSET + case.caplen]
            out.write(struct.pack("<IIII", 1700000000 + number, 0,
                                  len(captured), len(packet)))
            out.write(captured)


class Checker:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def Check(self, ok, what, detail=""):
        self.checks += 1
        if ok:
            print("ok   " + what)
        else:
            self.failures += 1
            print("FAIL " + what + ("\n" + detail if detail else ""))


def Tshark(env, *args):
    run = subprocess.run(env["tshark"] + list(args), capture_output=True,
                         text=True, env=env["env"], check=False)
    errors = [line for line in run.stderr.splitlines()
              if line and not line.startswith("Running as user")]
    if run.returncode != 0 or errors:
        Fail("tshark %s failed (exit %d):\n%s" % (" ".join(args),
                                                  run.returncode,
                                                  "\n".join(errors)))
    return run.stdout


def Packets(pdml):
    root = ElementTree.fromstring(pdml)
    return [packet.find("proto[@name='orderwire_md']")
            for packet in root.findall("packet")]


def Diff(expected, observed):
    lines = []
    for part in expected:
        if expected[part] != observed[part]:
            lines.append("  %s expected:\n    %s\n  %s observed:\n    %s" % (
                part, "\n    ".join(map(repr, expected[part])), part,
                "\n    ".join(map(repr, observed[part]))))
    return "\n".join(lines)


def CheckLayouts(checker):
    """The layouts feed_layouts printed are MARKETDATA-GOLDEN.md's golden bytes'
    (the test's encoder, built on them, reproduces the golden messages)."""
    golden = {"OrderReduced": Message("OrderReduced", timestamp=T2,
                                      order_id=2, instrument_id=42,
                                      cancelled_quantity=40),
              "OrderDeleted": Message("OrderDeleted", timestamp=T2,
                                      order_id=2, instrument_id=42),
              "OrderReplaced": Message("OrderReplaced", timestamp=T2,
                                       order_id=2, instrument_id=42,
                                       price=10045, quantity=150),
              "TradingStatusHalted": Message("TradingStatus", timestamp=T2,
                                             instrument_id=42, state=2)}
    for name, data in golden.items():
        checker.Check(data == Golden(name), "the layouts encode the golden "
                      + name, data.hex())
    checker.Check(Header(2, sequence=7) == Golden("Heartbeat"),
                  "the layouts encode the golden Heartbeat header")
    # Every cause the dissector names is one of CheckCause's, each once.
    causes = L["causes"]
    lua = open(ARGS.dissector).read()
    for cause in causes:
        checker.Check('"%s"' % cause in lua, "the dissector names cause " +
                      cause)


def CheckGlossary(checker, env, args):
    """Both dissectors installed side by side load, and every layout field
    is a field of its type."""
    home = os.path.join(args.work_dir, "installed")
    plugins = os.path.join(home, ".local", "lib", "wireshark", "plugins")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(plugins)
    for lua in (args.dissector, args.order_entry_dissector):
        os.symlink(os.path.abspath(lua),
                   os.path.join(plugins, os.path.basename(lua)))
    installed = {"tshark": [env["tshark"][0]],
                 "env": dict(env["env"], HOME=home,
                             XDG_CONFIG_HOME=os.path.join(home, ".config"))}
    types = {}
    for line in Tshark(installed, "-G", "fields").splitlines():
        cols = line.split("\t")
        if cols[0] == "F":
            types[cols[2]] = cols[3]
    checker.Check("orderwire.session_id" in types and P + "session" in types,
                  "orderwire.lua and orderwire_md.lua installed together")
    fields = L["header"] + L["refused"] + L["snapshot_request"] + \
        L["message_header"]
    for kind in L["kinds"]:
        fields += kind["fields"]
    for field in fields:
        name = P + field["name"]
        want = "FT_%sINT%d" % ("" if field["signed"] else "U",
                               8 * field["size"])
        checker.Check(types.get(name) == want,
                      "field %s is %s" % (name, want),
                      "  observed: %s" % types.get(name))


def CheckPreferences(checker, env, args):
    g = Golden("Heartbeat")
    cases = [
        Case("bad magic to 7401", b"XX" + g[2:], ports=(40000, FEED_PORT)),
        Case("bad magic to 7402", b"XX" + g[2:], ports=(40000, 7402)),
        Case("Heartbeat on a heuristic port", g),
        Case("Heartbeat of session 5", Header(2, session=5, sequence=7)),
    ]
    capture = os.path.join(args.work_dir, "md_preferences.pcap")
    WritePcap(capture, cases)
    runs = [
        ((), "default (no port, heuristic on)", [None, None, [], []]),
        (PORT_OPTION, "-o orderwire_md.udp_ports:7401",
         [[P + "bad_magic"], None, [], []]),
        (("-o", "orderwire_md.udp_ports:7401,7402"),
         "-o orderwire_md.udp_ports:7401,7402",
         [[P + "bad_magic"], [P + "bad_magic"], [], []]),
        (("-o", "orderwire_md.session:0123456789abcdef"),
         "-o orderwire_md.session:0123456789abcdef",
         [None, None, [], [P + "other_session"]]),
        (("--disable-heuristic", "orderwire_md_udp"),
         "--disable-heuristic orderwire_md_udp", [None, None, None, None]),
    ]
    for options, label, expected in runs:
        got = [None if p is None else [e[1] for e in Observe(p)["experts"]]
               for p in Packets(Tshark(env, *options, "-r", capture,
                                       "-T", "pdml"))]
        checker.Check(got == expected, "preferences: " + label,
                      "  expected: %r\n  observed: %r" % (expected, got))


def CheckFilters(checker, env, capture, cases):
    def Has(field, value=None):
        def Test(case):
            if not case.decoded:
                return False
            e = Expectation(case)
            rows = e["header"] + e["body"] + [
                r for m in e["messages"] for r in m[3]]
            return any(r[0] == field and (value is None or value(r[1], r[4]))
                       for r in rows)
        return Test

    filters = [
        ("orderwire_md", lambda c: c.decoded),
        ('orderwire_md.kind == "OrderExecuted"',
         Has(P + "kind", lambda s, n: n == "OrderExecuted")),
        ("orderwire_md.type == Refused", Has(P + "type",
                                             lambda s, n: s == "0x05")),
        ("orderwire_md.order_id == 2", Has(P + "order_id",
                                           lambda s, n: s == "2")),
        ("orderwire_md.side == Sell", Has(P + "side", lambda s, n: s == "2")),
        ("orderwire_md.message_sequence == 5",
         Has(P + "message_sequence", lambda s, n: s == "5")),
        ("orderwire_md.reason == BeyondEnd",
         Has(P + "reason", lambda s, n: s == "2")),
        ("orderwire_md.token != 0", Has(P + "token", lambda s, n: s != "0")),
        ("_ws.malformed && orderwire_md",
         lambda c: c.decoded and any(e[3] == "Malformed" for e in c.experts)),
        ("orderwire_md.unknown_kind",
         lambda c: any(e[1] == P + "unknown_kind" for e in c.experts)),
    ]
    for display_filter, predicate in filters:
        out = Tshark(env, *PORT_OPTION, "-r", capture, "-Y", display_filter,
                     "-T", "fields", "-e", "frame.number")
        got = [int(n) for n in out.split()]
        expected = [n for n, c in enumerate(cases, start=1) if predicate(c)]
        checker.Check(got == expected and len(expected) > 0,
                      "display filter %s: packets %s" % (display_filter, got),
                      "  expected packets %s" % expected)


ARGS = None


def Main():
    global ARGS, L
    parser = argparse.ArgumentParser()
    parser.add_argument("--layouts", required=True)
    parser.add_argument("--dissector", required=True)
    parser.add_argument("--order-entry-dissector", required=True)
    parser.add_argument("--work-dir", required=True)
    args = ARGS = parser.parse_args()

    tshark = shutil.which("tshark")
    if tshark is None:
        Skip("tshark is not installed (install it with `scripts/setup.sh`, "
             "Debian package tshark); the feed dissector was not tested")
    version = subprocess.run([tshark, "--version"], capture_output=True,
                             text=True, check=False).stdout
    if "without Lua" in version:
        Skip("this tshark is built without Lua; the feed dissector was not "
             "tested")
    print(version.splitlines()[0])

    L = json.loads(subprocess.run([args.layouts], capture_output=True,
                                  text=True, check=True).stdout)
    for kind in L["kinds"]:
        KINDS[kind["name"]] = kind
        KIND_BY_CODE[kind["code"]] = kind
    ENUM_FIELDS.update(P + f["name"] for f in
                       L["header"] + L["refused"] + L["message_header"] +
                       [f for k in L["kinds"] for f in k["fields"]]
                       if f["enum"])

    # A home of our own: no personal profile or installed plugin interferes.
    os.makedirs(args.work_dir, exist_ok=True)
    home = os.path.join(args.work_dir, "home")
    os.makedirs(home, exist_ok=True)
    clean = dict(os.environ, HOME=home,
                 XDG_CONFIG_HOME=os.path.join(home, ".config"))
    clean.pop("WIRESHARK_CONFIG_DIR", None)
    env = {"tshark": [tshark, "-n", "-X", "lua_script:" + args.dissector],
           "env": clean}

    checker = Checker()
    CheckLayouts(checker)
    cases = Cases()
    capture = os.path.join(args.work_dir, "orderwire_md.pcap")
    WritePcap(capture, cases)
    print("capture: %s (%d packets)" % (capture, len(cases)))
    packets = Packets(Tshark(env, *PORT_OPTION, "-r", capture, "-T", "pdml"))
    columns = [tuple(line.split("\t", 1)) for line in Tshark(
        env, *PORT_OPTION, "-r", capture, "-T", "fields", "-E",
        "separator=/t", "-e", "_ws.col.Protocol", "-e",
        "_ws.col.Info").splitlines()]
    checker.Check(len(packets) == len(cases) == len(columns),
                  "tshark shows every packet of the capture")
    for number, (case, proto, column) in enumerate(
            zip(cases, packets, columns), start=1):
        what = "packet %d, %s" % (number, case.name)
        if not case.decoded:
            checker.Check(proto is None and column[0] != "ORDERWIRE_MD",
                          what + ": not taken for orderwire_md",
                          "  columns: %r" % (column,))
            continue
        if proto is None:
            checker.Check(False, what + ": decoded", "  %r" % (column,))
            continue
        expected, observed = Expectation(case), Observe(proto)
        checker.Check(expected == observed, what + ": fields and expert infos",
                      Diff(expected, observed))
        if case.info is not None:
            checker.Check(column == ("ORDERWIRE_MD", case.info),
                          what + ": Info column",
                          "  expected: %r\n  observed: %r" % (case.info,
                                                              column))
        # The Info column names each cause once per expert info, in the
        # order of docs/MARKETDATA.md "Checks" (CheckCause's order).
        named = []
        if "[Malformed: " in column[-1]:
            named = column[-1].split("[Malformed: ", 1)[1].rstrip("]")
            named = named.split(", ")
        experts = sorted(e[1][len(P):].title().replace("_", "")
                         for e in case.experts if e[3] == "Malformed")
        order = [L["causes"].index(c) if c in L["causes"] else -1
                 for c in named]
        checker.Check(sorted(named) == experts and -1 not in order and
                      order == sorted(order),
                      what + ": causes named as in Checks, in its order",
                      "  Info column: %r\n  expert infos: %r" % (named,
                                                                 experts))
    sizes = {c.name: len(c.payload) for c in cases}
    checker.Check(sizes["a packet of exactly 1452 bytes"] ==
                  L["limits"]["max_packet"], "the largest packet is 1452")
    CheckGlossary(checker, env, args)
    CheckPreferences(checker, env, args)
    CheckFilters(checker, env, capture, cases)
    print("%d checks, %d failed" % (checker.checks, checker.failures))
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(Main())
