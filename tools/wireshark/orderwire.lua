-- Wireshark / tshark dissector for the orderwire datagram protocol, version 2
-- (docs/PROTOCOL.md and docs/CONTROLS.md: a 12-byte datagram header, its
-- version byte 1, then whole frames of 21 kinds, back to back).
--
-- Install: copy this file into Wireshark's personal Lua plugins folder
-- (~/.local/lib/wireshark/plugins/ on Linux), or load it for one run with
-- `tshark -X lua_script:tools/wireshark/orderwire.lua ...`. docs/WIRESHARK.md
-- has the details, the filter field names and examples.
--
-- Registration:
--   * on UDP port 7400 (`orderwire serve`'s default), changeable in
--     Preferences > Protocols > ORDERWIRE (tshark: -o orderwire.udp_port:N,
--     0 turns the port registration off). Everything on that port is decoded
--     as orderwire, so a bad magic is reported rather than ignored.
--   * as the heuristic UDP dissector "orderwire_udp" on every port: it claims
--     a datagram of at least 12 bytes that starts with "OW" (0x4F 0x57) and
--     version 1, and leaves everything else to other dissectors.
--
-- Field names are flat: orderwire.<docs/PROTOCOL.md field name>, one field per
-- name across all frame kinds, so `orderwire.account_id == 7` finds account
-- 7 in any command or report. The one docs/PROTOCOL.md name with several
-- meanings, `reason`, is orderwire.reject_reason (Rejected, u16),
-- orderwire.cancel_reason (Cancelled, u8) and
-- orderwire.session_close_reason (SessionClosed, u8). OrderStatus's `state`
-- is orderwire.order_state.
--
-- Malformed datagrams are marked with expert infos of group Malformed,
-- severity Error, one per cause; each cause has its own expert field
-- (orderwire.bad_magic, ...) named after the codec's CodecError
-- (codec/error.h), and its message starts with that name (BadMagic: ...), the
-- name the service counts its drops under. Checks follow
-- docs/PROTOCOL.md: size limit, header length, magic, version,
-- flags, reserved, frame_count, then the frames in order. Unlike the service,
-- which stops at the first cause, the dissector reports every cause it can
-- still see; after a bad magic or version it decodes only the header,
-- because nothing says what follows.

local kHeaderSize = 12
local kFlagAuthenticated = 0x01 -- docs/PROTOCOL.md "Authenticated datagrams"
local kMacSize = 16
local kFrameHeaderSize = 9
local kMaxDatagramSize = 1472
local kMagic = 0x4F57 -- "OW", read big-endian so it shows as 0x4f57
local kVersion = 1
local kDefaultPort = 7400

local orderwire = Proto("orderwire", "Orderwire Protocol")

-- Enumerations, with the spellings of codec/types.h.
local kKindNames = {
  [0x01] = "NewLimit",
  [0x02] = "NewMarket",
  [0x03] = "CancelByOrder",
  [0x04] = "CancelByClient",
  [0x05] = "Replace",
  [0x06] = "MassCancel",
  [0x07] = "Heartbeat",
  [0x08] = "Goodbye",
  [0x09] = "OrderStatusRequest",
  [0x41] = "Accepted",
  [0x42] = "Rejected",
  [0x43] = "Filled",
  [0x44] = "Cancelled",
  [0x45] = "Replaced",
  [0x46] = "SequenceGap",
  [0x47] = "ReportsGone",
  [0x48] = "Busy",
  [0x49] = "MassCancelDone",
  [0x4A] = "HeartbeatAck",
  [0x4B] = "SessionClosed",
  [0x4C] = "OrderStatus",
}
-- The kinds a Rejected may name: the commands (a Heartbeat is not one).
local kCommandKindNames = {}
for kind = 0x01, 0x06 do kCommandKindNames[kind] = kKindNames[kind] end
for kind = 0x08, 0x09 do kCommandKindNames[kind] = kKindNames[kind] end
local kSideNames = { [1] = "Buy", [2] = "Sell" }
local kTimeInForceNames = {
  [1] = "GoodTillCancel",
  [2] = "ImmediateOrCancel",
  [3] = "FillOrKill",
  [4] = "PostOnly",
}
local kRejectReasonNames = {
  [1] = "UnknownInstrument",
  [2] = "InvalidSide",
  [3] = "InvalidTimeInForce",
  [4] = "InvalidPrice",
  [5] = "InvalidQuantity",
  [6] = "DuplicateClientOrderId",
  [7] = "UnknownOrder",
  [8] = "NotOwner",
  [9] = "WouldCross",
  [10] = "BookFull",
  [11] = "Unauthorized",
  [12] = "InvalidMassCancelScope",
}
local kCancelReasonNames = {
  [1] = "Requested",
  [2] = "ImmediateOrCancel",
  [3] = "FillOrKill",
  [4] = "SelfTrade",
  [5] = "NoLiquidity",
  [6] = "ReplacedAway",
  [7] = "MassCancel",
  [8] = "CancelOnDisconnect",
}
local kLiquidityNames = { [1] = "Maker", [2] = "Taker" }
local kPriorityKeptNames = { [1] = "Yes", [2] = "No" }
local kBusyCauseNames = { [1] = "JournalFull" }
local kMassCancelSideNames = { [1] = "Buy", [2] = "Sell", [3] = "Both" }
local kMassCancelScopeNames = { [1] = "Account", [2] = "Instrument" }
local kSessionCloseReasonNames = { [1] = "Goodbye", [2] = "Lapsed" }
local kOrderStateNames = { [1] = "Live", [2] = "NotLive" }

-- Protocol fields. `size` is the wire width; `names` the enumeration, if any.
local F = {}
local kFieldSize = {}
local kFieldNames = {}
local function Field(key, proto_field, size, names)
  F[key] = proto_field
  kFieldSize[key] = size
  kFieldNames[key] = names
end

-- Datagram header.
Field("magic", ProtoField.uint16("orderwire.magic", "Magic", base.HEX), 2)
Field("version", ProtoField.uint8("orderwire.version", "Version", base.DEC), 1)
Field("flags", ProtoField.uint8("orderwire.flags", "Flags", base.HEX), 1)
Field("flag_authenticated",
      ProtoField.bool("orderwire.flags.authenticated", "Authenticated", 8,
                      nil, kFlagAuthenticated), 1)
Field("session_id",
      ProtoField.uint32("orderwire.session_id", "Session ID", base.DEC_HEX), 4)
Field("frame_count",
      ProtoField.uint16("orderwire.frame_count", "Frame count", base.DEC), 2)
Field("reserved",
      ProtoField.uint16("orderwire.reserved", "Reserved", base.HEX), 2)

-- Frames.
Field("frame", ProtoField.none("orderwire.frame", "Frame"), 0)
Field("sequence",
      ProtoField.uint64("orderwire.sequence", "Sequence", base.DEC), 8)
Field("kind",
      ProtoField.uint8("orderwire.kind", "Kind", base.HEX, kKindNames), 1,
      kKindNames)

-- Frame bodies: one field per docs/PROTOCOL.md name.
local function U64(key, label)
  Field(key, ProtoField.uint64("orderwire." .. key, label, base.DEC), 8)
end
U64("account_id", "Account ID")
U64("client_order_id", "Client order ID")
U64("new_client_order_id", "New client order ID")
U64("order_id", "Order ID")
U64("match_id", "Match ID")
U64("quantity", "Quantity")
U64("leaves_quantity", "Leaves quantity")
U64("executed_quantity", "Executed quantity")
U64("cancelled_quantity", "Cancelled quantity")
U64("expected_sequence", "Expected sequence")
U64("resend_command", "Resend from command")
U64("resend_from", "Resend from report")
U64("request_id", "Request ID")
U64("nonce", "Nonce")
U64("next_report", "Next report")
Field("cancelled_orders",
      ProtoField.uint32("orderwire.cancelled_orders", "Cancelled orders",
                        base.DEC), 4)
Field("mass_cancel_side",
      ProtoField.uint8("orderwire.mass_cancel_side", "Side", base.DEC,
                       kMassCancelSideNames), 1, kMassCancelSideNames)
Field("scope",
      ProtoField.uint8("orderwire.scope", "Scope", base.DEC,
                       kMassCancelScopeNames), 1, kMassCancelScopeNames)
Field("instrument_id",
      ProtoField.uint32("orderwire.instrument_id", "Instrument ID", base.DEC),
      4)
Field("price", ProtoField.int64("orderwire.price", "Price", base.DEC), 8)
Field("side", ProtoField.uint8("orderwire.side", "Side", base.DEC, kSideNames),
      1, kSideNames)
Field("time_in_force",
      ProtoField.uint8("orderwire.time_in_force", "Time in force", base.DEC,
                       kTimeInForceNames), 1, kTimeInForceNames)
Field("liquidity",
      ProtoField.uint8("orderwire.liquidity", "Liquidity", base.DEC,
                       kLiquidityNames), 1, kLiquidityNames)
Field("priority_kept",
      ProtoField.uint8("orderwire.priority_kept", "Priority kept", base.DEC,
                       kPriorityKeptNames), 1, kPriorityKeptNames)
Field("command_kind",
      ProtoField.uint8("orderwire.command_kind", "Command kind", base.HEX,
                       kCommandKindNames), 1, kCommandKindNames)
Field("reject_reason",
      ProtoField.uint16("orderwire.reject_reason", "Reason", base.DEC,
                        kRejectReasonNames), 2, kRejectReasonNames)
Field("cancel_reason",
      ProtoField.uint8("orderwire.cancel_reason", "Reason", base.DEC,
                       kCancelReasonNames), 1, kCancelReasonNames)
Field("busy_cause",
      ProtoField.uint8("orderwire.busy_cause", "Cause", base.DEC,
                       kBusyCauseNames), 1, kBusyCauseNames)
Field("session_close_reason",
      ProtoField.uint8("orderwire.session_close_reason", "Reason", base.DEC,
                       kSessionCloseReasonNames), 1, kSessionCloseReasonNames)
Field("order_state",
      ProtoField.uint8("orderwire.order_state", "State", base.DEC,
                       kOrderStateNames), 1, kOrderStateNames)

-- docs/CONTROLS.md "Order status": every field of a NotLive OrderStatus but
-- the request's ids is 0, its side too, so side 0 is defined there. True for
-- the side of an OrderStatus frame whose state (body offset 29) is 2 NotLive.
local kOrderStatusStateAt = kFrameHeaderSize + 29
local function NotLiveSide(kind, key, tvb, pos, stop)
  if kind ~= 0x4C or key ~= "side" then return false end
  local at = pos + kOrderStatusStateAt
  return at < stop and tvb(at, 1):uint() == 2
end

-- Bytes the dissector cannot delimit (after an unknown kind, a bad magic or
-- version) or that follow the last frame.
Field("undecoded", ProtoField.bytes("orderwire.undecoded", "Undecoded"), 0)
Field("trailing", ProtoField.bytes("orderwire.trailing", "Trailing bytes"), 0)
-- The MAC trailer of an authenticated datagram. The dissector has no key,
-- so it shows the trailer and checks its place and size, not its value.
Field("mac", ProtoField.bytes("orderwire.mac", "MAC"), kMacSize)

local proto_fields = {}
for _, f in pairs(F) do proto_fields[#proto_fields + 1] = f end
orderwire.fields = proto_fields

-- The frame kinds: body fields in wire order, as {docs/PROTOCOL.md name, field key}
-- (they differ only for `reason`, `cause`, `state` and MassCancel's `side`), and docs/PROTOCOL.md's frame size, which the
-- field widths must add up to (checked below, at load time).
local kKinds = {
  [0x01] = { frame_size = 47, body = {
    "account_id", "client_order_id", "instrument_id", "side",
    "time_in_force", "price", "quantity" } },
  [0x02] = { frame_size = 38, body = {
    "account_id", "client_order_id", "instrument_id", "side", "quantity" } },
  [0x03] = { frame_size = 25, body = { "account_id", "order_id" } },
  [0x04] = { frame_size = 25, body = { "account_id", "client_order_id" } },
  [0x05] = { frame_size = 49, body = {
    "account_id", "order_id", "new_client_order_id", "price", "quantity" } },
  [0x06] = { frame_size = 31, body = {
    "account_id", "request_id", "instrument_id",
    { "side", "mass_cancel_side" }, "scope" } },
  [0x07] = { frame_size = 17, body = { "nonce" } },
  [0x08] = { frame_size = 25, body = { "account_id", "request_id" } },
  [0x09] = { frame_size = 33, body = {
    "account_id", "order_id", "client_order_id" } },
  [0x41] = { frame_size = 55, body = {
    "order_id", "account_id", "client_order_id", "instrument_id", "side",
    "time_in_force", "price", "quantity" } },
  [0x42] = { frame_size = 36, body = {
    "account_id", "client_order_id", "order_id", "command_kind",
    { "reason", "reject_reason" } } },
  [0x43] = { frame_size = 71, body = {
    "order_id", "account_id", "client_order_id", "match_id",
    "instrument_id", "side", "liquidity", "price", "quantity",
    "leaves_quantity" } },
  [0x44] = { frame_size = 46, body = {
    "order_id", "account_id", "client_order_id", "instrument_id",
    "cancelled_quantity", { "reason", "cancel_reason" } } },
  [0x45] = { frame_size = 50, body = {
    "order_id", "account_id", "client_order_id", "price", "quantity",
    "priority_kept" } },
  [0x46] = { frame_size = 17, body = { "expected_sequence" } },
  [0x47] = { frame_size = 25, body = { "resend_command", "resend_from" } },
  [0x48] = { frame_size = 18, body = {
    "expected_sequence", { "cause", "busy_cause" } } },
  [0x49] = { frame_size = 35, body = {
    "account_id", "request_id", "instrument_id",
    { "side", "mass_cancel_side" }, "scope", "cancelled_orders" } },
  [0x4A] = { frame_size = 33, body = {
    "nonce", "expected_sequence", "next_report" } },
  [0x4B] = { frame_size = 30, body = {
    "account_id", "request_id", { "reason", "session_close_reason" },
    "cancelled_orders" } },
  [0x4C] = { frame_size = 63, body = {
    "order_id", "account_id", "client_order_id", "instrument_id", "side",
    { "state", "order_state" }, "price", "leaves_quantity",
    "executed_quantity" } },
}
for kind, info in pairs(kKinds) do
  info.name = kKindNames[kind]
  info.is_command = kind < 0x40
  local size = kFrameHeaderSize
  for i, entry in ipairs(info.body) do
    if type(entry) == "string" then
      entry = { entry, entry }
      info.body[i] = entry
    end
    assert(F[entry[2]], "orderwire.lua: no field " .. entry[2])
    size = size + kFieldSize[entry[2]]
  end
  assert(size == info.frame_size,
         string.format("orderwire.lua: %s fields add up to %d bytes, " ..
                       "docs/PROTOCOL.md says %d", info.name, size, info.frame_size))
end

-- Expert infos. Malformations are errors (the service drops the datagram);
-- an enumeration value the protocol does not define is only a warning (the
-- frame is well-formed and the engine answers it with Rejected).
local function Malformed(key, text)
  return ProtoExpert.new("orderwire." .. key, text, expert.group.MALFORMED,
                         expert.severity.ERROR)
end
local E = {
  oversize = Malformed("oversize", "Datagram longer than 1472 bytes"),
  truncated = Malformed("truncated", "Truncated header or frame"),
  bad_magic = Malformed("bad_magic", "Bad magic"),
  bad_version = Malformed("bad_version", "Unsupported version"),
  bad_flags = Malformed("bad_flags", "Unknown flag bits"),
  bad_reserved = Malformed("bad_reserved", "Reserved field not 0"),
  zero_frame_count = Malformed("zero_frame_count", "frame_count is 0"),
  count_mismatch = Malformed("count_mismatch",
                             "Fewer frames than frame_count"),
  unknown_kind = Malformed("unknown_kind", "Unknown frame kind"),
  trailing_bytes = Malformed("trailing_bytes",
                             "Bytes after frame_count frames"),
  not_a_command = Malformed("not_a_command",
                            "Report frame in a datagram to the service"),
  not_a_report = Malformed("not_a_report",
                           "Command frame in a datagram from the service"),
  mixed_directions = Malformed("mixed_directions",
                               "Command and report frames in one datagram"),
  invalid_enum = ProtoExpert.new("orderwire.invalid_enum",
                                 "Enumeration value not defined",
                                 expert.group.PROTOCOL, expert.severity.WARN),
  short_capture = ProtoExpert.new("orderwire.short_capture",
                                  "Datagram cut short by the capture",
                                  expert.group.UNDECODED, expert.severity.WARN),
}
local expert_list = {}
for _, e in pairs(E) do expert_list[#expert_list + 1] = e end
orderwire.experts = expert_list

orderwire.prefs.udp_port = Pref.uint(
  "UDP port", kDefaultPort,
  "UDP port of the orderwire service (orderwire serve's default is 7400); " ..
  "every datagram to or from it is decoded as orderwire. 0: none.")

local function Plural(n, word)
  if n == 1 then return string.format("%d %s", n, word) end
  return string.format("%d %ss", n, word)
end

-- Adds the subtree of the frame at `pos` with as many of its fields as the
-- `available` bytes hold in full; warns of undefined enumeration values.
-- Returns the subtree item, the kind (nil when fewer than 9 bytes are left)
-- and the kind's entry of kKinds (nil for an unknown kind). `frame_number`
-- counts from 1.
local function AddFrame(state, frame_number, pos, available)
  local tvb = state.tvb
  local kind = available >= kFrameHeaderSize and tvb(pos + 8, 1):uint() or nil
  local info = kind and kKinds[kind] or nil
  local size = info and math.min(info.frame_size, available) or
               math.min(available, kFrameHeaderSize)
  local item = state.root:add(F.frame, tvb(pos, size))
  local label
  if info then
    label = string.format("Frame %d: %s (0x%02x)", frame_number, info.name,
                          kind)
  elseif kind then
    label = string.format("Frame %d: unknown kind 0x%02x", frame_number, kind)
  else
    label = string.format("Frame %d", frame_number)
  end
  if available >= 8 then
    local sequence = tvb(pos, 8):le_uint64()
    item:add_le(F.sequence, tvb(pos, 8))
    label = label .. ", sequence " .. tostring(sequence)
    if info then
      state.summary[#state.summary + 1] =
        string.format("%s #%s", info.name, tostring(sequence))
    end
  end
  if kind then item:add(F.kind, tvb(pos + 8, 1)) end
  item:set_text(label)
  if not info then return item, kind, nil end

  local offset = pos + kFrameHeaderSize
  local stop = pos + size
  for _, entry in ipairs(info.body) do
    local name, key = entry[1], entry[2]
    local width = kFieldSize[key]
    if offset + width > stop then break end
    local field_item = item:add_le(F[key], tvb(offset, width))
    local names = kFieldNames[key]
    if names then
      local value = tvb(offset, width):le_uint()
      if not names[value] and
          not (value == 0 and NotLiveSide(kind, key, tvb, pos, stop)) then
        field_item:add_proto_expert_info(E.invalid_enum, string.format(
          "%s %d is not defined by docs/PROTOCOL.md (%s frame)", name, value,
          info.name))
      end
    end
    offset = offset + width
  end
  return item, kind, info
end

local function Error(state, item, expert_info, cause, text)
  item:add_proto_expert_info(expert_info, cause .. ": " .. text)
  state.causes[#state.causes + 1] = cause
end

-- Dissects a whole datagram. Returns the number of bytes consumed (all).
local function Dissect(tvb, pinfo, tree)
  local length = tvb:captured_len()
  local reported = tvb:reported_len()
  local state = {
    tvb = tvb,
    root = tree:add(orderwire, tvb()),
    causes = {},
    summary = {},
  }
  local root = state.root
  pinfo.cols.protocol = "ORDERWIRE"

  local function Finish(text)
    root:append_text(", " .. text)
    local info = text
    if #state.causes > 0 then
      info = info .. " [Malformed: " .. table.concat(state.causes, ", ") .. "]"
    end
    pinfo.cols.info:set(info)
    return length
  end
  local function Undecoded(pos, why)
    if pos < length then
      root:add(F.undecoded, tvb(pos, length - pos)):append_text(" (" .. why ..
                                                                ")")
    end
  end

  if reported > kMaxDatagramSize then
    Error(state, root, E.oversize, "Oversize", string.format(
      "datagram is %d bytes, the limit is %d", reported, kMaxDatagramSize))
  end
  if length < reported then
    root:add_proto_expert_info(E.short_capture, string.format(
      "the capture holds %d of the datagram's %d bytes; nothing past byte " ..
      "%d is checked", length, reported, length))
  end

  -- Header: every field that fits, then its checks.
  local header = {
    { "magic", 0, false }, { "version", 2, true }, { "flags", 3, true },
    { "session_id", 4, true }, { "frame_count", 8, true },
    { "reserved", 10, true },
  }
  local items = {}
  for _, h in ipairs(header) do
    local key, offset, little = h[1], h[2], h[3]
    local width = kFieldSize[key]
    if offset + width <= length then
      local range = tvb(offset, width)
      items[key] = little and root:add_le(F[key], range) or
                   root:add(F[key], range)
    end
  end
  if items.magic and tvb(0, 2):uint() == kMagic then
    items.magic:append_text(' ("OW")')
  end
  if length < kHeaderSize then
    if length == reported then
      Error(state, root, E.truncated, "Truncated", string.format(
        "datagram has %s, a datagram header needs %d",
        Plural(length, "byte"), kHeaderSize))
    end
    return Finish(Plural(length, "byte"))
  end

  local magic = tvb(0, 2):uint()
  if magic ~= kMagic then
    Error(state, items.magic, E.bad_magic, "BadMagic", string.format(
      'datagram starts 0x%04x, not "OW" (0x4f57)', magic))
    Undecoded(kHeaderSize, "not orderwire")
    return Finish(Plural(reported, "byte"))
  end
  local version = tvb(2, 1):uint()
  if version ~= kVersion then
    Error(state, items.version, E.bad_version, "BadVersion", string.format(
      "version %d, this dissector knows version %d", version, kVersion))
    Undecoded(kHeaderSize, "unknown version")
    return Finish(Plural(reported, "byte"))
  end
  local flags = tvb(3, 1):uint()
  items.flags:add(F.flag_authenticated, tvb(3, 1))
  if bit32.band(flags, bit32.bnot(kFlagAuthenticated)) ~= 0 then
    Error(state, items.flags, E.bad_flags, "BadFlags", string.format(
      "flags 0x%02x, version 1 defines only 0x01 (Authenticated)", flags))
  end
  -- With the Authenticated flag the last 16 bytes are the MAC trailer and
  -- the frames end before them.
  local authenticated = bit32.band(flags, kFlagAuthenticated) ~= 0
  local frames_end = length
  if authenticated then
    if reported < kHeaderSize + kMacSize then
      Error(state, items.flags, E.truncated, "Truncated", string.format(
        "the Authenticated flag is set and the datagram has %s, a header " ..
        "and a MAC trailer need %d", Plural(reported, "byte"),
        kHeaderSize + kMacSize))
      Undecoded(kHeaderSize, "no room for the MAC trailer")
      return Finish(Plural(reported, "byte"))
    end
    frames_end = math.min(length, reported - kMacSize)
  end
  local reserved = tvb(10, 2):le_uint()
  if reserved ~= 0 then
    Error(state, items.reserved, E.bad_reserved, "BadReserved", string.format(
      "reserved is 0x%04x, must be 0", reserved))
  end
  local session_id = tvb(4, 4):le_uint()
  local frame_count = tvb(8, 2):le_uint()
  if frame_count == 0 then
    Error(state, items.frame_count, E.zero_frame_count, "ZeroFrameCount",
          "frame_count is 0, a datagram holds at least 1 frame")
  end

  -- Which way the datagram goes, if one end is the service's port.
  local port = orderwire.prefs.udp_port
  local to_service = port ~= 0 and pinfo.dst_port == port and
                     pinfo.src_port ~= port
  local from_service = port ~= 0 and pinfo.src_port == port and
                       pinfo.dst_port ~= port

  local pos = kHeaderSize
  local decoded = 0
  local commands, reports = 0, 0
  local delimited = true
  while decoded < frame_count do
    local available = frames_end - pos
    if available == 0 then
      if length == reported then
        Error(state, items.frame_count, E.count_mismatch, "CountMismatch",
              string.format("frame_count is %d, the datagram ends after %s",
                            frame_count, Plural(decoded, "frame")))
      end
      break
    end
    local item, kind, info = AddFrame(state, decoded + 1, pos, available)
    if kind == nil then
      if length == reported then
        Error(state, item, E.truncated, "Truncated", string.format(
          "frame %d has %s, a frame header needs %d", decoded + 1,
          Plural(available, "byte"), kFrameHeaderSize))
      end
      delimited = false
      break
    end
    if info == nil then
      Error(state, item, E.unknown_kind, "UnknownKind", string.format(
        "frame %d has kind 0x%02x, which docs/PROTOCOL.md does not define; the " ..
        "frames after it cannot be delimited", decoded + 1, kind))
      Undecoded(pos + kFrameHeaderSize, "after an unknown kind")
      delimited = false
      break
    end
    if available < info.frame_size then
      if length == reported then
        Error(state, item, E.truncated, "Truncated", string.format(
          "frame %d (%s) needs %d bytes, %s left", decoded + 1, info.name,
          info.frame_size, Plural(available, "byte")))
      end
      delimited = false
      break
    end
    if info.is_command then
      commands = commands + 1
      if from_service then
        Error(state, item, E.not_a_report, "NotAReport", string.format(
          "frame %d (%s) is a command, in a datagram from service port %d",
          decoded + 1, info.name, port))
      end
    else
      reports = reports + 1
      if to_service then
        Error(state, item, E.not_a_command, "NotACommand", string.format(
          "frame %d (%s) is a report, in a datagram to service port %d",
          decoded + 1, info.name, port))
      end
    end
    pos = pos + info.frame_size
    decoded = decoded + 1
  end
  if not to_service and not from_service and commands > 0 and reports > 0 then
    Error(state, root, E.mixed_directions, "MixedDirections", string.format(
      "%s and %s in one datagram: malformed in either direction",
      Plural(commands, "command"), Plural(reports, "report")))
  end
  if delimited and pos < frames_end then
    local item = root:add(F.trailing, tvb(pos, frames_end - pos))
    Error(state, item, E.trailing_bytes, "TrailingBytes", string.format(
      "%s after the %s frame_count announces", Plural(frames_end - pos, "byte"),
      Plural(frame_count, "frame")))
  end

  if authenticated and frames_end + kMacSize <= length then
    root:add(F.mac, tvb(frames_end, kMacSize)):append_text(
      " (not verified: the dissector has no key)")
  end

  local summary = table.concat(state.summary, ", ")
  if summary == "" then summary = "no frames" end
  if authenticated then summary = summary .. " [MAC]" end
  root:append_text(string.format(", Session %d, %s", session_id,
                                 Plural(frame_count, "frame")))
  local info = string.format("Session %d: %s", session_id, summary)
  if #state.causes > 0 then
    info = info .. " [Malformed: " .. table.concat(state.causes, ", ") .. "]"
  end
  pinfo.cols.info:set(info)
  return length
end

function orderwire.dissector(tvb, pinfo, tree)
  return Dissect(tvb, pinfo, tree)
end

-- Claims a datagram on any UDP port when it starts "OW", version 1.
local function Heuristic(tvb, pinfo, tree)
  if tvb:captured_len() < kHeaderSize then return false end
  if tvb(0, 2):uint() ~= kMagic or tvb(2, 1):uint() ~= kVersion then
    return false
  end
  Dissect(tvb, pinfo, tree)
  return true
end
orderwire:register_heuristic("udp", Heuristic)

-- The port registration follows the preference.
local registered_port = 0
local function RegisterPort()
  local port = orderwire.prefs.udp_port
  if port == registered_port then return end
  local udp_table = DissectorTable.get("udp.port")
  if registered_port ~= 0 then udp_table:remove(registered_port, orderwire) end
  if port ~= 0 then udp_table:add(port, orderwire) end
  registered_port = port
end
orderwire.prefs_changed = RegisterPort
RegisterPort()
