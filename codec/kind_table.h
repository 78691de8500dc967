// The kind-dispatch table: 256 entries, one per possible kind byte.
//
// Frame parsing is driven by this table alone: the kind byte indexes it and
// the entry says whether the kind exists, how long its body is, what it is
// called, and how to decode it. An entry with frame_size 0 is an unknown kind.
//
// The decoder of a command kind is data, not a function pointer: a recipe of
// (frame offset, mask) pairs, one per field of the normalized `Command` value
// (command.h). Decoding any command is then the same straight-line code, with
// no branch and no indirect call that depends on the kind, so a random mix of
// kinds costs no mispredictions. A field the kind does not have is read from
// offset 0 (always inside the frame) and masked to zero. The recipes are
// derived at compile time from the layouts in messages.h.
#ifndef ORDERWIRE_CODEC_KIND_TABLE_H_
#define ORDERWIRE_CODEC_KIND_TABLE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codec/layout.h"
#include "codec/messages.h"
#include "codec/types.h"

namespace orderwire::codec {

// kClientControl: a control frame of the command direction (Heartbeat),
// taken where commands are (FrameFilter::kCommands) but never a command.
enum class KindClass : std::uint8_t {
  kUnknown,
  kCommand,
  kReport,
  kClientControl
};

// Number of CommandSlot values that carry a field (kNone excluded).
inline constexpr std::size_t kCommandSlotCount =
    static_cast<std::size_t>(CommandSlot::kQuantity);

// How to decode one command kind into a `Command` without branching.
struct CommandRecipe {
  // Frame offset of the field for slot s (index s - 1); 0 where absent.
  std::array<std::uint8_t, kCommandSlotCount> offset;
  // All ones where the kind has the slot, zero where it does not.
  std::array<std::uint64_t, kCommandSlotCount> mask;
};

struct KindInfo {
  std::uint8_t body_size;   // 0 for an unknown kind
  std::uint8_t frame_size;  // header + body; 0 for an unknown kind
  KindClass kind_class;
  std::string_view name;  // PROTOCOL.md name; "" for an unknown kind
  CommandRecipe recipe;   // all zero unless kind_class is kCommand
};

namespace internal {

template <typename Model>
constexpr KindInfo MakeKindInfo() {
  KindInfo info{};
  info.body_size = static_cast<std::uint8_t>(kBodySize<Model>);
  info.frame_size = static_cast<std::uint8_t>(kFrameSize<Model>);
  info.kind_class = kIsCommand<Model>         ? KindClass::kCommand
                    : kIsClientControl<Model> ? KindClass::kClientControl
                                              : KindClass::kReport;
  info.name = MessageTraits<Model>::kName;
  MessageTraits<Model>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        if (field.slot == CommandSlot::kNone) return;
        const auto s = static_cast<std::size_t>(field.slot) - 1;
        info.recipe.offset[s] =
            static_cast<std::uint8_t>(kFrameHeaderSize + offset);
        info.recipe.mask[s] = ~std::uint64_t{0};
      });
  return info;
}

constexpr std::array<KindInfo, 256> MakeKindTable() {
  std::array<KindInfo, 256> table{};
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    table[static_cast<std::uint8_t>(MessageTraits<Model>::kKind)] =
        MakeKindInfo<Model>();
  });
  return table;
}

}  // namespace internal

// The table. constexpr: built by the compiler, read-only at run time.
inline constexpr std::array<KindInfo, 256> kKindTable =
    internal::MakeKindTable();

[[nodiscard]] constexpr const KindInfo& Info(Kind kind) noexcept {
  return kKindTable[static_cast<std::uint8_t>(kind)];
}

[[nodiscard]] constexpr std::string_view Name(Kind kind) noexcept {
  return Info(kind).name;
}

// The largest frame of any kind (Filled, 71 bytes).
inline constexpr std::size_t kMaxFrameSize = [] {
  std::size_t max = 0;
  for (const KindInfo& info : kKindTable) {
    if (info.frame_size > max) max = info.frame_size;
  }
  return max;
}();

static_assert(kMaxFrameSize == 71);

// The smallest and largest command frames (CancelByOrder and CancelByClient
// 25, Replace 49): what a journal record or a pending command must hold.
// Published here, once; every other component takes them from the codec.
inline constexpr std::size_t kMinCommandFrameSize = [] {
  std::size_t min = SIZE_MAX;
  for (const KindInfo& info : kKindTable) {
    if (info.kind_class == KindClass::kCommand && info.frame_size < min) {
      min = info.frame_size;
    }
  }
  return min;
}();
inline constexpr std::size_t kMaxCommandFrameSize = [] {
  std::size_t max = 0;
  for (const KindInfo& info : kKindTable) {
    if (info.kind_class == KindClass::kCommand && info.frame_size > max) {
      max = info.frame_size;
    }
  }
  return max;
}();
static_assert(kMinCommandFrameSize == 25 && kMaxCommandFrameSize == 49);

// The frame size of each command kind, 0 for every other kind byte: the one
// 256-byte table (four cache lines) that the bulk decoder and the journal's
// append loop touch per frame.
inline constexpr std::array<std::uint8_t, 256> kCommandFrameSize = [] {
  std::array<std::uint8_t, 256> sizes{};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (kKindTable[i].kind_class == KindClass::kCommand) {
      sizes[i] = static_cast<std::uint8_t>(kKindTable[i].frame_size);
    }
  }
  return sizes;
}();
static_assert(kKindTable[0x00].frame_size == 0, "0 is never a valid kind");

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_KIND_TABLE_H_
