// Internal to orderwire::journal, do not depend on: validation of segment
// headers and groups, and the classification of damage, shared by the
// reader (which reports damage) and recovery (which repairs a torn tail).
//
// The damage rules (docs/JOURNAL.md "Recovery" states them for users):
//
// Scanning stops at the first place P where the expected group is missing
// or fails a check, H being the index it should start with. What follows P
// decides what P is:
//
// 1. Nothing but zeros, and no later segment: the clean end of the journal.
// 2. Otherwise P is damage. Every place after P where a group may start (in
//    its segment and in every later segment: every 8-byte boundary in a
//    version-2 or -3 segment, every 4096-byte boundary in version 1) is
//    searched for a valid group.
//    - A later valid group whose stable_index >= H proves that the records
//      at P had been written (and synced) before it: data loss.
//    - A damaged group at P that was written in full (header and trailer
//      magic in place, no zeroed 512-byte sector) and still fails its
//      checksum is corruption, not a crash: data loss.
//    - Anything else is what a crash leaves behind: the tail of a write cut
//      short, or writes still in flight that landed out of order, unless
//      the journal's checkpoint (checkpoint.h) says H was durable. Nothing
//      from P on was ever reported durable: a torn tail, which recovery
//      reports and cuts off.
#ifndef ORDERWIRE_JOURNAL_INTERNAL_SCAN_H_
#define ORDERWIRE_JOURNAL_INTERNAL_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "journal/format.h"

namespace orderwire::journal::internal {

// A file mapped read-only in full. An empty file maps to an empty span.
class MappedFile {
 public:
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, size_};
  }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// One segment file of a journal directory.
struct SegmentEntry {
  std::string path;          // directory + "/" + name
  std::uint64_t name_index;  // the first index its name says
  // Set for the writer's prepared segment only: mapped when it was listed.
  // A live writer renames that file into place and creates a new, empty
  // `next.owj.prep` at any moment; reopening it by name later could read
  // the new file, so its bytes are pinned to the inode that was checked.
  std::shared_ptr<const MappedFile> mapped;
};

// The segment files of `directory`, sorted by the index in their names
// (or, for the writer's prepared segment `next.owj.prep`, in its header, if
// it has a valid one; that entry comes mapped). Other files are ignored.
// Errors: NotFound (no such directory), or the errno of reading it.
absl::StatusOr<std::vector<SegmentEntry>> ListSegments(
    const std::string& directory);

// The segments of a journal, mapped on first use and kept mapped.
class SegmentSet {
 public:
  explicit SegmentSet(std::vector<SegmentEntry> entries)
      : entries_(std::move(entries)), files_(entries_.size()) {}

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] const SegmentEntry& entry(std::size_t i) const {
    return entries_[i];
  }
  // The bytes of segment i. Error: the errno of open/mmap, naming the file.
  absl::StatusOr<std::span<const std::byte>> Map(std::size_t i);

 private:
  std::vector<SegmentEntry> entries_;
  std::vector<std::unique_ptr<MappedFile>> files_;
};

// ---------------------------------------------------------------------------
// Segment headers.

struct HeaderCheck {
  bool ok = false;
  // Not ok, and what a crash during the segment's first write leaves: no
  // header at all (zeros) or one whose checksum field is still zero.
  bool torn = false;
  SegmentHeader header{};
  std::string metadata;  // the caller's metadata, when ok (may be empty)
  std::string problem;   // when !ok
};

// Checks the header block of a segment file (its first 4096 bytes): size,
// magic, version, checksum, fields, the metadata area (size and checksum),
// zero padding. `name_index` is the index the file name gives. A metadata
// checksum that fails with a zeroed 512-byte sector in the metadata is
// `torn` (the header block's write was cut short). Cold.
HeaderCheck CheckSegmentHeader(std::span<const std::byte> file,
                               std::uint64_t name_index);

// ---------------------------------------------------------------------------
// Groups.

enum class GroupState : std::uint8_t {
  kValid,  // whole, checksum matches, records consistent
  kEmpty,  // the header bytes are zero (or the file ends here)
  kBad,    // anything else
};

struct GroupCheck {
  GroupState state = GroupState::kEmpty;
  bool torn = false;         // kBad: a crash can explain it (see above)
  GroupHeader header{};      // as read, when the magic matched
  std::uint64_t end = 0;     // kValid: offset of the next group (the end
                             // of the trailer rounded up to `alignment`)
  std::uint32_t crc = 0;     // kValid: the trailer's checksum
  std::string_view problem;  // kBad: what failed
};

