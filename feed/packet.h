// Feed packets: the 24-byte header, the Refused and SnapshotRequest bodies,
// and the parsers of a subscriber (PacketView) and of the request server
// (RequestView). docs/MARKETDATA.md "Packets" and "Checks" are the contract.
//
//   0    2   3    4          12         20     22     24
//   +----+---+----+----------+----------+------+------+-------------------+
//   |"OM"|ver|type| session  | sequence |count |token | by type: count    |
//   |    | 1 | u8 |   u64    |   u64    | u16  | u16  | blocks, or a body |
//   +----+---+----+----------+----------+------+------+-------------------+
//
//   block: length u16, then `length` bytes of message (messages.h), >= 9
//
// A packet counts as valid only when every check passes, in the contract's
// order; the first failure is the cause, and none of its messages may be
// applied. Parse checks everything once; iterating the blocks of a parsed
// packet then needs no check. Views point into the caller's bytes: nothing
// is copied or allocated, nothing throws, and a view is valid only as long
// as those bytes. All functions here may be called from any thread.
#ifndef ORDERWIRE_FEED_PACKET_H_
#define ORDERWIRE_FEED_PACKET_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>

#include "codec/error.h"
#include "codec/layout.h"
#include "codec/result.h"
#include "codec/wire.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "feed/types.h"

namespace orderwire::feed {

struct PacketHeader {
  std::uint16_t magic;  // bytes 'O' 'M', i.e. 0x4D4F little-endian
  std::uint8_t version;
  PacketType type;
  std::uint64_t session;
  std::uint64_t sequence;
  std::uint16_t count;
  std::uint16_t token;
};

// The body of a Refused packet.
struct RefusedBody {
  RefusedReason reason;
  std::uint64_t first_retained;  // F, the oldest sequence the server can send
  std::uint64_t next_sequence;   // the next the live feed sends
};

// The body of a SnapshotRequest packet.
struct SnapshotRequestBody {
  std::uint32_t instrument_id;  // 0 for all instruments
};

template <>
struct MessageTraits<PacketHeader> {
  static constexpr std::string_view kName = "PacketHeader";
  static constexpr auto kLayout =
      MakeLayout(Field{"magic", &PacketHeader::magic},
                 Field{"version", &PacketHeader::version},
                 Field{"type", &PacketHeader::type},
                 Field{"session", &PacketHeader::session},
                 Field{"sequence", &PacketHeader::sequence},
                 Field{"count", &PacketHeader::count},
                 Field{"token", &PacketHeader::token});
};

template <>
struct MessageTraits<RefusedBody> {
  static constexpr std::string_view kName = "Refused";
  static constexpr auto kLayout =
      MakeLayout(Field{"reason", &RefusedBody::reason},
                 Field{"first_retained", &RefusedBody::first_retained},
                 Field{"next_sequence", &RefusedBody::next_sequence});
};

template <>
struct MessageTraits<SnapshotRequestBody> {
  static constexpr std::string_view kName = "SnapshotRequest";
  static constexpr auto kLayout =
      MakeLayout(Field{"instrument_id", &SnapshotRequestBody::instrument_id});
};

// The largest packet: a 1500-byte Ethernet MTU less 40 bytes of IPv6 and 8
// of UDP header. Never fragmented, over IPv6 or IPv4.
inline constexpr std::size_t kMaxPacketBytes = 1452;
inline constexpr std::size_t kPacketHeaderSize =
    MessageTraits<PacketHeader>::kLayout.kSize;
inline constexpr std::size_t kRefusedBodySize =
    MessageTraits<RefusedBody>::kLayout.kSize;
inline constexpr std::size_t kSnapshotRequestBodySize =
    MessageTraits<SnapshotRequestBody>::kLayout.kSize;
inline constexpr std::uint16_t kPacketMagic = 0x4D4F;  // "OM"
inline constexpr std::uint8_t kFeedVersion = 1;
// A block's length field, and the least length any message may have (kind
// and timestamp).
inline constexpr std::size_t kBlockLengthSize = sizeof(std::uint16_t);
inline constexpr std::size_t kMinMessageLength = kMessageHeaderSize;

template <auto Member>
consteval std::size_t PacketOffsetOf() {
  return codec::OffsetOf<MessageTraits<PacketHeader>::kLayout, Member>();
}
// Offset of a body field from the start of its packet (header included).
template <auto Member>
consteval std::size_t BodyOffsetOf() {
  using Model = typename codec::internal::MemberPointerTraits<
      decltype(Member)>::ModelType;
  return kPacketHeaderSize +
         codec::OffsetOf<MessageTraits<Model>::kLayout, Member>();
}

// Pinned to MARKETDATA.md "Packets".
static_assert(kPacketHeaderSize == 24);
static_assert(PacketOffsetOf<&PacketHeader::magic>() == 0 &&
              PacketOffsetOf<&PacketHeader::version>() == 2 &&
              PacketOffsetOf<&PacketHeader::type>() == 3 &&
              PacketOffsetOf<&PacketHeader::session>() == 4 &&
              PacketOffsetOf<&PacketHeader::sequence>() == 12 &&
              PacketOffsetOf<&PacketHeader::count>() == 20 &&
              PacketOffsetOf<&PacketHeader::token>() == 22);
static_assert(kRefusedBodySize == 17 &&
              BodyOffsetOf<&RefusedBody::reason>() == 24 + 0 &&
              BodyOffsetOf<&RefusedBody::first_retained>() == 24 + 1 &&
              BodyOffsetOf<&RefusedBody::next_sequence>() == 24 + 9);
static_assert(kSnapshotRequestBodySize == 4 &&
              BodyOffsetOf<&SnapshotRequestBody::instrument_id>() == 24 + 0);
static_assert(kMinMessageLength == 9);

// The session a subscriber follows: one, or any (a subscriber that has not
// picked one yet takes the session of the first valid packet).
class SessionFilter {
 public:
  [[nodiscard]] static constexpr SessionFilter Any() noexcept {
    return SessionFilter(true, 0);
  }
  [[nodiscard]] static constexpr SessionFilter Only(
      std::uint64_t session) noexcept {
    return SessionFilter(false, session);
  }
  [[nodiscard]] constexpr bool Accepts(std::uint64_t session) const noexcept {
    return any_ || session == session_;
  }

