// orderwire::jsonl: the JSON Lines form of frames and of market-data feed
// messages, for the CLI, logs, tests and fuzzing. A library of its own,
// beside the codec and not part of it: the hot codec (orderwire::codec)
// neither compiles nor links any JSON, nor does the feed's (orderwire::feed).
// Cold path.
//
// One frame is one flat JSON object: "kind" with the PROTOCOL.md name, then
// "sequence", then every body field under its PROTOCOL.md name in wire order.
// Integers (enumerations included) are JSON numbers:
//
//   {"kind":"CancelByOrder","sequence":4,"account_id":7,"order_id":42}
//
// A message of the market-data feed is one flat JSON object too, with the
// order docs/MARKETDATA.md "Text form" gives: "sequence" (its feed
// sequence), "kind" with the MARKETDATA.md name, then every field under its
// name in wire order, timestamp first; enumerations as integers:
//
//   {"sequence":6,"kind":"OrderAdded","timestamp":1700000000000250000,
//    "order_id":2,"instrument_id":42,"side":2,"price":10040,"quantity":100}
//
// Field names and order come from feed/messages.h's layouts, as a frame's
// come from codec/'s: neither is typed here. Feed messages have no reader
// (nothing takes their text as input). jsonl/ may include feed/ (its row
// in scripts/check_layering.sh): feed/ is a wire codec on codec/ alone and
// may not include jsonl/, so it stays free of JSON as codec/ does.
//
// The reader (simdjson's on-demand parser, with this format's rules on top)
// accepts the keys in any order and whitespace anywhere JSON allows it; it
// rejects a missing, unknown or repeated key, a value that is not an integer
// (a fraction, an exponent, a leading zero, a string, true/null, an object)
// or does not fit its field, escapes and control characters in strings,
// invalid UTF-8, and anything after the object. Each error names the column
// (0-based byte offset in the line) and, where there is one, the field.
#ifndef ORDERWIRE_JSONL_JSONL_H_
#define ORDERWIRE_JSONL_JSONL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "feed/packet.h"

namespace orderwire::jsonl {

// The JSON object of `frame`, without a trailing newline.
[[nodiscard]] std::string FrameToJson(codec::FrameView frame);

// The JSON object of a datagram's header:
// {"kind":"Datagram","magic":"OW","version":1,"flags":0,"session_id":...,
//  "frame_count":...,"reserved":0,"size":...}
[[nodiscard]] std::string DatagramHeaderToJson(
    const codec::DatagramView& datagram);

// The JSON object of the feed message in `block`, numbered `sequence`,
// without a trailing newline. A kind version 1 does not define (MARKETDATA.md
// "Messages": skipped by a subscriber, yet numbered) is written as
//   {"sequence":N,"kind":"Unknown","kind_byte":80,"timestamp":T,"length":L}
// with its kind byte and block length. A block of a parsed packet, or of
// state::FeedMessage::bytes, meets MessageBlock's precondition. Cold:
// allocates the string; cost linear in the message's fields.
[[nodiscard]] std::string FeedMessageToJson(std::uint64_t sequence,
                                            feed::MessageBlock block);

// Parses one JSON object and encodes its frame at the start of `out`.
// Returns the frame size. Errors: InvalidArgument naming the column (0-based
// byte offset in `line`) and the reason; OutOfRange if `out` is too small.
// Reads `line` only (it is copied into a padded buffer for simdjson, one per
// thread, reused); cost: linear in the line's length (figures:
// docs/BENCHMARKS.md "The JSON Lines reader").
[[nodiscard]] absl::StatusOr<std::size_t> JsonToFrame(std::string_view line,
                                                      std::span<std::byte> out);

}  // namespace orderwire::jsonl

#endif  // ORDERWIRE_JSONL_JSONL_H_