// Checks the group at `pos` (a multiple of format.alignment) of `segment`;
// `format` is GroupFormatOf(the segment's version): the group's framing,
// and the padding after the trailer up to the next multiple of
// format.alignment must be zero. With expected_first_index == 0 any first
// index is accepted (used when searching past damage). Hot enough for
// replay: O(group bytes), no allocation.
GroupCheck CheckGroup(std::span<const std::byte> segment, std::uint64_t pos,
                      std::uint64_t expected_first_index,
                      const GroupFormat& format) noexcept;

// What positioning a reader (seek) cost: the counters a test holds against
// the O(log segments + log groups) bound.
struct SeekCounters {
  std::uint64_t segments_mapped = 0;  // segments whose groups were looked at
  std::uint64_t probes = 0;           // FindGroupAtOrAfter calls
  std::uint64_t groups_checked = 0;   // candidates verified in full
  std::uint64_t bytes_scanned = 0;    // bytes of candidate offsets passed
};

// The first group at or after `from` (rounded up to format.alignment) that
// verifies in full: magic, size fields, trailer magic, CRC32C over header
// and records, contiguous record indexes (versions 1, 2), command kinds,
// exact sizes. format.alignment is where a group may start: kBlockSize in
// format version 1. Returns nullopt when the data of the segment ends
// first (a run of kDataEndZeroRun zero bytes at a candidate offset: inside
// a group no such run exists, since every record holds a non-zero kind
// byte at most kMaxRecordSize bytes apart, and the magics are non-zero),
// when the
// file ends, or when no group starts within kMaxGroupBytes of `from`
// (damage: a group is never longer). Damaged groups on the way are passed
// over, not reported: seeking does not judge the bytes it skips.
//
// Why bytes a client sent cannot pass for a group here: a client controls
// only command frames, at most kMaxCommandFrame (49) bytes each, and every
// frame is preceded by a record header the writer writes (24 bytes: index,
// receive time in nanoseconds, session, flags; 16 without the index in
// version 3). The smallest group that verifies is 32 + 49 + 8 = 89 bytes
// (24 + 41 + 8 = 73 in version 3), longer than any frame, so a forged
// one would have to span a writer's record header and still match its
// CRC32C trailer, which covers the writer's receive_ns: a value the client
// never sees (no reply carries it). A chance forgery (2^-32 per candidate)
// is then caught by the reader's continuity check of the next group, so it
// can make a seek report damage but not yield records that are not there.
// Cold: O(bytes from `from` to the group found), one group verified per
// candidate whose magic matches.
struct FoundGroup {
  std::uint64_t offset = 0;
  GroupCheck check;
};
inline constexpr std::size_t kDataEndZeroRun = 256;
std::optional<FoundGroup> FindGroupAtOrAfter(std::span<const std::byte> segment,
                                             std::uint64_t from,
                                             const GroupFormat& format,
                                             SeekCounters& counters) noexcept;

// The last group of `segment` that verifies in full (see
// FindGroupAtOrAfter), found by binary search over offsets: O(log(segment
// size / format.alignment)) probes. Damage before it is passed over.
// nullopt: the segment holds no group that verifies. Cold.
std::optional<FoundGroup> LastGroupIn(std::span<const std::byte> segment,
                                      const GroupFormat& format,
                                      SeekCounters& counters) noexcept;

// The offset of the first non-zero byte at or after `from`, or bytes.size().
std::uint64_t FirstNonZero(std::span<const std::byte> bytes,
                           std::uint64_t from) noexcept;

// ---------------------------------------------------------------------------
// Damage.

struct Damage {
  enum class Kind : std::uint8_t { kTornTail, kDataLoss };
  Kind kind = Kind::kTornTail;
  std::size_t segment = 0;   // index into the SegmentSet
  std::uint64_t offset = 0;  // where the expected group should be
  std::uint64_t last_good_index = 0;
  std::uint64_t later_groups = 0;  // valid groups found after the damage
  std::string message;             // names file, offset, indexes and cause
};

// Classifies damage found at `offset` of segment `segment` (offset 0 for a
// bad segment header), where the group starting with index
// `expected_index` should have been. `torn` says whether the damaged group
// (or header) itself looks like what a crash leaves; `problem` says what is
// wrong with it. `checkpointed` is the durable index the journal's
// checkpoint witnesses (0 without one): damage at or below it is data loss
// whatever it looks like. Maps later segments as needed. Cold.
absl::StatusOr<Damage> AnalyzeDamage(SegmentSet& segments, std::size_t segment,
                                     std::uint64_t offset,
                                     std::uint64_t expected_index, bool torn,
                                     std::string_view problem,
                                     std::uint64_t checkpointed = 0);

}  // namespace orderwire::journal::internal

#endif  // ORDERWIRE_JOURNAL_INTERNAL_SCAN_H_