 private:
  constexpr SessionFilter(bool any, std::uint64_t session) noexcept
      : any_(any), session_(session) {}

  bool any_;
  std::uint64_t session_;
};

// One message block of a parsed packet: its `length` bytes of message.
// Of a known kind, at least that kind's size (extra bytes, fields of a
// later revision, are ignored by MessageView); of an unknown kind, at least
// 9 bytes, to be skipped and counted (UnknownKind) while still taking its
// sequence number.
class MessageBlock {
 public:
  // Precondition: `length` readable bytes at `data`, at least 9 and at
  // least the size of a known kind (what PacketView::Parse checked of every
  // block it lets through).
  MessageBlock(const std::byte* data, std::uint16_t length) noexcept
      : data_(data), length_(length) {}

  [[nodiscard]] MessageKind kind() const noexcept {
    return codec::LoadLE<MessageKind>(data_ + kMessageKindOffset);
  }
  [[nodiscard]] std::uint64_t timestamp() const noexcept {
    return codec::LoadLE<std::uint64_t>(data_ + kTimestampOffset);
  }
  [[nodiscard]] bool known() const noexcept { return info().size != 0; }
  [[nodiscard]] const KindInfo& info() const noexcept { return Info(kind()); }
  // The block's `length`: the message's bytes on the wire.
  [[nodiscard]] std::uint16_t length() const noexcept { return length_; }
  // The message as it came, `length` bytes, extra bytes included.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, length_};
  }

 private:
  const std::byte* data_;
  std::uint16_t length_;
};

