// The journal's on-disk format, versions 1 to 3: every layout declared once.
//
// docs/JOURNAL.md describes the format byte for byte for an independent
// reader; this header is its single source in code. All integers are
// little-endian, every structure is packed, nothing assumes alignment of a
// buffer (fields are read and written with codec::LoadLE / StoreLE at
// offsets derived from the layouts below).
//
// A journal is a directory of segment files named by the index of their
// first record, "%020llu.owj". A segment is a preallocated file of
// `capacity` bytes made of 4096-byte blocks:
//
//   block 0                 blocks 1..                          zeros
//   +---------------------+-------------------+----------------+--------+
//   | segment header (64) | group | pad to 4K | group | pad    |  ...   |
//   | metadata (0..4032)  |                   |                |        |
//   | zeros to 4096       |                   |                |        |
//   +---------------------+-------------------+----------------+--------+
//
// The metadata is the caller's, opaque to the journal (the service pins its
// configuration there): `metadata_size` bytes at offset 64, checksummed by
// `metadata_crc`; both fields are in the header, under the header's own
// CRC, so a metadata area that was zeroed or cut short can never pass for
// "no metadata". A segment without metadata has both fields 0 (the
// journals written before the field existed).
//
// A group is what one write puts on disk: the records of one or more
// Append() calls, sealed by a checksum. It starts on an 8-byte boundary
// (version 2) or a block boundary (version 1):
//
//   0          4             8             16             24         28     32
//   +----------+-------------+-------------+--------------+----------+------+
//   | magic    |records_bytes| first_index | stable_index | rec_count| flags|
//   | "OWGH"   | u32         | u64         | u64          | u32      | u32 0|
//   +----------+-------------+-------------+--------------+----------+------+
//   | record 0 | record 1 | ... (records_bytes bytes)                       |
//   +----------+----------+-------------------------------------------------+
//   | crc32c u32 | magic "OWGT" u32 | zeros up to the next group boundary  |
//   +------------+------------------+---------------------------------------+
//
// The trailer's CRC32C covers the group header and every record (32 +
// records_bytes bytes). A record is a 24-byte header (index, receive_ns,
// session_id, flags) and the command frame exactly as it arrived
// (docs/PROTOCOL.md "Frame"; its length follows from its kind byte):
// journal/record.h declares its layout and its one codec. `flags` belongs
// to the caller (the service): the journal stores it verbatim and gives no
// bit a meaning.
//
// Version 3 (compact framing) packs groups at 8 bytes like version 2 but
// frames them with less: a 24-byte group header (magic "OWG3",
// records_bytes, first_index, record_count, stable_lag, where the proof
// horizon is first_index - stable_lag and 0 claims nothing) and records
// without their index (it is first_index + the position in the group):
//
//   0          4             8             16           20          24
//   +----------+-------------+-------------+------------+-----------+
//   | magic    |records_bytes| first_index | rec_count  | stable_lag|
//   | "OWG3"   | u32         | u64         | u32        | u32       |
//   +----------+-------------+-------------+------------+-----------+
//   record: | receive_ns u64 | session_id u32 | flags u32 | frame |
//
// The trailer is the same 8 bytes (crc32c of header and records, "OWGT").
// GroupFormatOf(version) says which framing a segment's groups have.
//
// When a record counts as written: when the group holding it is whole on
// disk and its trailer checksum matches. A group is never partly valid.
#ifndef ORDERWIRE_JOURNAL_FORMAT_H_
#define ORDERWIRE_JOURNAL_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "codec/layout.h"
#include "codec/wire.h"
#include "journal/record.h"

