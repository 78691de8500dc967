// The bytes of one message on an engine's journal stream
// (replication/journal_stream.h): what the primary publishes and the
// standby parses. Two kinds:
//
//   records       a run of consecutive journal records (one group commit
//                 of the primary's journal, or part of one): each record is
//                 its journal index, receive time, session, flags and the
//                 command frame, verbatim, as the local journal stores them;
//   epoch marker  a new primary's first message after it took the lease:
//                 its epoch and the last journal index it caught up to. It
//                 carries no record; published with the expected last
//                 sequence, it fences the old primary (docs/REPLICATION.md).
//
// Layout (little-endian, declared once below; docs/REPLICATION.md has the
// table):
//
//   header   40 bytes   magic "OWRM", version, kind, epoch, first_index,
//                       record_count, body_bytes, crc, reserved (0)
//   body     records: per record a 24-byte RecordHeader (index,
//            receive_ns, session_id, flags) then the frame, whose length
//            its kind decides: journal records with their index, encoded
//            and decoded by the journal's record codec (journal/record.h)
//
// `crc` is CRC32C of the header with crc and reserved as zero, then the
// body. For records, first_index is the first record's index and the
// records' indexes are first_index, first_index + 1, ...; for a marker,
// record_count and body_bytes are 0 and first_index is the index the next
// record will have (the new primary's last index + 1).
//
// ParseGroupMessage checks every byte before anything is applied: sizes,
// magic, version, kind, checksum, each record's frame (a known command kind,
// its exact length) and the index sequence. A message that fails is refused
// whole, with what, where (byte offset) and why.
//
// GroupMessageBuilder encodes into a buffer it owns and reuses (it grows to
// the largest message and stays there): cold, on the replication thread.
#ifndef ORDERWIRE_REPLICATION_GROUP_MESSAGE_H_
#define ORDERWIRE_REPLICATION_GROUP_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/layout.h"
#include "journal/reader.h"
#include "journal/record.h"

namespace orderwire::replication {

enum class GroupMessageKind : std::uint16_t {
  kRecords = 1,
  kEpochMarker = 2,
};

struct GroupMessageHeader {
  std::uint32_t magic;  // kGroupMessageMagic, the bytes "OWRM"
  std::uint16_t version;
  std::uint16_t kind;  // GroupMessageKind
  std::uint64_t epoch;
  std::uint64_t first_index;
  std::uint32_t record_count;
  std::uint32_t body_bytes;
  std::uint32_t crc;
  std::uint32_t reserved;  // 0
};

inline constexpr auto kGroupMessageHeaderLayout = codec::MakeLayout(
    codec::Field{"magic", &GroupMessageHeader::magic},
    codec::Field{"version", &GroupMessageHeader::version},
    codec::Field{"kind", &GroupMessageHeader::kind},
    codec::Field{"epoch", &GroupMessageHeader::epoch},
    codec::Field{"first_index", &GroupMessageHeader::first_index},
    codec::Field{"record_count", &GroupMessageHeader::record_count},
    codec::Field{"body_bytes", &GroupMessageHeader::body_bytes},
    codec::Field{"crc", &GroupMessageHeader::crc},
    codec::Field{"reserved", &GroupMessageHeader::reserved});

inline constexpr std::size_t kGroupMessageHeaderSize =
    kGroupMessageHeaderLayout.kSize;
static_assert(kGroupMessageHeaderSize == 40);

inline constexpr std::uint32_t kGroupMessageMagic = 0x4D52574F;  // "OWRM"
inline constexpr std::uint16_t kGroupMessageVersion = 1;

// A parsed message: the header's fields and a view of the body (valid as
// long as the bytes given to ParseGroupMessage).
struct GroupMessage {
  GroupMessageKind kind = GroupMessageKind::kRecords;
  std::uint64_t epoch = 0;
  std::uint64_t first_index = 0;
  std::uint32_t record_count = 0;
  std::span<const std::byte> body;

  // The index of the last record (first_index - 1 for a marker).
  [[nodiscard]] std::uint64_t last_index() const noexcept {
    return first_index + record_count - 1;
  }
  // Hands each record to `sink`, in index order. The body was checked by
  // ParseGroupMessage, so this cannot fail; the Records are valid while the
  // bytes are.
  void ForEachRecord(
      absl::FunctionRef<void(const journal::Record&)> sink) const;
};

// Checks and parses one message. InvalidArgument (what, at which byte
// offset, why) for anything that does not verify; nothing is returned then.
absl::StatusOr<GroupMessage> ParseGroupMessage(
    std::span<const std::byte> bytes);

// Builds one records message at a time:
//
//   builder.Start(epoch);
//   for (const journal::Record& r : run) builder.Add(r);   // consecutive
//   std::span<const std::byte> bytes = builder.Finish();
class GroupMessageBuilder {
 public:
  // Begins a records message of this epoch (forgets the previous one).
  void Start(std::uint64_t epoch);
  // Appends a record: the first sets first_index, every later one must be
  // the next index (checked: FailedPrecondition, nothing appended).
  absl::Status Add(const journal::Record& record);
  // Fills in the header and checksum; the bytes stay valid until the next
  // Start. At least one record must have been added.
  [[nodiscard]] std::span<const std::byte> Finish();

  [[nodiscard]] std::uint32_t record_count() const noexcept {
    return record_count_;
  }
  // Bytes so far, header included.
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] std::uint64_t first_index() const noexcept {
    return first_index_;
  }

 private:
  std::vector<std::byte> bytes_;
  std::uint64_t epoch_ = 0;
  std::uint64_t first_index_ = 0;
  std::uint32_t record_count_ = 0;
};

// An epoch marker: `epoch`, and `next_index` = the new primary's last
// journal index + 1.
std::vector<std::byte> EncodeEpochMarker(std::uint64_t epoch,
                                         std::uint64_t next_index);

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_GROUP_MESSAGE_H_
