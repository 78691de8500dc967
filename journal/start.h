// The journal's start record: the file `START` in the journal directory,
// which says where a pruned journal begins, so that segments removed on
// purpose (orderwire journal prune, serve --retain) are told apart from
// segments that went missing (data loss).
//
// A journal without START starts at index 1. A journal with START starts at
// its `first_index`: the first segment it holds must begin exactly there, and
// segment files that begin before it are left over from a prune that was
// interrupted (they are ignored by readers and recovery, and removed by the
// next prune). Pruning writes START first, atomically and durably (START.tmp
// written and fdatasynced, renamed over START, the directory fsynced), and
// only then removes segments: a crash at any point leaves a journal that
// opens.
//
// 48 bytes, little-endian, documented in docs/JOURNAL.md ("Start record"):
//
//   0 magic "OWJSTART" | 8 version u16 | 10 size u16 | 12 flags u32
//   16 journal_id u64 | 24 first_index u64 | 32 written_ns u64
//   40 reserved u32 (0) | 44 crc u32 (CRC32C of bytes 0..43)
#ifndef ORDERWIRE_JOURNAL_START_H_
#define ORDERWIRE_JOURNAL_START_H_

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

inline constexpr std::uint16_t kJournalStartVersion = 1;
inline constexpr std::string_view kJournalStartFileName = "START";
inline constexpr std::string_view kJournalStartTempFileName = "START.tmp";

struct JournalStart {
  std::uint64_t magic = 0;        // kJournalStartMagic, the bytes "OWJSTART"
  std::uint16_t version = 0;      // kJournalStartVersion
  std::uint16_t size = 0;         // kJournalStartSize
  std::uint32_t flags = 0;        // 0
  std::uint64_t journal_id = 0;   // the segments' journal_id
  std::uint64_t first_index = 0;  // the journal's first index, >= 1
  std::uint64_t written_ns = 0;   // CLOCK_REALTIME when it was written
  std::uint32_t reserved = 0;     // 0
  std::uint32_t crc = 0;          // CRC32C of bytes 0..43
};

inline constexpr auto kJournalStartLayout =
    codec::MakeLayout(codec::Field{"magic", &JournalStart::magic},
                      codec::Field{"version", &JournalStart::version},
                      codec::Field{"size", &JournalStart::size},
                      codec::Field{"flags", &JournalStart::flags},
                      codec::Field{"journal_id", &JournalStart::journal_id},
                      codec::Field{"first_index", &JournalStart::first_index},
                      codec::Field{"written_ns", &JournalStart::written_ns},
                      codec::Field{"reserved", &JournalStart::reserved},
                      codec::Field{"crc", &JournalStart::crc});

inline constexpr std::size_t kJournalStartSize = kJournalStartLayout.kSize;
inline constexpr std::size_t kJournalStartCrcOffset =
    kOffsetOf<kJournalStartLayout, &JournalStart::crc>;
inline constexpr std::uint64_t kJournalStartMagic =
    MagicOf<std::uint64_t>("OWJSTART");
static_assert(kJournalStartSize == 48);
static_assert(kJournalStartCrcOffset == 44);

// Writes `start` at `dst` (kJournalStartSize bytes) with its magic,
// version, size and crc filled in.
void EncodeJournalStart(JournalStart start, std::byte* dst) noexcept;

// Decodes and checks the bytes of a START file. Errors: DataLoss (size,
// magic, checksum, fields; no crash leaves it so: it is replaced by a
// rename) or Unimplemented (another version), naming `path`. Cold.
absl::StatusOr<JournalStart> DecodeJournalStart(
    std::span<const std::byte> bytes, std::string_view path);

// The start record of the journal in `directory`: nullopt if it has none
// (a journal never pruned: it starts at 1). Errors: those of
// DecodeJournalStart, the errno of reading the file. Cold.
absl::StatusOr<std::optional<JournalStart>> ReadJournalStart(
    const std::string& directory);

// Publishes `start` in `directory` (whose open descriptor is `dir_fd`)
// atomically and durably: START.tmp written and fdatasynced, renamed over
// START, the directory fsynced. Blocking, cold. The caller holds the
// journal's writer lock.
absl::Status WriteJournalStart(const std::string& directory, int dir_fd,
                               const JournalStart& start);

// The first index the journal in `directory` can still be read from: its
// start record's first_index, or 1 without one. Errors: those of
// ReadJournalStart. Cold.
absl::StatusOr<std::uint64_t> FirstAvailableIndex(const std::string& directory);

// OK if reading the journal in `directory` from `index` is possible as far
// as pruning goes; otherwise OutOfRange: "index 5 was pruned; the journal
// starts at 1,000,001". A reader opened at an index calls it. Cold.
absl::Status CheckIndexAvailable(const std::string& directory,
                                 std::uint64_t index);

// "index 5 was pruned; the journal starts at 1,000,001".
std::string PrunedIndexMessage(std::uint64_t index, std::uint64_t first_index);

// 1000001 as "1,000,001", for messages.
std::string GroupedDigits(std::uint64_t value);

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_START_H_
