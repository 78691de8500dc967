// The journal record and its one codec: the record header's layout, the
// frame size of each command kind, and the functions that encode, decode
// and walk records. Journal segments store records (docs/JOURNAL.md
// "Record"; the groups around them are format.h's) and the replicated
// journal stream carries them (replication/group_message.h); both go
// through this header, so a record has one layout and one frame-size table.
//
// A record is a header and one command frame, verbatim as received:
//
//   0          8             16           20        24
//   +----------+-------------+------------+---------+---------------------+
//   | index u64| receive_ns  | session_id | flags   | frame (25..49 bytes)|
//   |          | u64         | u32        | u32     |                     |
//   +----------+-------------+------------+---------+---------------------+
//
// Two framings, named by `index_size` (GroupFormat::record_index_size):
// kRecordIndexSize (8), the header starts with the index (segment versions
// 1 and 2, the journal stream): 24 bytes; or 0, the index is not stored
// (version 3, where it is the group's first_index + the position): the
// other three fields, 16 bytes. All integers little-endian, nothing
// aligned.
//
// The frame's length follows from its kind byte, from the codec's kind
// table only: CommandFrameSize reads codec::kCommandFrameSize, the table's
// frame size of each command kind (0 for every other kind byte; 256 bytes,
// one load that also says whether the kind is a command), which the
// writer's append loop, the group check, the cut, the seek and the stream
// messages use; DecodeRecord, given a checked record, sizes the frame by
// the kind table entry that codec::FrameView::Parse reads anyway. The two
// agree for every kind (static_assert below).
//
// Encoding and decoding are always-inlined loads and stores at constant
// offsets (hot: the writer's append loop and the reader's Next()). They
// trust their input: EncodeRecord takes a command frame (25..49 bytes),
// DecodeRecord a record whose frame was checked to be a whole command frame
// (by the group check or ParseGroupMessage); checking is the caller's, with
// RecordFrameSize and StoredRecordIndex.
#ifndef ORDERWIRE_JOURNAL_RECORD_H_
#define ORDERWIRE_JOURNAL_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/layout.h"
#include "codec/wire.h"

namespace orderwire::journal {

// One journaled record: its metadata and a view of its frame.
struct Record {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;  // the caller's, verbatim (see RecordHeader)
  codec::FrameView frame = *codec::FrameView::Parse(kPlaceholderFrame);

 private:
  // A valid frame for the default value (a CancelByOrder of zeros).
  static constexpr std::byte kPlaceholderFrame[25] = {
      std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0},
      std::byte{0}, std::byte{0}, std::byte{0}, std::byte{3}};
};

// The record header with its index (versions 1, 2, the journal stream).
// Version 3 leaves out `index`: its header is the other three fields, in
// this order, 16 bytes.
struct RecordHeader {
  std::uint64_t index;       // journal index: 1, 2, 3, ... across segments
  std::uint64_t receive_ns;  // when the frame was received (caller's clock)
  std::uint32_t session_id;  // the session that sent it
  // The caller's, stored verbatim: the journal neither defines nor checks
  // any bit (the service's are in state/record_flags.h and
  // docs/PROTOCOL.md).
  std::uint32_t flags;
};

inline constexpr auto kRecordHeaderLayout =
    codec::MakeLayout(codec::Field{"index", &RecordHeader::index},
                      codec::Field{"receive_ns", &RecordHeader::receive_ns},
                      codec::Field{"session_id", &RecordHeader::session_id},
                      codec::Field{"flags", &RecordHeader::flags});

inline constexpr std::size_t kRecordHeaderSize = kRecordHeaderLayout.kSize;
// What `index_size` is when the index is stored.
inline constexpr std::size_t kRecordIndexSize = sizeof(RecordHeader::index);
// A version-3 record header: the header without its index.
inline constexpr std::size_t kCompactRecordHeaderSize =
    kRecordHeaderSize - kRecordIndexSize;
// The header's fields, at these offsets from the record's start when the
// index is stored.
inline constexpr std::size_t kRecordIndexOffset =
    codec::OffsetOf<kRecordHeaderLayout, &RecordHeader::index>();
inline constexpr std::size_t kRecordReceiveNsOffset =
    codec::OffsetOf<kRecordHeaderLayout, &RecordHeader::receive_ns>();
inline constexpr std::size_t kRecordSessionIdOffset =
    codec::OffsetOf<kRecordHeaderLayout, &RecordHeader::session_id>();
inline constexpr std::size_t kRecordFlagsOffset =
    codec::OffsetOf<kRecordHeaderLayout, &RecordHeader::flags>();

static_assert(kRecordHeaderSize == 24);
static_assert(kCompactRecordHeaderSize == 16);
// The fields after the index are the version-3 record header: one offset
// shift (index_size) reads both framings.
static_assert(kRecordIndexOffset == 0 &&
              kRecordReceiveNsOffset == kRecordIndexSize);

// Smallest and largest command frames, as the codec publishes them.
inline constexpr std::size_t kMinCommandFrame = codec::kMinCommandFrameSize;
inline constexpr std::size_t kMaxCommandFrame = codec::kMaxCommandFrameSize;
// Record sizes with the index stored; kMaxRecordSize bounds every
// framing's.
inline constexpr std::size_t kMinRecordSize =
    kRecordHeaderSize + kMinCommandFrame;
inline constexpr std::size_t kMaxRecordSize =
    kRecordHeaderSize + kMaxCommandFrame;