namespace orderwire::journal {

// The newest version, which the writer writes by default. Version 1
// differs from 2 only in where groups start (GroupAlignment below); version
// 3 frames groups and records with fewer bytes (GroupFormatOf below).
// Readers read all three.
inline constexpr std::uint16_t kFormatVersion = 3;
// The version whose groups carry compact framing (and every later one).
inline constexpr std::uint16_t kCompactFramingVersion = 3;
inline constexpr std::uint16_t kOldestFormatVersion = 1;

// Block 0 holds the segment header; the first group starts after it. It is
// also the O_DIRECT alignment of every write, and where version-1 groups
// start.
inline constexpr std::size_t kBlockSize = 4096;
// Where version-2 groups start: the first multiple of this after the
// previous group's trailer.
inline constexpr std::size_t kGroupAlign = 8;

// ---------------------------------------------------------------------------
// Models and layouts.

// At offset 0 of every segment. `crc` is the CRC32C of bytes 0..59.
struct SegmentHeader {
  std::uint64_t magic;          // kSegmentMagic, the bytes "OWJOURNL"
  std::uint16_t version;        // kFormatVersion
  std::uint16_t header_size;    // kSegmentHeaderSize
  std::uint32_t block_size;     // kBlockSize
  std::uint64_t first_index;    // index of the segment's first record, >= 1
  std::uint64_t created_ns;     // CLOCK_REALTIME when the segment was started
  std::uint64_t capacity;       // bytes preallocated (the file's size)
  std::uint64_t journal_id;     // random, the same in every segment
  std::uint32_t flags;          // 0
  std::uint32_t metadata_size;  // bytes of metadata at offset 64; <= 4032
  std::uint32_t metadata_crc;   // CRC32C of them (0 when there are none)
  std::uint32_t crc;
};

inline constexpr auto kSegmentHeaderLayout = codec::MakeLayout(
    codec::Field{"magic", &SegmentHeader::magic},
    codec::Field{"version", &SegmentHeader::version},
    codec::Field{"header_size", &SegmentHeader::header_size},
    codec::Field{"block_size", &SegmentHeader::block_size},
    codec::Field{"first_index", &SegmentHeader::first_index},
    codec::Field{"created_ns", &SegmentHeader::created_ns},
    codec::Field{"capacity", &SegmentHeader::capacity},
    codec::Field{"journal_id", &SegmentHeader::journal_id},
    codec::Field{"flags", &SegmentHeader::flags},
    codec::Field{"metadata_size", &SegmentHeader::metadata_size},
    codec::Field{"metadata_crc", &SegmentHeader::metadata_crc},
    codec::Field{"crc", &SegmentHeader::crc});

// At the start of every group. `stable_index` is the writer's proof horizon:
// every record with an index <= stable_index had been completely written
// (and, under batch and sync durability, synced) before this group was
// submitted. Recovery uses it to tell the remains of writes that were in
// flight at a crash from damage to data that had been written.
struct GroupHeader {
  std::uint32_t magic;          // kGroupMagic, the bytes "OWGH"
  std::uint32_t records_bytes;  // bytes of records after this header
  std::uint64_t first_index;    // index of the group's first record
  std::uint64_t stable_index;   // see above; < first_index
  std::uint32_t record_count;   // >= 1
  std::uint32_t flags;          // 0
};

inline constexpr auto kGroupHeaderLayout = codec::MakeLayout(
    codec::Field{"magic", &GroupHeader::magic},
    codec::Field{"records_bytes", &GroupHeader::records_bytes},
    codec::Field{"first_index", &GroupHeader::first_index},
    codec::Field{"stable_index", &GroupHeader::stable_index},
    codec::Field{"record_count", &GroupHeader::record_count},
    codec::Field{"flags", &GroupHeader::flags});

// Right after a group's last record. Written last, so a group whose trailer
// magic is missing was not written in full.
struct GroupTrailer {
  std::uint32_t crc;    // CRC32C of the group header and the records
  std::uint32_t magic;  // kTrailerMagic, the bytes "OWGT"
};

inline constexpr auto kGroupTrailerLayout =
    codec::MakeLayout(codec::Field{"crc", &GroupTrailer::crc},
                      codec::Field{"magic", &GroupTrailer::magic});

// At the start of every group of a version-3 segment: GroupHeader's
// information in 24 bytes. `stable_lag` is first_index - stable_index,
// 1..2^32-1; 0 claims nothing (stable_index 0), which the writer stores when
// the lag does not fit: a proof horizon read back is never above the one
// the writer had, only ever lower (conservative). No flags field: a new
// meaning needs a new version.
struct CompactGroupHeader {
  std::uint32_t magic;          // kCompactGroupMagic, the bytes "OWG3"
  std::uint32_t records_bytes;  // bytes of records after this header
  std::uint64_t first_index;    // index of the group's first record
  std::uint32_t record_count;   // >= 1
  std::uint32_t stable_lag;     // see above; <= first_index
};

inline constexpr auto kCompactGroupHeaderLayout = codec::MakeLayout(
    codec::Field{"magic", &CompactGroupHeader::magic},
    codec::Field{"records_bytes", &CompactGroupHeader::records_bytes},
    codec::Field{"first_index", &CompactGroupHeader::first_index},
    codec::Field{"record_count", &CompactGroupHeader::record_count},
    codec::Field{"stable_lag", &CompactGroupHeader::stable_lag});

// ---------------------------------------------------------------------------
// Derived sizes and offsets.

template <const auto& kLayout, auto Member>
inline constexpr std::size_t kOffsetOf = codec::OffsetOf<kLayout, Member>();

inline constexpr std::size_t kSegmentHeaderSize = kSegmentHeaderLayout.kSize;
inline constexpr std::size_t kGroupHeaderSize = kGroupHeaderLayout.kSize;
inline constexpr std::size_t kGroupTrailerSize = kGroupTrailerLayout.kSize;
inline constexpr std::size_t kGroupOverhead =
    kGroupHeaderSize + kGroupTrailerSize;
inline constexpr std::size_t kCompactGroupHeaderSize =
    kCompactGroupHeaderLayout.kSize;
// The segment header's CRC covers every byte before the crc field.
inline constexpr std::size_t kSegmentHeaderCrcOffset =
    kOffsetOf<kSegmentHeaderLayout, &SegmentHeader::crc>;
// Offset of the first group in a segment.
inline constexpr std::size_t kFirstGroupOffset = kBlockSize;
// The caller's metadata follows the header in block 0.
inline constexpr std::size_t kSegmentMetadataOffset = 64;
inline constexpr std::size_t kMaxSegmentMetadata =
    kFirstGroupOffset - kSegmentMetadataOffset;

static_assert(kSegmentHeaderSize == 64);
static_assert(kSegmentHeaderCrcOffset == 60);
static_assert(kSegmentMetadataOffset == kSegmentHeaderSize);
static_assert(kMaxSegmentMetadata == 4032);
static_assert(kGroupHeaderSize == 32);
static_assert(kGroupTrailerSize == 8);
static_assert(kCompactGroupHeaderSize == 24);

// The bytes "OWJOURNL", "OWGH", "OWG3" and "OWGT" read as little-endian
// integers.
template <typename T, std::size_t N>
consteval T MagicOf(const char (&text)[N]) {
  static_assert(N - 1 == sizeof(T));
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(text[i])) << (8 * i);
  }
  return value;
}
inline constexpr std::uint64_t kSegmentMagic =
    MagicOf<std::uint64_t>("OWJOURNL");
