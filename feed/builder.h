// Feed encoders: PacketBuilder packs message blocks into a Data or Snapshot
// packet in a caller-owned buffer; the Encode* functions write the packets
// without blocks (Heartbeat, EndOfSession, Refused, RetransmitRequest,
// SnapshotRequest). docs/MARKETDATA.md "Packets" is the contract; packet.h
// has the byte diagram.
//
// Nothing here allocates, throws or locks; a builder is used by one thread
// at a time. Messages are encoded in place, so the bytes that are sent are
// the bytes that were encoded. The encoders write the values they are given:
// header fields the parsers would refuse (a token of 0 in a request, a
// sequence of 0) are the caller's to avoid; a builder only refuses a message
// its packet type may not carry.
#ifndef ORDERWIRE_FEED_BUILDER_H_
#define ORDERWIRE_FEED_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/error.h"
#include "codec/result.h"
#include "codec/wire.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"

namespace orderwire::feed {

// Writes `model` as a message (kind byte, then its layout) at `dst`, which
// must hold kMessageSize<Model> bytes. Hot path: one store per field.
template <typename Model>
inline void EncodeMessage(const Model& model, std::byte* dst) noexcept {
  codec::StoreLE(dst + kMessageKindOffset, MessageTraits<Model>::kKind);
  MessageTraits<Model>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        codec::StoreLE(dst + kModelOffset + offset, model.*field.member);
      });
}

class PacketBuilder {
 public:
  // Uses at most kMaxPacketBytes of `buffer`. Precondition: buffer.size() >=
  // kPacketHeaderSize. Nothing is begun: Append fails until a Begin call.
  explicit PacketBuilder(std::span<std::byte> buffer) noexcept;

  // Starts a Data packet: `first_sequence` is the feed sequence of its first
  // message; `token` is 0 on the live feed, a request's in a reply.
  void BeginData(std::uint64_t session, std::uint64_t first_sequence,
                 std::uint16_t token = 0) noexcept;
  // Starts a Snapshot packet: `first_position` is the snapshot position of
  // its first message (from 1); `token` is the request's.
  void BeginSnapshot(std::uint64_t session, std::uint64_t first_position,
                     std::uint16_t token) noexcept;

  // Whether a message of `kind` (its version-1 size) still fits and the
  // packet begun may carry it. False for an unknown kind (no known size).
  [[nodiscard]] bool Fits(MessageKind kind) const noexcept;
  // Whether a block of a message of `length` bytes still fits.
  [[nodiscard]] bool FitsLength(std::size_t length) const noexcept {
    return kBlockLengthSize + length <= buffer_.size() - size_;
  }

  // Encodes `model` as the next block. Errors: kWrongKind (no packet begun,
  // or its type may not carry the kind: MisplacedKind), kBufferTooSmall
  // (nothing written). O(fields).
  template <typename Model>
  codec::CodecError Append(const Model& model) noexcept {
    constexpr std::size_t kSize = kMessageSize<Model>;
    if (!MayCarry(type_, MessageTraits<Model>::kKind)) {
      return codec::CodecError::kWrongKind;
    }
    if (!FitsLength(kSize)) return codec::CodecError::kBufferTooSmall;
    std::byte* const block = buffer_.data() + size_;
    codec::StoreLE(block, static_cast<std::uint16_t>(kSize));
    EncodeMessage(model, block + kBlockLengthSize);
    Commit(kSize);
    return codec::CodecError::kOk;
  }

  // Copies an encoded message (of any kind, unknown ones included, with a
  // later revision's extra bytes if it has them) as the next block: a
  // retransmission sends the bytes the live feed sent. Errors: kTruncated
  // (shorter than 9 bytes or than its known kind's size, or longer than a
  // block can say), kWrongKind, kBufferTooSmall. O(length).
  codec::CodecError AppendMessage(std::span<const std::byte> message) noexcept;
  // The message of a block of a parsed packet, as AppendMessage.
  codec::CodecError Append(MessageBlock block) noexcept {
    return AppendMessage(block.bytes());
  }

  // Writes the count and returns the packet, or an empty span if no
  // message was appended (a packet of no block is not valid). Appending
  // more after Finish is allowed; Finish must then be called again.
  [[nodiscard]] std::span<const std::byte> Finish() noexcept;

  [[nodiscard]] std::uint16_t count() const noexcept { return count_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // The sequence (or position) the next message appended would take.
  [[nodiscard]] std::uint64_t next_sequence() const noexcept {
    return first_sequence_ + count_;
  }

 private:
  void Begin(PacketType type, std::uint64_t session, std::uint64_t first,
             std::uint16_t token) noexcept;
  void Commit(std::size_t length) noexcept {
    size_ += kBlockLengthSize + length;
    ++count_;
  }

  std::span<std::byte> buffer_;
  PacketType type_{};  // 0 until a Begin call: carries nothing
  std::uint64_t first_sequence_ = 0;
  std::size_t size_ = 0;
  std::uint16_t count_ = 0;
};

// The packets without blocks. Each writes one packet at the start of `out`
// and returns its size, or kBufferTooSmall (nothing written). O(1).

// Heartbeat: the next feed sequence; token 0.
codec::Result<std::size_t> EncodeHeartbeat(
    std::span<std::byte> out, std::uint64_t session,
    std::uint64_t next_sequence) noexcept;
// EndOfSession: the next feed sequence; token 0.
codec::Result<std::size_t> EncodeEndOfSession(
    std::span<std::byte> out, std::uint64_t session,
    std::uint64_t next_sequence) noexcept;
// Refused: the feed's session, the request's sequence and token, the body.
codec::Result<std::size_t> EncodeRefused(std::span<std::byte> out,
                                         std::uint64_t session,
                                         std::uint64_t sequence,
                                         std::uint16_t token,
                                         const RefusedBody& body) noexcept;
// RetransmitRequest (S, N).
codec::Result<std::size_t> EncodeRetransmitRequest(
    std::span<std::byte> out, std::uint64_t session, std::uint64_t first,
    std::uint16_t count, std::uint16_t token) noexcept;
// SnapshotRequest: `session` may be 0 (whatever the current one is),
// `instrument_id` 0 for all.
codec::Result<std::size_t> EncodeSnapshotRequest(
    std::span<std::byte> out, std::uint64_t session, std::uint16_t token,
    std::uint32_t instrument_id) noexcept;

}  // namespace orderwire::feed

#endif  // ORDERWIRE_FEED_BUILDER_H_
