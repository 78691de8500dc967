-- Wireshark / tshark dissector for the orderwire market-data feed, version 1
-- (docs/MARKETDATA.md: a 24-byte packet header, then `count` length-prefixed
-- message blocks, a Refused or SnapshotRequest body, or nothing).
--
-- A protocol of its own, "orderwire_md", in a file of its own: install it
-- beside orderwire.lua (order entry) or alone; neither needs the other.
-- docs/WIRESHARK.md has the install steps, the field names and examples.
--
-- Registration:
--   * on the UDP ports of the preference "UDP ports" (a range such as
--     "7401,7402"; empty by default: the feed has no default port).
--     Everything on them is decoded as orderwire_md, so a bad magic is
--     reported rather than ignored. tshark: -o orderwire_md.udp_ports:7401
--   * as the heuristic UDP dissector "orderwire_md_udp" on every port: it
--     claims a datagram of at least 24 bytes that starts with "OM"
--     (0x4F 0x4D) and version 1, and leaves everything else to others.
--
-- Field names are flat: orderwire_md.<docs/MARKETDATA.md field name>, one
-- field per name across all message kinds. The layouts below are checked
-- against feed/messages.h and feed/packet.h by tests/dissector
-- (md_dissector_test.py compares every decoded field's name, offset and
-- width with what feed_layouts prints from the C++ layouts).
--
-- Malformed packets get one expert info per cause, group Malformed,
-- severity Error, named as docs/MARKETDATA.md "Checks" names them (the
-- message starts with the name: "BadToken: ..."), in that section's order.
-- A subscriber drops a packet at its first cause; the dissector reports
-- every cause it can still see and stops where the rest cannot be
-- delimited (bad magic, version or type; a truncated block).

local kHeaderSize = 24
local kMaxPacketSize = 1452
local kMagic = 0x4F4D -- "OM", read big-endian so it shows as 0x4f4d
local kVersion = 1
local kBlockLengthSize = 2
local kMinMessageLength = 9 -- kind and timestamp
local kRefusedBodySize = 17
local kSnapshotRequestBodySize = 4

local md = Proto("orderwire_md", "Orderwire Market Data")

-- Enumerations, with the spellings of feed/types.h and codec/types.h.
local kTypeNames = {
  [0x01] = "Data",
  [0x02] = "Heartbeat",
  [0x03] = "EndOfSession",
  [0x04] = "Snapshot",
  [0x05] = "Refused",
  [0x11] = "RetransmitRequest",
  [0x12] = "SnapshotRequest",
}
local kKindNames = {
  [0x53] = "SystemEvent",
  [0x52] = "InstrumentDirectory",
  [0x48] = "TradingStatus",
  [0x41] = "OrderAdded",
  [0x45] = "OrderExecuted",
  [0x58] = "OrderReduced",
  [0x44] = "OrderDeleted",
  [0x55] = "OrderReplaced",
  [0x47] = "SnapshotStart",
  [0x5A] = "SnapshotEnd",
}
local kSideNames = { [1] = "Buy", [2] = "Sell" }
local kEventNames = { [1] = "StartOfFeed", [2] = "EndOfFeed" }
local kStateNames = { [1] = "Trading", [2] = "Halted", [3] = "Unlisted" }
local kReasonNames = {
  [1] = "NotRetained",
  [2] = "BeyondEnd",
  [3] = "WrongSession",
  [4] = "RateLimited",
  [5] = "UnknownInstrument",
  [6] = "Unavailable",
}

-- Protocol fields. `size` is the wire width; `names` the enumeration.
local F = {}
local kFieldSize = {}
local kFieldNames = {}
local function Field(key, proto_field, size, names)
  F[key] = proto_field
  kFieldSize[key] = size
  kFieldNames[key] = names
end
local function U64(key, label)
  Field(key, ProtoField.uint64("orderwire_md." .. key, label, base.DEC), 8)
end
local function I64(key, label)
  Field(key, ProtoField.int64("orderwire_md." .. key, label, base.DEC), 8)
