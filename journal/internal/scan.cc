// Header and group validation, damage classification; see scan.h.
#include "journal/internal/scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/record.h"

namespace orderwire::journal::internal {
namespace {

using codec::LoadLE;

constexpr std::size_t kSectorSize = 512;

bool AllZero(std::span<const std::byte> bytes) noexcept {
  return FirstNonZero(bytes, 0) == bytes.size();
}

// True if an aligned 512-byte sector inside [begin, end) is all zero: what a
// write that never reached the disk leaves in a pre-zeroed file.
bool HasZeroSector(std::span<const std::byte> segment, std::uint64_t begin,
                   std::uint64_t end) noexcept {
  std::uint64_t sector = (begin + kSectorSize - 1) / kSectorSize * kSectorSize;
  for (; sector + kSectorSize <= end; sector += kSectorSize) {
    if (AllZero(segment.subspan(sector, kSectorSize))) return true;
  }
  return false;
}

GroupCheck Bad(bool torn, std::string_view problem,
               const GroupHeader& header = {}) noexcept {
  GroupCheck check;
  check.state = GroupState::kBad;
  check.torn = torn;
  check.header = header;
  check.problem = problem;
  return check;
}

}  // namespace

// ---------------------------------------------------------------------------
// MappedFile, ListSegments, SegmentSet.

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("open %s", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return absl::ErrnoToStatus(err, absl::StrFormat("fstat %s", path));
  }
  MappedFile file;
  file.size_ = static_cast<std::size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      return absl::ErrnoToStatus(err, absl::StrFormat("mmap %s", path));
    }
    ::madvise(p, file.size_, MADV_SEQUENTIAL);
    file.data_ = static_cast<const std::byte*>(p);
  }
  return file;  // the mapping outlives the descriptor
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) {
      ::munmap(const_cast<std::byte*>(data_), size_);
    }
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

absl::StatusOr<std::vector<SegmentEntry>> ListSegments(
    const std::string& directory) {
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(
          absl::StrFormat("journal directory %s does not exist", directory));
    }
    return absl::ErrnoToStatus(err, absl::StrFormat("opendir %s", directory));
  }
  std::vector<SegmentEntry> entries;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (const auto index = ParseSegmentFileName(name); index.has_value()) {
      entries.push_back(
          {absl::StrFormat("%s/%s", directory, name), *index, nullptr});
    }
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) {
    return absl::ErrnoToStatus(err, absl::StrFormat("readdir %s", directory));
  }
  // The writer's prepared segment counts when it holds a valid header: it
  // was renamed into place before a crash, but the rename had not reached
  // the disk (see docs/JOURNAL.md, "Segments, preallocation, rotation").
  const std::string prepared =
      absl::StrFormat("%s/%s", directory, kPreparedFileName);
  if (absl::StatusOr<MappedFile> file = MappedFile::Open(prepared); file.ok()) {
    const std::span<const std::byte> bytes = file->bytes();
    if (bytes.size() >= kBlockSize) {
      const auto header =
          LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data());
      if (CheckSegmentHeader(bytes.first(kBlockSize), header.first_index).ok) {
        entries.push_back(
            {prepared, header.first_index,
             std::make_shared<const MappedFile>(std::move(*file))});
      }
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const SegmentEntry& a, const SegmentEntry& b) {
              return a.name_index < b.name_index;
            });
  return entries;
}

absl::StatusOr<std::span<const std::byte>> SegmentSet::Map(std::size_t i) {
  if (entries_[i].mapped != nullptr) return entries_[i].mapped->bytes();
  if (files_[i] == nullptr) {
    absl::StatusOr<MappedFile> file = MappedFile::Open(entries_[i].path);
    if (!file.ok()) return file.status();
    files_[i] = std::make_unique<MappedFile>(std::move(*file));
  }
  return files_[i]->bytes();
}

// ---------------------------------------------------------------------------
// Segment headers.

