// Layout: a wire format declared once, with every offset and size derived.
//
// A layout is an ordered list of fields. Each field names the member of a
// model struct it carries and the name PROTOCOL.md gives it; its wire size is
// the size of that member's type, and its offset is the sum of the sizes of
// the fields before it (the protocol packs every structure with no padding).
// Nothing else in the codebase types an offset: views, encoders, the branch-
// free command decoder, the JSON form and the tests all derive theirs from the
// layout, so a field can only ever be read where it was declared.
//
//   constexpr auto kLayout = MakeLayout(Field{"account_id", &M::account_id},
//                                       Field{"order_id", &M::order_id});
//   static_assert(kLayout.kSize == 16);
//   static_assert(OffsetOf<kLayout, &M::order_id>() == 8);
#ifndef ORDERWIRE_CODEC_LAYOUT_H_
#define ORDERWIRE_CODEC_LAYOUT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "codec/wire.h"

namespace orderwire::codec {

// Where a command field lands in the normalized `Command` value (see
// command.h). Report fields use kNone.
enum class CommandSlot : std::uint8_t {
  kNone,
  kAccountId,
  kClientOrderId,
  kOrderId,
  kInstrumentId,
  kSide,
  kTimeInForce,
  kPrice,
  kQuantity,
};

// One field of a layout: its PROTOCOL.md name and the model member holding it.
template <typename Model, typename T>
struct Field {
  using ModelType = Model;
  using ValueType = T;
  static_assert(kIsWireScalar<T>, "wire fields are 1/2/4/8-byte integers");

  std::string_view name;
  T Model::*member;
  CommandSlot slot = CommandSlot::kNone;
};

template <typename Model, typename T>
Field(std::string_view, T Model::*) -> Field<Model, T>;
template <typename Model, typename T>
Field(std::string_view, T Model::*, CommandSlot) -> Field<Model, T>;

// An ordered, packed sequence of fields. Offsets are prefix sums of sizes.
template <typename... Fields>
struct Layout {
  static_assert(sizeof...(Fields) > 0);

  static constexpr std::size_t kFieldCount = sizeof...(Fields);
  static constexpr std::array<std::size_t, kFieldCount> kSizes = {
      sizeof(typename Fields::ValueType)...};
  static constexpr std::array<std::size_t, kFieldCount + 1> kOffsets = [] {
    std::array<std::size_t, kFieldCount + 1> offsets{};
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      offsets[i + 1] = offsets[i] + kSizes[i];
    }
    return offsets;
  }();
  // Total wire size of the structure.
  static constexpr std::size_t kSize = kOffsets[kFieldCount];

  std::tuple<Fields...> fields;

  // Calls `fn(field, offset)` for every field in wire order.
  template <typename Fn>
  constexpr void ForEach(Fn&& fn) const {
    ForEachImpl(fn, std::index_sequence_for<Fields...>{});
  }

 private:
  template <typename Fn, std::size_t... I>
  constexpr void ForEachImpl(Fn& fn, std::index_sequence<I...>) const {
    (fn(std::get<I>(fields), kOffsets[I]), ...);
  }
};

template <typename... Fields>
constexpr Layout<Fields...> MakeLayout(Fields... fields) {
  return Layout<Fields...>{{fields...}};
}

// Index of the field of `kLayout` that carries `Member`; fails to compile if
// no field or more than one carries it.
template <const auto& kLayout, auto Member>
consteval std::size_t IndexOf() {
  std::size_t index = kLayout.kFieldCount;
  std::size_t matches = 0;
  std::size_t i = 0;
  kLayout.ForEach([&](const auto& field, std::size_t) {
    if constexpr (std::is_same_v<decltype(field.member), decltype(Member)>) {
      if (field.member == Member) {
        index = i;
        ++matches;
      }
    }
    ++i;
  });
  if (matches != 1) throw "member must appear exactly once in the layout";
  return index;
}

// Offset of the field of `kLayout` that carries `Member`.
template <const auto& kLayout, auto Member>
consteval std::size_t OffsetOf() {
  return kLayout.kOffsets[IndexOf<kLayout, Member>()];
}

namespace internal {

template <typename Member>
struct MemberPointerTraits;
template <typename Model, typename T>
struct MemberPointerTraits<T Model::*> {
  using ModelType = Model;
  using ValueType = T;
};

}  // namespace internal

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_LAYOUT_H_
