// Fuzz target: JournalReader and JournalWriter::Open's recovery over damaged
// journals.
//
// Journal files are untrusted input: a crash leaves torn writes, a disk
// returns rotten or misdirected blocks, anyone with access can edit them.
// The input is not a journal but a recipe of damage (fuzz/journal_recipe.h)
// applied to a valid journal built once at start-up: 20 groups of 1 to 110
// records in three 64 KiB segments (the first one full and of format
// version 1, groups of one and two blocks, written partly by a version-1
// writer and continued in version 1 by a version-2 one; the second of
// version 2, its groups packed at 8-byte alignment, continued in version 2
// by today's writer; the third, which today's writer starts, of version 3,
// packed with compact framing; some records with flag bits set, which the
// journal stores verbatim). Each input writes the damaged
// journal D to a scratch directory and checks:
//
// 1. Nothing crashes, leaks or trips a sanitizer.
// 2. The reader follows the documented format. docs/JOURNAL.md "Reading a
//    journal" is implemented a second time below, from the document (not
//    from journal/internal/scan.cc); its offsets and sizes come from
//    journal/format.h, which tests/journal/format_test.cc pins to the
//    document's offset tables. The reader must
//    yield exactly the records of the groups those rules accept, in order,
//    each from the place the rules found it, and report kEnd exactly when
//    the rules reach the clean end. (When two segments claim the same first
//    index their order is unspecified; then each group the reader yields is
//    still checked against the rules, at its place and index.)
// 3. No record that was not written. A record from a group whose bytes are
//    still those of the valid journal equals the valid journal's record of
//    that index, byte for byte (index, time, session, flags, frame). A group
//    whose bytes changed is yielded only if it verifies in full: the recipe
//    re-sealed it, so a writer could have written it.
// 4. A damaged journal is never reported as read in full: after kEnd with n
//    records no group of the valid journal holding a record after n is
//    still intact in a segment file, and the undamaged journal reads to kEnd
//    with all its records. (What the segments alone cannot show is allowed:
//    a group zeroed in full ends a segment like never-written space does,
//    step 3 of "Reading a journal"; the checkpoint is what shows it, and
//    the damaged journals here have none. A file cut short is shorter than
//    its capacity: never a clean end.)
// 5. Recovery agrees with the reader. JournalWriter::Open (blocking I/O,
//    durability none) on a copy of D opens at the reader's clean end with
//    no torn tail; cuts a torn tail (docs/JOURNAL.md "Recovery") exactly
//    where the reader stopped, keeping the records the reader yielded; and
//    refuses data loss and unsupported versions with the reader's status
//    code, without changing a segment file. After recovery one appended
//    record lands right behind the kept ones: the journal then reads to kEnd
//    as the reader's records (the valid journal's, where untouched) plus it.
//
// Scratch space: a per-process directory under /dev/shm (tmpfs: recovery
// fsyncs) or else $TMPDIR or /tmp, removed at exit. A re-sealed segment
// header can claim a capacity of up to 1 TiB, and recovery preallocates the
// capacity the tail segment's header claims; so recovery is skipped when a
// checksummed header claims more than 16 MiB, and RLIMIT_FSIZE is lowered
// to 1 GiB as a tripwire (libFuzzer reports a write beyond it as "file size
// exceeded") so that a bug can never fill the disk. With
// ORDERWIRE_FUZZ_VERBOSE set in the environment the target prints how each
// input was read and recovered, and keeps its scratch directory.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "codec/testing/random_commands.h"
#include "codec/wire.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/journal_recipe.h"
#include "journal/checkpoint.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"

namespace orderwire::journal {
namespace {

using codec::LoadLE;
using fuzz::JournalOp;
using fuzz::RecipeStep;
using Bytes = std::vector<std::byte>;

constexpr std::uint64_t kSegmentSize = std::uint64_t{64} * 1024;
constexpr std::uint64_t kMaxRecoveredCapacity = std::uint64_t{16} << 20;
constexpr rlim_t kFileSizeLimit = rlim_t{1} << 30;
// Records per group of the valid journal (one Append each, under kSync).
constexpr std::array<std::size_t, 20> kGroupRecords = {
    1, 3, 100, 2, 1, 110, 1, 4, 40, 1, 1, 2, 1, 5, 2, 1, 3, 1, 7, 2};

// Flag bits for some records: opaque to the journal, stored verbatim.
constexpr std::uint32_t kSomeFlag = 1;
// The caller's metadata in every segment's header block: 600 bytes, so it
// spans the first two 512-byte sectors of the block.
const std::string kMetadata = [] {
  std::string text;
  for (int i = 0; text.size() < 600; ++i)
    text += static_cast<char>('a' + i % 26);
  return text.substr(0, 600);
}();

// ---------------------------------------------------------------------------
// The format as docs/JOURNAL.md states it. Offsets and sizes are format.h's
// (tests/journal/format_test.cc checks them against the document's tables).

constexpr std::size_t kBlock = kBlockSize;
constexpr std::size_t kHeaderCrcAt = kSegmentHeaderCrcOffset;
constexpr std::size_t kGroupTrailer = kGroupTrailerSize;  // crc, magic "OWGT"
// "records_bytes is at most 16 MiB - 40" (16 MiB - 32 in version 3).
constexpr std::uint64_t kMaxGroupTotal = kMaxGroupBytes;

// Field offsets of the segment header, the group header and trailer.
constexpr std::size_t kSegVersionAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::version>;
constexpr std::size_t kSegHeaderSizeAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::header_size>;
constexpr std::size_t kSegBlockSizeAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::block_size>;
constexpr std::size_t kSegFirstIndexAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::first_index>;
constexpr std::size_t kSegCapacityAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::capacity>;
constexpr std::size_t kSegJournalIdAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::journal_id>;
constexpr std::size_t kSegFlagsAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::flags>;
constexpr std::size_t kSegMetadataSizeAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::metadata_size>;
constexpr std::size_t kSegMetadataCrcAt =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::metadata_crc>;
// "Segment metadata": at offset 64, at most 4032 bytes.
constexpr std::size_t kMetadataAt = kSegmentHeaderSize;
constexpr std::size_t kMetadataMax = kBlockSize - kSegmentHeaderSize;
constexpr std::size_t kGroupRecordsBytesAt =
    kOffsetOf<kGroupHeaderLayout, &GroupHeader::records_bytes>;
constexpr std::size_t kGroupFirstIndexAt =
    kOffsetOf<kGroupHeaderLayout, &GroupHeader::first_index>;
constexpr std::size_t kGroupStableIndexAt =
    kOffsetOf<kGroupHeaderLayout, &GroupHeader::stable_index>;
constexpr std::size_t kGroupRecordCountAt =
    kOffsetOf<kGroupHeaderLayout, &GroupHeader::record_count>;
constexpr std::size_t kGroupFlagsAt =
    kOffsetOf<kGroupHeaderLayout, &GroupHeader::flags>;
// Version 3's group header.
constexpr std::size_t kCompactFirstIndexAt =
    kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::first_index>;
constexpr std::size_t kCompactRecordCountAt =
    kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::record_count>;
constexpr std::size_t kCompactStableLagAt =
    kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::stable_lag>;
static_assert(
    kOffsetOf<kCompactGroupHeaderLayout, &CompactGroupHeader::records_bytes> ==
    kOffsetOf<kGroupHeaderLayout, &GroupHeader::records_bytes>);
constexpr std::size_t kTrailerCrcAt =
    kOffsetOf<kGroupTrailerLayout, &GroupTrailer::crc>;
constexpr std::size_t kTrailerMagicAt =
    kOffsetOf<kGroupTrailerLayout, &GroupTrailer::magic>;

// "NewLimit 47, NewMarket 38, CancelByOrder 25, CancelByClient 25, Replace
// 49, MassCancel 31, Goodbye 25, OrderStatusRequest 33"; kinds 0x01..0x06,
// 0x08 and 0x09; the kind byte is at frame offset 8.
constexpr std::size_t DocFrameSize(std::uint8_t kind) {
  // Kind 7 (Heartbeat) is never a record; 8 is Goodbye (and a lapse); 9 is
  // OrderStatusRequest.
  constexpr std::array<std::size_t, 10> kSizes = {0,  47, 38, 25, 25,
                                                  49, 31, 0,  25, 33};
  return kind < kSizes.size() ? kSizes[kind] : 0;
}

constexpr std::uint32_t Magic32(const char (&text)[5]) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    value |= std::uint32_t{static_cast<unsigned char>(text[i])} << (8 * i);
  }
  return value;
}