namespace {

// CheckSegmentHeader's steps. Each returns true when its checks pass, and
// otherwise sets check.problem (and check.torn where a crash explains it).

// The file holds a header's bytes, not all zero.
bool CheckHeaderPresent(std::span<const std::byte> file, HeaderCheck& check) {
  if (file.empty()) {
    check.problem = "the file is empty (0 bytes): not a journal segment";
    return false;
  }
  if (file.size() < kSegmentHeaderSize) {
    check.problem = absl::StrFormat(
        "the file is %d bytes, shorter than a %d-byte segment header",
        file.size(), kSegmentHeaderSize);
    check.torn = AllZero(file);
    return false;
  }
  if (AllZero(file.first(kSegmentHeaderSize))) {
    check.problem =
        "the segment header is all zeros (the segment was created but its "
        "header never written)";
    check.torn = true;
    return false;
  }
  return true;
}

// Magic, version and checksum of the header `h`, read from `raw`.
bool CheckHeaderIdentity(const SegmentHeader& h, std::span<const std::byte> raw,
                         HeaderCheck& check) {
  if (h.magic != kSegmentMagic) {
    check.problem = absl::StrFormat(
        "bad magic 0x%016x (a segment starts with the bytes \"OWJOURNL\"): "
        "not a journal segment",
        h.magic);
    return false;
  }
  if (h.version < kOldestFormatVersion || h.version > kFormatVersion) {
    check.problem = absl::StrFormat(
        "unsupported format version %d (this build reads versions %d to %d)",
        h.version, kOldestFormatVersion, kFormatVersion);
    return false;
  }
  const std::uint32_t crc = Crc32c(raw.first(kSegmentHeaderCrcOffset));
  if (crc != h.crc) {
    check.problem = absl::StrFormat(
        "segment header checksum mismatch (stored 0x%08x, computed 0x%08x)",
        h.crc, crc);
    check.torn = h.crc == 0;
    return false;
  }
  return true;
}

// The header's other fields: sizes, flags, first index (the file name's),
// capacity, the metadata's size and checksum fields.
bool CheckHeaderFields(const SegmentHeader& h, std::uint64_t name_index,
                       HeaderCheck& check) {
  if (h.header_size != kSegmentHeaderSize || h.block_size != kBlockSize) {
    check.problem = absl::StrFormat(
        "unsupported header size %d or block size %d (expected %d and %d)",
        h.header_size, h.block_size, kSegmentHeaderSize, kBlockSize);
    return false;
  }
  if (h.flags != 0) {
    check.problem = absl::StrFormat("unknown segment flags 0x%x set", h.flags);
    return false;
  }
  if (h.first_index == 0 || h.first_index != name_index) {
    check.problem =
        absl::StrFormat("header says first index %d but the file name says %d",
                        h.first_index, name_index);
    return false;
  }
  if (h.capacity < kMinSegmentCapacity || h.capacity > kMaxSegmentCapacity ||
      h.capacity % kBlockSize != 0) {
    check.problem =
        absl::StrFormat("implausible segment capacity %d", h.capacity);
    return false;
  }
  // The metadata area: its size and checksum are in the header, under the
  // header's checksum, so it is never taken for absent or half there.
  if (h.metadata_size > kMaxSegmentMetadata ||
      (h.metadata_size == 0 && h.metadata_crc != 0)) {
    check.problem = absl::StrFormat(
        "implausible segment metadata size %d (at most %d) or checksum 0x%08x "
        "without metadata",
        h.metadata_size, kMaxSegmentMetadata, h.metadata_crc);
    return false;
  }
  return true;
}

// The metadata the header announces: in the file, its checksum matching.
bool CheckMetadata(std::span<const std::byte> file, const SegmentHeader& h,
                   HeaderCheck& check) {
  const std::uint64_t metadata_end = kSegmentMetadataOffset + h.metadata_size;
  if (file.size() < metadata_end) {
    check.problem = absl::StrFormat(
        "the file (%d bytes) ends inside the segment metadata (bytes %d..%d)",
        file.size(), kSegmentMetadataOffset, metadata_end - 1);
    check.torn = true;
    return false;
  }
  if (h.metadata_size == 0) return true;
  const std::uint32_t metadata_crc =
      Crc32c(file.subspan(kSegmentMetadataOffset, h.metadata_size));
  if (metadata_crc == h.metadata_crc) return true;
  check.problem = absl::StrFormat(
      "segment metadata checksum mismatch (bytes %d..%d: stored 0x%08x, "
      "computed 0x%08x)",
      kSegmentMetadataOffset, metadata_end - 1, h.metadata_crc, metadata_crc);
  // A sector of the metadata still zero: the header block's write was
  // cut short (the header's own sector landed, a later one did not).
  for (std::uint64_t sector = kSectorSize; sector < metadata_end;
       sector += kSectorSize) {
    if (sector + kSectorSize <= file.size() &&
        AllZero(file.subspan(sector, kSectorSize))) {
      check.torn = true;
    }
  }
  return false;
}

// Zeros after the header and its metadata, to the end of the header block.
bool CheckHeaderBlockPadding(std::span<const std::byte> file,
                             const SegmentHeader& h, HeaderCheck& check) {
  const std::uint64_t metadata_end = kSegmentMetadataOffset + h.metadata_size;
  const std::size_t block_end = std::min(file.size(), kBlockSize);
  const std::uint64_t nonzero =
      FirstNonZero(file.first(block_end), metadata_end);
  if (nonzero == block_end) return true;
  check.problem = absl::StrFormat(
      "non-zero byte at offset %d of the header block (bytes %d..%d, after "
      "the header and its %d bytes of metadata, must be zero)",
      nonzero, metadata_end, kBlockSize - 1, h.metadata_size);
  return false;
}

}  // namespace