inline constexpr std::uint32_t kGroupMagic = MagicOf<std::uint32_t>("OWGH");
inline constexpr std::uint32_t kCompactGroupMagic =
    MagicOf<std::uint32_t>("OWG3");
inline constexpr std::uint32_t kTrailerMagic = MagicOf<std::uint32_t>("OWGT");

// Limits the reader enforces and the writer respects.
inline constexpr std::size_t kMaxGroupBytes = std::size_t{16} << 20;
inline constexpr std::uint64_t kMinSegmentCapacity = std::uint64_t{64} * 1024;
inline constexpr std::uint64_t kMaxSegmentCapacity = std::uint64_t{1} << 40;

[[nodiscard]] constexpr std::uint64_t AlignUp(std::uint64_t n) noexcept {
  return (n + kBlockSize - 1) & ~std::uint64_t{kBlockSize - 1};
}

// The multiple of which groups start in a segment of `version`: 8 bytes in
// version 2, 4096 in version 1.
[[nodiscard]] constexpr std::uint64_t GroupAlignment(
    std::uint16_t version) noexcept {
  return version >= 2 ? kGroupAlign : kBlockSize;
}

// `n` rounded up to a multiple of `alignment` (a power of two).
[[nodiscard]] constexpr std::uint64_t AlignUpTo(
    std::uint64_t n, std::uint64_t alignment) noexcept {
  return (n + alignment - 1) & ~(alignment - 1);
}
static_assert(kGroupHeaderSize % kGroupAlign == 0 &&
              kCompactGroupHeaderSize % kGroupAlign == 0 &&
              kGroupTrailerSize % kGroupAlign == 0);

