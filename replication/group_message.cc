// See group_message.h for the format and the rules.
#include "replication/group_message.h"

#include <cstring>
#include <string_view>

#include "absl/strings/str_format.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/record.h"

namespace orderwire::replication {
namespace {

using codec::LoadLE;
using codec::StoreLE;

template <auto Member>
inline constexpr std::size_t kHeaderOffset =
    codec::OffsetOf<kGroupMessageHeaderLayout, Member>();

constexpr std::size_t kMagicAt = kHeaderOffset<&GroupMessageHeader::magic>;
constexpr std::size_t kVersionAt = kHeaderOffset<&GroupMessageHeader::version>;
constexpr std::size_t kKindAt = kHeaderOffset<&GroupMessageHeader::kind>;
constexpr std::size_t kEpochAt = kHeaderOffset<&GroupMessageHeader::epoch>;
constexpr std::size_t kFirstIndexAt =
    kHeaderOffset<&GroupMessageHeader::first_index>;
constexpr std::size_t kRecordCountAt =
    kHeaderOffset<&GroupMessageHeader::record_count>;
constexpr std::size_t kBodyBytesAt =
    kHeaderOffset<&GroupMessageHeader::body_bytes>;
constexpr std::size_t kCrcAt = kHeaderOffset<&GroupMessageHeader::crc>;
constexpr std::size_t kReservedAt =
    kHeaderOffset<&GroupMessageHeader::reserved>;
static_assert(kCrcAt == 32 && kReservedAt == 36);

// The body's records keep their index: the 24-byte framing of
// journal/record.h.
constexpr std::size_t kIndexSize = journal::kRecordIndexSize;
constexpr std::size_t kRecordHeaderSize = journal::kRecordHeaderSize;
static_assert(journal::RecordHeaderSize(kIndexSize) == kRecordHeaderSize);

// CRC32C of the header with crc and reserved taken as zero, then the body.
std::uint32_t MessageCrc(std::span<const std::byte> bytes) {
  std::byte header[kGroupMessageHeaderSize];
  std::memcpy(header, bytes.data(), kGroupMessageHeaderSize);
  std::memset(header + kCrcAt, 0, 8);
  const std::uint32_t crc = journal::Crc32c(header);
  return journal::Crc32cExtend(crc, bytes.subspan(kGroupMessageHeaderSize));
}

void StoreHeader(std::byte* out, GroupMessageKind kind, std::uint64_t epoch,
                 std::uint64_t first_index, std::uint32_t record_count,
                 std::uint32_t body_bytes) {
  StoreLE(out + kMagicAt, kGroupMessageMagic);
  StoreLE(out + kVersionAt, kGroupMessageVersion);
  StoreLE(out + kKindAt, static_cast<std::uint16_t>(kind));
  StoreLE(out + kEpochAt, epoch);
  StoreLE(out + kFirstIndexAt, first_index);
  StoreLE(out + kRecordCountAt, record_count);
  StoreLE(out + kBodyBytesAt, body_bytes);
  StoreLE(out + kCrcAt, std::uint32_t{0});
  StoreLE(out + kReservedAt, std::uint32_t{0});
}

absl::Status Refuse(std::size_t offset, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "journal stream message refused at byte %u: %s", offset, why));
}

// ParseGroupMessage's steps.

// The header: sizes, magic, version, kind, reserved field, checksum and
// first_index, into `message` (its body the bytes after the header).
absl::Status ParseHeader(std::span<const std::byte> bytes,
                         GroupMessage& message) {
  if (bytes.size() < kGroupMessageHeaderSize) {
    return Refuse(0,
                  absl::StrFormat("%u bytes, shorter than the %u-byte header",
                                  bytes.size(), kGroupMessageHeaderSize));
  }
  const std::byte* p = bytes.data();
  const auto magic = LoadLE<std::uint32_t>(p + kMagicAt);
  if (magic != kGroupMessageMagic) {
    return Refuse(kMagicAt,
                  absl::StrFormat("magic 0x%08x, not 0x%08x (\"OWRM\")", magic,
                                  kGroupMessageMagic));
  }
  const auto version = LoadLE<std::uint16_t>(p + kVersionAt);
  if (version != kGroupMessageVersion) {
    return Refuse(kVersionAt,
                  absl::StrFormat("version %u, this build reads version %u",
                                  version, kGroupMessageVersion));
  }
  const auto kind = LoadLE<std::uint16_t>(p + kKindAt);
  if (kind != static_cast<std::uint16_t>(GroupMessageKind::kRecords) &&
      kind != static_cast<std::uint16_t>(GroupMessageKind::kEpochMarker)) {
    return Refuse(kKindAt, absl::StrFormat("unknown message kind %u", kind));
  }
  message.kind = static_cast<GroupMessageKind>(kind);
  message.epoch = LoadLE<std::uint64_t>(p + kEpochAt);
  message.first_index = LoadLE<std::uint64_t>(p + kFirstIndexAt);
  message.record_count = LoadLE<std::uint32_t>(p + kRecordCountAt);
  const auto body_bytes = LoadLE<std::uint32_t>(p + kBodyBytesAt);
  if (bytes.size() != kGroupMessageHeaderSize + std::size_t{body_bytes}) {
    return Refuse(
        kBodyBytesAt,
        absl::StrFormat("body_bytes %u, but the message has %u bytes "
                        "after the header",
                        body_bytes, bytes.size() - kGroupMessageHeaderSize));
  }
  if (LoadLE<std::uint32_t>(p + kReservedAt) != 0) {
    return Refuse(kReservedAt, "reserved field is not 0");
  }
  const auto crc = LoadLE<std::uint32_t>(p + kCrcAt);
  const std::uint32_t computed = MessageCrc(bytes);
  if (crc != computed) {
    return Refuse(kCrcAt,
                  absl::StrFormat("checksum 0x%08x, the bytes give 0x%08x", crc,
                                  computed));
  }
  if (message.first_index == 0) {
    return Refuse(kFirstIndexAt, "first_index 0 (journal indexes start at 1)");
  }
  message.body = bytes.subspan(kGroupMessageHeaderSize);
  return absl::OkStatus();
}