HeaderCheck CheckSegmentHeader(std::span<const std::byte> file,
                               std::uint64_t name_index) {
  HeaderCheck check;
  if (!CheckHeaderPresent(file, check)) return check;
  const std::span<const std::byte> raw = file.first(kSegmentHeaderSize);
  const SegmentHeader h =
      LoadStruct<kSegmentHeaderLayout, SegmentHeader>(raw.data());
  check.header = h;
  if (!CheckHeaderIdentity(h, raw, check) ||
      !CheckHeaderFields(h, name_index, check) ||
      !CheckMetadata(file, h, check) ||
      !CheckHeaderBlockPadding(file, h, check)) {
    return check;
  }
  const std::span<const std::byte> metadata =
      file.subspan(kSegmentMetadataOffset, h.metadata_size);
  check.metadata.assign(reinterpret_cast<const char*>(metadata.data()),
                        metadata.size());
  check.ok = true;
  return check;
}

// ---------------------------------------------------------------------------
// Groups.

std::uint64_t FirstNonZero(std::span<const std::byte> bytes,
                           std::uint64_t from) noexcept {
  const std::uint64_t size = bytes.size();
  std::uint64_t i = from;
  // Byte steps to an 8-byte boundary, then 32 bytes per step.
  while (i < size && (i & 7u) != 0) {
    if (bytes[i] != std::byte{0}) return i;
    ++i;
  }
  while (i + 32 <= size) {
    std::uint64_t w[4];
    std::memcpy(w, bytes.data() + i, 32);
    if ((w[0] | w[1] | w[2] | w[3]) != 0) break;
    i += 32;
  }
  while (i < size) {
    if (bytes[i] != std::byte{0}) return i;
    ++i;
  }
  return size;
}

