// Packet and request checks; see packet.h. Each function below is one stage
// of MARKETDATA.md "Checks", called in the contract's order.
#include "feed/packet.h"

namespace orderwire::feed {
namespace {

template <auto Member>
auto HeaderField(const std::byte* data) noexcept {
  using T = typename codec::internal::MemberPointerTraits<
      decltype(Member)>::ValueType;
  return codec::LoadLE<T>(data + PacketOffsetOf<Member>());
}

// Oversize, Truncated, BadMagic, BadVersion: the same for packets and
// requests.
CheckCause CheckFraming(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() > kMaxPacketBytes) return CheckCause::kOversize;
  if (bytes.size() < kPacketHeaderSize) return CheckCause::kTruncated;
  if (HeaderField<&PacketHeader::magic>(bytes.data()) != kPacketMagic) {
    return CheckCause::kBadMagic;
  }
  if (HeaderField<&PacketHeader::version>(bytes.data()) != kFeedVersion) {
    return CheckCause::kBadVersion;
  }
  return CheckCause::kOk;
}

bool IsSubscriberType(PacketType type) noexcept {
  const auto t = static_cast<std::uint8_t>(type);
  return t >= static_cast<std::uint8_t>(PacketType::kData) &&
         t <= static_cast<std::uint8_t>(PacketType::kRefused);
}

// A body's size against the one its type has: Truncated or TrailingBytes.
CheckCause CheckBodySize(std::size_t body, std::size_t expected) noexcept {
  if (body < expected) return CheckCause::kTruncated;
  if (body > expected) return CheckCause::kTrailingBytes;
  return CheckCause::kOk;
}

// BadType, OtherSession, BadToken, BadSequence, BadCount, ZeroCount, of a
// header already framed.
CheckCause CheckPacketHeader(const std::byte* data,
                             SessionFilter followed) noexcept {
  const PacketType type = HeaderField<&PacketHeader::type>(data);
  if (!IsSubscriberType(type)) return CheckCause::kBadType;
  const bool refused = type == PacketType::kRefused;
  const bool live_only =
      type == PacketType::kHeartbeat || type == PacketType::kEndOfSession;
  const bool has_blocks = CarrierBit(type) != 0;
  if (!refused &&
      !followed.Accepts(HeaderField<&PacketHeader::session>(data))) {
    return CheckCause::kOtherSession;
  }
  const std::uint16_t token = HeaderField<&PacketHeader::token>(data);
  if (live_only && token != 0) return CheckCause::kBadToken;
  const bool reply_only = refused || type == PacketType::kSnapshot;
  if (reply_only && token == 0) return CheckCause::kBadToken;
  if (!refused && HeaderField<&PacketHeader::sequence>(data) == 0) {
    return CheckCause::kBadSequence;
  }
  const std::uint16_t count = HeaderField<&PacketHeader::count>(data);
  if (!has_blocks && count != 0) return CheckCause::kBadCount;
  if (has_blocks && count == 0) return CheckCause::kZeroCount;
  return CheckCause::kOk;
}

// One block at `pos` (a message may follow): Truncated, BadLength,
// MisplacedKind. On success `pos` moves past it.
CheckCause CheckBlock(std::span<const std::byte> bytes, std::uint8_t carrier,
                      std::size_t& pos) noexcept {
  const std::size_t left = bytes.size() - pos;
  if (left < kBlockLengthSize) return CheckCause::kTruncated;
  const std::size_t length = codec::LoadLE<std::uint16_t>(bytes.data() + pos);
  if (left - kBlockLengthSize < length) return CheckCause::kTruncated;
  if (length < kMinMessageLength) return CheckCause::kBadLength;
  const std::byte* const message = bytes.data() + pos + kBlockLengthSize;
  const KindInfo& info =
      kKindTable[codec::LoadLE<std::uint8_t>(message + kMessageKindOffset)];
  if (info.size != 0) {
    if (length < info.size) return CheckCause::kBadLength;
    if ((info.carriers & carrier) == 0) return CheckCause::kMisplacedKind;
  }
  pos += kBlockLengthSize + length;
  return CheckCause::kOk;
}

// `count` blocks after the header, then nothing: CountMismatch (the bytes
// end on a block boundary first), the block checks, TrailingBytes.
CheckCause CheckBlocks(std::span<const std::byte> bytes, PacketType type,
                       std::size_t count) noexcept {
  const std::uint8_t carrier = CarrierBit(type);
  std::size_t pos = kPacketHeaderSize;
  for (std::size_t i = 0; i < count; ++i) {
    if (pos == bytes.size()) return CheckCause::kCountMismatch;
    const CheckCause cause = CheckBlock(bytes, carrier, pos);
    if (cause != CheckCause::kOk) return cause;
  }
  return pos == bytes.size() ? CheckCause::kOk : CheckCause::kTrailingBytes;
}

// What follows a checked header, by type.
CheckCause CheckPacketBody(std::span<const std::byte> bytes) noexcept {
  const PacketType type = HeaderField<&PacketHeader::type>(bytes.data());
  const std::size_t body = bytes.size() - kPacketHeaderSize;
  if (type == PacketType::kRefused) {
    return CheckBodySize(body, kRefusedBodySize);
  }
  if (CarrierBit(type) == 0) {  // Heartbeat, EndOfSession: nothing
    return body == 0 ? CheckCause::kOk : CheckCause::kTrailingBytes;
  }
  return CheckBlocks(bytes, type,
                     HeaderField<&PacketHeader::count>(bytes.data()));
}

// BadType, BadToken and the type's own checks of a framed request.
CheckCause CheckRequest(std::span<const std::byte> bytes) noexcept {
  const std::byte* const data = bytes.data();
  const PacketType type = HeaderField<&PacketHeader::type>(data);
  const bool retransmit = type == PacketType::kRetransmitRequest;
  if (!retransmit && type != PacketType::kSnapshotRequest) {
    return CheckCause::kBadType;
  }
  if (HeaderField<&PacketHeader::token>(data) == 0)
    return CheckCause::kBadToken;
  const std::uint64_t sequence = HeaderField<&PacketHeader::sequence>(data);
  const std::uint16_t count = HeaderField<&PacketHeader::count>(data);
  const std::size_t body = bytes.size() - kPacketHeaderSize;
  if (retransmit) {
    if (sequence == 0) return CheckCause::kBadSequence;
    if (count == 0) return CheckCause::kZeroCount;
    return body == 0 ? CheckCause::kOk : CheckCause::kTrailingBytes;
  }
  if (sequence != 0) return CheckCause::kBadSequence;
  if (count != 0) return CheckCause::kBadCount;
  return CheckBodySize(body, kSnapshotRequestBodySize);
}

}  // namespace

