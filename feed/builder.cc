// Feed encoders; see builder.h.
#include "feed/builder.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace orderwire::feed {
namespace {

// Writes the 24-byte header at `dst`.
void WriteHeader(std::byte* dst, const PacketHeader& header) noexcept {
  MessageTraits<PacketHeader>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        codec::StoreLE(dst + offset, header.*field.member);
      });
}

PacketHeader MakeHeader(PacketType type, std::uint64_t session,
                        std::uint64_t sequence, std::uint16_t count,
                        std::uint16_t token) noexcept {
  return PacketHeader{.magic = kPacketMagic,
                      .version = kFeedVersion,
                      .type = type,
                      .session = session,
                      .sequence = sequence,
                      .count = count,
                      .token = token};
}

// A header and, after it, the body `Body` (its layout) if one is given.
template <typename Body = void>
codec::Result<std::size_t> EncodeBodyPacket(std::span<std::byte> out,
                                            const PacketHeader& header,
                                            const Body* body) noexcept {
  std::size_t size = kPacketHeaderSize;
  if constexpr (!std::is_void_v<Body>)
    size += MessageTraits<Body>::kLayout.kSize;
  if (out.size() < size) return codec::CodecError::kBufferTooSmall;
  WriteHeader(out.data(), header);
  if constexpr (!std::is_void_v<Body>) {
    MessageTraits<Body>::kLayout.ForEach(
        [&](const auto& field, std::size_t offset) {
          codec::StoreLE(out.data() + kPacketHeaderSize + offset,
                         body->*field.member);
        });
  }
  return size;
}

codec::Result<std::size_t> EncodeHeaderOnly(
    std::span<std::byte> out, const PacketHeader& header) noexcept {
  return EncodeBodyPacket<void>(out, header, nullptr);
}

}  // namespace

PacketBuilder::PacketBuilder(std::span<std::byte> buffer) noexcept
    : buffer_(buffer.first(std::min(buffer.size(), kMaxPacketBytes))) {}

void PacketBuilder::Begin(PacketType type, std::uint64_t session,
                          std::uint64_t first, std::uint16_t token) noexcept {
  WriteHeader(buffer_.data(), MakeHeader(type, session, first, 0, token));
  type_ = type;
  first_sequence_ = first;
  size_ = kPacketHeaderSize;
  count_ = 0;
}

void PacketBuilder::BeginData(std::uint64_t session,
                              std::uint64_t first_sequence,
                              std::uint16_t token) noexcept {
  Begin(PacketType::kData, session, first_sequence, token);
}

void PacketBuilder::BeginSnapshot(std::uint64_t session,
                                  std::uint64_t first_position,
                                  std::uint16_t token) noexcept {
  Begin(PacketType::kSnapshot, session, first_position, token);
}

bool PacketBuilder::Fits(MessageKind kind) const noexcept {
  const KindInfo& info = Info(kind);
  return info.size != 0 && MayCarry(type_, kind) && FitsLength(info.size);
}

codec::CodecError PacketBuilder::AppendMessage(
    std::span<const std::byte> message) noexcept {
  if (message.size() < kMinMessageLength || message.size() > UINT16_MAX) {
    return codec::CodecError::kTruncated;
  }
  const auto kind =
      codec::LoadLE<MessageKind>(message.data() + kMessageKindOffset);
  if (message.size() < Info(kind).size) return codec::CodecError::kTruncated;
  if (!MayCarry(type_, kind)) return codec::CodecError::kWrongKind;
  if (!FitsLength(message.size())) return codec::CodecError::kBufferTooSmall;
  std::byte* const block = buffer_.data() + size_;
  codec::StoreLE(block, static_cast<std::uint16_t>(message.size()));
  std::memcpy(block + kBlockLengthSize, message.data(), message.size());
  Commit(message.size());
  return codec::CodecError::kOk;
}

std::span<const std::byte> PacketBuilder::Finish() noexcept {
  if (count_ == 0) return {};
  codec::StoreLE(buffer_.data() + PacketOffsetOf<&PacketHeader::count>(),
                 count_);
  return buffer_.first(size_);
}

codec::Result<std::size_t> EncodeHeartbeat(
    std::span<std::byte> out, std::uint64_t session,
    std::uint64_t next_sequence) noexcept {
  return EncodeHeaderOnly(
      out, MakeHeader(PacketType::kHeartbeat, session, next_sequence, 0, 0));
}

codec::Result<std::size_t> EncodeEndOfSession(
    std::span<std::byte> out, std::uint64_t session,
    std::uint64_t next_sequence) noexcept {
  return EncodeHeaderOnly(
      out, MakeHeader(PacketType::kEndOfSession, session, next_sequence, 0, 0));
}

codec::Result<std::size_t> EncodeRefused(std::span<std::byte> out,
                                         std::uint64_t session,
                                         std::uint64_t sequence,
                                         std::uint16_t token,
                                         const RefusedBody& body) noexcept {
  return EncodeBodyPacket(
      out, MakeHeader(PacketType::kRefused, session, sequence, 0, token),
      &body);
}

codec::Result<std::size_t> EncodeRetransmitRequest(
    std::span<std::byte> out, std::uint64_t session, std::uint64_t first,
    std::uint16_t count, std::uint16_t token) noexcept {
  return EncodeHeaderOnly(out, MakeHeader(PacketType::kRetransmitRequest,
                                          session, first, count, token));
}

codec::Result<std::size_t> EncodeSnapshotRequest(
    std::span<std::byte> out, std::uint64_t session, std::uint16_t token,
    std::uint32_t instrument_id) noexcept {
  const SnapshotRequestBody body{.instrument_id = instrument_id};
  return EncodeBodyPacket(
      out, MakeHeader(PacketType::kSnapshotRequest, session, 0, 0, token),
      &body);
}

}  // namespace orderwire::feed