GroupCheck CheckGroup(std::span<const std::byte> segment, std::uint64_t pos,
                      std::uint64_t expected_first_index,
                      const GroupFormat& format) noexcept {
  const std::uint64_t size = segment.size();
  const std::uint64_t header_size = format.header_size;
  if (pos >= size) return GroupCheck{};  // kEmpty: the file ends here
  if (pos + header_size > size) {
    if (AllZero(segment.subspan(pos))) return GroupCheck{};
    return Bad(true, "a group header is cut off by the end of the file");
  }
  const std::byte* const base = segment.data() + pos;
  if (AllZero({base, header_size})) return GroupCheck{};
  const GroupHeader h = DecodeGroupHeader(format, base);
  if (h.magic != format.magic) {
    return Bad(true, "no group header here (bad group magic)", h);
  }
  if (h.record_count == 0 || h.records_bytes < format.min_record_size ||
      h.records_bytes > kMaxGroupBytes - header_size - kGroupTrailerSize ||
      std::uint64_t{h.record_count} * format.min_record_size >
          h.records_bytes ||
      std::uint64_t{h.record_count} * format.max_record_size <
          h.records_bytes) {
    return Bad(true, "implausible group size fields", h);
  }
  const std::uint64_t trailer = pos + header_size + h.records_bytes;
  if (trailer + kGroupTrailerSize > size) {
    return Bad(true, "the group runs past the end of the file", h);
  }
  const GroupTrailer t =
      LoadStruct<kGroupTrailerLayout, GroupTrailer>(segment.data() + trailer);
  if (t.magic != kTrailerMagic) {
    return Bad(true,
               "the group trailer is missing (the write did not complete)", h);
  }
  const std::uint32_t crc =
      Crc32c({base, static_cast<std::size_t>(trailer - pos)});
  if (crc != t.crc) {
    return Bad(HasZeroSector(segment, pos, trailer + kGroupTrailerSize),
               "group checksum mismatch", h);
  }
  if (h.flags != 0) return Bad(false, "unknown group flags set", h);
  if (expected_first_index != 0 && h.first_index != expected_first_index) {
    return Bad(false, "the group does not start with the expected index", h);
  }
  if (h.first_index == 0 || h.stable_index >= h.first_index) {
    return Bad(false, "inconsistent group indexes", h);
  }
  // The records: contiguous indexes (where records hold them), command
  // kinds, sizes adding up.
  const std::byte* p = base + header_size;
  const std::byte* const records_end = p + h.records_bytes;
  const std::size_t record_header = format.record_header_size;
  for (std::uint32_t i = 0; i < h.record_count; ++i) {
    if (records_end - p < static_cast<std::ptrdiff_t>(format.min_record_size)) {
      return Bad(false, "the records do not fill the group exactly", h);
    }
    if (format.record_index_size != 0 &&
        StoredRecordIndex(p) != h.first_index + i) {
      return Bad(false, "record indexes are not contiguous", h);
    }
    const std::size_t frame_size = RecordFrameSize(p, format.record_index_size);
    if (frame_size == 0) {
      return Bad(false, "a record holds no command frame", h);
    }
    p += record_header + frame_size;
    if (p > records_end) {
      return Bad(false, "the records do not fill the group exactly", h);
    }
  }
  if (p != records_end) {
    return Bad(false, "the records do not fill the group exactly", h);
  }
  const std::uint64_t group_end = trailer + kGroupTrailerSize;
  const std::uint64_t aligned_end =
      std::min<std::uint64_t>(AlignUpTo(group_end, format.alignment), size);
  if (FirstNonZero(segment.first(aligned_end), group_end) != aligned_end) {
    return Bad(false, "non-zero bytes in the padding after the group", h);
  }
  GroupCheck check;
  check.state = GroupState::kValid;
  check.header = h;
  check.end = AlignUpTo(group_end, format.alignment);
  check.crc = t.crc;
  return check;
}