// An epoch marker: no records, an epoch.
absl::Status CheckMarker(const GroupMessage& message) {
  if (message.record_count != 0 || !message.body.empty()) {
    return Refuse(kRecordCountAt, "an epoch marker carries records");
  }
  if (message.epoch == 0) return Refuse(kEpochAt, "epoch marker of epoch 0");
  return absl::OkStatus();
}

// A records message's body: record_count records, each whole, of the next
// index and a command frame, filling the body exactly.
absl::Status CheckRecords(const GroupMessage& message) {
  if (message.record_count == 0) {
    return Refuse(kRecordCountAt, "a records message without records");
  }
  if (message.first_index + message.record_count - 1 < message.first_index) {
    return Refuse(kRecordCountAt, "the record indexes overflow");
  }
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < message.record_count; ++i) {
    const std::size_t offset = kGroupMessageHeaderSize + at;
    if (message.body.size() - at <
        kRecordHeaderSize + codec::kFrameHeaderSize) {
      return Refuse(offset, absl::StrFormat("record %u of %u is cut off", i + 1,
                                            message.record_count));
    }
    const std::byte* record = message.body.data() + at;
    const std::uint64_t index = journal::StoredRecordIndex(record);
    if (index != message.first_index + i) {
      return Refuse(
          offset, absl::StrFormat("record %u has index %u, expected %u", i + 1,
                                  index, message.first_index + i));
    }
    const std::size_t frame_size = journal::RecordFrameSize(record, kIndexSize);
    if (frame_size == 0) {
      return Refuse(
          offset + kRecordHeaderSize + codec::kKindOffset,
          absl::StrFormat("record %u (index %u) has kind %u, not a command",
                          i + 1, index,
                          LoadLE<std::uint8_t>(record + kRecordHeaderSize +
                                               codec::kKindOffset)));
    }
    if (message.body.size() - at < kRecordHeaderSize + frame_size) {
      return Refuse(offset,
                    absl::StrFormat("record %u (index %u): its %u-byte frame "
                                    "is cut off",
                                    i + 1, index, frame_size));
    }
    at += kRecordHeaderSize + frame_size;
  }
  if (at != message.body.size()) {
    return Refuse(kGroupMessageHeaderSize + at,
                  absl::StrFormat("%u bytes after the last record",
                                  message.body.size() - at));
  }
  return absl::OkStatus();
}

}  // namespace

void GroupMessage::ForEachRecord(
    absl::FunctionRef<void(const journal::Record&)> sink) const {
  const std::byte* at = body.data();
  for (std::uint32_t i = 0; i < record_count; ++i) {
    // Checked by ParseGroupMessage: the stored index is first_index + i,
    // the frame a whole command frame.
    journal::Record record;
    at = journal::DecodeRecord(at, kIndexSize, first_index + i, record);
    sink(record);
  }
}

absl::StatusOr<GroupMessage> ParseGroupMessage(
    std::span<const std::byte> bytes) {
  GroupMessage message;
  if (absl::Status s = ParseHeader(bytes, message); !s.ok()) return s;
  absl::Status s = message.kind == GroupMessageKind::kEpochMarker
                       ? CheckMarker(message)
                       : CheckRecords(message);
  if (!s.ok()) return s;
  return message;
}

void GroupMessageBuilder::Start(std::uint64_t epoch) {
  bytes_.assign(kGroupMessageHeaderSize, std::byte{0});
  epoch_ = epoch;
  first_index_ = 0;
  record_count_ = 0;
}

absl::Status GroupMessageBuilder::Add(const journal::Record& record) {
  if (bytes_.size() < kGroupMessageHeaderSize) {
    return absl::FailedPreconditionError(
        "GroupMessageBuilder::Add before Start");
  }
  if (record_count_ != 0 && record.index != first_index_ + record_count_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "record index %u does not follow %u in the message being built",
        record.index, first_index_ + record_count_ - 1));
  }
  if (record.index == 0) {
    return absl::FailedPreconditionError("record index 0");
  }
  const std::size_t frame_size = record.frame.size();
  if (journal::CommandFrameSize(
          static_cast<std::uint8_t>(record.frame.kind())) != frame_size) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "record %u does not hold a command frame", record.index));
  }
  const std::size_t at = bytes_.size();
  bytes_.resize(at + kRecordHeaderSize + frame_size);
  journal::EncodeRecord(bytes_.data() + at, kIndexSize, record);
  if (record_count_ == 0) first_index_ = record.index;
  ++record_count_;
  return absl::OkStatus();
}

std::span<const std::byte> GroupMessageBuilder::Finish() {
  StoreHeader(
      bytes_.data(), GroupMessageKind::kRecords, epoch_, first_index_,
      record_count_,
      static_cast<std::uint32_t>(bytes_.size() - kGroupMessageHeaderSize));
  StoreLE(bytes_.data() + kCrcAt, MessageCrc(bytes_));
  return bytes_;
}

std::vector<std::byte> EncodeEpochMarker(std::uint64_t epoch,
                                         std::uint64_t next_index) {
  std::vector<std::byte> bytes(kGroupMessageHeaderSize);
  StoreHeader(bytes.data(), GroupMessageKind::kEpochMarker, epoch, next_index,
              0, 0);
  StoreLE(bytes.data() + kCrcAt, MessageCrc(bytes));
  return bytes;
}

}  // namespace orderwire::replication