// How the groups of a segment of one format version are framed: where they
// start, their header, and what precedes each frame. Everything that walks
// groups takes one of these (GroupFormatOf(the segment's version)).
struct GroupFormat {
  std::uint16_t version = 0;
  std::uint32_t alignment = 0;    // groups start at multiples of this
  std::uint32_t magic = 0;        // the group header's first 4 bytes
  std::uint32_t header_size = 0;  // the group header's bytes
  // 8: each record starts with its index (versions 1, 2); 0: the index is
  // first_index + the position in the group (version 3). The record's
  // other fields (receive_ns, session_id, flags) follow it.
  std::uint32_t record_index_size = 0;
  std::uint32_t record_header_size = 0;  // bytes before each frame
  std::uint32_t min_record_size = 0;     // with the smallest frame
  std::uint32_t max_record_size = 0;     // with the largest frame
};

// The framing of `version` (1, 2 or 3; any other gives version 2's, which
// callers never use: the segment header check refuses other versions).
[[nodiscard]] constexpr GroupFormat GroupFormatOf(
    std::uint16_t version) noexcept {
  const bool compact = version >= kCompactFramingVersion;
  const auto record_header = static_cast<std::uint32_t>(
      compact ? kCompactRecordHeaderSize : kRecordHeaderSize);
  return GroupFormat{
      .version = version,
      .alignment = static_cast<std::uint32_t>(GroupAlignment(version)),
      .magic = compact ? kCompactGroupMagic : kGroupMagic,
      .header_size = static_cast<std::uint32_t>(
          compact ? kCompactGroupHeaderSize : kGroupHeaderSize),
      .record_index_size =
          compact ? 0u : static_cast<std::uint32_t>(kRecordIndexSize),
      .record_header_size = record_header,
      .min_record_size =
          record_header + static_cast<std::uint32_t>(kMinCommandFrame),
      .max_record_size =
          record_header + static_cast<std::uint32_t>(kMaxCommandFrame),
  };
}

// A group header of `format` from `src` (format.header_size bytes) into the
// common model. Version 3: flags 0, stable_index first_index - stable_lag
// (0 for lag 0); a lag above first_index (no such stable index) reads as
// stable_index == first_index, which the group check refuses.
[[nodiscard]] GroupHeader DecodeGroupHeader(const GroupFormat& format,
                                            const std::byte* src) noexcept;
// Writes `header` at `dst` in `format` (format.header_size bytes; the magic
// is format.magic whatever header.magic says). Version
// 3 stores stable_lag = first_index - stable_index, or 0 if that does not
// fit in 32 bits (the proof horizon is then read as 0: weaker, never
// stronger). header.flags must be 0 for version 3.
void EncodeGroupHeader(const GroupFormat& format, const GroupHeader& header,
                       std::byte* dst) noexcept;

// ---------------------------------------------------------------------------
// Encoding and decoding of the fixed structures (cold path; records have
// their own codec, record.h).

template <const auto& kLayout, typename Model>
void StoreStruct(const Model& model, std::byte* dst) noexcept {
  kLayout.ForEach([&](const auto& field, std::size_t offset) {
    codec::StoreLE(dst + offset, model.*field.member);
  });
}

template <const auto& kLayout, typename Model>
[[nodiscard]] Model LoadStruct(const std::byte* src) noexcept {
  Model model{};
  kLayout.ForEach([&](const auto& field, std::size_t offset) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    model.*field.member = codec::LoadLE<T>(src + offset);
  });
  return model;
}

// Writes `header` at `dst` (64 bytes) with its crc field computed. The
// metadata fields are written as given (0 and 0: no metadata).
void EncodeSegmentHeader(SegmentHeader header, std::byte* dst) noexcept;
// Writes `header` and `metadata` (at most kMaxSegmentMetadata bytes) at
// `dst` (64 + metadata.size() bytes), with header.metadata_size,
// header.metadata_crc and header.crc computed.
void EncodeSegmentHeader(SegmentHeader header,
                         std::span<const std::byte> metadata,
                         std::byte* dst) noexcept;

// The file name of the segment whose first record is `first_index`.
[[nodiscard]] std::string SegmentFileName(std::uint64_t first_index);
// The first index named by a segment file name, if `name` is one.
[[nodiscard]] std::optional<std::uint64_t> ParseSegmentFileName(
    std::string_view name);

// The name of the writer's prepared next segment and of its lock file.
inline constexpr std::string_view kPreparedFileName = "next.owj.prep";
inline constexpr std::string_view kLockFileName = "LOCK";

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_FORMAT_H_