std::optional<FoundGroup> FindGroupAtOrAfter(std::span<const std::byte> segment,
                                             std::uint64_t from,
                                             const GroupFormat& format,
                                             SeekCounters& counters) noexcept {
  static_assert(kDataEndZeroRun > 2 * kMaxRecordSize);
  ++counters.probes;
  const std::uint64_t size = segment.size();
  const std::uint64_t alignment = format.alignment;
  std::uint64_t o = (from + alignment - 1) / alignment * alignment;
  const std::uint64_t limit = o + kMaxGroupBytes + alignment;
  for (; o + format.header_size <= size && o < limit; o += alignment) {
    counters.bytes_scanned += alignment;
    const std::uint32_t magic = LoadLE<std::uint32_t>(segment.data() + o);
    if (magic == 0) {
      const std::uint64_t run_end =
          std::min<std::uint64_t>(size, o + kDataEndZeroRun);
      if (FirstNonZero(segment.first(run_end), o) == run_end) {
        return std::nullopt;  // the data ended before `o`
      }
      continue;
    }
    if (magic != format.magic) continue;
    ++counters.groups_checked;
    GroupCheck check = CheckGroup(segment, o, 0, format);
    if (check.state == GroupState::kValid) {
      return FoundGroup{.offset = o, .check = check};
    }
  }
  return std::nullopt;
}

std::optional<FoundGroup> LastGroupIn(std::span<const std::byte> segment,
                                      const GroupFormat& format,
                                      SeekCounters& counters) noexcept {
  const std::uint64_t alignment = format.alignment;
  std::optional<FoundGroup> last =
      FindGroupAtOrAfter(segment, kFirstGroupOffset, format, counters);
  if (!last.has_value()) return std::nullopt;
  // `low` holds a group; no group that verifies starts at or after `high`.
  std::uint64_t low = last->offset;
  std::uint64_t high = segment.size();
  while (true) {
    const std::uint64_t mid = (low + (high - low) / 2) / alignment * alignment;
    if (mid <= low) break;
    std::optional<FoundGroup> found =
        FindGroupAtOrAfter(segment, mid, format, counters);
    if (found.has_value() && found->offset < high) {
      low = found->offset;
      last = found;
    } else {
      high = mid;
    }
  }
  // The few groups between the last probe and the end.
  while (std::optional<FoundGroup> next =
             FindGroupAtOrAfter(segment, last->check.end, format, counters)) {
    last = next;
  }
  return last;
}

// ---------------------------------------------------------------------------
// Damage.

namespace {

// A valid group found after damage whose stable_index reaches the damaged
// place: proof that what was there had been written.
struct Proof {
  std::size_t segment;
  std::uint64_t offset;
  GroupHeader header;
};

// Searches `bytes` (a segment) from `from` on, in steps of `step`, for
// valid groups: counts them in `later_groups`, and sets `proof` to the
// first whose stable_index >= expected_index (if it is not set yet).
// `version` is the segment's (0 or another unknown one: the framing each
// place's magic names, which finds groups of every version).
void SearchSegment(std::span<const std::byte> bytes, std::size_t segment,
                   std::uint16_t version, std::uint64_t step,
                   std::uint64_t from, std::uint64_t expected_index,
                   std::uint64_t& later_groups, std::optional<Proof>& proof) {
  const bool known =
      version >= kOldestFormatVersion && version <= kFormatVersion;
  std::uint64_t o = from;
  while (o + kCompactGroupHeaderSize <= bytes.size()) {
    const auto magic = LoadLE<std::uint32_t>(bytes.data() + o);
    std::optional<GroupFormat> format;
    if (known) {
      if (magic == GroupFormatOf(version).magic) {
        format = GroupFormatOf(version);
      }
    } else if (magic == kGroupMagic) {
      format = GroupFormatOf(2);
    } else if (magic == kCompactGroupMagic) {
      format = GroupFormatOf(kCompactFramingVersion);
    }
    if (format.has_value()) {
      format->alignment = static_cast<std::uint32_t>(step);
      const GroupCheck check = CheckGroup(bytes, o, 0, *format);
      if (check.state == GroupState::kValid) {
        ++later_groups;
        if (!proof.has_value() && check.header.stable_index >= expected_index) {
          proof = Proof{segment, o, check.header};
        }
        o = check.end;
        continue;
      }
    }
    o += step;
  }
}

// Search every place a group may start after the damage (every 8-byte
// boundary in a version-2 or -3 segment, every block boundary in version
// 1) for valid groups: counted in damage.later_groups; the proof, if any.
absl::StatusOr<std::optional<Proof>> SearchAfterDamage(
    SegmentSet& segments, Damage& damage, std::uint64_t expected_index) {
  std::optional<Proof> proof;
  for (std::size_t j = damage.segment; j < segments.size(); ++j) {
    absl::StatusOr<std::span<const std::byte>> bytes = segments.Map(j);
    if (!bytes.ok()) return bytes.status();
    // The segment's version says where its groups start and how they are
    // framed; an unreadable header (or version) searches at the finer step
    // and takes the framing the magic at each place names, which finds
    // groups of every version.
    std::uint16_t version = 0;
    if (bytes->size() >= kSegmentHeaderSize) {
      version = LoadLE<std::uint16_t>(
          bytes->data() +
          kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::version>);
    }
    const bool known =
        version >= kOldestFormatVersion && version <= kFormatVersion;
    const std::uint64_t step = known ? GroupAlignment(version) : kGroupAlign;
    const std::uint64_t from = j == damage.segment && damage.offset != 0
                                   ? damage.offset + step
                                   : kFirstGroupOffset;
    SearchSegment(*bytes, j, version, step, from, expected_index,
                  damage.later_groups, proof);
  }
  return proof;
}

}  // namespace

