// TEMPORARY stand-in for the lead's replication/group_message.cc (being
// written on main): the same header, a plain implementation so that the
// primary's replication link compiles and its tests run. Replaced by main's
// file at the merge.
#include "replication/group_message.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/format.h"

namespace orderwire::replication {
namespace {

constexpr std::size_t kCrcOffset = 32;

std::uint32_t MessageCrc(std::span<const std::byte> bytes) {
  std::array<std::byte, kGroupMessageHeaderSize> header;
  std::memcpy(header.data(), bytes.data(), header.size());
  std::memset(header.data() + kCrcOffset, 0, 8);
  return journal::Crc32cExtend(journal::Crc32c(header),
                               bytes.subspan(kGroupMessageHeaderSize));
}

void WriteHeader(std::byte* p, GroupMessageKind kind, std::uint64_t epoch,
                 std::uint64_t first_index, std::uint32_t count,
                 std::uint32_t body) {
  codec::StoreLE<std::uint32_t>(p, kGroupMessageMagic);
  codec::StoreLE<std::uint16_t>(p + 4, kGroupMessageVersion);
  codec::StoreLE<std::uint16_t>(p + 6, static_cast<std::uint16_t>(kind));
  codec::StoreLE<std::uint64_t>(p + 8, epoch);
  codec::StoreLE<std::uint64_t>(p + 16, first_index);
  codec::StoreLE<std::uint32_t>(p + 24, count);
  codec::StoreLE<std::uint32_t>(p + 28, body);
  codec::StoreLE<std::uint32_t>(p + 32, 0);
  codec::StoreLE<std::uint32_t>(p + 36, 0);
}

}  // namespace

void GroupMessage::ForEachRecord(
    absl::FunctionRef<void(const journal::Record&)> sink) const {
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < record_count; ++i) {
    const std::byte* p = body.data() + at;
    journal::Record record;
    record.index = codec::LoadLE<std::uint64_t>(p);
    record.receive_ns = codec::LoadLE<std::uint64_t>(p + 8);
    record.session_id = codec::LoadLE<std::uint32_t>(p + 16);
    record.flags = codec::LoadLE<std::uint32_t>(p + 20);
    record.frame =
        *codec::FrameView::Parse(body.subspan(at + journal::kRecordHeaderSize));
    at += journal::kRecordHeaderSize + record.frame.size();
    sink(record);
  }
}

absl::StatusOr<GroupMessage> ParseGroupMessage(
    std::span<const std::byte> bytes) {
  if (bytes.size() < kGroupMessageHeaderSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group message: %d bytes, shorter than its %d-byte header",
        bytes.size(), kGroupMessageHeaderSize));
  }
  const std::byte* p = bytes.data();
  if (codec::LoadLE<std::uint32_t>(p) != kGroupMessageMagic ||
      codec::LoadLE<std::uint16_t>(p + 4) != kGroupMessageVersion) {
    return absl::InvalidArgumentError(
        "group message: bad magic or version at offset 0");
  }
  GroupMessage m;
  const std::uint16_t kind = codec::LoadLE<std::uint16_t>(p + 6);
  if (kind != 1 && kind != 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("group message: unknown kind %d at offset 6", kind));
  }
  m.kind = static_cast<GroupMessageKind>(kind);
  m.epoch = codec::LoadLE<std::uint64_t>(p + 8);
  m.first_index = codec::LoadLE<std::uint64_t>(p + 16);
  m.record_count = codec::LoadLE<std::uint32_t>(p + 24);
  const std::uint32_t body = codec::LoadLE<std::uint32_t>(p + 28);
  if (body != bytes.size() - kGroupMessageHeaderSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group message: body_bytes %d but %d bytes follow the header", body,
        bytes.size() - kGroupMessageHeaderSize));
  }
  if (codec::LoadLE<std::uint32_t>(p + kCrcOffset) != MessageCrc(bytes)) {
    return absl::InvalidArgumentError(
        "group message: checksum mismatch (offset 32)");
  }
  m.body = bytes.subspan(kGroupMessageHeaderSize);
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < m.record_count; ++i) {
    if (m.body.size() - at < journal::kRecordHeaderSize + 1 + 8) {
      return absl::InvalidArgumentError(
          absl::StrFormat("group message: record %d truncated at offset %d", i,
                          kGroupMessageHeaderSize + at));
    }
    if (codec::LoadLE<std::uint64_t>(m.body.data() + at) != m.first_index + i) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group message: record %d has index out of sequence", i));
    }
    const auto frame = codec::FrameView::Parse(
        m.body.subspan(at + journal::kRecordHeaderSize));
    if (!frame.ok() || !frame->is_command()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group message: record %d holds no command frame", i));
    }
    at += journal::kRecordHeaderSize + frame->size();
  }
  if (at != m.body.size()) {
    return absl::InvalidArgumentError("group message: bytes after the records");
  }
  return m;
}

void GroupMessageBuilder::Start(std::uint64_t epoch) {
  bytes_.assign(kGroupMessageHeaderSize, std::byte{0});
  epoch_ = epoch;
  first_index_ = 0;
  record_count_ = 0;
}

absl::Status GroupMessageBuilder::Add(const journal::Record& record) {
  if (record_count_ != 0 && record.index != first_index_ + record_count_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("group message: record %d does not follow %d",
                        record.index, first_index_ + record_count_ - 1));
  }
  if (record_count_ == 0) first_index_ = record.index;
  const std::size_t at = bytes_.size();
  bytes_.resize(at + journal::kRecordHeaderSize + record.frame.size());
  std::byte* p = bytes_.data() + at;
  codec::StoreLE<std::uint64_t>(p, record.index);
  codec::StoreLE<std::uint64_t>(p + 8, record.receive_ns);
  codec::StoreLE<std::uint32_t>(p + 16, record.session_id);
  codec::StoreLE<std::uint32_t>(p + 20, record.flags);
  std::memcpy(p + journal::kRecordHeaderSize, record.frame.bytes().data(),
              record.frame.size());
  ++record_count_;
  return absl::OkStatus();
}

std::span<const std::byte> GroupMessageBuilder::Finish() {
  WriteHeader(
      bytes_.data(), GroupMessageKind::kRecords, epoch_, first_index_,
      record_count_,
      static_cast<std::uint32_t>(bytes_.size() - kGroupMessageHeaderSize));
  codec::StoreLE<std::uint32_t>(bytes_.data() + kCrcOffset, MessageCrc(bytes_));
  return bytes_;
}

std::vector<std::byte> EncodeEpochMarker(std::uint64_t epoch,
                                         std::uint64_t next_index) {
  std::vector<std::byte> bytes(kGroupMessageHeaderSize);
  WriteHeader(bytes.data(), GroupMessageKind::kEpochMarker, epoch, next_index,
              0, 0);
  codec::StoreLE<std::uint32_t>(bytes.data() + kCrcOffset, MessageCrc(bytes));
  return bytes;
}

}  // namespace orderwire::replication