// Iterates the blocks of a parsed packet (checked: every block whole).
class BlockIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = MessageBlock;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = MessageBlock;

  BlockIterator() = default;
  explicit BlockIterator(const std::byte* pos) noexcept : pos_(pos) {}

  [[nodiscard]] MessageBlock operator*() const noexcept {
    return {pos_ + kBlockLengthSize, Length()};
  }
  BlockIterator& operator++() noexcept {
    pos_ += kBlockLengthSize + Length();
    return *this;
  }
  BlockIterator operator++(int) noexcept {
    BlockIterator before = *this;
    ++*this;
    return before;
  }
  // Byte offset of the current block from `base`.
  [[nodiscard]] std::size_t OffsetFrom(const std::byte* base) const noexcept {
    return static_cast<std::size_t>(pos_ - base);
  }
  friend bool operator==(const BlockIterator& a,
                         const BlockIterator& b) noexcept {
    return a.pos_ == b.pos_;
  }

 private:
  [[nodiscard]] std::uint16_t Length() const noexcept {
    return codec::LoadLE<std::uint16_t>(pos_);
  }

  const std::byte* pos_ = nullptr;
};

// A packet that passed every check of MARKETDATA.md "Checks": one of the
// types 1 to 5 a subscriber receives.
class PacketView {
 public:
  // Checks the whole packet, in the contract's order, and returns the
  // first failure as the cause: Oversize, Truncated, BadMagic, BadVersion,
  // BadType (types 0x11, 0x12 too), OtherSession (types 1 to 4 whose
  // session `followed` does not accept; a Refused is matched by its token,
  // by the caller), BadToken, BadSequence, BadCount, ZeroCount, Truncated or
  // TrailingBytes (a Refused body not 17 bytes), then block by block
  // Truncated, CountMismatch, BadLength, MisplacedKind, and TrailingBytes
  // (bytes after the last block, or after a Heartbeat's or EndOfSession's
  // header). Unknown kinds pass (MessageBlock::known). Hot path: O(blocks),
  // no allocation, never reads outside `bytes`.
  [[nodiscard]] static codec::Result<PacketView, CheckCause> Parse(
      std::span<const std::byte> bytes, SessionFilter followed) noexcept;

  // Reads a header field in place, e.g. Get<&PacketHeader::token>().
  template <auto Member>
  [[nodiscard]] auto Get() const noexcept {
    using T = typename codec::internal::MemberPointerTraits<
        decltype(Member)>::ValueType;
    return codec::LoadLE<T>(data_ + PacketOffsetOf<Member>());
  }

  [[nodiscard]] PacketType type() const noexcept {
    return Get<&PacketHeader::type>();
  }
  [[nodiscard]] std::uint64_t session() const noexcept {
    return Get<&PacketHeader::session>();
  }
  // Data: the feed sequence of the first message; Snapshot: the position
  // of the first message; Heartbeat, EndOfSession: the next feed
  // sequence; Refused: the request's.
  [[nodiscard]] std::uint64_t sequence() const noexcept {
    return Get<&PacketHeader::sequence>();
  }
  [[nodiscard]] std::uint16_t count() const noexcept {
    return Get<&PacketHeader::count>();
  }
  [[nodiscard]] std::uint16_t token() const noexcept {
    return Get<&PacketHeader::token>();
  }
  [[nodiscard]] PacketHeader header() const noexcept;
  // The Refused body. Precondition: type() is kRefused.
  [[nodiscard]] RefusedBody refused() const noexcept;
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, size_};
  }
  // The message blocks: `count` of them for Data and Snapshot, none for
  // the other types.
  [[nodiscard]] BlockIterator begin() const noexcept {
    return BlockIterator(data_ + kPacketHeaderSize);
  }
  [[nodiscard]] BlockIterator end() const noexcept {
    return BlockIterator(HasBlocks() ? data_ + size_
                                     : data_ + kPacketHeaderSize);
  }

 private:
  PacketView(const std::byte* data, std::uint32_t size) noexcept
      : data_(data), size_(size) {}
  [[nodiscard]] bool HasBlocks() const noexcept {
    return CarrierBit(type()) != 0;
  }

  const std::byte* data_;
  std::uint32_t size_;
};