end
local function U32(key, label)
  Field(key, ProtoField.uint32("orderwire_md." .. key, label, base.DEC), 4)
end
local function Enum8(key, label, names, display)
  Field(key, ProtoField.uint8("orderwire_md." .. key, label,
                              display or base.DEC, names), 1, names)
end

-- Packet header.
Field("magic", ProtoField.uint16("orderwire_md.magic", "Magic", base.HEX), 2)
Field("version",
      ProtoField.uint8("orderwire_md.version", "Version", base.DEC), 1)
Enum8("type", "Type", kTypeNames, base.HEX)
Field("session",
      ProtoField.uint64("orderwire_md.session", "Session", base.HEX), 8)
U64("sequence", "Sequence")
Field("count", ProtoField.uint16("orderwire_md.count", "Count", base.DEC), 2)
Field("token", ProtoField.uint16("orderwire_md.token", "Token", base.DEC), 2)

-- Refused and SnapshotRequest bodies (instrument_id is shared with the
-- messages').
Enum8("reason", "Reason", kReasonNames)
U64("first_retained", "First retained")
U64("next_sequence", "Next sequence")
U32("instrument_id", "Instrument ID")

-- Message blocks.
Field("message", ProtoField.none("orderwire_md.message", "Message"), 0)
Field("length",
      ProtoField.uint16("orderwire_md.length", "Length", base.DEC), 2)
Field("message_sequence",
      ProtoField.uint64("orderwire_md.message_sequence",
                        "Message sequence (implicit)", base.DEC), 0)
Enum8("kind", "Kind", kKindNames, base.HEX)
U64("timestamp", "Timestamp")
Enum8("event", "Event", kEventNames)
I64("min_price", "Min price")
I64("max_price", "Max price")
U64("min_quantity", "Min quantity")
U64("max_quantity", "Max quantity")
Enum8("state", "State", kStateNames)
U64("order_id", "Order ID")
Enum8("side", "Side", kSideNames)
I64("price", "Price")
U64("quantity", "Quantity")
U64("match_id", "Match ID")
U64("cancelled_quantity", "Cancelled quantity")
U64("feed_sequence", "Feed sequence")
Field("message_count",
      ProtoField.uint32("orderwire_md.message_count", "Message count",
                        base.DEC), 4)
-- The bytes of a skipped block (unknown kind), of a known kind's block
-- beyond its size (a later revision's fields), and what cannot be
-- delimited or follows the packet's content.
Field("skipped", ProtoField.bytes("orderwire_md.skipped", "Skipped"), 0)
Field("extra", ProtoField.bytes("orderwire_md.extra", "Extra bytes"), 0)
Field("undecoded",
      ProtoField.bytes("orderwire_md.undecoded", "Undecoded"), 0)
Field("trailing",
      ProtoField.bytes("orderwire_md.trailing", "Trailing bytes"), 0)

local proto_fields = {}
for _, f in pairs(F) do proto_fields[#proto_fields + 1] = f end
md.fields = proto_fields

-- Message kinds: fields after the kind byte in wire order (docs/MARKETDATA.md
-- "Messages"), the message size they add up to (checked here, at load
-- time, and against feed/messages.h by the test), and the packet types
-- that may carry the kind ("Checks": MisplacedKind).
local kBoth = { [1] = true, [4] = true }
local kDataOnly = { [1] = true }
local kSnapshotOnly = { [4] = true }
local kKinds = {
  [0x53] = { size = 10, carriers = kDataOnly, body = { "event" } },
  [0x52] = { size = 45, carriers = kBoth, body = {
    "instrument_id", "min_price", "max_price", "min_quantity",
    "max_quantity" } },
  [0x48] = { size = 14, carriers = kBoth, body = { "instrument_id", "state" } },
  [0x41] = { size = 38, carriers = kBoth, body = {
    "order_id", "instrument_id", "side", "price", "quantity" } },
  [0x45] = { size = 46, carriers = kDataOnly, body = {
    "order_id", "instrument_id", "side", "match_id", "price", "quantity" } },
  [0x58] = { size = 29, carriers = kDataOnly, body = {
    "order_id", "instrument_id", "cancelled_quantity" } },
  [0x44] = { size = 21, carriers = kDataOnly, body = {
    "order_id", "instrument_id" } },
  [0x55] = { size = 37, carriers = kDataOnly, body = {
    "order_id", "instrument_id", "price", "quantity" } },
  [0x47] = { size = 25, carriers = kSnapshotOnly, body = {
    "feed_sequence", "instrument_id", "message_count" } },
  [0x5A] = { size = 17, carriers = kSnapshotOnly, body = { "feed_sequence" } },
}
for kind, info in pairs(kKinds) do
  info.name = kKindNames[kind]
  table.insert(info.body, 1, "timestamp")
  local size = 1
  for _, key in ipairs(info.body) do
    assert(F[key], "orderwire_md.lua: no field " .. key)
    size = size + kFieldSize[key]
  end
  assert(size == info.size,
         string.format("orderwire_md.lua: %s fields add up to %d bytes, " ..
                       "docs/MARKETDATA.md says %d", info.name, size,
                       info.size))
end
local kRefusedBody = { "reason", "first_retained", "next_sequence" }
local kSnapshotRequestBody = { "instrument_id" }

-- Per packet type: whether it carries message blocks or a body of a fixed
-- size, and the header rules of "Checks" (token, sequence, count).
--   token: "zero" must be 0, "nonzero" must not be 0, nil either.
--   sequence: "nonzero" or "zero"; count: "nonzero" (ZeroCount) or "zero"
--   (BadCount).
local kTypes = {
  [0x01] = { blocks = true, sequence = "nonzero", count = "nonzero",
             session = true },
  [0x02] = { body = 0, token = "zero", sequence = "nonzero", count = "zero",
             session = true },
  [0x03] = { body = 0, token = "zero", sequence = "nonzero", count = "zero",
             session = true },
  [0x04] = { blocks = true, token = "nonzero", sequence = "nonzero",
             count = "nonzero", session = true },
  [0x05] = { body = kRefusedBodySize, fields = kRefusedBody,
             token = "nonzero", count = "zero" },
  [0x11] = { body = 0, token = "nonzero", sequence = "nonzero",
             count = "nonzero" },
  [0x12] = { body = kSnapshotRequestBodySize, fields = kSnapshotRequestBody,
             token = "nonzero", sequence = "zero", count = "zero" },
}

-- Expert infos: the causes of docs/MARKETDATA.md "Checks" (feed/types.h
-- CheckCause), then two warnings and a note that are not malformations.
local function Malformed(key, text)
  return ProtoExpert.new("orderwire_md." .. key, text, expert.group.MALFORMED,
                         expert.severity.ERROR)
end
local E = {
  oversize = Malformed("oversize", "Packet longer than 1452 bytes"),
  truncated = Malformed("truncated", "Truncated header, body or block"),
  bad_magic = Malformed("bad_magic", "Bad magic"),
  bad_version = Malformed("bad_version", "Unsupported version"),
  bad_type = Malformed("bad_type", "Unknown packet type"),
  other_session = Malformed("other_session", "Not the session followed"),
  bad_token = Malformed("bad_token", "Token 0 in a reply, or not 0"),
  bad_sequence = Malformed("bad_sequence", "Sequence 0, or not 0"),
  bad_count = Malformed("bad_count", "Count not 0 where no messages go"),
  zero_count = Malformed("zero_count", "Count 0 where messages go"),
  count_mismatch = Malformed("count_mismatch", "Fewer blocks than count"),
  bad_length = Malformed("bad_length", "Block length below the message's"),
  misplaced_kind = Malformed("misplaced_kind",
                             "Message kind in the wrong packet type"),
  trailing_bytes = Malformed("trailing_bytes", "Bytes after the content"),
  unknown_kind = ProtoExpert.new("orderwire_md.unknown_kind",
                                 "Unknown message kind, skipped",
                                 expert.group.UNDECODED, expert.severity.NOTE),
  invalid_enum = ProtoExpert.new("orderwire_md.invalid_enum",
                                 "Enumeration value not defined",
                                 expert.group.PROTOCOL, expert.severity.WARN),
  short_capture = ProtoExpert.new("orderwire_md.short_capture",
                                  "Packet cut short by the capture",
                                  expert.group.UNDECODED, expert.severity.WARN),
}
local expert_list = {}
for _, e in pairs(E) do expert_list[#expert_list + 1] = e end
md.experts = expert_list

md.prefs.udp_ports = Pref.range(
  "UDP ports", "",
  "UDP ports of the feed and of the request server (e.g. 7401,7402): " ..
  "every datagram to or from them is decoded as orderwire_md. Empty: none " ..
  "(the heuristic still finds the feed).", 65535)
md.prefs.session = Pref.string(
  "Session followed", "",
  "The feed session a subscriber follows, in hex (0123456789abcdef): " ..
  "Data, Heartbeat, EndOfSession and Snapshot packets of another session " ..
  "are flagged OtherSession. Empty: any session.")

local function Plural(n, word)
  if n == 1 then return string.format("%d %s", n, word) end
  return string.format("%d %ss", n, word)
end

local function Error(state, item, expert_info, cause, text)
  item:add_proto_expert_info(expert_info, cause .. ": " .. text)
  state.causes[#state.causes + 1] = cause
end

-- Adds `keys`' fields from `pos` on, as many as end by `stop`; warns of
-- undefined enumeration values. `what` names the message or body. Returns
-- the items added, by key.
local function AddFields(state, item, keys, pos, stop, what)
  local tvb = state.tvb
  local added = {}
  for _, key in ipairs(keys) do
    local width = kFieldSize[key]
    if pos + width > stop then break end
    local field_item = item:add_le(F[key], tvb(pos, width))
    added[key] = field_item
    local names = kFieldNames[key]
    if names then
      local value = tvb(pos, width):le_uint()
      if not names[value] then
        local text = string.format(
          "%s %d is not defined by docs/MARKETDATA.md (%s)", key, value, what)
        if key == "reason" and value >= 7 then
          text = string.format("reason %d is reserved, taken as Unavailable " ..
                               "(%s)", value, what)
        end
        field_item:add_proto_expert_info(E.invalid_enum, text)
      end
    end
    pos = pos + width
  end
  return added
end

-- The timestamp in UTC, appended to its item (if any).
local function ShowTime(item, tvb, pos)
  if item == nil then return end
  local ns = tvb(pos, 8):le_uint64()
  local seconds = (ns / 1000000000):tonumber()
  local fraction = (ns % 1000000000):tonumber()
  item:append_text(string.format(" (%s.%09d UTC)",
                                 os.date("!%Y-%m-%d %H:%M:%S", seconds),
                                 fraction))
end

-- Decodes one block at `pos` (the n-th, counting from 1) of a Data or
-- Snapshot packet. Returns the position after it, or nil when the block
-- cannot be delimited (the packet is decoded no further).
local function AddBlock(state, n, pos, stop)
  local tvb, header = state.tvb, state.header
  local available = stop - pos
  local sequence = header.sequence + (n - 1)
  local length = available >= kBlockLengthSize and tvb(pos, 2):le_uint() or nil
  local size = math.min(available, kBlockLengthSize + (length or 0))
  local item = state.root:add(F.message, tvb(pos, size))
  local label = string.format("Message %d", n)
  if length then item:add_le(F.length, tvb(pos, 2)) end
  local gen = item:add(F.message_sequence, sequence)
  gen:set_generated()
  local body = pos + kBlockLengthSize
  local kind = size > kBlockLengthSize and tvb(body, 1):uint() or nil
  local info = kind and kKinds[kind] or nil
  if length == nil or available < kBlockLengthSize + length then
    item:set_text(label)
    if state.complete then
      Error(state, item, E.truncated, "Truncated", string.format(
        "block %d %s, %s left", n, length and string.format(
          "needs %d bytes", kBlockLengthSize + length) or
        "needs a 2-byte length", Plural(available, "byte")))
    end
    return nil
  end
  local message_end = body + length
  if info then
    label = string.format("Message %d: %s (0x%02x), %s %s", n, info.name,
                          kind, state.numbering, tostring(sequence))
    item:add(F.kind, tvb(body, 1))
    local added = AddFields(state, item, info.body, body + 1, message_end,
                            info.name)
    ShowTime(added.timestamp, tvb, body + 1)
    if length > info.size then
      item:add(F.extra, tvb(body + info.size, length - info.size))
          :append_text(" (ignored: fields of a later revision)")
    end
    state.summary[#state.summary + 1] =
      string.format("%s #%s", info.name, tostring(sequence))
  elseif kind then
    label = string.format("Message %d: unknown kind 0x%02x, %s %s, skipped",
                          n, kind, state.numbering, tostring(sequence))
    item:add(F.kind, tvb(body, 1))
    if length >= kMinMessageLength then
      item:add_le(F.timestamp, tvb(body + 1, 8))
      if length > kMinMessageLength then
        item:add(F.skipped, tvb(body + kMinMessageLength,
                                length - kMinMessageLength))
      end
    end
    state.summary[#state.summary + 1] =
      string.format("0x%02x #%s", kind, tostring(sequence))
  else
    label = label .. ", empty"
  end
  item:set_text(label)
  if length < kMinMessageLength or (info and length < info.size) then
    Error(state, item, E.bad_length, "BadLength", string.format(
      "block %d: length %d, %s needs %d", n, length,
      info and info.name or "a message", info and info.size or
      kMinMessageLength))
  end
  if info and not info.carriers[header.type] then
    Error(state, item, E.misplaced_kind, "MisplacedKind", string.format(
      "block %d: %s in a %s packet", n, info.name, kTypeNames[header.type]))
  end
  if kind and not info and length >= kMinMessageLength then
    item:add_proto_expert_info(E.unknown_kind, string.format(
      "UnknownKind: block %d has kind 0x%02x, which version 1 does not " ..
      "define; skipped, its sequence number used", n, kind))
  end
  return message_end
end

-- Checks of "Checks" that the header alone decides, in their order.
local function CheckHeader(state, rules, items)
  local header = state.header
  local followed = md.prefs.session
  if rules.session and followed ~= "" then
    local ok, want = pcall(UInt64.fromhex, followed)
    if ok and want ~= header.session then
      Error(state, items.session, E.other_session, "OtherSession",
            string.format("session 0x%s, the session followed is 0x%s",
                          header.session:tohex(), want:tohex()))
    end
  end
  local token = header.token
  if rules.token == "zero" and token ~= 0 then
    Error(state, items.token, E.bad_token, "BadToken", string.format(
      "token %d in a %s packet, must be 0", token, header.type_name))
  elseif rules.token == "nonzero" and token == 0 then
    Error(state, items.token, E.bad_token, "BadToken", string.format(
      "token 0 in a %s packet, must not be 0", header.type_name))
  end
  local zero = header.sequence == UInt64(0)
  if rules.sequence == "nonzero" and zero then
    Error(state, items.sequence, E.bad_sequence, "BadSequence", string.format(
      "sequence 0 in a %s packet, must not be 0", header.type_name))
  elseif rules.sequence == "zero" and not zero then
    Error(state, items.sequence, E.bad_sequence, "BadSequence", string.format(
      "sequence %s in a %s packet, must be 0", tostring(header.sequence),
      header.type_name))
  end
  if rules.count == "zero" and header.count ~= 0 then
    Error(state, items.count, E.bad_count, "BadCount", string.format(
      "count %d in a %s packet, must be 0", header.count, header.type_name))
  elseif rules.count == "nonzero" and header.count == 0 then
    Error(state, items.count, E.zero_count, "ZeroCount", string.format(
      "count 0 in a %s packet, must not be 0", header.type_name))
  end
end

-- A fixed body (nothing, Refused, SnapshotRequest): its fields, then
-- Truncated or TrailingBytes.
local function DissectBody(state, rules)
  local tvb, length = state.tvb, state.length
  local stop = kHeaderSize + rules.body
  if rules.fields then
    AddFields(state, state.root, rules.fields, kHeaderSize,
              math.min(stop, length), state.header.type_name)
  end
  if state.reported < stop and state.complete then
    Error(state, state.root, E.truncated, "Truncated", string.format(
      "a %s body needs %d bytes, the packet has %s after its header",
      state.header.type_name, rules.body,
      Plural(state.reported - kHeaderSize, "byte")))
  elseif stop < length then
    local item = state.root:add(F.trailing, tvb(stop, length - stop))
    Error(state, item, E.trailing_bytes, "TrailingBytes", string.format(
      "%s after the %s", Plural(length - stop, "byte"),
      rules.body == 0 and "header" or state.header.type_name .. " body"))
  end
end

-- Data and Snapshot: `count` blocks, then TrailingBytes.
local function DissectBlocks(state)
  local count, length = state.header.count, state.length
  local pos = kHeaderSize
  state.numbering = state.header.type == 0x04 and "position" or "sequence"
  for n = 1, count do
    if pos == length then
      if state.complete then
        Error(state, state.items.count, E.count_mismatch, "CountMismatch",
              string.format("count is %d, the packet ends after %s", count,
                            Plural(n - 1, "block")))
      end
      return
    end
    pos = AddBlock(state, n, pos, length)
    if pos == nil then return end
  end
  if pos < length then
    local item = state.root:add(F.trailing,
                                state.tvb(pos, length - pos))
    Error(state, item, E.trailing_bytes, "TrailingBytes", string.format(
      "%s after the %s count announces", Plural(length - pos, "byte"),
      Plural(count, "block")))
  end
end

-- The Info column's text for a packet whose header is decoded.
local function Summary(state)
  local h = state.header
  local text = h.type_name or string.format("type 0x%02x", h.type)
  if h.type == 0x01 or h.type == 0x04 then
    local list = table.concat(state.summary, ", ")
    if list == "" then list = "no messages" end
    if h.token ~= 0 then text = text .. string.format(" token %d", h.token) end
    text = text .. ": " .. list
  elseif h.type == 0x02 or h.type == 0x03 then
    text = text .. ", next " .. tostring(h.sequence)
  elseif h.type == 0x05 then
    local reason = state.length > kHeaderSize and
                   state.tvb(kHeaderSize, 1):uint() or nil
    text = text .. string.format(" %s, sequence %s, token %d",
      reason and (kReasonNames[reason] or string.format("reason %d", reason))
      or "(no body)", tostring(h.sequence), h.token)
  elseif h.type == 0x11 then
    text = text .. string.format(" #%s count %d, token %d",
                                 tostring(h.sequence), h.count, h.token)
  elseif h.type == 0x12 then
    local instrument = "(no body)"
    if state.length >= kHeaderSize + 4 then
      local id = state.tvb(kHeaderSize, 4):le_uint()
      instrument = id == 0 and "all instruments" or
                   string.format("instrument %d", id)
    end
    text = text .. string.format(" %s, token %d", instrument, h.token)
  end
  return text
end

local kHeaderFields = {
  { "magic", 0, false }, { "version", 2, true }, { "type", 3, true },
  { "session", 4, true }, { "sequence", 12, true }, { "count", 20, true },
  { "token", 22, true },
}

-- The header's fields that fit; returns their items by key.
local function AddHeader(state)
  local items = {}
  for _, h in ipairs(kHeaderFields) do
    local key, offset, little = h[1], h[2], h[3]
    local width = kFieldSize[key]
    if offset + width <= state.length then
      local range = state.tvb(offset, width)
      items[key] = little and state.root:add_le(F[key], range) or
                   state.root:add(F[key], range)
    end
  end
  if items.magic and state.tvb(0, 2):uint() == kMagic then
    items.magic:append_text(' ("OM")')
  end
  return items
end

-- Dissects a whole packet. Returns the number of bytes consumed (all).
local function Dissect(tvb, pinfo, tree)
  local length, reported = tvb:captured_len(), tvb:reported_len()
  local state = { tvb = tvb, root = tree:add(md, tvb()), causes = {},
                  summary = {}, length = length, reported = reported,
                  complete = length == reported }
  local root = state.root
  pinfo.cols.protocol = "ORDERWIRE_MD"
  local function Finish(text)
    root:append_text(", " .. text)
    if #state.causes > 0 then
      text = text .. " [Malformed: " .. table.concat(state.causes, ", ") .. "]"
    end
    pinfo.cols.info:set(text)
    return length
  end
  local function Undecoded(why)
    if kHeaderSize < length then
      root:add(F.undecoded, tvb(kHeaderSize, length - kHeaderSize))
          :append_text(" (" .. why .. ")")
    end
  end

  if reported > kMaxPacketSize then
    Error(state, root, E.oversize, "Oversize", string.format(
      "packet is %d bytes, the limit is %d", reported, kMaxPacketSize))
  end
  if not state.complete then
    root:add_proto_expert_info(E.short_capture, string.format(
      "the capture holds %d of the packet's %d bytes; nothing past byte " ..
      "%d is checked", length, reported, length))
  end
  local items = AddHeader(state)
  state.items = items
  if length < kHeaderSize then
    if state.complete then
      Error(state, root, E.truncated, "Truncated", string.format(
        "packet has %s, a packet header needs %d", Plural(length, "byte"),
        kHeaderSize))
    end
    return Finish(Plural(reported, "byte"))
  end
  local magic = tvb(0, 2):uint()
  if magic ~= kMagic then
    Error(state, items.magic, E.bad_magic, "BadMagic", string.format(
      'packet starts 0x%04x, not "OM" (0x4f4d)', magic))
    Undecoded("not orderwire_md")
    return Finish(Plural(reported, "byte"))
  end
  local version = tvb(2, 1):uint()
  if version ~= kVersion then
    Error(state, items.version, E.bad_version, "BadVersion", string.format(
      "version %d, this dissector knows version %d", version, kVersion))
    Undecoded("unknown version")
    return Finish(Plural(reported, "byte"))
  end
  state.header = {
    type = tvb(3, 1):uint(), session = tvb(4, 8):le_uint64(),
    sequence = tvb(12, 8):le_uint64(), count = tvb(20, 2):le_uint(),
    token = tvb(22, 2):le_uint(),
  }
  local header = state.header
  header.type_name = kTypeNames[header.type]
  local rules = kTypes[header.type]
  if rules == nil then
    Error(state, items.type, E.bad_type, "BadType", string.format(
      "type 0x%02x, which docs/MARKETDATA.md does not define", header.type))
    Undecoded("unknown type")
    return Finish(Summary(state))
  end
  root:append_text(string.format(", %s, session 0x%s", header.type_name,
                                 header.session:tohex()))
  CheckHeader(state, rules, items)
  if rules.blocks then
    DissectBlocks(state)
  else
    DissectBody(state, rules)
  end
  local text = Summary(state)
  if #state.causes > 0 then
    text = text .. " [Malformed: " .. table.concat(state.causes, ", ") .. "]"
  end
  pinfo.cols.info:set(text)
  return length
end

function md.dissector(tvb, pinfo, tree)
  return Dissect(tvb, pinfo, tree)
end

-- Claims a datagram on any UDP port when it starts "OM", version 1.
local function Heuristic(tvb, pinfo, tree)
  if tvb:captured_len() < kHeaderSize then return false end
  if tvb(0, 2):uint() ~= kMagic or tvb(2, 1):uint() ~= kVersion then
    return false
  end
  Dissect(tvb, pinfo, tree)
  return true
end
md:register_heuristic("udp", Heuristic)

-- The port registration follows the preference.
local registered_ports = ""
local function RegisterPorts()
  local ports = md.prefs.udp_ports
  if ports == registered_ports then return end
  local udp_table = DissectorTable.get("udp.port")
  if registered_ports ~= "" then udp_table:remove(registered_ports, md) end
  if ports ~= "" then udp_table:add(ports, md) end
  registered_ports = ports
end
md.prefs_changed = RegisterPorts
RegisterPorts()