constexpr std::uint64_t DocAlign(std::uint64_t n,
                                 std::uint64_t alignment = kBlock) {
  return (n + alignment - 1) / alignment * alignment;
}

// "Segment": groups start at 8-byte boundaries in versions 2 and 3, at
// 4096-byte boundaries in version 1. "Group": version 3's header is 24
// bytes with magic OWG3 and its records have no index (16-byte record
// header); versions 1 and 2 have a 32-byte header with magic OWGH and
// 24-byte record headers.
struct DocFraming {
  std::uint64_t alignment = kBlock;
  bool compact = false;
  std::size_t group_header = 32;
  std::size_t record_header = 24;
};
constexpr DocFraming DocFramingOf(std::uint16_t version) {
  if (version == 3) return {8, true, 24, 16};
  return {version == 2 ? 8u : kBlock, false, 32, 24};
}
// The framing of a segment file, by its header's version field (the header
// itself is checked by DocSegmentHeader).
DocFraming DocFramingOf(std::span<const std::byte> file) {
  return file.size() < kSegmentHeaderSize
             ? DocFramingOf(std::uint16_t{1})
             : DocFramingOf(LoadLE<std::uint16_t>(file.data() + kSegVersionAt));
}

// Byte comparisons go through memcmp: loops compiled here would be
// instrumented for coverage and dominate the run time.
bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

bool AllZero(std::span<const std::byte> bytes) {
  static constexpr std::array<std::byte, kBlock> kZeros{};
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kZeros.size());
    if (std::memcmp(bytes.data(), kZeros.data(), n) != 0) return false;
    bytes = bytes.subspan(n);
  }
  return true;
}

// A record owned by the fuzzer (reader records are views into mappings).
struct OwnedRecord {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;
  Bytes frame;
  bool operator==(const OwnedRecord&) const = default;
};

// Where a group is: a file of the directory and an offset in it.
struct GroupPlace {
  std::string file;  // file name
  std::uint64_t offset = 0;
  std::uint64_t first_index = 0;
  std::uint32_t count = 0;
  bool operator==(const GroupPlace&) const = default;
};

struct DocHeader {
  std::uint16_t version = 0;
  std::uint64_t first_index = 0;
  std::uint64_t capacity = 0;
  std::uint64_t journal_id = 0;
};

// "Reading a journal", step 2, but the journal id and the expected index,
// which the caller checks.
std::optional<DocHeader> DocSegmentHeader(std::span<const std::byte> file,
                                          std::uint64_t name_index) {
  if (file.size() < kSegmentHeaderSize) return std::nullopt;
  const std::byte* h = file.data();
  constexpr std::array<char, 8> kMagic = {'O', 'W', 'J', 'O',
                                          'U', 'R', 'N', 'L'};
  if (std::memcmp(h, kMagic.data(), kMagic.size()) != 0) return std::nullopt;
  const std::uint16_t version = LoadLE<std::uint16_t>(h + kSegVersionAt);
  if (version < 1 || version > 3) return std::nullopt;
  if (Crc32c(file.first(kHeaderCrcAt)) !=
      LoadLE<std::uint32_t>(h + kHeaderCrcAt)) {
    return std::nullopt;
  }
  if (LoadLE<std::uint16_t>(h + kSegHeaderSizeAt) != kSegmentHeaderSize ||
      LoadLE<std::uint32_t>(h + kSegBlockSizeAt) != kBlock ||
      LoadLE<std::uint32_t>(h + kSegFlagsAt) != 0) {
    return std::nullopt;
  }
  // The metadata: its size and CRC32C are header fields.
  const std::uint32_t metadata_size =
      LoadLE<std::uint32_t>(h + kSegMetadataSizeAt);
  const std::uint32_t metadata_crc =
      LoadLE<std::uint32_t>(h + kSegMetadataCrcAt);
  if (metadata_size > kMetadataMax ||
      file.size() < kMetadataAt + metadata_size) {
    return std::nullopt;
  }
  if (metadata_size == 0
          ? metadata_crc != 0
          : Crc32c(file.subspan(kMetadataAt, metadata_size)) != metadata_crc) {
    return std::nullopt;
  }
  DocHeader out;
  out.version = version;
  out.first_index = LoadLE<std::uint64_t>(h + kSegFirstIndexAt);
  out.capacity = LoadLE<std::uint64_t>(h + kSegCapacityAt);
  out.journal_id = LoadLE<std::uint64_t>(h + kSegJournalIdAt);
  if (out.first_index == 0 || out.first_index != name_index) {
    return std::nullopt;
  }
  if (out.capacity < kMinSegmentCapacity ||
      out.capacity > kMaxSegmentCapacity || out.capacity % kBlock != 0) {
    return std::nullopt;
  }
  const std::size_t block_end = std::min(file.size(), kBlock);
  const std::size_t metadata_end = kMetadataAt + metadata_size;
  if (block_end > metadata_end &&
      !AllZero(file.subspan(metadata_end, block_end - metadata_end))) {
    return std::nullopt;
  }
  return out;
}