// A request that passed every check of MARKETDATA.md "Checks" (the request
// server's): a RetransmitRequest (S, N) or a SnapshotRequest.
class RequestView {
 public:
  // Checks, in order: Oversize, Truncated, BadMagic, BadVersion, BadType
  // (not 0x11, 0x12), BadToken (0); RetransmitRequest: BadSequence (0),
  // ZeroCount, TrailingBytes (any byte after the header); SnapshotRequest:
  // BadSequence (not 0), BadCount (not 0), Truncated or TrailingBytes (a
  // body not 4 bytes). The session is not checked here: a wrong one is
  // answered (Refused WrongSession). Hot path: O(1), no allocation.
  [[nodiscard]] static codec::Result<RequestView, CheckCause> Parse(
      std::span<const std::byte> bytes) noexcept;

  [[nodiscard]] PacketType type() const noexcept {
    return codec::LoadLE<PacketType>(data_ +
                                     PacketOffsetOf<&PacketHeader::type>());
  }
  [[nodiscard]] std::uint64_t session() const noexcept {
    return codec::LoadLE<std::uint64_t>(
        data_ + PacketOffsetOf<&PacketHeader::session>());
  }
  // RetransmitRequest: S, the first sequence wanted (0 for a snapshot).
  [[nodiscard]] std::uint64_t sequence() const noexcept {
    return codec::LoadLE<std::uint64_t>(
        data_ + PacketOffsetOf<&PacketHeader::sequence>());
  }
  // RetransmitRequest: N, how many (0 for a snapshot).
  [[nodiscard]] std::uint16_t count() const noexcept {
    return codec::LoadLE<std::uint16_t>(data_ +
                                        PacketOffsetOf<&PacketHeader::count>());
  }
  [[nodiscard]] std::uint16_t token() const noexcept {
    return codec::LoadLE<std::uint16_t>(data_ +
                                        PacketOffsetOf<&PacketHeader::token>());
  }
  // SnapshotRequest: the instrument asked for, 0 for all. Precondition:
  // type() is kSnapshotRequest.
  [[nodiscard]] std::uint32_t instrument_id() const noexcept {
    return codec::LoadLE<std::uint32_t>(
        data_ + BodyOffsetOf<&SnapshotRequestBody::instrument_id>());
  }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, size_};
  }

 private:
  RequestView(const std::byte* data, std::uint32_t size) noexcept
      : data_(data), size_(size) {}

  const std::byte* data_;
  std::uint32_t size_;
};

// A message of one known kind, with typed access to its fields. Made from a
// block of a parsed packet, so its length is already checked.
template <typename Model>
class MessageView {
 public:
  static constexpr MessageKind kKind = MessageTraits<Model>::kKind;
  static constexpr std::size_t kSize = kMessageSize<Model>;

  // A typed view of `block`. Error: kWrongKind. O(1).
  [[nodiscard]] static codec::Result<MessageView> FromBlock(
      MessageBlock block) noexcept {
    if (block.kind() != kKind) return codec::CodecError::kWrongKind;
    return MessageView(block.bytes().data());
  }

  // Reads the field carried by `Member` in place, e.g.
  // Get<&OrderAdded::price>().
  template <auto Member>
  [[nodiscard]] auto Get() const noexcept {
    using T = typename codec::internal::MemberPointerTraits<
        decltype(Member)>::ValueType;
    return codec::LoadLE<T>(data_ + MessageOffsetOf<Member>());
  }

  // Copies every field into a Model value.
  [[nodiscard]] Model ToModel() const noexcept {
    Model model{};
    MessageTraits<Model>::kLayout.ForEach(
        [&](const auto& field, std::size_t offset) {
          using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
          model.*field.member = codec::LoadLE<T>(data_ + kModelOffset + offset);
        });
    return model;
  }

  // The kind's own kSize bytes (without a later revision's extra bytes).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, kSize};
  }

 private:
  explicit MessageView(const std::byte* data) noexcept : data_(data) {}

  const std::byte* data_;
};

}  // namespace orderwire::feed

#endif  // ORDERWIRE_FEED_PACKET_H_
