// The journal's checkpoint: a small file beside the segments that witnesses
// how far the journal was durable, so that records which were durable and
// are gone (a truncated or deleted segment, a journal rewritten by another
// writer) are noticed instead of read as a clean end.
//
// The file `CHECKPOINT` in the journal directory, 72 bytes, little-endian,
// documented byte for byte in docs/JOURNAL.md ("Checkpoint"):
//
//   0 magic "OWCHKPNT" | 8 version u16 | 10 size u16 | 12 flags u32
//   16 journal_id u64 | 24 written_ns u64 | 32 durable_index u64
//   40 group_first_index u64 | 48 segment_first_index u64
//   56 group_offset u64 | 64 group_crc u32 | 68 crc u32 (CRC32C of 0..67)
//
// It names the last group that was durable when it was written: its
// indexes, the segment and offset holding it and its trailer checksum.
// Every record with an index <= durable_index must be in the journal, and
// that group must be the one named. The writer publishes it atomically
// (write CHECKPOINT.tmp, fdatasync, rename over CHECKPOINT, fsync the
// directory): at Open, at a bounded rate while groups become durable
// (through its I/O queue, off the append path) and at Close.
#ifndef ORDERWIRE_JOURNAL_CHECKPOINT_H_
#define ORDERWIRE_JOURNAL_CHECKPOINT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/layout.h"
#include "journal/format.h"

namespace orderwire::journal {

inline constexpr std::uint16_t kCheckpointVersion = 1;
inline constexpr std::string_view kCheckpointFileName = "CHECKPOINT";
inline constexpr std::string_view kCheckpointTempFileName = "CHECKPOINT.tmp";

struct Checkpoint {
  std::uint64_t magic = 0;    // kCheckpointMagic, the bytes "OWCHKPNT"
  std::uint16_t version = 0;  // kCheckpointVersion
  std::uint16_t size = 0;     // kCheckpointSize
  std::uint32_t flags = 0;    // 0
  std::uint64_t journal_id = 0;
  std::uint64_t written_ns = 0;     // CLOCK_REALTIME when it was written
  std::uint64_t durable_index = 0;  // every index <= this was durable
  // The group whose last record is durable_index (all 0 when it is 0).
  std::uint64_t group_first_index = 0;
  std::uint64_t segment_first_index = 0;  // the segment holding it
  std::uint64_t group_offset = 0;         // its offset in that segment
  std::uint32_t group_crc = 0;            // its trailer's crc field
  std::uint32_t crc = 0;                  // CRC32C of bytes 0..67
};

inline constexpr auto kCheckpointLayout = codec::MakeLayout(
    codec::Field{"magic", &Checkpoint::magic},
    codec::Field{"version", &Checkpoint::version},
    codec::Field{"size", &Checkpoint::size},
    codec::Field{"flags", &Checkpoint::flags},
    codec::Field{"journal_id", &Checkpoint::journal_id},
    codec::Field{"written_ns", &Checkpoint::written_ns},
    codec::Field{"durable_index", &Checkpoint::durable_index},
    codec::Field{"group_first_index", &Checkpoint::group_first_index},
    codec::Field{"segment_first_index", &Checkpoint::segment_first_index},
    codec::Field{"group_offset", &Checkpoint::group_offset},
    codec::Field{"group_crc", &Checkpoint::group_crc},
    codec::Field{"crc", &Checkpoint::crc});

inline constexpr std::size_t kCheckpointSize = kCheckpointLayout.kSize;
inline constexpr std::size_t kCheckpointCrcOffset =
    kOffsetOf<kCheckpointLayout, &Checkpoint::crc>;
inline constexpr std::uint64_t kCheckpointMagic =
    MagicOf<std::uint64_t>("OWCHKPNT");
static_assert(kCheckpointSize == 72);
static_assert(kCheckpointCrcOffset == 68);

// Writes `checkpoint` at `dst` (kCheckpointSize bytes) with its magic,
// version, size and crc filled in.
void EncodeCheckpoint(Checkpoint checkpoint, std::byte* dst) noexcept;

// Decodes and checks the bytes of a checkpoint file. Errors: DataLoss
// (wrong size, magic, checksum, fields) or Unimplemented (another
// version), naming `path` and what is wrong. Cold.
absl::StatusOr<Checkpoint> DecodeCheckpoint(std::span<const std::byte> bytes,
                                            std::string_view path);

// The checkpoint of the journal in `directory`: nullopt if it has none (a
// journal written before checkpoints existed). Errors: those of
// DecodeCheckpoint, or the errno of reading the file. Cold.
absl::StatusOr<std::optional<Checkpoint>> ReadCheckpoint(
    const std::string& directory);

// Publishes `checkpoint` in `directory` (whose open descriptor is `dir_fd`)
// atomically and durably: CHECKPOINT.tmp written and fdatasynced, renamed
// over CHECKPOINT, the directory fsynced. Blocking: for Open and Close.
absl::Status WriteCheckpoint(const std::string& directory, int dir_fd,
                             const Checkpoint& checkpoint);

// "durable up to index N (group N0..N at offset O of segment S, checksum
// C), written <time>" for messages.
std::string DescribeCheckpoint(const Checkpoint& checkpoint);

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_CHECKPOINT_H_