enum class Verdict : std::uint8_t { kValid, kEnd, kBad };

// "When a record counts as written", conditions 1 to 7, for the group at
// `pos` of `file`, which must start with index `expected`; groups of the
// segment are framed as `framing` says. kEnd: a header's worth of zero
// bytes (or the end of the file) where the header would be; the caller
// checks that
// nothing but zeros follows. On kValid, `records` receives the group's
// records and `next` the offset of the next group.
Verdict DocGroup(std::span<const std::byte> file, std::uint64_t pos,
                 std::uint64_t expected, const DocFraming& framing,
                 std::vector<OwnedRecord>& records, std::uint64_t& next) {
  const std::uint64_t size = file.size();
  const std::size_t group_header = framing.group_header;
  const std::size_t record_header = framing.record_header;
  if (pos >= size) return Verdict::kEnd;
  if (size - pos < group_header) {
    return AllZero(file.subspan(pos)) ? Verdict::kEnd : Verdict::kBad;
  }
  const std::byte* g = file.data() + pos;
  if (AllZero({g, group_header})) return Verdict::kEnd;
  // 1.
  if (LoadLE<std::uint32_t>(g) !=
      (framing.compact ? Magic32("OWG3") : Magic32("OWGH"))) {
    return Verdict::kBad;
  }
  const std::uint64_t records_bytes =
      LoadLE<std::uint32_t>(g + kGroupRecordsBytesAt);
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint32_t flags = 0;
  bool stable_ok = false;
  if (framing.compact) {
    first = LoadLE<std::uint64_t>(g + kCompactFirstIndexAt);
    count = LoadLE<std::uint32_t>(g + kCompactRecordCountAt);
    // "stable_lag <= first_index" (0 claims nothing).
    stable_ok = LoadLE<std::uint32_t>(g + kCompactStableLagAt) <= first;
  } else {
    first = LoadLE<std::uint64_t>(g + kGroupFirstIndexAt);
    count = LoadLE<std::uint32_t>(g + kGroupRecordCountAt);
    flags = LoadLE<std::uint32_t>(g + kGroupFlagsAt);
    stable_ok = LoadLE<std::uint64_t>(g + kGroupStableIndexAt) < first;
  }
  // 2. (A record is a header and a 25..49-byte frame.)
  if (count < 1 || records_bytes < (record_header + 25) * count ||
      records_bytes > (record_header + 49) * count ||
      records_bytes > kMaxGroupTotal - group_header - kGroupTrailer) {
    return Verdict::kBad;
  }
  // 3.
  const std::uint64_t trailer = pos + group_header + records_bytes;
  if (trailer + kGroupTrailer > size) return Verdict::kBad;
  if (LoadLE<std::uint32_t>(file.data() + trailer + kTrailerMagicAt) !=
      Magic32("OWGT")) {
    return Verdict::kBad;
  }
  // 4.
  if (LoadLE<std::uint32_t>(file.data() + trailer + kTrailerCrcAt) !=
      Crc32c(file.subspan(pos, group_header + records_bytes))) {
    return Verdict::kBad;
  }
  // 5.
  if (flags != 0 || first != expected || !stable_ok) return Verdict::kBad;
  // 6.
  std::vector<OwnedRecord> out;
  std::uint64_t at = pos + group_header;
  // Where the fields after the index start in a record.
  const std::size_t fields = framing.compact ? 0 : 8;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (trailer - at < record_header + 9) return Verdict::kBad;
    const std::byte* r = file.data() + at;
    const std::size_t frame_size =
        DocFrameSize(LoadLE<std::uint8_t>(r + record_header + 8));
    if (frame_size == 0 || trailer - at < record_header + frame_size) {
      return Verdict::kBad;
    }
    OwnedRecord record;
    record.index = framing.compact ? first + i : LoadLE<std::uint64_t>(r);
    record.receive_ns = LoadLE<std::uint64_t>(r + fields);
    record.session_id = LoadLE<std::uint32_t>(r + fields + 8);
    record.flags = LoadLE<std::uint32_t>(r + fields + 12);
    if (record.index != first + i) return Verdict::kBad;
    record.frame.assign(r + record_header, r + record_header + frame_size);
    out.push_back(std::move(record));
    at += record_header + frame_size;
  }
  if (at != trailer) return Verdict::kBad;
  // 7.
  const std::uint64_t end = trailer + kGroupTrailer;
  const std::uint64_t padded = std::min(DocAlign(end, framing.alignment), size);
  if (!AllZero(file.subspan(end, padded - end))) return Verdict::kBad;
  records.insert(records.end(), std::make_move_iterator(out.begin()),
                 std::make_move_iterator(out.end()));
  next = DocAlign(end, framing.alignment);
  return Verdict::kValid;
}

// ---------------------------------------------------------------------------
// A journal directory in memory.

struct File {
  std::string name;
  int origin = -1;  // index of the valid journal's file it started as
  Bytes bytes;
};
using Directory = std::vector<File>;  // sorted by name

void SortByName(Directory& dir) {
  std::sort(dir.begin(), dir.end(),
            [](const File& a, const File& b) { return a.name < b.name; });
}