absl::StatusOr<Damage> AnalyzeDamage(SegmentSet& segments, std::size_t segment,
                                     std::uint64_t offset,
                                     std::uint64_t expected_index, bool torn,
                                     std::string_view problem,
                                     std::uint64_t checkpointed) {
  Damage damage;
  damage.segment = segment;
  damage.offset = offset;
  damage.last_good_index = expected_index - 1;
  const std::string& path = segments.entry(segment).path;
  absl::StatusOr<std::optional<Proof>> proof =
      SearchAfterDamage(segments, damage, expected_index);
  if (!proof.ok()) return proof.status();

  const std::string where = absl::StrFormat(
      "segment %s at offset %d (after index %d, where the group starting "
      "with index %d should be)",
      path, offset, damage.last_good_index, expected_index);
  if (proof->has_value()) {
    const Proof& p = **proof;
    damage.kind = Damage::Kind::kDataLoss;
    const std::uint64_t last = p.header.first_index + p.header.record_count - 1;
    damage.message = absl::StrFormat(
        "data loss in %s: %s; a valid group written later (segment %s, "
        "offset %d, indexes %d..%d) records that every index up to %d had "
        "already been written and synced, so this is damage to data that "
        "was durable",
        where, problem, segments.entry(p.segment).path, p.offset,
        p.header.first_index, last, p.header.stable_index);
    return damage;
  }
  if (!torn) {
    damage.kind = Damage::Kind::kDataLoss;
    damage.message = absl::StrFormat(
        "data loss in %s: %s; the damaged group was written in full (its "
        "header and trailer are in place and no sector is missing), so this "
        "is corruption, not a write cut short by a crash",
        where, problem);
    return damage;
  }
  if (expected_index <= checkpointed) {
    damage.kind = Damage::Kind::kDataLoss;
    damage.message = absl::StrFormat(
        "data loss in %s: %s; the journal's checkpoint says every index up "
        "to %d was durable, so records %d..%d were on disk and are gone",
        where, problem, checkpointed, expected_index, checkpointed);
    return damage;
  }
  damage.kind = Damage::Kind::kTornTail;
  damage.message = absl::StrFormat("torn tail in %s: %s", where, problem);
  if (damage.later_groups > 0) {
    absl::StrAppendFormat(
        &damage.message,
        "; %d later group(s) found past it were still in flight (none was "
        "written after index %d was synced)",
        damage.later_groups, expected_index);
  }
  return damage;
}

}  // namespace orderwire::journal::internal
