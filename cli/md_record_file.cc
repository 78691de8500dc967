#include "cli/md_record_file.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "codec/wire.h"
#include "feed/kind_table.h"

namespace orderwire::cli {

void AppendRecordedMessage(std::string& out, std::uint64_t sequence,
                           feed::MessageBlock message) {
  std::byte header[kRecordHeaderSize];
  codec::StoreLE(header + kRecordSequenceOffset, sequence);
  codec::StoreLE(header + kRecordLengthOffset, message.length());
  out.append(reinterpret_cast<const char*>(header), sizeof(header));
  out.append(reinterpret_cast<const char*>(message.bytes().data()),
             message.length());
}

absl::Status ForEachRecordedMessage(
    std::span<const std::byte> file,
    absl::FunctionRef<void(std::uint64_t, feed::MessageBlock)> fn) {
  if (file.size() < kRecordFileMagic.size() ||
      std::memcmp(file.data(), kRecordFileMagic.data(),
                  kRecordFileMagic.size()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("byte offset 0: not a recorded feed (no magic \"%s\")",
                        kRecordFileMagic));
  }
  std::size_t at = kRecordFileMagic.size();
  while (at < file.size()) {
    if (file.size() - at < kRecordHeaderSize) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "byte offset %d: a record cut short (%d bytes of its %d-byte "
          "header)",
          at, file.size() - at, kRecordHeaderSize));
    }
    const std::byte* p = file.data() + at;
    const auto sequence =
        codec::LoadLE<std::uint64_t>(p + kRecordSequenceOffset);
    const auto length = codec::LoadLE<std::uint16_t>(p + kRecordLengthOffset);
    if (file.size() - at - kRecordHeaderSize < length) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "byte offset %d: a record cut short (sequence %d: %d bytes of its "
          "%d-byte message)",
          at, sequence, file.size() - at - kRecordHeaderSize, length));
    }
    const std::byte* message = p + kRecordHeaderSize;
    if (length < feed::kMinMessageLength ||
        length < feed::Info(codec::LoadLE<feed::MessageKind>(
                                message + feed::kMessageKindOffset))
                     .size) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "byte offset %d: sequence %d: a %d-byte message is shorter than "
          "its kind's",
          at, sequence, length));
    }
    fn(sequence, feed::MessageBlock(message, length));
    at += kRecordHeaderSize + length;
  }
  return absl::OkStatus();
}

}  // namespace orderwire::cli