const File* FindFile(const Directory& dir, std::string_view name) {
  for (const File& f : dir) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// A file the reader takes for a segment: its first index (from its name,
// or for the prepared segment from its header, read as ListSegments does:
// only a file of at least one block).
std::optional<std::uint64_t> SegmentIndex(const File& f) {
  if (const auto index = ParseSegmentFileName(f.name); index.has_value()) {
    return index;
  }
  if (f.name != kPreparedFileName || f.bytes.size() < kBlock) {
    return std::nullopt;
  }
  const std::uint64_t claimed =
      LoadLE<std::uint64_t>(f.bytes.data() + kSegFirstIndexAt);
  if (!DocSegmentHeader(std::span(f.bytes).first(kBlock), claimed)) {
    return std::nullopt;
  }
  return claimed;
}

// What the documented rules read from a directory.
struct DocReading {
  std::size_t segments = 0;
  bool ambiguous = false;  // two segments claim the same first index
  bool clean = false;      // the journal ends cleanly
  std::vector<GroupPlace> groups;
  std::vector<OwnedRecord> records;
};

DocReading ReadByTheDoc(const Directory& dir) {
  DocReading out;
  std::vector<std::pair<std::uint64_t, const File*>> segments;
  for (const File& f : dir) {
    if (const auto index = SegmentIndex(f)) segments.emplace_back(*index, &f);
  }
  std::stable_sort(
      segments.begin(), segments.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  out.segments = segments.size();
  for (std::size_t i = 1; i < segments.size(); ++i) {
    if (segments[i].first == segments[i - 1].first) out.ambiguous = true;
  }
  if (segments.empty()) return out;  // "There must be at least one"
  std::uint64_t expected = 1;
  std::uint64_t journal_id = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const File& f = *segments[i].second;
    const std::span<const std::byte> bytes(f.bytes);
    const std::optional<DocHeader> header =
        DocSegmentHeader(bytes, segments[i].first);
    if (!header.has_value()) return out;
    if (i == 0) journal_id = header->journal_id;
    if (header->journal_id != journal_id) return out;
    if (header->first_index != expected) return out;
    std::uint64_t pos = kBlock;
    while (true) {
      const std::size_t before = out.records.size();
      std::uint64_t next = 0;
      const Verdict verdict =
          DocGroup(bytes, pos, expected, DocFramingOf(header->version),
                   out.records, next);
      if (verdict == Verdict::kBad) return out;
      if (verdict == Verdict::kEnd) {
        if (pos < bytes.size() && !AllZero(bytes.subspan(pos))) return out;
        // "Checkpoint": a file shorter than its capacity was truncated.
        if (bytes.size() < header->capacity) return out;
        break;
      }
      const auto count =
          static_cast<std::uint32_t>(out.records.size() - before);
      out.groups.push_back({f.name, pos, expected, count});
      expected += count;
      pos = next;
    }
  }
  out.clean = true;
  return out;
}

// ---------------------------------------------------------------------------
// Files on disk.

void WriteFileOrDie(const std::string& path, std::span<const std::byte> bytes) {
  const int fd =
      ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  FUZZ_CHECK(fd >= 0);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    FUZZ_CHECK(n > 0);
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

Bytes ReadFileOrDie(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  Bytes out;
  std::array<std::byte, 65536> chunk;
  while (true) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    FUZZ_CHECK(n >= 0);
    if (n == 0) break;
    out.insert(out.end(), chunk.begin(),
               chunk.begin() + static_cast<std::ptrdiff_t>(n));
  }
  ::close(fd);
  return out;
}

// Empties `path` and writes `dir` into it.
void WriteDirectory(const std::string& path, const Directory& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    std::filesystem::remove_all(entry.path(), ec);
    FUZZ_CHECK(!ec);
  }
  for (const File& f : dir) WriteFileOrDie(path + "/" + f.name, f.bytes);
}

// ---------------------------------------------------------------------------
// What JournalReader reads, with the place of each group it yields.

struct Reading {
  bool opened = false;
  absl::Status open_status;
  ReadResult end = ReadResult::kError;
  absl::Status status;
  std::optional<internal::Damage> damage;
  std::vector<OwnedRecord> records;
  std::vector<GroupPlace> groups;
};

Reading ReadJournal(const std::string& path) {
  Reading out;
  auto opened = JournalReader::Open(path);
  if (!opened.ok()) {
    out.open_status = opened.status();
    return out;
  }
  out.opened = true;
  JournalReader& reader = **opened;
  Record record;
  // A group's first record shows as a new segment or a new group count in
  // segments(); groups are contiguous, so it starts where the previous
  // group of its segment ended (data_end), or at the first group offset.
  std::size_t seen_segments = 0;
  std::uint64_t seen_groups = 0;
  std::uint64_t seen_end = 0;
  while ((out.end = reader.Next(record)) == ReadResult::kRecord) {
    const std::vector<SegmentInfo>& infos = reader.segments();
    FUZZ_CHECK(!infos.empty());
    const SegmentInfo& info = infos.back();
    if (infos.size() != seen_segments || info.groups != seen_groups) {
      const std::uint64_t start =
          infos.size() != seen_segments ? kFirstGroupOffset : seen_end;
      out.groups.push_back(
          {std::filesystem::path(info.path).filename().string(), start,
           record.index, 0});
      seen_segments = infos.size();
      seen_groups = info.groups;
      seen_end = info.data_end;
    }
    ++out.groups.back().count;
    const std::span<const std::byte> frame = record.frame.bytes();
    // The view the reader hands out is a whole command frame.
    FUZZ_CHECK(record.frame.is_command());
    FUZZ_CHECK(frame.size() == record.frame.info().frame_size);
    out.records.push_back({record.index, record.receive_ns, record.session_id,
                           record.flags, Bytes(frame.begin(), frame.end())});
  }
  FUZZ_CHECK(out.end == ReadResult::kEnd || out.end == ReadResult::kError);
  // Each segment's metadata is whole: the size and checksum its header
  // (under the header's checksum) gives.
  for (const SegmentInfo& info : reader.segments()) {
    const auto metadata = std::as_bytes(std::span(info.metadata));
    FUZZ_CHECK(metadata.size() == info.header.metadata_size);
    FUZZ_CHECK(metadata.empty() ? info.header.metadata_crc == 0
                                : Crc32c(metadata) == info.header.metadata_crc);
  }
  // After the end every call answers the same.
  FUZZ_CHECK(reader.Next(record) == out.end);
  out.status = reader.status();
  out.damage = reader.damage();
  FUZZ_CHECK(out.status.ok() == (out.end == ReadResult::kEnd));
  FUZZ_CHECK(reader.last_index() == out.records.size());
  return out;
}

// ---------------------------------------------------------------------------
// The valid journal, built once.

struct Base {
  std::string scratch;  // the per-process scratch directory
  std::string damaged;  // where D is written for the reader
  std::string recover;  // where a copy of D is recovered
  Directory files;
  std::vector<GroupPlace> groups;
  // header + records_bytes + trailer
  std::vector<std::uint64_t> group_extent;
  std::vector<OwnedRecord> records;
  Bytes checkpoint;  // the valid journal's CHECKPOINT, from its Close
};

Base* base = nullptr;
// ORDERWIRE_FUZZ_VERBOSE set: print what each input did, and keep the
// scratch directory (damaged/ holds the last input's journal), for triage.
bool verbose = false;

