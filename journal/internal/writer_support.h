// Internal to orderwire::journal, do not depend on: what the parts of the
// JournalWriter share (writer.cc: open and close; writer_append.cc: the
// append pipeline; writer_recovery.cc: recovery; writer_segments.cc: the
// next segment's preparation and rotation).
#ifndef ORDERWIRE_JOURNAL_INTERNAL_WRITER_SUPPORT_H_
#define ORDERWIRE_JOURNAL_INTERNAL_WRITER_SUPPORT_H_

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"

namespace orderwire::journal::internal {

// An I/O op's user_data = id << 8 | tag. For slots, id is the slot index;
// for the zero writes of the prepared segment, the chunk number (of
// kPrepZeroChunk bytes).
inline constexpr std::uint32_t kTagWrite = 1;
inline constexpr std::uint32_t kTagSync = 2;
inline constexpr std::uint32_t kTagZero = 4;
inline constexpr std::uint32_t kTagPrepSync = 5;
inline constexpr std::uint32_t kTagPrepDirSync = 6;
// The checkpoint's publication: its temp file's write and fdatasync, then
// the directory's fsync after the rename.
inline constexpr std::uint32_t kTagCheckpointWrite = 7;
inline constexpr std::uint32_t kTagCheckpointSync = 8;
inline constexpr std::uint32_t kTagCheckpointDirSync = 9;

// Zeroing writes of the first segment and of recovery take this many
// bytes at a time, from one zero buffer (of this size).
inline constexpr std::uint32_t kZeroChunk = 1u << 20;

// The next segment's pre-zeroing (writer_segments.cc, "paced zeroing"):
// writes of kPrepZeroChunk bytes (a prefix of the zero buffer), one at a
// time while on schedule, kPrepZeroWritesInFlight at a time once late.
inline constexpr std::uint32_t kPrepZeroChunk = 256u << 10;
inline constexpr std::uint32_t kPrepZeroWritesInFlight = 4;
static_assert(kPrepZeroChunk <= kZeroChunk && kZeroChunk % kPrepZeroChunk == 0);

using base::MonotonicNs;
using base::RealtimeNs;

// "<strerror> (errno <err>)".
std::string ErrnoText(int err);
// The absl status of `err`, with the message "<what>: <ErrnoText(err)>".
absl::Status ErrnoStatus(int err, std::string_view what);

// Writes all of [data, data + length) at `offset`; returns 0 or errno.
int PwriteAll(int fd, const std::byte* data, std::size_t length,
              std::uint64_t offset);

// The small files beside the segments (CHECKPOINT, START): each is read
// whole and replaced whole.
//
// Reads up to `max_bytes` + 1 bytes of `path` (one more than such a file
// holds, so that a file too long shows); nullopt if it does not exist.
// Errors: the errno of open or read, naming the path. Cold.
absl::StatusOr<std::optional<std::vector<std::byte>>> ReadSmallFile(
    const std::string& path, std::size_t max_bytes);
// Replaces directory/name with `bytes` atomically: written to
// directory/temp_name, fdatasynced, renamed over directory/name, and the
// directory (`dir_fd`) fsynced. Errors: the errno of the step that failed,
// naming the file. Cold.
absl::Status PublishSmallFile(const std::string& directory, int dir_fd,
                              std::string_view temp_name, std::string_view name,
                              std::span<const std::byte> bytes);

}  // namespace orderwire::journal::internal

#endif  // ORDERWIRE_JOURNAL_INTERNAL_WRITER_SUPPORT_H_
