// Fuzz target: market-data feed packets and requests (feed/packet.h) on
// arbitrary bytes.
//
// The bytes are parsed as a subscriber's packet (following any session, and
// the packet's own) and as a request. Whatever parses must be re-encoded to
// exactly its bytes by the encoders (feed/builder.h): a Data or Snapshot
// packet block by block with PacketBuilder, every known message also
// field by field through its Model, the other types with their Encode*
// function. A parsed packet holds exactly `count` blocks that cover it, each
// at least 9 bytes and at least its known kind's size, of a kind its type
// may carry. No input parses both as a packet and as a request. A failed
// parse's cause is one of "Checks" (the subscriber and the request server
// count malformed datagrams in arrays indexed by it). ASan checks that
// nothing reads outside the input.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "feed/builder.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "fuzz/fuzz_check.h"

namespace orderwire::feed {
namespace {

bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// A known block read into its Model and encoded again gives back the kind's
// bytes (a later revision's extra bytes are not the model's).
void CheckMessageRoundTrip(MessageBlock block) {
  bool visited = false;
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if (block.kind() != MessageTraits<Model>::kKind) return;
    visited = true;
    const auto view = MessageView<Model>::FromBlock(block);
    FUZZ_CHECK(view.ok());
    std::array<std::byte, kMessageSize<Model>> encoded{};
    EncodeMessage(view->ToModel(), encoded.data());
    FUZZ_CHECK(SameBytes(encoded, view->bytes()));
    FUZZ_CHECK(SameBytes(view->bytes(), block.bytes().first(encoded.size())));
  });
  FUZZ_CHECK(visited == block.known());
}

// A parsed Data or Snapshot packet, rebuilt block by block.
void CheckBlocks(const PacketView& packet) {
  std::array<std::byte, kMaxPacketBytes> buffer{};
  PacketBuilder builder(buffer);
  if (packet.type() == PacketType::kData) {
    builder.BeginData(packet.session(), packet.sequence(), packet.token());
  } else {
    builder.BeginSnapshot(packet.session(), packet.sequence(), packet.token());
  }
  std::size_t blocks = 0;
  std::size_t covered = kPacketHeaderSize;
  for (const MessageBlock block : packet) {
    FUZZ_CHECK(block.length() >= kMinMessageLength);
    FUZZ_CHECK(block.length() >= block.info().size);
    FUZZ_CHECK(MayCarry(packet.type(), block.kind()));
    if (block.known()) CheckMessageRoundTrip(block);
    FUZZ_CHECK(builder.Append(block) == codec::CodecError::kOk);
    covered += kBlockLengthSize + block.length();
    ++blocks;
    FUZZ_CHECK(covered <= packet.bytes().size());
  }
  FUZZ_CHECK(blocks == packet.count());
  FUZZ_CHECK(covered == packet.bytes().size());
  FUZZ_CHECK(builder.next_sequence() == packet.sequence() + blocks);
  FUZZ_CHECK(SameBytes(builder.Finish(), packet.bytes()));
}

// A parsed packet of a type without blocks, encoded again.
void CheckBodyPacket(const PacketView& packet) {
  std::array<std::byte, kMaxPacketBytes> out{};
  codec::Result<std::size_t> size = codec::CodecError::kBufferTooSmall;
  switch (packet.type()) {
    case PacketType::kHeartbeat:
      size = EncodeHeartbeat(out, packet.session(), packet.sequence());
      break;
    case PacketType::kEndOfSession:
      size = EncodeEndOfSession(out, packet.session(), packet.sequence());
      break;
    case PacketType::kRefused:
      size = EncodeRefused(out, packet.session(), packet.sequence(),
                           packet.token(), packet.refused());
      break;
    default:
      FUZZ_CHECK(false);
  }
  FUZZ_CHECK(size.ok());
  FUZZ_CHECK(SameBytes(std::span(out).first(*size), packet.bytes()));
  FUZZ_CHECK(packet.begin() == packet.end());
}

bool CheckPacket(std::span<const std::byte> bytes) {
  const auto any = PacketView::Parse(bytes, SessionFilter::Any());
  if (!any.ok()) {
    FUZZ_CHECK(any.error() != CheckCause::kOk);
    FUZZ_CHECK(static_cast<int>(any.error()) < kCheckCauseCount);
    FUZZ_CHECK(any.error() != CheckCause::kOtherSession);
    FUZZ_CHECK((any.error() == CheckCause::kOversize) ==
               (bytes.size() > kMaxPacketBytes));
    return false;
  }
  const PacketView& packet = *any;
  FUZZ_CHECK(SameBytes(packet.bytes(), bytes));
  const PacketHeader header = packet.header();
  FUZZ_CHECK(header.magic == kPacketMagic && header.version == kFeedVersion);
  FUZZ_CHECK(header.type == packet.type() && header.count == packet.count());
  // The session followed: its own passes; another one only for a Refused.
  FUZZ_CHECK(
      PacketView::Parse(bytes, SessionFilter::Only(packet.session())).ok());
  const auto other =
      PacketView::Parse(bytes, SessionFilter::Only(packet.session() + 1));
  if (packet.type() == PacketType::kRefused) {
    FUZZ_CHECK(other.ok());
  } else {
    FUZZ_CHECK(!other.ok() && other.error() == CheckCause::kOtherSession);
  }
  if (CarrierBit(packet.type()) != 0) {
    CheckBlocks(packet);
  } else {
    CheckBodyPacket(packet);
  }
  return true;
}

bool CheckRequest(std::span<const std::byte> bytes) {
  const auto request = RequestView::Parse(bytes);
  if (!request.ok()) {
    FUZZ_CHECK(request.error() != CheckCause::kOk);
    FUZZ_CHECK(static_cast<int>(request.error()) < kCheckCauseCount);
    return false;
  }
  FUZZ_CHECK(SameBytes(request->bytes(), bytes));
  std::array<std::byte, kMaxPacketBytes> out{};
  codec::Result<std::size_t> size = codec::CodecError::kBufferTooSmall;
  if (request->type() == PacketType::kRetransmitRequest) {
    FUZZ_CHECK(request->sequence() != 0 && request->count() != 0);
    size = EncodeRetransmitRequest(out, request->session(), request->sequence(),
                                   request->count(), request->token());
  } else {
    FUZZ_CHECK(request->type() == PacketType::kSnapshotRequest);
    size = EncodeSnapshotRequest(out, request->session(), request->token(),
                                 request->instrument_id());
  }
  FUZZ_CHECK(request->token() != 0);
  FUZZ_CHECK(size.ok());
  FUZZ_CHECK(SameBytes(std::span(out).first(*size), bytes));
  return true;
}

}  // namespace
}  // namespace orderwire::feed

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::span<const std::byte> bytes(
      reinterpret_cast<const std::byte*>(data), size);
  const bool packet = orderwire::feed::CheckPacket(bytes);
  const bool request = orderwire::feed::CheckRequest(bytes);
  FUZZ_CHECK(!(packet && request));
  return 0;
}