std::string ScratchRoot() {
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

void RemoveScratch() {
  if (base == nullptr || base->scratch.empty()) return;
  if (verbose) {
    std::fprintf(stderr, "fuzz_journal: kept %s\n", base->scratch.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(base->scratch, ec);
}

void BuildBase() {
  base = new Base;
  std::string pattern = ScratchRoot() + "/orderwire-fuzz-journal.XXXXXX";
  FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr);
  base->scratch = pattern;
  std::atexit(RemoveScratch);
  const std::string valid = base->scratch + "/valid";
  base->damaged = base->scratch + "/damaged";
  base->recover = base->scratch + "/recover";
  std::filesystem::create_directory(base->damaged);
  std::filesystem::create_directory(base->recover);

  // The first groups by a version-1 writer (what older code wrote); then a
  // version-2 writer, which continues that segment in version 1 and starts
  // the next one in version 2; the last groups by today's, which continues
  // that one in version 2 and then starts a version-3 segment.
  std::uint64_t index = 0;
  for (const std::uint16_t version :
       {std::uint16_t{1}, std::uint16_t{2}, std::uint16_t{3}}) {
    auto writer = JournalWriter::Open({.directory = valid,
                                       .durability = Durability::kSync,
                                       .segment_size = kSegmentSize,
                                       .group_size = 8192,
                                       .slots = 2,
                                       .backend = IoBackend::kBlocking,
                                       .metadata = kMetadata,
                                       .format_version = version});
    FUZZ_CHECK(writer.ok());
    const std::size_t from = version == 1 ? 0 : version == 2 ? 4 : 15;
    const std::size_t to = version == 1   ? 4
                           : version == 2 ? 15
                                          : kGroupRecords.size();
    // Today's writer starts its own segment at once.
    if (version == 3) FUZZ_CHECK((*writer)->StartSegment(kMetadata).ok());
    for (std::size_t g = from; g < to; ++g) {
      const Bytes frames = codec::testing::EncodeRandomStream(
          kGroupRecords[g], 1000 + g, codec::testing::kDecodeBenchMix);
      const auto session = static_cast<std::uint32_t>(100 + g);
      const std::uint64_t receive_ns = 1'700'000'000'000'000'000u + g;
      const std::uint32_t flags = g % 3 == 2 ? kSomeFlag : 0;
      AppendStatus status;
      int tries = 0;
      while ((status = (*writer)->Append(frames, session, receive_ns, flags)) ==
             AppendStatus::kFull) {
        FUZZ_CHECK((*writer)->Wait().ok() && ++tries < 1000);
      }
      FUZZ_CHECK(status == AppendStatus::kOk);
      for (std::size_t pos = 0; pos < frames.size();) {
        const codec::Result<codec::FrameView> frame =
            codec::FrameView::Parse(std::span(frames).subspan(pos));
        FUZZ_CHECK(frame.ok());
        const auto bytes = frame->bytes();
        base->records.push_back({++index, receive_ns, session, flags,
                                 Bytes(bytes.begin(), bytes.end())});
        pos += bytes.size();
      }
    }
    FUZZ_CHECK((*writer)->Close().ok());
  }
  base->checkpoint =
      ReadFileOrDie(valid + "/" + std::string(kCheckpointFileName));
  for (const auto& entry : std::filesystem::directory_iterator(valid)) {
    const std::string name = entry.path().filename().string();
    if (!ParseSegmentFileName(name).has_value()) continue;
    base->files.push_back({name, -1, ReadFileOrDie(entry.path().string())});
  }
  SortByName(base->files);
  for (std::size_t i = 0; i < base->files.size(); ++i) {
    base->files[i].origin = static_cast<int>(i);
  }
  // Three segments, the first one full, of versions 1, 2 and 3; the rules
  // and the reader both read every record back as written.
  FUZZ_CHECK(base->files.size() == 3);
  FUZZ_CHECK(DocFramingOf(base->files[0].bytes).alignment == kBlock &&
             DocFramingOf(base->files[1].bytes).alignment == 8 &&
             !DocFramingOf(base->files[1].bytes).compact &&
             DocFramingOf(base->files[2].bytes).compact);
  const DocReading doc = ReadByTheDoc(base->files);
  FUZZ_CHECK(doc.clean && !doc.ambiguous);
  FUZZ_CHECK(doc.records == base->records);
  FUZZ_CHECK(doc.groups.size() == kGroupRecords.size());
  base->groups = doc.groups;
  for (const GroupPlace& g : base->groups) {
    const File* f = FindFile(base->files, g.file);
    base->group_extent.push_back(
        DocFramingOf(f->bytes).group_header + kGroupTrailer +
        LoadLE<std::uint32_t>(f->bytes.data() + g.offset +
                              kGroupRecordsBytesAt));
  }
  const Reading read = ReadJournal(valid);
  FUZZ_CHECK(read.opened && read.end == ReadResult::kEnd);
  FUZZ_CHECK(read.records == base->records && read.groups == doc.groups);
}

// ---------------------------------------------------------------------------
// Applying a recipe.

// A place in `f` where a group may start, chosen by `operand`: an even one
// picks a block boundary, an odd one the place of a group of the valid
// journal (in version 2, groups start between blocks).
std::uint64_t PlaceIn(const File& f, std::uint8_t operand) {
  if (operand % 2 == 1) {
    return base->groups[(operand / 2u) % base->groups.size()].offset;
  }
  const std::uint64_t blocks = DocAlign(f.bytes.size()) / kBlock;
  return blocks == 0 ? 0 : (operand / 2u) % blocks * kBlock;
}

// The file that now holds base group g, and the group's offset in it.
File* GroupFile(Directory& dir, std::size_t g) {
  const File* home = FindFile(base->files, base->groups[g].file);
  for (File& f : dir) {
    if (f.origin == home->origin) return &f;
  }
  return nullptr;
}

File* PickFile(Directory& dir, std::uint8_t operand) {
  return dir.empty() ? nullptr : &dir[operand % dir.size()];
}

// kXorAt: one byte of all the files back to back.
void XorAt(Directory& dir, const RecipeStep& step) {
  std::uint64_t total = 0;
  for (const File& f : dir) total += f.bytes.size();
  if (total == 0) return;
  std::uint64_t at = step.Le(0, 3) % total;
  for (File& f : dir) {
    if (at < f.bytes.size()) {
      f.bytes[at] ^= std::byte{step.operand[3]};
      return;
    }
    at -= f.bytes.size();
  }
}

// kResealGroup: the trailer CRC of the group at a place of a file.
void ResealGroup(Directory& dir, const RecipeStep& step) {
  File* f = PickFile(dir, step.operand[0]);
  if (f == nullptr || f->bytes.empty()) return;
  const std::uint64_t at = PlaceIn(*f, step.operand[1]);
  const std::size_t group_header = DocFramingOf(f->bytes).group_header;
  if (at + group_header > f->bytes.size()) return;
  const std::uint64_t covered =
      group_header +
      LoadLE<std::uint32_t>(f->bytes.data() + at + kGroupRecordsBytesAt);
  if (at + covered + kTrailerMagicAt > f->bytes.size()) return;
  codec::StoreLE(f->bytes.data() + at + covered + kTrailerCrcAt,
                 Crc32c(std::span(f->bytes).subspan(at, covered)));
}

// kResealHeader: a segment header's CRC, and its metadata's when its size
// fits the file.
void ResealHeader(Directory& dir, const RecipeStep& step) {
  File* f = PickFile(dir, step.operand[0]);
  if (f == nullptr || f->bytes.size() < kSegmentHeaderSize) return;
  if (const std::uint32_t size =
          LoadLE<std::uint32_t>(f->bytes.data() + kSegMetadataSizeAt);
      size != 0 && size <= kMetadataMax &&
      kMetadataAt + size <= f->bytes.size()) {
    codec::StoreLE(f->bytes.data() + kSegMetadataCrcAt,
                   Crc32c(std::span(f->bytes).subspan(kMetadataAt, size)));
  }
  codec::StoreLE(f->bytes.data() + kHeaderCrcAt,
                 Crc32c(std::span(f->bytes).first(kHeaderCrcAt)));
}

// kRenameFile: to next.owj.prep (name 0) or a segment's name, replacing a
// file of that name.
void RenameFile(Directory& dir, const RecipeStep& step) {
  File* f = PickFile(dir, step.operand[0]);
  if (f == nullptr) return;
  const std::string name = step.operand[1] == 0
                               ? std::string(kPreparedFileName)
                               : SegmentFileName(step.operand[1]);
  if (f->name == name) return;
  File moved = std::move(*f);
  dir.erase(dir.begin() + (f - dir.data()));
  std::erase_if(dir, [&](const File& other) { return other.name == name; });
  moved.name = name;
  dir.push_back(std::move(moved));
  SortByName(dir);
}

// kZeroAt: zero a run of bytes of a file.
void ZeroAt(Directory& dir, const RecipeStep& step) {
  File* f = PickFile(dir, step.operand[0]);
  if (f == nullptr || f->bytes.empty()) return;
  const std::uint64_t from = step.Le(1, 3) % f->bytes.size();
  const std::uint64_t to =
      std::min<std::uint64_t>(from + step.Le(4, 2), f->bytes.size());
  std::fill(f->bytes.begin() + static_cast<std::ptrdiff_t>(from),
            f->bytes.begin() + static_cast<std::ptrdiff_t>(to), std::byte{0});
}

// kCopyGroup: base group g's original bytes at a place of a file.
void CopyGroup(Directory& dir, const RecipeStep& step, std::size_t g) {
  File* f = PickFile(dir, step.operand[1]);
  if (f == nullptr || f->bytes.empty()) return;
  const std::uint64_t at = PlaceIn(*f, step.operand[2]);
  if (at >= f->bytes.size()) return;
  const std::uint64_t start = base->groups[g].offset;
  const Bytes& from = FindFile(base->files, base->groups[g].file)->bytes;
  const std::uint64_t n =
      std::min<std::uint64_t>(base->group_extent[g], f->bytes.size() - at);
  std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(start), n,
              f->bytes.begin() + static_cast<std::ptrdiff_t>(at));
}

// One op of a recipe (journal_recipe.h has their meaning).
void Apply(Directory& dir, const RecipeStep& step) {
  const std::size_t g = step.operand[0] % base->groups.size();
  const std::uint64_t start = base->groups[g].offset;
  const std::uint64_t extent = base->group_extent[g];
  switch (step.op) {
    case JournalOp::kXorInGroup: {
      File* f = GroupFile(dir, g);
      const std::uint64_t at = start + step.Le(1, 2) % (extent + 64);
      if (f != nullptr && at < f->bytes.size()) {
        f->bytes[at] ^= std::byte{step.operand[3]};
      }
      return;
    }
    case JournalOp::kXorAt:
      XorAt(dir, step);
      return;
    case JournalOp::kXorInHeader: {
      File* f = PickFile(dir, step.operand[0]);
      const std::size_t at = step.operand[1] % 128u;
      if (f != nullptr && at < f->bytes.size()) {
        f->bytes[at] ^= std::byte{step.operand[2]};
      }
      return;
    }
    case JournalOp::kZeroInGroup: {
      File* f = GroupFile(dir, g);
      if (f == nullptr) return;
      const std::uint64_t from = start + step.Le(1, 2) % extent;
      const std::uint64_t to =
          std::min<std::uint64_t>(from + step.Le(3, 2), f->bytes.size());
      for (std::uint64_t i = from; i < to; ++i) f->bytes[i] = std::byte{0};
      return;
    }
    case JournalOp::kTruncateInGroup: {
      File* f = GroupFile(dir, g);
      const std::uint64_t at = start + step.Le(1, 2) % (extent + 1);
      if (f != nullptr && at < f->bytes.size()) f->bytes.resize(at);
      return;
    }
    case JournalOp::kTruncateFile: {
      File* f = PickFile(dir, step.operand[0]);
      if (f != nullptr) f->bytes.resize(step.Le(1, 3) % (f->bytes.size() + 1));
      return;
    }
    case JournalOp::kResealGroup:
      ResealGroup(dir, step);
      return;
    case JournalOp::kResealHeader:
      ResealHeader(dir, step);
      return;
    case JournalOp::kRemoveFile: {
      if (File* f = PickFile(dir, step.operand[0]); f != nullptr) {
        dir.erase(dir.begin() + (f - dir.data()));
      }
      return;
    }
    case JournalOp::kRenameFile:
      RenameFile(dir, step);
      return;
    case JournalOp::kZeroAt:
      ZeroAt(dir, step);
      return;
    case JournalOp::kCopyGroup:
      CopyGroup(dir, step, g);
      return;
  }
}

// ---------------------------------------------------------------------------
// The checks.

// Whether `f` holds, at `offset`, the same `length` bytes as the valid
// journal's file it came from.
bool Untouched(const File& f, std::uint64_t offset, std::uint64_t length) {
  if (f.origin < 0) return false;
  const Bytes& original = base->files[static_cast<std::size_t>(f.origin)].bytes;
  if (offset + length > f.bytes.size() || offset + length > original.size()) {
    return false;
  }
  return SameBytes(std::span(f.bytes).subspan(offset, length),
                   std::span(original).subspan(offset, length));
}

// Invariants 2 and 3: every group the reader yields is one the rules accept
// at its place, and its records are the valid journal's where its bytes are.
void CheckYieldedGroups(const Directory& dir, const Reading& read) {
  std::size_t k = 0;  // records checked so far
  for (const GroupPlace& place : read.groups) {
    const File* f = FindFile(dir, place.file);
    FUZZ_CHECK(f != nullptr);
    FUZZ_CHECK(place.first_index == k + 1);
    std::vector<OwnedRecord> records;
    std::uint64_t next = 0;
    FUZZ_CHECK(DocGroup(f->bytes, place.offset, k + 1, DocFramingOf(f->bytes),
                        records, next) == Verdict::kValid);
    FUZZ_CHECK(records.size() == place.count);
    const std::uint64_t extent =
        DocFramingOf(f->bytes).group_header + kGroupTrailer +
        LoadLE<std::uint32_t>(f->bytes.data() + place.offset +
                              kGroupRecordsBytesAt);
    const bool untouched = Untouched(*f, place.offset, extent);
    if (untouched) {
      // Its bytes are a group of the valid journal: that group, whole.
      const std::string& home =
          base->files[static_cast<std::size_t>(f->origin)].name;
      FUZZ_CHECK(std::any_of(
          base->groups.begin(), base->groups.end(), [&](const GroupPlace& g) {
            return g.file == home && g.offset == place.offset &&
                   g.first_index == place.first_index && g.count == place.count;
          }));
    }
    for (const OwnedRecord& record : records) {
      FUZZ_CHECK(k < read.records.size());
      FUZZ_CHECK(read.records[k] == record);
      if (untouched) FUZZ_CHECK(read.records[k] == base->records[k]);
      ++k;
    }
  }
  FUZZ_CHECK(k == read.records.size());
}

// Invariant 4: kEnd leaves no intact group of the valid journal holding a
// later record in a file the reader takes for a segment.
void CheckNothingDurableLeftBehind(const Directory& dir, const Reading& read) {
  if (read.end != ReadResult::kEnd) return;
  const std::uint64_t n = read.records.size();
  for (std::size_t g = 0; g < base->groups.size(); ++g) {
    const GroupPlace& place = base->groups[g];
    if (place.first_index + place.count - 1 <= n) continue;
    const File* home = FindFile(base->files, place.file);
    for (const File& f : dir) {
      if (f.origin != home->origin || !SegmentIndex(f).has_value()) continue;
      FUZZ_CHECK(!Untouched(f, place.offset, base->group_extent[g]));
    }
  }
}

bool SameFiles(const Directory& a, const Directory& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](const File& x, const File& y) {
                      return x.name == y.name && SameBytes(x.bytes, y.bytes);
                    });
}