// codec::kCommandFrameSize is the kind table's frame size of each command
// kind (0 for the others): the two never disagree.
static_assert([] {
  for (std::size_t kind = 0; kind < codec::kKindTable.size(); ++kind) {
    const std::size_t size = codec::kCommandFrameSize[kind];
    if (size != 0 && size != codec::kKindTable[kind].frame_size) return false;
    if ((size != 0) !=
        (codec::kKindTable[kind].kind_class == codec::KindClass::kCommand)) {
      return false;
    }
  }
  return true;
}());

// The frame size of the command kind `kind`; 0 when `kind` names no
// command (unknown, or a report).
[[nodiscard]] constexpr std::size_t CommandFrameSize(
    std::uint8_t kind) noexcept {
  return codec::kCommandFrameSize[kind];
}

// The header bytes before the frame in a record of `index_size`.
[[nodiscard]] constexpr std::size_t RecordHeaderSize(
    std::size_t index_size) noexcept {
  return kCompactRecordHeaderSize + index_size;
}

// The frame size of the record at `record` (framing `index_size`), from its
// kind byte: 0 when that names no command. Reads one byte, at
// RecordHeaderSize(index_size) + codec::kKindOffset: the caller makes sure
// it is there.
[[nodiscard, gnu::always_inline]] inline std::size_t RecordFrameSize(
    const std::byte* record, std::size_t index_size) noexcept {
  return CommandFrameSize(codec::LoadLE<std::uint8_t>(
      record + RecordHeaderSize(index_size) + codec::kKindOffset));
}

// The index stored at the start of a record of index_size kRecordIndexSize.
[[nodiscard, gnu::always_inline]] inline std::uint64_t StoredRecordIndex(
    const std::byte* record) noexcept {
  return codec::LoadLE<std::uint64_t>(record + kRecordIndexOffset);
}

// The receive time of the record at `record` (framing `index_size`).
[[nodiscard, gnu::always_inline]] inline std::uint64_t RecordReceiveNs(
    const std::byte* record, std::size_t index_size) noexcept {
  return codec::LoadLE<std::uint64_t>(
      record + index_size + kRecordReceiveNsOffset - kRecordIndexSize);
}

// Copies a command frame (25 to 49 bytes) with two fixed-size, overlapping
// copies, which the compiler turns into a few vector loads and stores.
[[gnu::always_inline]] inline void CopyCommandFrame(std::byte* dst,
                                                    const std::byte* src,
                                                    std::size_t size) noexcept {
  static_assert(kMinCommandFrame >= 16 && kMaxCommandFrame <= 64);
  if (size >= 32) {
    std::memcpy(dst, src, 32);
    std::memcpy(dst + size - 32, src + size - 32, 32);
  } else {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + size - 16, src + size - 16, 16);
  }
}

// Writes record `index` (header and frame) at `out` in the framing
// `index_size` (the index is written only when it is kRecordIndexSize);
// returns the byte after it. `frame` is a command frame of `frame_size`
// bytes (25 to 49).
[[gnu::always_inline]] inline std::byte* EncodeRecord(
    std::byte* out, std::size_t index_size, std::uint64_t index,
    std::uint64_t receive_ns, std::uint32_t session_id, std::uint32_t flags,
    const std::byte* frame, std::size_t frame_size) noexcept {
  if (index_size != 0) codec::StoreLE(out + kRecordIndexOffset, index);
  std::byte* const fields = out + index_size;
  codec::StoreLE(fields + kRecordReceiveNsOffset - kRecordIndexSize,
                 receive_ns);
  codec::StoreLE(fields + kRecordSessionIdOffset - kRecordIndexSize,
                 session_id);
  codec::StoreLE(fields + kRecordFlagsOffset - kRecordIndexSize, flags);
  CopyCommandFrame(fields + kCompactRecordHeaderSize, frame, frame_size);
  return fields + kCompactRecordHeaderSize + frame_size;
}

// The same for a Record, whose frame must be a command frame.
[[gnu::always_inline]] inline std::byte* EncodeRecord(
    std::byte* out, std::size_t index_size, const Record& record) noexcept {
  return EncodeRecord(out, index_size, record.index, record.receive_ns,
                      record.session_id, record.flags,
                      record.frame.bytes().data(), record.frame.size());
}

// Reads the record at `record` (framing `index_size`) into `out`, with
// out.index = `index` (the caller's: a stored index was checked against
// it); returns the byte after it. The record's frame must have been checked
// to be a whole command frame.
[[gnu::always_inline]] inline const std::byte* DecodeRecord(
    const std::byte* record, std::size_t index_size, std::uint64_t index,
    Record& out) noexcept {
  out.index = index;
  const std::byte* const fields = record + index_size;
  out.receive_ns = codec::LoadLE<std::uint64_t>(
      fields + kRecordReceiveNsOffset - kRecordIndexSize);
  out.session_id = codec::LoadLE<std::uint32_t>(
      fields + kRecordSessionIdOffset - kRecordIndexSize);
  out.flags = codec::LoadLE<std::uint32_t>(fields + kRecordFlagsOffset -
                                           kRecordIndexSize);
  const std::byte* const frame = fields + kCompactRecordHeaderSize;
  // Sized by the kind table entry that FrameView::Parse reads, so the two
  // are one load; for a command kind that is CommandFrameSize (asserted
  // above).
  const std::size_t size =
      codec::kKindTable[codec::LoadLE<std::uint8_t>(frame + codec::kKindOffset)]
          .frame_size;
  out.frame = *codec::FrameView::Parse({frame, size});
  return frame + size;
}

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_RECORD_H_
