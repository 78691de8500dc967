// The feed's kind table: 256 entries, one per possible message kind byte.
//
// The packet parser is driven by this table alone: the kind byte of a block
// indexes it and the entry says whether version 1 knows the kind, its
// message size, its MARKETDATA.md name and which packet types may carry it.
// An entry with size 0 is an unknown kind, which a subscriber skips
// (UnknownKind) and which any packet type may carry. Built at compile time
// from the layouts in messages.h; read-only at run time, safe from any
// thread.
#ifndef ORDERWIRE_FEED_KIND_TABLE_H_
#define ORDERWIRE_FEED_KIND_TABLE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "feed/messages.h"
#include "feed/types.h"

namespace orderwire::feed {

struct KindInfo {
  std::uint8_t size;      // the message's size; 0 for an unknown kind
  std::uint8_t carriers;  // kInData | kInSnapshot; 0 for an unknown kind
  std::string_view name;  // MARKETDATA.md name; "" for an unknown kind
};

namespace internal {

constexpr std::array<KindInfo, 256> MakeKindTable() {
  std::array<KindInfo, 256> table{};
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    using Traits = MessageTraits<Model>;
    table[static_cast<std::uint8_t>(Traits::kKind)] =
        KindInfo{static_cast<std::uint8_t>(kMessageSize<Model>),
                 Traits::kCarriers, Traits::kName};
  });
  return table;
}

}  // namespace internal

inline constexpr std::array<KindInfo, 256> kKindTable =
    internal::MakeKindTable();

[[nodiscard]] constexpr const KindInfo& Info(MessageKind kind) noexcept {
  return kKindTable[static_cast<std::uint8_t>(kind)];
}

// The MARKETDATA.md name of a known kind, "" for any other byte.
[[nodiscard]] constexpr std::string_view Name(MessageKind kind) noexcept {
  return Info(kind).name;
}

// The packet type bit (kInData, kInSnapshot) of a type that carries message
// blocks; 0 for every other type.
[[nodiscard]] constexpr std::uint8_t CarrierBit(PacketType type) noexcept {
  if (type == PacketType::kData) return kInData;
  if (type == PacketType::kSnapshot) return kInSnapshot;
  return 0;
}

// Whether a packet of `type` may carry a message of `kind`: a known kind
// only in the packet types MARKETDATA.md names for it, an unknown kind in
// either Data or Snapshot packets.
[[nodiscard]] constexpr bool MayCarry(PacketType type,
                                      MessageKind kind) noexcept {
  const KindInfo& info = Info(kind);
  const std::uint8_t bit = CarrierBit(type);
  return bit != 0 && (info.size == 0 || (info.carriers & bit) != 0);
}

// The largest message of version 1 (InstrumentDirectory and OrderExecuted
// are the two largest; OrderExecuted, 46 bytes, wins).
inline constexpr std::size_t kMaxMessageSize = [] {
  std::size_t max = 0;
  for (const KindInfo& info : kKindTable) {
    if (info.size > max) max = info.size;
  }
  return max;
}();

static_assert(kMaxMessageSize == 46);
static_assert(kKindTable[0x00].size == 0, "0 is never a valid kind");
static_assert(Info(MessageKind::kReservedTrade).size == 0,
              "P is reserved: unknown to version 1");
static_assert(MayCarry(PacketType::kSnapshot, MessageKind::kSnapshotStart) &&
              !MayCarry(PacketType::kData, MessageKind::kSnapshotStart));

}  // namespace orderwire::feed

#endif  // ORDERWIRE_FEED_KIND_TABLE_H_