// Whether some file has a segment header with a valid checksum that claims
// a capacity recovery should not preallocate here.
bool ClaimsHugeCapacity(const Directory& dir) {
  return std::any_of(dir.begin(), dir.end(), [](const File& f) {
    return f.bytes.size() >= kSegmentHeaderSize &&
           LoadLE<std::uint32_t>(f.bytes.data() + kHeaderCrcAt) ==
               Crc32c(std::span(f.bytes).first(kHeaderCrcAt)) &&
           LoadLE<std::uint64_t>(f.bytes.data() + kSegCapacityAt) >
               kMaxRecoveredCapacity;
  });
}

// Invariant 5.
void CheckRecovery(const Directory& dir, const Reading& read,
                   const DocReading& doc) {
  if (ClaimsHugeCapacity(dir)) return;
  WriteDirectory(base->recover, dir);
  auto writer = JournalWriter::Open({.directory = base->recover,
                                     .durability = Durability::kNone,
                                     .segment_size = kSegmentSize,
                                     .group_size = 8192,
                                     .slots = 2,
                                     .backend = IoBackend::kBlocking});
  const std::uint64_t n = read.records.size();
  const bool torn = read.damage.has_value() &&
                    read.damage->kind == internal::Damage::Kind::kTornTail;
  const bool refuse = read.opened && read.end == ReadResult::kError && !torn;
  if (doc.ambiguous || refuse) {
    // Two segments for one index; data loss; an unsupported version.
    FUZZ_CHECK(!writer.ok());
    if (!doc.ambiguous) {
      // The same refusal, or, when the damage holds more than one reason
      // to refuse (a segment of an unsupported version AND segments
      // missing before it), each may name the one it meets first: the
      // reader walks the segments, recovery checks the journal's start
      // first. Either way a refusal: DataLoss or Unimplemented.
      const auto refusal = [](absl::StatusCode code) {
        return code == absl::StatusCode::kDataLoss ||
               code == absl::StatusCode::kUnimplemented;
      };
      FUZZ_CHECK(
          writer.status().code() == read.status.code() ||
          (refusal(writer.status().code()) && refusal(read.status.code())));
    }
    // The refusal changed no segment file.
    for (const File& f : dir) {
      if (!ParseSegmentFileName(f.name).has_value()) continue;
      FUZZ_CHECK(ReadFileOrDie(base->recover + "/" + f.name) == f.bytes);
    }
    return;
  }
  if (verbose) {
    std::fprintf(stderr, "fuzz_journal: recovery: %s\n",
                 !writer.ok() ? std::string(writer.status().message()).c_str()
                 : (*writer)->recovery().torn_tail
                     ? (*writer)->recovery().message.c_str()
                     : "clean");
  }
  FUZZ_CHECK(writer.ok());
  JournalWriter& w = **writer;
  const RecoveryReport& report = w.recovery();
  FUZZ_CHECK(report.last_index == n && w.last_index() == n);
  if (!read.opened) {
    FUZZ_CHECK(report.created);  // no segment at all: a new journal
  } else {
    FUZZ_CHECK(report.torn_tail == torn);
    if (torn) FUZZ_CHECK(report.torn_offset == read.damage->offset);
  }
  // One more record, right behind the kept ones.
  const OwnedRecord& model = base->records[n % base->records.size()];
  const OwnedRecord appended{n + 1, 42, 0xF00D, kSomeFlag, model.frame};
  AppendStatus status;
  int tries = 0;
  while ((status = w.Append(appended.frame, appended.session_id,
                            appended.receive_ns, appended.flags)) ==
             AppendStatus::kFull &&
         w.Wait().ok() && ++tries < 1000) {
  }
  const absl::Status closed = w.Close();
  FUZZ_CHECK(status == AppendStatus::kOk && closed.ok());
  writer->reset();
  const Reading after = ReadJournal(base->recover);
  FUZZ_CHECK(after.opened && after.end == ReadResult::kEnd);
  FUZZ_CHECK(after.records.size() == n + 1);
  FUZZ_CHECK(std::equal(read.records.begin(), read.records.end(),
                        after.records.begin()));
  FUZZ_CHECK(after.records.back() == appended);
}

