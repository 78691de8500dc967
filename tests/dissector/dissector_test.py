#!/usr/bin/env python3
"""Checks tools/wireshark/orderwire.lua with tshark on datagrams orderwire made.

The frames come from the project itself: JSON Lines go through
`orderwire encode --hex`. This script wraps them into datagrams (the header of
docs/PROTOCOL.md, checked against its golden datagram), some well-formed and some
with each malformation, writes them into a pcap file (Ethernet, IPv4, UDP)
and runs tshark with the dissector on it:

  * -T pdml: every orderwire field (name, value, position, enumeration name)
    and every expert info (field it hangs on, expert field, severity, group,
    message) must be exactly what is expected below, and nothing more;
  * -T fields: the Protocol and Info columns;
  * -o orderwire.udp_port:N and --disable-heuristic: the port preference and
    the heuristic registration;
  * -Y: the display filters docs/WIRESHARK.md shows.

Positions are checked against this file's copy of docs/PROTOCOL.md's frame tables,
values against the JSON the frames were encoded from.

Exit status: 0 pass, 1 fail, 77 skipped (no tshark, or a tshark without Lua);
CTest maps 77 to "skipped" (SKIP_RETURN_CODE).

usage: dissector_test.py --orderwire BIN --dissector LUA --work-dir DIR
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
SERVICE_PORT = 7400  # `orderwire serve`'s default, the dissector's default
CLIENT_PORT = 40001
OTHER_PORTS = (9000, 9001)  # neither is the service port: heuristic only
PAYLOAD_OFFSET = 14 + 20 + 8  # Ethernet + IPv4 + UDP headers
MAX_DATAGRAM = 1472

# docs/PROTOCOL.md, "Commands" and "Reports": body fields in wire order, with
# their widths and the display filter field each one is decoded into.
U64, I64, U32, U16, U8 = ("u64", 8), ("i64", 8), ("u32", 4), ("u16", 2), ("u8", 1)
SIDE = {1: "Buy", 2: "Sell"}
TIME_IN_FORCE = {1: "GoodTillCancel", 2: "ImmediateOrCancel",
                 3: "FillOrKill", 4: "PostOnly"}
REJECT_REASON = {1: "UnknownInstrument", 2: "InvalidSide",
                 3: "InvalidTimeInForce", 4: "InvalidPrice",
                 5: "InvalidQuantity", 6: "DuplicateClientOrderId",
                 7: "UnknownOrder", 8: "NotOwner", 9: "WouldCross",
                 10: "BookFull", 11: "Unauthorized",
                 12: "InvalidMassCancelScope"}
CANCEL_REASON = {1: "Requested", 2: "ImmediateOrCancel", 3: "FillOrKill",
                 4: "SelfTrade", 5: "NoLiquidity", 6: "ReplacedAway",
                 7: "MassCancel", 8: "CancelOnDisconnect"}
MASS_CANCEL_SIDE = {1: "Buy", 2: "Sell", 3: "Both"}
MASS_CANCEL_SCOPE = {1: "Account", 2: "Instrument"}
LIQUIDITY = {1: "Maker", 2: "Taker"}
PRIORITY_KEPT = {1: "Yes", 2: "No"}
BUSY_CAUSE = {1: "JournalFull"}
SESSION_CLOSE_REASON = {1: "Goodbye", 2: "Lapsed"}
ORDER_STATE = {1: "Live", 2: "NotLive"}
KIND_NAMES = {0x01: "NewLimit", 0x02: "NewMarket", 0x03: "CancelByOrder",
              0x04: "CancelByClient", 0x05: "Replace", 0x06: "MassCancel",
              0x07: "Heartbeat", 0x08: "Goodbye",
              0x09: "OrderStatusRequest", 0x41: "Accepted",
              0x42: "Rejected", 0x43: "Filled", 0x44: "Cancelled",
              0x45: "Replaced", 0x46: "SequenceGap",
              0x47: "ReportsGone", 0x48: "Busy", 0x49: "MassCancelDone",
              0x4A: "HeartbeatAck", 0x4B: "SessionClosed",
              0x4C: "OrderStatus"}
# A Rejected names a command; a Heartbeat (0x07) is never one.
COMMAND_KIND = {k: v for k, v in KIND_NAMES.items() if k < 0x40 and k != 0x07}
KIND_BY_NAME = {v: k for k, v in KIND_NAMES.items()}

# (json name, (type, width), filter field, enumeration or None)
def F(name, width, field=None, enum=None):
    return (name, width, "orderwire." + (field or name), enum)

SPEC = {
    "NewLimit": (47, [F("account_id", U64), F("client_order_id", U64),
                      F("instrument_id", U32), F("side", U8, enum=SIDE),
                      F("time_in_force", U8, enum=TIME_IN_FORCE),
                      F("price", I64), F("quantity", U64)]),
    "NewMarket": (38, [F("account_id", U64), F("client_order_id", U64),
                       F("instrument_id", U32), F("side", U8, enum=SIDE),
                       F("quantity", U64)]),
    "CancelByOrder": (25, [F("account_id", U64), F("order_id", U64)]),
    "CancelByClient": (25, [F("account_id", U64), F("client_order_id", U64)]),
    "Replace": (49, [F("account_id", U64), F("order_id", U64),
                     F("new_client_order_id", U64), F("price", I64),
                     F("quantity", U64)]),
    "Accepted": (55, [F("order_id", U64), F("account_id", U64),
                      F("client_order_id", U64), F("instrument_id", U32),
                      F("side", U8, enum=SIDE),
                      F("time_in_force", U8, enum=TIME_IN_FORCE),
                      F("price", I64), F("quantity", U64)]),
    "Rejected": (36, [F("account_id", U64), F("client_order_id", U64),
                      F("order_id", U64),
                      F("command_kind", U8, enum=COMMAND_KIND),
                      F("reason", U16, "reject_reason", REJECT_REASON)]),
    "Filled": (71, [F("order_id", U64), F("account_id", U64),
                    F("client_order_id", U64), F("match_id", U64),
                    F("instrument_id", U32), F("side", U8, enum=SIDE),
                    F("liquidity", U8, enum=LIQUIDITY), F("price", I64),
                    F("quantity", U64), F("leaves_quantity", U64)]),
    "Cancelled": (46, [F("order_id", U64), F("account_id", U64),
                       F("client_order_id", U64), F("instrument_id", U32),
                       F("cancelled_quantity", U64),
                       F("reason", U8, "cancel_reason", CANCEL_REASON)]),
    "Replaced": (50, [F("order_id", U64), F("account_id", U64),
                      F("client_order_id", U64), F("price", I64),
                      F("quantity", U64),
                      F("priority_kept", U8, enum=PRIORITY_KEPT)]),
    "SequenceGap": (17, [F("expected_sequence", U64)]),
    "ReportsGone": (25, [F("resend_command", U64), F("resend_from", U64)]),
    "Busy": (18, [F("expected_sequence", U64),
                  F("cause", U8, "busy_cause", BUSY_CAUSE)]),
    "MassCancel": (31, [F("account_id", U64), F("request_id", U64),
                        F("instrument_id", U32),
                        F("side", U8, "mass_cancel_side", MASS_CANCEL_SIDE),
                        F("scope", U8, enum=MASS_CANCEL_SCOPE)]),
    "MassCancelDone": (35, [F("account_id", U64), F("request_id", U64),
                            F("instrument_id", U32),
                            F("side", U8, "mass_cancel_side",
                              MASS_CANCEL_SIDE),
                            F("scope", U8, enum=MASS_CANCEL_SCOPE),
                            F("cancelled_orders", U32)]),
    "Heartbeat": (17, [F("nonce", U64)]),
    "HeartbeatAck": (33, [F("nonce", U64), F("expected_sequence", U64),
                          F("next_report", U64)]),
    "Goodbye": (25, [F("account_id", U64), F("request_id", U64)]),
    "SessionClosed": (30, [F("account_id", U64), F("request_id", U64),
                           F("reason", U8, "session_close_reason",
                             SESSION_CLOSE_REASON),
                           F("cancelled_orders", U32)]),
    "OrderStatusRequest": (33, [F("account_id", U64), F("order_id", U64),
                                F("client_order_id", U64)]),
    "OrderStatus": (63, [F("order_id", U64), F("account_id", U64),
                         F("client_order_id", U64), F("instrument_id", U32),
                         F("side", U8, enum=SIDE),
                         F("state", U8, "order_state", ORDER_STATE),
                         F("price", I64), F("leaves_quantity", U64),
                         F("executed_quantity", U64)]),
}
for _kind, (_size, _fields) in SPEC.items():
    assert 9 + sum(w for _, (_, w), _, _ in _fields) == _size, _kind
HEX_FIELDS = {"orderwire.kind", "orderwire.command_kind"}  # base.HEX

# The frames, as JSON Lines for `orderwire encode`: docs/PROTOCOL.md's golden
# frames first, then extreme and out-of-range values.
FRAMES = {
    "limit_buy": {"kind": "NewLimit", "sequence": 1, "account_id": 7, "client_order_id": 1001, "instrument_id": 42, "side": 1, "time_in_force": 1, "price": 10050, "quantity": 300},
    "limit_sell": {"kind": "NewLimit", "sequence": 2, "account_id": 7, "client_order_id": 1002, "instrument_id": 42, "side": 2, "time_in_force": 2, "price": -5, "quantity": 1},
    "market": {"kind": "NewMarket", "sequence": 3, "account_id": 9, "client_order_id": 77, "instrument_id": 42, "side": 2, "quantity": 250},
    "cancel_order": {"kind": "CancelByOrder", "sequence": 4, "account_id": 7, "order_id": 0x0102030405060708},
    "cancel_client": {"kind": "CancelByClient", "sequence": 5, "account_id": 7, "client_order_id": 1001},
    "replace": {"kind": "Replace", "sequence": 6, "account_id": 7, "order_id": 3, "new_client_order_id": 1003, "price": 10049, "quantity": 200},
    "accepted": {"kind": "Accepted", "sequence": 1, "order_id": 3, "account_id": 7, "client_order_id": 1001, "instrument_id": 42, "side": 1, "time_in_force": 1, "price": 10050, "quantity": 300},
    "rejected": {"kind": "Rejected", "sequence": 2, "account_id": 7, "client_order_id": 1002, "order_id": 0, "command_kind": 1, "reason": 4},
    "filled": {"kind": "Filled", "sequence": 3, "order_id": 3, "account_id": 7, "client_order_id": 1001, "match_id": 1, "instrument_id": 42, "side": 1, "liquidity": 1, "price": 10050, "quantity": 250, "leaves_quantity": 50},
    "cancelled": {"kind": "Cancelled", "sequence": 4, "order_id": 3, "account_id": 7, "client_order_id": 1001, "instrument_id": 42, "cancelled_quantity": 50, "reason": 1},
    "replaced": {"kind": "Replaced", "sequence": 5, "order_id": 3, "account_id": 7, "client_order_id": 1003, "price": 10049, "quantity": 200, "priority_kept": 2},
    "gap": {"kind": "SequenceGap", "sequence": 0, "expected_sequence": 17},
    "gone": {"kind": "ReportsGone", "sequence": 0, "resend_command": 5, "resend_from": 9},
    "busy": {"kind": "Busy", "sequence": 0, "expected_sequence": 17, "cause": 1},
    "mass_cancel": {"kind": "MassCancel", "sequence": 7, "account_id": 7, "request_id": 42, "instrument_id": 0, "side": 3, "scope": 1},
    "heartbeat": {"kind": "Heartbeat", "sequence": 0, "nonce": 0x0102030405060708},
    "heartbeat_ack": {"kind": "HeartbeatAck", "sequence": 0, "nonce": 0x0102030405060708, "expected_sequence": 8, "next_report": 12},
    "mass_cancel_done": {"kind": "MassCancelDone", "sequence": 6, "account_id": 7, "request_id": 42, "instrument_id": 0, "side": 3, "scope": 1, "cancelled_orders": 2},
    "goodbye": {"kind": "Goodbye", "sequence": 8, "account_id": 7, "request_id": 43},
    "session_closed": {"kind": "SessionClosed", "sequence": 7, "account_id": 7, "request_id": 43, "reason": 1, "cancelled_orders": 2},
    "order_status_request": {"kind": "OrderStatusRequest", "sequence": 9, "account_id": 7, "order_id": 3, "client_order_id": 1003},
    "order_status": {"kind": "OrderStatus", "sequence": 8, "order_id": 3, "account_id": 7, "client_order_id": 1003, "instrument_id": 42, "side": 1, "state": 1, "price": 10049, "leaves_quantity": 200, "executed_quantity": 100},
    # docs/PROTOCOL.md's golden datagram: the first NewLimit, then this.
    "golden_cancel": {"kind": "CancelByClient", "sequence": 2, "account_id": 7, "client_order_id": 1001},
    # Extremes of every integer type.
    "limit_extreme": {"kind": "NewLimit", "sequence": 18446744073709551615, "account_id": 18446744073709551615, "client_order_id": 9223372036854775808, "instrument_id": 4294967295, "side": 2, "time_in_force": 4, "price": -9223372036854775808, "quantity": 18446744073709551615},
    "replace_extreme": {"kind": "Replace", "sequence": 9223372036854775807, "account_id": 1, "order_id": 18446744073709551614, "new_client_order_id": 0, "price": 9223372036854775807, "quantity": 1},
    # Well-formed frames with enumeration values docs/PROTOCOL.md does not define.
    "limit_bad_enums": {"kind": "NewLimit", "sequence": 3, "account_id": 7, "client_order_id": 1004, "instrument_id": 42, "side": 7, "time_in_force": 0, "price": 100, "quantity": 1},
    "rejected_bad_enums": {"kind": "Rejected", "sequence": 6, "account_id": 7, "client_order_id": 1004, "order_id": 0, "command_kind": 0x41, "reason": 13},
    "filled_bad_enum": {"kind": "Filled", "sequence": 7, "order_id": 3, "account_id": 7, "client_order_id": 1001, "match_id": 2, "instrument_id": 42, "side": 1, "liquidity": 3, "price": 10050, "quantity": 1, "leaves_quantity": 0},
    "cancelled_bad_enum": {"kind": "Cancelled", "sequence": 8, "order_id": 3, "account_id": 7, "client_order_id": 1001, "instrument_id": 42, "cancelled_quantity": 1, "reason": 9},
    "replaced_bad_enum": {"kind": "Replaced", "sequence": 9, "order_id": 3, "account_id": 7, "client_order_id": 1001, "price": 1, "quantity": 1, "priority_kept": 0},
    "session_closed_bad_enum": {"kind": "SessionClosed", "sequence": 10, "account_id": 7, "request_id": 44, "reason": 3, "cancelled_orders": 0},
    "order_status_bad_enum": {"kind": "OrderStatus", "sequence": 11, "order_id": 3, "account_id": 7, "client_order_id": 1003, "instrument_id": 42, "side": 2, "state": 3, "price": 10049, "leaves_quantity": 1, "executed_quantity": 0},
    # Side 0 is defined only in a NotLive OrderStatus.
    "order_status_live_no_side": {"kind": "OrderStatus", "sequence": 12, "order_id": 3, "account_id": 7, "client_order_id": 1003, "instrument_id": 42, "side": 0, "state": 1, "price": 10049, "leaves_quantity": 1, "executed_quantity": 0},
}
# Every value of every enumeration, in reports (the commands above hold
# Buy, Sell and two of the four times in force).
for reason in range(1, 13):
    FRAMES["reject%d" % reason] = {"kind": "Rejected", "sequence": 10 + reason, "account_id": 7, "client_order_id": 2000 + reason, "order_id": reason, "command_kind": 1 + (reason - 1) % 5, "reason": reason}
for reason in range(1, 9):
    FRAMES["cancel%d" % reason] = {"kind": "Cancelled", "sequence": 30 + reason, "order_id": 40 + reason, "account_id": 7, "client_order_id": 3000 + reason, "instrument_id": 42, "cancelled_quantity": reason, "reason": reason}
for tif in range(1, 5):
    FRAMES["accept%d" % tif] = {"kind": "Accepted", "sequence": 40 + tif, "order_id": 50 + tif, "account_id": 7, "client_order_id": 4000 + tif, "instrument_id": 42, "side": 2, "time_in_force": tif, "price": 99, "quantity": 5}
FRAMES["fill_taker"] = {"kind": "Filled", "sequence": 50, "order_id": 54, "account_id": 7, "client_order_id": 4004, "match_id": 9, "instrument_id": 42, "side": 2, "liquidity": 2, "price": 99, "quantity": 5, "leaves_quantity": 0}
FRAMES["replaced_kept"] = {"kind": "Replaced", "sequence": 51, "order_id": 53, "account_id": 7, "client_order_id": 4003, "price": 99, "quantity": 4, "priority_kept": 1}
# A lapse's SessionClosed (docs/CONTROLS.md): reason 2, account and request 0.
FRAMES["session_lapsed"] = {"kind": "SessionClosed", "sequence": 52, "account_id": 0, "request_id": 0, "reason": 2, "cancelled_orders": 0}
# A Goodbye refused (reason 11 Unauthorized): command_kind 0x08.
FRAMES["reject_goodbye"] = {"kind": "Rejected", "sequence": 53, "account_id": 7, "client_order_id": 43, "order_id": 0, "command_kind": 0x08, "reason": 11}
# An OrderStatus of no live order (docs/CONTROLS.md "Order status"): state 2
# NotLive, the request's ids, every other field 0.
FRAMES["order_status_not_live"] = {"kind": "OrderStatus", "sequence": 54, "order_id": 0, "account_id": 7, "client_order_id": 1003, "instrument_id": 0, "side": 0, "state": 2, "price": 0, "leaves_quantity": 0, "executed_quantity": 0}
# An OrderStatusRequest for another session's order (reason 8 NotOwner):
# command_kind 0x09.
FRAMES["reject_order_status"] = {"kind": "Rejected", "sequence": 55, "account_id": 7, "client_order_id": 1003, "order_id": 3, "command_kind": 0x09, "reason": 8}
EVERY_ENUM_VALUE = ["reject%d" % r for r in range(1, 13)] + \
    ["cancel%d" % r for r in range(1, 9)] + \
    ["accept%d" % t for t in range(1, 5)] + ["fill_taker", "replaced_kept",
                                             "session_lapsed",
                                             "reject_goodbye",
                                             "order_status_not_live",
                                             "reject_order_status"]

# The frames of the largest and of an oversize datagram.
for i in range(1, 55):
    FRAMES["bulk%d" % i] = {"kind": "CancelByOrder", "sequence": i, "account_id": 5, "order_id": 1000 + i}
for i in range(1, 32):
    FRAMES["bulk_limit%d" % i] = {"kind": "NewLimit", "sequence": i, "account_id": 5, "client_order_id": i, "instrument_id": 1, "side": 1, "time_in_force": 1, "price": i, "quantity": 1}

# key -> the bytes `orderwire encode --hex` made of FRAMES[key] (in Main).
ENCODED = {}

GOLDEN_DATAGRAM = bytes.fromhex(
    "4f570100feca0000020000000100000000000000010700000000000000e903000000"
    "0000002a000000010142270000000000002c0100000000000002000000000000000407"
    "00000000000000e903000000000000")


class Frame:
    """One frame inside a test datagram and what the dissector should show.

    `json` gives the expected fields; `data` the bytes put in the datagram
    (the encoded frame, possibly cut or with another kind byte).
    """

    def __init__(self, key, cut=None, kind_byte=None):
        self.json = dict(FRAMES[key])
        data = ENCODED[key]
        if kind_byte is not None:
            data = data[:8] + bytes([kind_byte]) + data[9:]
            self.json = {"kind": kind_byte, "sequence": self.json["sequence"]}
        self.data = data if cut is None else data[:cut]
        # An unknown kind's frame item covers its 9-byte frame header only.
        self.item_size = 9 if kind_byte is not None else len(self.data)


class Case:
    """One datagram of the capture and everything tshark should show of it."""

    def __init__(self, name, frames=(), *, session=0xCAFE, count=None,
                 magic=b"OW", version=1, flags=0, reserved=0, tail=b"",
                 payload=None, ports=(CLIENT_PORT, SERVICE_PORT),
                 caplen=None, decoded=True, extras=(), experts=(), info=None):
        self.name = name
        self.frames = list(frames)
        if payload is None:
            count = len(self.frames) if count is None else count
            payload = (magic + struct.pack("<BBIHH", version, flags, session,
                                           count, reserved) +
                       b"".join(f.data for f in self.frames) + tail)
        self.payload = payload
        self.ports = ports
        self.caplen = caplen
        self.decoded = decoded
        self.extras = list(extras)  # (field, payload offset, size)
        self.experts = list(experts)  # (on, expert field, severity, group, message)
        self.info = info


def Malformed(on, abbr, message):
    return (on, "orderwire." + abbr, "Error", "Malformed", message)


def InvalidEnum(on, message):
    return (on, "orderwire.invalid_enum", "Warning", "Protocol", message)


def Summary(*keys):
    return ", ".join("%s #%d" % (FRAMES[k]["kind"], FRAMES[k]["sequence"])
                     for k in keys)


# docs/PROTOCOL.md: the MAC of the golden datagram under the key 0x00..0x1f.
GOLDEN_MAC = bytes.fromhex("644b7c681822eb36aedd4bb52122e530")


def Cases():
    to_service = (CLIENT_PORT, SERVICE_PORT)
    from_service = (SERVICE_PORT, CLIENT_PORT)
    heuristic = OTHER_PORTS
    commands = ["limit_buy", "limit_sell", "market", "cancel_order",
                "cancel_client", "replace", "mass_cancel", "goodbye",
                "order_status_request"]
    reports = ["accepted", "rejected", "filled", "cancelled", "replaced",
               "mass_cancel_done", "session_closed", "order_status"]
    largest = ["bulk_limit%d" % i for i in range(1, 6)] + \
              ["bulk%d" % i for i in range(1, 50)]
    oversize = ["bulk_limit%d" % i for i in range(1, 32)] + ["bulk1"]
    cases = [
        # Every frame kind, on the service port, in both directions.
        Case("every command kind, to the service port",
             [Frame(k) for k in commands], ports=to_service,
             info="Session 51966: " + Summary(*commands)),
        Case("every report kind, from the service port",
             [Frame(k) for k in reports], session=0xFFFFFFFF,
             ports=from_service,
             info="Session 4294967295: " + Summary(*reports)),
        Case("SequenceGap, from the service port", [Frame("gap")], session=1,
             ports=from_service, info="Session 1: SequenceGap #0"),
        Case("Heartbeat, to the service port", [Frame("heartbeat")],
             session=1, ports=to_service, info="Session 1: Heartbeat #0"),
        Case("HeartbeatAck, from the service port", [Frame("heartbeat_ack")],
             session=1, ports=from_service, info="Session 1: HeartbeatAck #0"),
        Case("ReportsGone, from the service port", [Frame("gone")], session=1,
             ports=from_service, info="Session 1: ReportsGone #0"),
        Case("Busy, from the service port", [Frame("busy")], session=1,
             ports=from_service, info="Session 1: Busy #0"),
        Case("docs/PROTOCOL.md's golden datagram",
             [Frame("limit_buy"), Frame("golden_cancel")], ports=to_service,
             info="Session 51966: NewLimit #1, CancelByClient #2"),
        # docs/PROTOCOL.md "Authenticated datagrams": the flag and the
        # 16-byte MAC trailer (shown, not verified: no key), the golden one.
        Case("docs/PROTOCOL.md's golden authenticated datagram",
             [Frame("limit_buy"), Frame("golden_cancel")], ports=to_service,
             flags=0x01, tail=GOLDEN_MAC,
             extras=[("orderwire.mac", 84, 16)],
             info="Session 51966: NewLimit #1, CancelByClient #2 [MAC]"),
        Case("authenticated reports, from the service port",
             [Frame("accepted"), Frame("filled")], ports=from_service,
             flags=0x01, tail=bytes(range(16)),
             extras=[("orderwire.mac", 12 + 55 + 71, 16)],
             info="Session 51966: " + Summary("accepted", "filled") +
                  " [MAC]"),
        Case("the Authenticated flag and no room for the trailer",
             payload=struct.pack("<2sBBIHH", b"OW", 1, 0x01, 0xCAFE, 1, 0) +
             bytes(10),
             extras=[("orderwire.undecoded", 12, 10)],
             experts=[Malformed("orderwire.flags", "truncated",
                                "Truncated: the Authenticated flag is set and "
                                "the datagram has 22 bytes, a header and a MAC "
                                "trailer need 28")],
             info="22 bytes [Malformed: Truncated]"),
        Case("the Authenticated flag and bytes between frames and trailer",
             [Frame("limit_buy")], flags=0x01, tail=bytes(3) + bytes(16),
             extras=[("orderwire.trailing", 59, 3), ("orderwire.mac", 62, 16)],
             experts=[Malformed("orderwire.trailing", "trailing_bytes",
                                "TrailingBytes: 3 bytes after the 1 frame "
                                "frame_count announces")],
             info="Session 51966: NewLimit #1 [MAC] "
                  "[Malformed: TrailingBytes]"),
        Case("every value of every enumeration, from the service port",
             [Frame(k) for k in EVERY_ENUM_VALUE], session=2,
             ports=from_service,
             info="Session 2: " + Summary(*EVERY_ENUM_VALUE)),
        Case("extreme integer values",
             [Frame("limit_extreme"), Frame("replace_extreme")], session=0,
             ports=to_service,
             info="Session 0: NewLimit #18446744073709551615, "
                  "Replace #9223372036854775807"),
        Case("a datagram of exactly 1472 bytes", [Frame(k) for k in largest],
             session=5, info="Session 5: " + Summary(*largest)),
        # The heuristic dissector, on ports that are not the service's.
        Case("every command kind, heuristic port",
             [Frame(k) for k in commands], ports=heuristic,
             info="Session 51966: " + Summary(*commands)),
        Case("every report kind, heuristic port",
             [Frame(k) for k in reports] + [Frame("gap")],
             ports=heuristic[::-1],
             info="Session 51966: " + Summary(*reports, "gap")),
        Case("not orderwire, heuristic port", payload=b"hello, not orderwire",
             ports=heuristic, decoded=False),
        Case("version 2, heuristic port", [Frame("limit_buy")], version=2,
             ports=heuristic, decoded=False),
        Case("an 11-byte OW1 datagram, heuristic port",
             payload=b"OW\x01\x00\x01\x00\x00\x00\x01\x00\x00",
             ports=heuristic, decoded=False),
        Case("unknown flags, heuristic port", [Frame("limit_buy")], flags=0x02,
             ports=heuristic,
             experts=[Malformed("orderwire.flags", "bad_flags",
                                "BadFlags: flags 0x02, version 1 defines only "
                                "0x01 (Authenticated)")],
             info="Session 51966: NewLimit #1 [Malformed: BadFlags]"),
        Case("commands and reports mixed, heuristic port",
             [Frame("limit_buy"), Frame("accepted"), Frame("filled")],
             ports=heuristic,
             experts=[Malformed("orderwire", "mixed_directions",
                                "MixedDirections: 1 command and 2 reports in "
                                "one datagram: malformed in either "
                                "direction")],
             info="Session 51966: NewLimit #1, Accepted #1, Filled #3 "
                  "[Malformed: MixedDirections]"),
        # Each malformation, on the service port.
        Case("bad magic", [], count=1, tail=ENCODED["limit_buy"], magic=b"OX",
             extras=[("orderwire.undecoded", 12, 47)],
             experts=[Malformed("orderwire.magic", "bad_magic",
                                'BadMagic: datagram starts 0x4f58, not "OW" '
                                "(0x4f57)")],
             info="59 bytes [Malformed: BadMagic]"),
        Case("bad version", [], count=1, tail=ENCODED["limit_buy"], version=2,
             extras=[("orderwire.undecoded", 12, 47)],
             experts=[Malformed("orderwire.version", "bad_version",
                                "BadVersion: version 2, this dissector knows "
                                "version 1")],
             info="59 bytes [Malformed: BadVersion]"),
        Case("unknown flag bits", [Frame("limit_buy")], flags=0x80,
             experts=[Malformed("orderwire.flags", "bad_flags",
                                "BadFlags: flags 0x80, version 1 defines only "
                                "0x01 (Authenticated)")],
             info="Session 51966: NewLimit #1 [Malformed: BadFlags]"),
        Case("reserved not 0", [Frame("limit_buy")], reserved=0x0100,
             experts=[Malformed("orderwire.reserved", "bad_reserved",
                                "BadReserved: reserved is 0x0100, must be 0")],
             info="Session 51966: NewLimit #1 [Malformed: BadReserved]"),
        Case("frame_count 0", [],
             experts=[Malformed("orderwire.frame_count", "zero_frame_count",
                                "ZeroFrameCount: frame_count is 0, a "
                                "datagram holds at least 1 frame")],
             info="Session 51966: no frames [Malformed: ZeroFrameCount]"),
        Case("frame_count 0 with a frame", [], count=0,
             tail=ENCODED["limit_buy"],
             extras=[("orderwire.trailing", 12, 47)],
             experts=[Malformed("orderwire.frame_count", "zero_frame_count",
                                "ZeroFrameCount: frame_count is 0, a "
                                "datagram holds at least 1 frame"),
                      Malformed("orderwire.trailing", "trailing_bytes",
                                "TrailingBytes: 47 bytes after the 0 frames "
                                "frame_count announces")],
             info="Session 51966: no frames "
                  "[Malformed: ZeroFrameCount, TrailingBytes]"),
        Case("frame_count above the frames", [Frame("limit_buy"),
                                              Frame("cancel_client")],
             count=3,
             experts=[Malformed("orderwire.frame_count", "count_mismatch",
                                "CountMismatch: frame_count is 3, the "
                                "datagram ends after 2 frames")],
             info="Session 51966: NewLimit #1, CancelByClient #5 "
                  "[Malformed: CountMismatch]"),
        Case("unknown kind", [Frame("limit_buy"),
                              Frame("cancel_order", kind_byte=0x0A)],
             count=3, tail=ENCODED["cancel_client"],
             extras=[("orderwire.undecoded", 12 + 47 + 9, 16 + 25)],
             experts=[Malformed("orderwire.frame", "unknown_kind",
                                "UnknownKind: frame 2 has kind 0x0a, which "
                                "docs/PROTOCOL.md does not define; the frames "
                                "after it cannot be delimited")],
             info="Session 51966: NewLimit #1 [Malformed: UnknownKind]"),
        Case("truncated frame", [Frame("limit_buy"), Frame("replace", cut=30)],
             experts=[Malformed("orderwire.frame", "truncated",
                                "Truncated: frame 2 (Replace) needs 49 "
                                "bytes, 30 bytes left")],
             info="Session 51966: NewLimit #1, Replace #6 "
                  "[Malformed: Truncated]"),
        Case("truncated frame header",
             [Frame("limit_buy"), Frame("replace", cut=5)],
             experts=[Malformed("orderwire.frame", "truncated",
                                "Truncated: frame 2 has 5 bytes, a frame "
                                "header needs 9")],
             info="Session 51966: NewLimit #1 [Malformed: Truncated]"),
        Case("truncated datagram header", payload=GOLDEN_DATAGRAM[:8],
             experts=[Malformed("orderwire", "truncated",
                                "Truncated: datagram has 8 bytes, a datagram "
                                "header needs 12")],
             info="8 bytes [Malformed: Truncated]"),
        Case("trailing bytes", [Frame("limit_buy")],
             tail=ENCODED["cancel_client"],
             extras=[("orderwire.trailing", 59, 25)],
             experts=[Malformed("orderwire.trailing", "trailing_bytes",
                                "TrailingBytes: 25 bytes after the 1 frame "
                                "frame_count announces")],
             info="Session 51966: NewLimit #1 [Malformed: TrailingBytes]"),
        Case("oversize", [Frame(k) for k in oversize], session=5,
             experts=[Malformed("orderwire", "oversize",
                                "Oversize: datagram is 1494 bytes, the limit "
                                "is 1472")],
             info="Session 5: " + Summary(*oversize) +
                  " [Malformed: Oversize]"),
        Case("a report sent to the service port",
             [Frame("limit_buy"), Frame("accepted")], ports=to_service,
             experts=[Malformed("orderwire.frame", "not_a_command",
                                "NotACommand: frame 2 (Accepted) is a "
                                "report, in a datagram to service port "
                                "7400")],
             info="Session 51966: NewLimit #1, Accepted #1 "
                  "[Malformed: NotACommand]"),
        Case("a command sent from the service port",
             [Frame("accepted"), Frame("cancel_order")], ports=from_service,
             experts=[Malformed("orderwire.frame", "not_a_report",
                                "NotAReport: frame 2 (CancelByOrder) is a "
                                "command, in a datagram from service port "
                                "7400")],
             info="Session 51966: Accepted #1, CancelByOrder #4 "
                  "[Malformed: NotAReport]"),
        Case("several causes at once", [Frame("limit_buy")], flags=0x02,
             reserved=0x0002, tail=b"\x00\x00\x00",
             extras=[("orderwire.trailing", 59, 3)],
             experts=[Malformed("orderwire.flags", "bad_flags",
                                "BadFlags: flags 0x02, version 1 defines only "
                                "0x01 (Authenticated)"),
                      Malformed("orderwire.reserved", "bad_reserved",
                                "BadReserved: reserved is 0x0002, must be 0"),
                      Malformed("orderwire.trailing", "trailing_bytes",
                                "TrailingBytes: 3 bytes after the 1 frame "
                                "frame_count announces")],
             info="Session 51966: NewLimit #1 "
                  "[Malformed: BadFlags, BadReserved, TrailingBytes]"),
        # Well-formed, with warnings only.
        Case("undefined enumeration values in a command",
             [Frame("limit_bad_enums")],
             experts=[InvalidEnum("orderwire.side", "side 7 is not defined "
                                  "by docs/PROTOCOL.md (NewLimit frame)"),
                      InvalidEnum("orderwire.time_in_force", "time_in_force 0 "
                                  "is not defined by docs/PROTOCOL.md (NewLimit "
                                  "frame)")],
             info="Session 51966: NewLimit #3"),
        Case("undefined enumeration values in reports",
             [Frame(k) for k in ("rejected_bad_enums", "filled_bad_enum",
                                 "cancelled_bad_enum", "replaced_bad_enum",
                                 "session_closed_bad_enum",
                                 "order_status_bad_enum",
                                 "order_status_live_no_side")],
             ports=from_service,
             experts=[InvalidEnum("orderwire.command_kind", "command_kind 65 "
                                  "is not defined by docs/PROTOCOL.md (Rejected "
                                  "frame)"),
                      InvalidEnum("orderwire.reject_reason", "reason 13 is "
                                  "not defined by docs/PROTOCOL.md (Rejected "
                                  "frame)"),
                      InvalidEnum("orderwire.liquidity", "liquidity 3 is not "
                                  "defined by docs/PROTOCOL.md (Filled frame)"),
                      InvalidEnum("orderwire.cancel_reason", "reason 9 is not "
                                  "defined by docs/PROTOCOL.md (Cancelled frame)"),
                      InvalidEnum("orderwire.priority_kept", "priority_kept 0 "
                                  "is not defined by docs/PROTOCOL.md (Replaced "
                                  "frame)"),
                      InvalidEnum("orderwire.session_close_reason", "reason 3 "
                                  "is not defined by docs/PROTOCOL.md "
                                  "(SessionClosed frame)"),
                      InvalidEnum("orderwire.order_state", "state 3 is not "
                                  "defined by docs/PROTOCOL.md (OrderStatus "
                                  "frame)"),
                      InvalidEnum("orderwire.side", "side 0 is not defined "
                                  "by docs/PROTOCOL.md (OrderStatus frame)")],
             info="Session 51966: Rejected #6, Filled #7, Cancelled #8, "
                  "Replaced #9, SessionClosed #10, OrderStatus #11, "
                  "OrderStatus #12"),
    ]
    # A capture cut short by its snapshot length: decoded as far as it
    # goes, a warning, and no malformation blamed on the sender.
    cut = Case("cut short by the capture",
               [Frame("limit_buy"), Frame("limit_sell", cut=20)],
               experts=[("orderwire", "orderwire.short_capture", "Warning",
                         "Undecoded", "the capture holds 79 of the "
                         "datagram's 106 bytes; nothing past byte 79 is "
                         "checked")],
               info="Session 51966: NewLimit #1, NewLimit #2")
    full = Case("", [Frame("limit_buy"), Frame("limit_sell")])
    cut.payload, cut.caplen = full.payload, 12 + 47 + 20
    cases.append(cut)
    sizes = {c.name: len(c.payload) for c in cases}
    assert sizes["a datagram of exactly 1472 bytes"] == MAX_DATAGRAM
    assert sizes["oversize"] == MAX_DATAGRAM + 22
    return cases


def Fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def Skip(message):
    print("SKIPPED: " + message)
    sys.exit(SKIP)


def EncodeFrames(orderwire):
    """Encodes FRAMES with `orderwire encode --hex`; returns key -> bytes."""
    keys = list(FRAMES)
    lines = "".join(json.dumps(FRAMES[k]) + "\n" for k in keys)
    run = subprocess.run([orderwire, "encode", "--hex"], input=lines,
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        Fail("orderwire encode --hex failed: " + run.stderr)
    out = run.stdout.split()
    if len(out) != len(keys):
        Fail("orderwire encode --hex wrote %d lines for %d frames"
             % (len(out), len(keys)))
    encoded = {}
    for key, line in zip(keys, out):
        data = bytes.fromhex(line)
        kind = FRAMES[key]["kind"]
        if len(data) != SPEC[kind][0] or data[8] != KIND_BY_NAME[kind]:
            Fail("%s: orderwire encoded %d bytes of kind 0x%02x, docs/PROTOCOL.md "
                 "says %d bytes of kind 0x%02x" % (key, len(data), data[8],
                                                   SPEC[kind][0],
                                                   KIND_BY_NAME[kind]))
        encoded[key] = data
    return encoded


def WritePcap(path, cases):
    """Writes one Ethernet/IPv4/UDP packet per case (classic pcap format)."""
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for number, case in enumerate(cases, start=1):
            src_port, dst_port = case.ports
            udp = struct.pack(">HHHH", src_port, dst_port,
                              8 + len(case.payload), 0) + case.payload
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), number,
                             0, 64, 17, 0, bytes([127, 0, 0, 1]),
                             bytes([127, 0, 0, 1]))
            words = struct.unpack(">10H", ip)
            checksum = sum(words)
            while checksum > 0xFFFF:
                checksum = (checksum & 0xFFFF) + (checksum >> 16)
            ip = ip[:10] + struct.pack(">H", ~checksum & 0xFFFF) + ip[12:]
            packet = bytes(6) + bytes(6) + b"\x08\x00" + ip + udp
            captured = packet
            if case.caplen is not None:
                captured = packet[:PAYLOAD_OFFSET + case.caplen]
            out.write(struct.pack("<IIII", 1700000000 + number, 0,
                                  len(captured), len(packet)))
            out.write(captured)


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


def HeaderExpectation(payload):
    """The header fields that fit in `payload`, as (name, show)."""
    fields = [("orderwire.magic", 0, ">H", "0x%04x"),
              ("orderwire.version", 2, "<B", "%d"),
              ("orderwire.flags", 3, "<B", "0x%02x"),
              ("orderwire.session_id", 4, "<I", "%d"),
              ("orderwire.frame_count", 8, "<H", "%d"),
              ("orderwire.reserved", 10, "<H", "0x%04x")]
    out = []
    for name, offset, fmt, show in fields:
        size = struct.calcsize(fmt)
        if offset + size <= len(payload):
            value = struct.unpack_from(fmt, payload, offset)[0]
            out.append((name, show % value, offset, size))
    return out


def FrameExpectation(frame, number, start):
    """The frame item of `frame`: label, position, size and fields."""
    available = len(frame.data)
    kind = frame.json["kind"]
    kind_code = kind if isinstance(kind, int) else KIND_BY_NAME[kind]
    if available < 9:
        label = "Frame %d" % number
    elif isinstance(kind, int):
        label = "Frame %d: unknown kind 0x%02x" % (number, kind)
    else:
        label = "Frame %d: %s (0x%02x)" % (number, kind, kind_code)
    fields = []
    if available >= 8:
        label += ", sequence %d" % frame.json["sequence"]
        fields.append(("orderwire.sequence", str(frame.json["sequence"]),
                       start, 8, None))
    if available >= 9:
        fields.append(("orderwire.kind", "0x%02x" % kind_code, start + 8, 1,
                       "%s (0x%02x)" % (KIND_NAMES.get(kind_code, "Unknown"),
                                        kind_code)))
    if not isinstance(kind, int):
        offset = 9
        for name, (_, width), field, enum in SPEC[kind][1]:
            if offset + width > available:
                break
            value = frame.json[name]
            show = ("0x%02x" % value) if field in HEX_FIELDS else str(value)
            shown = None
            if enum is not None:
                shown = "%s (%s)" % (enum.get(value, "Unknown"), show)
            fields.append((field, show, start + offset, width, shown))
            offset += width
    return (label, start, frame.item_size, fields)


def Expectation(case):
    """What the orderwire tree of `case` must hold, in the form of Observe."""
    header = HeaderExpectation(case.payload)
    frames = []
    start = 12
    for number, frame in enumerate(case.frames, start=1):
        frames.append(FrameExpectation(frame, number, start))
        start += len(frame.data)
    return {"header": header, "frames": frames, "extras": case.extras,
            "experts": case.experts}


def Observe(proto):
    """The orderwire tree of one PDML packet, positions relative to UDP's
    payload, in the form of Expectation."""
    def Rel(element):
        return int(element.get("pos")) - PAYLOAD_OFFSET

    experts = []

    def CollectExperts(element, on):
        for child in element:
            if child.get("name") == "_ws.expert":
                fields = {f.get("name"): f for f in child}
                abbr = [n for n in fields if n.startswith("orderwire.")]
                experts.append((
                    on, abbr[0] if len(abbr) == 1 else abbr,
                    fields["_ws.expert.severity"].get("showname").split(
                        ": ", 1)[1],
                    fields["_ws.expert.group"].get("showname").split(
                        ": ", 1)[1],
                    fields["_ws.expert.message"].get("show")))
            elif child.get("name", "").startswith("orderwire"):
                CollectExperts(child, child.get("name"))

    CollectExperts(proto, "orderwire")
    header, frames, extras = [], [], []
    header_names = {h[0] for h in HeaderExpectation(bytes(12))}
    for child in proto:
        name = child.get("name")
        if name in header_names:
            header.append((name, child.get("show"), Rel(child),
                           int(child.get("size"))))
        elif name == "orderwire.frame":
            fields = []
            for field in child:
                if field.get("name") in ("_ws.expert", "_ws.malformed"):
                    continue
                shown = None
                if (field.get("name") in ENUM_FIELDS and
                        ": " in field.get("showname", "")):
                    shown = field.get("showname").split(": ", 1)[1]
                fields.append((field.get("name"), field.get("show"),
                               Rel(field), int(field.get("size")), shown))
            frames.append((child.get("showname"), Rel(child),
                           int(child.get("size")), fields))
        elif name not in ("_ws.expert", "_ws.malformed"):
            extras.append((name, Rel(child), int(child.get("size"))))
    return {"header": header, "frames": frames, "extras": extras,
            "experts": experts}


ENUM_FIELDS = {"orderwire.kind"} | {
    field for _, fields in SPEC.values()
    for _, _, field, enum in fields if enum is not None}


def Diff(expected, observed):
    lines = []
    for part in ("header", "frames", "extras", "experts"):
        if expected[part] != observed[part]:
            lines.append("  %s expected:\n    %s\n  %s observed:\n    %s" % (
                part, "\n    ".join(map(repr, expected[part])), part,
                "\n    ".join(map(repr, observed[part]))))
    return "\n".join(lines)


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


def Packets(pdml):
    """The orderwire proto element (or None) of every packet."""
    root = ElementTree.fromstring(pdml)
    return [packet.find("proto[@name='orderwire']")
            for packet in root.findall("packet")]


def Columns(env, capture, *options):
    out = Tshark(env, *options, "-r", capture, "-T", "fields",
                 "-E", "separator=/t", "-e", "_ws.col.Protocol",
                 "-e", "_ws.col.Info")
    return [tuple(line.split("\t", 1)) for line in out.splitlines()]


def Main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--orderwire", required=True)
    parser.add_argument("--dissector", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()

    tshark = shutil.which("tshark")
    if tshark is None:
        Skip("tshark is not installed (install it with `scripts/setup.sh`, "
             "Debian package tshark); the dissector was not tested")
    version = subprocess.run([tshark, "--version"], capture_output=True,
                             text=True, check=False).stdout
    if "without Lua" in version:
        Skip("this tshark is built without Lua; the dissector was not tested")
    print(version.splitlines()[0])

    # A home of our own, so that a personal Wireshark profile (preferences,
    # or orderwire.lua installed in the personal plugins folder, which would
    # register the protocol twice) cannot change what is tested.
    os.makedirs(args.work_dir, exist_ok=True)
    home = os.path.join(args.work_dir, "home")
    os.makedirs(home, exist_ok=True)
    clean = dict(os.environ, HOME=home,
                 XDG_CONFIG_HOME=os.path.join(home, ".config"))
    clean.pop("WIRESHARK_CONFIG_DIR", None)
    env = {"tshark": [tshark, "-n", "-X", "lua_script:" + args.dissector],
           "env": clean}

    global ENCODED
    ENCODED = EncodeFrames(args.orderwire)
    checker = Checker()
    golden = Case("", [Frame("limit_buy"), Frame("golden_cancel")])
    checker.Check(golden.payload == GOLDEN_DATAGRAM,
                  "the test's datagram header gives docs/PROTOCOL.md's golden "
                  "datagram", golden.payload.hex())

    cases = Cases()
    capture = os.path.join(args.work_dir, "orderwire.pcap")
    WritePcap(capture, cases)
    print("capture: %s (%d datagrams)" % (capture, len(cases)))

    # Fields and expert infos.
    packets = Packets(Tshark(env, "-r", capture, "-T", "pdml"))
    columns = Columns(env, capture)
    checker.Check(len(packets) == len(cases) == len(columns),
                  "tshark shows every packet of the capture")
    for number, (case, proto, column) in enumerate(
            zip(cases, packets, columns), start=1):
        what = "packet %d, %s (ports %d -> %d)" % (number, case.name,
                                                    *case.ports)
        if not case.decoded:
            checker.Check(proto is None and column[0] != "ORDERWIRE",
                          what + ": not taken for orderwire",
                          "  columns: %r" % (column,))
            continue
        if proto is None:
            checker.Check(False, what + ": decoded as orderwire",
                          "  columns: %r" % (column,))
            continue
        expected, observed = Expectation(case), Observe(proto)
        checker.Check(expected == observed, what + ": fields and expert infos",
                      Diff(expected, observed))
        checker.Check(column == ("ORDERWIRE", case.info),
                      what + ": Info column",
                      "  expected: %r\n  observed: %r" % (case.info, column))

    # The port preference and the heuristic registration.
    pref_cases = [
        Case("bad magic to 7500", [Frame("limit_buy")], magic=b"XX",
             ports=(CLIENT_PORT, 7500)),
        Case("bad magic to 7400", [Frame("limit_buy")], magic=b"XX",
             ports=(CLIENT_PORT, 7400)),
        Case("a report to 7400", [Frame("accepted")],
             ports=(CLIENT_PORT, 7400)),
        Case("a report to 7500", [Frame("accepted")],
             ports=(CLIENT_PORT, 7500)),
        Case("a command on a heuristic port", [Frame("limit_buy")],
             ports=OTHER_PORTS),
    ]
    pref_capture = os.path.join(args.work_dir, "preferences.pcap")
    WritePcap(pref_capture, pref_cases)
    # Per packet: None (not taken for orderwire) or its expert fields.
    runs = [
        ((), "default (port 7400, heuristic on)",
         [None, ["orderwire.bad_magic"], ["orderwire.not_a_command"], [], []]),
        (("-o", "orderwire.udp_port:7500"), "-o orderwire.udp_port:7500",
         [["orderwire.bad_magic"], None, [], ["orderwire.not_a_command"], []]),
        (("-o", "orderwire.udp_port:0"), "-o orderwire.udp_port:0",
         [None, None, [], [], []]),
        (("--disable-heuristic", "orderwire_udp"),
         "--disable-heuristic orderwire_udp",
         [None, ["orderwire.bad_magic"], ["orderwire.not_a_command"], None,
          None]),
    ]
    for options, label, expected in runs:
        got = []
        for proto in Packets(Tshark(env, *options, "-r", pref_capture,
                                    "-T", "pdml")):
            got.append(None if proto is None else
                       [e[1] for e in Observe(proto)["experts"]])
        checker.Check(got == expected, "preferences: " + label,
                      "  expected: %r\n  observed: %r" % (expected, got))

    # The display filters of docs/WIRESHARK.md, on the main capture.
    def Has(field, value=None):
        def Test(case):
            if not case.decoded:
                return False
            for frame in Expectation(case)["frames"]:
                for name, show, _, _, shown in frame[3]:
                    if name == field and (value is None or value(show, shown)):
                        return True
            return False
        return Test

    def IsMalformed(case):
        return any(e[3] == "Malformed" for e in case.experts)

    filled = Has("orderwire.kind", lambda s, n: s == "0x43")
    filters = [
        ("orderwire", lambda c: c.decoded),
        ('orderwire.kind == "Filled"', filled),
        ("orderwire.kind == 0x43", filled),
        ('orderwire.kind == "Filled" && orderwire.account_id == 7',
         lambda c: filled(c) and Has("orderwire.account_id",
                                     lambda s, n: s == "7")(c)),
        ("orderwire.account_id == 9", Has("orderwire.account_id",
                                          lambda s, n: s == "9")),
        ("orderwire.side == Sell", Has("orderwire.side",
                                       lambda s, n: s == "2")),
        ("orderwire.price < 0", Has("orderwire.price",
                                    lambda s, n: int(s) < 0)),
        ("orderwire.reject_reason == InvalidPrice",
         Has("orderwire.reject_reason", lambda s, n: s == "4")),
        ("orderwire.cancel_reason", Has("orderwire.cancel_reason")),
        ("orderwire.session_id == 0xcafe",
         lambda c: c.decoded and ("orderwire.session_id", "51966") in
         [h[:2] for h in HeaderExpectation(c.payload)]),
        ("_ws.malformed && orderwire", IsMalformed),
        ("orderwire.truncated || orderwire.count_mismatch",
         lambda c: any(e[1] in ("orderwire.truncated",
                                "orderwire.count_mismatch")
                       for e in c.experts)),
        ("orderwire.invalid_enum",
         lambda c: any(e[1] == "orderwire.invalid_enum" for e in c.experts)),
        # The Authenticated flag bit, and the MAC trailer where it fits.
        ("orderwire.flags.authenticated == 1",
         lambda c: c.decoded and len(c.payload) >= 4 and
         c.payload[:3] == b"OW\x01" and c.payload[3] & 0x01 != 0),
        ("orderwire.mac",
         lambda c: any(e[0] == "orderwire.mac" for e in c.extras)),
    ]
    for display_filter, predicate in filters:
        out = Tshark(env, "-r", capture, "-Y", display_filter, "-T", "fields",
                     "-e", "frame.number")
        got = [int(n) for n in out.split()]
        expected = [n for n, c in enumerate(cases, start=1) if predicate(c)]
        checker.Check(got == expected and len(expected) > 0,
                      "display filter %s: packets %s" % (display_filter, got),
                      "  expected packets %s" % expected)

    print("%d checks, %d failed" % (checker.checks, checker.failures))
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(Main())
