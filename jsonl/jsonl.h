// orderwire::jsonl: the JSON Lines form of frames, for the CLI, logs, tests
// and fuzzing. A library of its own, beside the codec and not part of it: the
// hot codec (orderwire::codec) neither compiles nor links any JSON. Cold path.
//
// One frame is one flat JSON object: "kind" with the PROTOCOL.md name, then
// "sequence", then every body field under its PROTOCOL.md name in wire order.
// Integers (enumerations included) are JSON numbers:
//
//   {"kind":"CancelByOrder","sequence":4,"account_id":7,"order_id":42}
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
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "codec/datagram.h"
#include "codec/frame.h"

namespace orderwire::jsonl {

// The JSON object of `frame`, without a trailing newline.
[[nodiscard]] std::string FrameToJson(codec::FrameView frame);

// The JSON object of a datagram's header:
// {"kind":"Datagram","magic":"OW","version":1,"flags":0,"session_id":...,
//  "frame_count":...,"reserved":0,"size":...}
[[nodiscard]] std::string DatagramHeaderToJson(
    const codec::DatagramView& datagram);

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
