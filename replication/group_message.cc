// See group_message.h for the format and the rules.
#include "replication/group_message.h"

#include <cstring>
#include <string_view>

#include "absl/strings/str_format.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/format.h"

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

constexpr std::size_t kRecordHeaderSize = journal::kRecordHeaderSize;

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

// The record at `at` in a checked body: its frame's length.
std::size_t FrameSizeAt(const std::byte* at) {
  return codec::kCommandFrameSize[LoadLE<std::uint8_t>(at + kRecordHeaderSize +
                                                       codec::kKindOffset)];
}

}  // namespace

void GroupMessage::ForEachRecord(
    absl::FunctionRef<void(const journal::Record&)> sink) const {
  const std::byte* at = body.data();
  for (std::uint32_t i = 0; i < record_count; ++i) {
    const std::size_t frame_size = FrameSizeAt(at);
    journal::Record record;
    record.index = LoadLE<std::uint64_t>(at + journal::kRecordIndexOffset);
    record.receive_ns =
        LoadLE<std::uint64_t>(at + journal::kRecordReceiveNsOffset);
    record.session_id =
        LoadLE<std::uint32_t>(at + journal::kRecordSessionIdOffset);
    record.flags = LoadLE<std::uint32_t>(at + journal::kRecordFlagsOffset);
    // Checked by ParseGroupMessage: a known command kind, the whole frame.
    record.frame =
        *codec::FrameView::Parse({at + kRecordHeaderSize, frame_size});
    sink(record);
    at += kRecordHeaderSize + frame_size;
  }
}

absl::StatusOr<GroupMessage> ParseGroupMessage(
    std::span<const std::byte> bytes) {
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
  GroupMessage message;
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
  if (message.kind == GroupMessageKind::kEpochMarker) {
    if (message.record_count != 0 || body_bytes != 0) {
      return Refuse(kRecordCountAt, "an epoch marker carries records");
    }
    if (message.epoch == 0) return Refuse(kEpochAt, "epoch marker of epoch 0");
    return message;
  }
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
    const auto index =
        LoadLE<std::uint64_t>(record + journal::kRecordIndexOffset);
    if (index != message.first_index + i) {
      return Refuse(
          offset, absl::StrFormat("record %u has index %u, expected %u", i + 1,
                                  index, message.first_index + i));
    }
    const std::size_t frame_size = FrameSizeAt(record);
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
  const std::span<const std::byte> frame = record.frame.bytes();
  if (codec::kCommandFrameSize[static_cast<std::uint8_t>(
          record.frame.kind())] != frame.size()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "record %u does not hold a command frame", record.index));
  }
  const std::size_t at = bytes_.size();
  bytes_.resize(at + kRecordHeaderSize + frame.size());
  std::byte* out = bytes_.data() + at;
  StoreLE(out + journal::kRecordIndexOffset, record.index);
  StoreLE(out + journal::kRecordReceiveNsOffset, record.receive_ns);
  StoreLE(out + journal::kRecordSessionIdOffset, record.session_id);
  StoreLE(out + journal::kRecordFlagsOffset, record.flags);
  std::memcpy(out + kRecordHeaderSize, frame.data(), frame.size());
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