codec::Result<PacketView, CheckCause> PacketView::Parse(
    std::span<const std::byte> bytes, SessionFilter followed) noexcept {
  CheckCause cause = CheckFraming(bytes);
  if (cause == CheckCause::kOk)
    cause = CheckPacketHeader(bytes.data(), followed);
  if (cause == CheckCause::kOk) cause = CheckPacketBody(bytes);
  if (cause != CheckCause::kOk) return cause;
  return PacketView(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
}

PacketHeader PacketView::header() const noexcept {
  PacketHeader header{};
  MessageTraits<PacketHeader>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
        header.*field.member = codec::LoadLE<T>(data_ + offset);
      });
  return header;
}

RefusedBody PacketView::refused() const noexcept {
  RefusedBody body{};
  MessageTraits<RefusedBody>::kLayout.ForEach([&](const auto& field,
                                                  std::size_t offset) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    body.*field.member = codec::LoadLE<T>(data_ + kPacketHeaderSize + offset);
  });
  return body;
}

codec::Result<RequestView, CheckCause> RequestView::Parse(
    std::span<const std::byte> bytes) noexcept {
  CheckCause cause = CheckFraming(bytes);
  if (cause == CheckCause::kOk) cause = CheckRequest(bytes);
  if (cause != CheckCause::kOk) return cause;
  return RequestView(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
}

}  // namespace orderwire::feed