// Invariant 6: the checkpoint is untrusted input too. The valid journal
// with a CHECKPOINT made from the input (the valid one cut or extended to
// input[0] % 74 bytes, input[2k+2] ^ input[2k+3] at offset input[2k+2] %
// its size, re-sealed when input[1] is odd) never crashes the reader or
// recovery. One that does not decode by docs/JOURNAL.md "Checkpoint" is
// refused by both with DecodeCheckpoint's code; one that decodes is
// accepted exactly when what it says is true of the journal: its journal
// id, and its durable index 0 or the last index of one of the journal's
// groups, named by its first index, segment, offset and checksum.
void CheckCheckpoint(std::span<const std::uint8_t> input) {
  if (input.size() < 2) return;
  Bytes bytes = base->checkpoint;
  bytes.resize(input[0] % (kCheckpointSize + 2));
  for (std::size_t i = 2; i + 1 < input.size() && !bytes.empty(); i += 2) {
    bytes[input[i] % bytes.size()] ^= std::byte{input[i + 1]};
  }
  if ((input[1] & 1) != 0 && bytes.size() >= kCheckpointCrcOffset + 4) {
    codec::StoreLE(bytes.data() + kCheckpointCrcOffset,
                   Crc32c(std::span(bytes).first(kCheckpointCrcOffset)));
  }
  const absl::StatusOr<Checkpoint> decoded = DecodeCheckpoint(bytes, "input");
  bool truthful = false;
  if (decoded.ok()) {
    const File& first = base->files.front();
    const std::uint64_t journal_id =
        LoadLE<std::uint64_t>(first.bytes.data() + kSegJournalIdAt);
    truthful = decoded->journal_id == journal_id;
    if (truthful && decoded->durable_index != 0) {
      truthful = std::any_of(
          base->groups.begin(), base->groups.end(), [&](const GroupPlace& g) {
            const Bytes& file = FindFile(base->files, g.file)->bytes;
            const auto records_bytes =
                LoadLE<std::uint32_t>(file.data() + g.offset + 4);
            const auto crc = LoadLE<std::uint32_t>(
                file.data() + g.offset + DocFramingOf(file).group_header +
                records_bytes);
            return g.first_index == decoded->group_first_index &&
                   g.first_index + g.count - 1 == decoded->durable_index &&
                   g.file == SegmentFileName(decoded->segment_first_index) &&
                   g.offset == decoded->group_offset &&
                   crc == decoded->group_crc;
          });
    }
  }
  Directory dir = base->files;
  dir.push_back({std::string(kCheckpointFileName), -1, bytes});
  WriteDirectory(base->damaged, dir);
  const Reading read = ReadJournal(base->damaged);
  if (!decoded.ok()) {
    FUZZ_CHECK(!read.opened);
    FUZZ_CHECK(read.open_status.code() == decoded.status().code());
  } else {
    FUZZ_CHECK(read.opened);
    FUZZ_CHECK((read.end == ReadResult::kEnd) == truthful);
    if (!truthful) {
      FUZZ_CHECK(read.status.code() == absl::StatusCode::kDataLoss);
    }
  }
  WriteDirectory(base->recover, dir);
  auto writer = JournalWriter::Open({.directory = base->recover,
                                     .durability = Durability::kNone,
                                     .segment_size = kSegmentSize,
                                     .group_size = 8192,
                                     .slots = 2,
                                     .backend = IoBackend::kBlocking});
  FUZZ_CHECK(writer.ok() == (decoded.ok() && truthful));
  if (!writer.ok()) {
    FUZZ_CHECK(
        writer.status().code() ==
        (decoded.ok() ? absl::StatusCode::kDataLoss : decoded.status().code()));
  }
}

