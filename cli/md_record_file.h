// The file `orderwire md record` writes without --json, and `md print`
// reads: the feed's messages in sequence order, each with its sequence.
//
//   file:    magic "OWMDREC1" (8 bytes), then records back to back
//   record:  0                8          10
//            +----------------+----------+----------------------+
//            | sequence (u64) | len (u16)| message (len bytes)  |
//            +----------------+----------+----------------------+
//
// Little-endian. The message is the feed's message block as it came
// (docs/MARKETDATA.md "Messages": kind byte, timestamp, fields, and any
// extra bytes of a later revision), len >= 9. A record counts as written
// when all its len bytes are in the file: a file cut inside a record
// (a recorder killed mid-write) reads up to the record before it and then
// fails, naming the offset.
//
// Errors: ForEachRecordedMessage returns InvalidArgument "byte offset O:
// <reason>" for a wrong magic, a record cut short, or a message shorter
// than its header or its known kind's size. Cost: O(file size); no
// allocation. Threading: none (pure functions).
#ifndef ORDERWIRE_CLI_MD_RECORD_FILE_H_
#define ORDERWIRE_CLI_MD_RECORD_FILE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "feed/packet.h"

namespace orderwire::cli {

inline constexpr std::string_view kRecordFileMagic = "OWMDREC1";
inline constexpr std::size_t kRecordSequenceOffset = 0;
inline constexpr std::size_t kRecordLengthOffset =
    kRecordSequenceOffset + sizeof(std::uint64_t);
inline constexpr std::size_t kRecordHeaderSize =
    kRecordLengthOffset + sizeof(std::uint16_t);
static_assert(kRecordFileMagic.size() == 8 && kRecordHeaderSize == 10);

// Appends one record (sequence, the message block's bytes) to `out`.
void AppendRecordedMessage(std::string& out, std::uint64_t sequence,
                           feed::MessageBlock message);

// Calls `fn(sequence, message)` for each record of `file` (the whole file,
// magic first), in file order, until the end or the first error (see the
// header). The blocks point into `file`.
absl::Status ForEachRecordedMessage(
    std::span<const std::byte> file,
    absl::FunctionRef<void(std::uint64_t, feed::MessageBlock)> fn);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_MD_RECORD_FILE_H_