void CheckRecipe(std::span<const std::uint8_t> input) {
  Directory dir = base->files;
  for (const RecipeStep& step : fuzz::ParseRecipe(input)) Apply(dir, step);
  WriteDirectory(base->damaged, dir);
  const Reading read = ReadJournal(base->damaged);
  const DocReading doc = ReadByTheDoc(dir);

  // 2. The reader and the documented rules agree.
  FUZZ_CHECK(read.opened == (doc.segments > 0));
  if (!read.opened) {
    FUZZ_CHECK(read.open_status.code() == absl::StatusCode::kNotFound);
  } else {
    CheckYieldedGroups(dir, read);
    if (!doc.ambiguous) {
      FUZZ_CHECK(read.groups == doc.groups);
      FUZZ_CHECK((read.end == ReadResult::kEnd) == doc.clean);
    }
    if (read.end == ReadResult::kError) {
      FUZZ_CHECK(!read.status.ok());
      FUZZ_CHECK(!read.damage.has_value() ||
                 read.status.code() == absl::StatusCode::kDataLoss);
    }
  }
  if (verbose) {
    std::fprintf(stderr,
                 "fuzz_journal: %zu files, %zu records read, %s: %s%s\n",
                 dir.size(), read.records.size(),
                 read.end == ReadResult::kEnd ? "end" : "error",
                 std::string(read.status.message()).c_str(),
                 std::string(read.open_status.message()).c_str());
  }
  // 4. Never read in full when damaged.
  if (SameFiles(dir, base->files)) {
    FUZZ_CHECK(read.end == ReadResult::kEnd &&
               read.records.size() == base->records.size());
  }
  CheckNothingDurableLeftBehind(dir, read);
  // 5. Recovery.
  CheckRecovery(dir, read, doc);
  // 6. The checkpoint.
  CheckCheckpoint(input);
}

}  // namespace
}  // namespace orderwire::journal

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // The tripwire (see above).
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 &&
      (limit.rlim_cur == RLIM_INFINITY ||
       limit.rlim_cur > orderwire::journal::kFileSizeLimit)) {
    limit.rlim_cur = orderwire::journal::kFileSizeLimit;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  orderwire::journal::verbose =
      std::getenv("ORDERWIRE_FUZZ_VERBOSE") != nullptr;
  orderwire::journal::BuildBase();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  orderwire::journal::CheckRecipe({data, size});
  return 0;
}
