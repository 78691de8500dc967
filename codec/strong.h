// Strong types for the identifiers and quantities of a command: an OrderId is
// not an AccountId, and neither is a bare integer.
//
// `Strong<Tag, Rep>` wraps one Rep and adds nothing to it at run time: it is
// trivially copyable, standard-layout, and has Rep's size and alignment, so a
// struct of Strong members has the layout (and the calling convention) of the
// same struct of Reps. That is what lets the branch-free decoder and the
// AVX-512 byte permutation of command.cc keep writing a Command byte by byte
// (their machine code is unchanged by the wrapper), and what keeps it free in
// the engine (engine_bench and callgrind instruction counts, old against new,
// agree within noise).
//
// What it allows, and nothing else:
// - explicit construction from Rep (`OrderId(42)`), never implicit, and no
//   conversion back except `.value()`; no conversion between two Strongs;
// - a trivial default constructor (so `Command command{};` is all zeroes and a
//   pool of records is never pre-touched);
// - == and <=> between two values of the same type (ids sort, prices compare
//   for price-time priority);
// - +, -, += and -= for Quantity only (a quantity is summed and filled;
//   adding two order ids or two prices means nothing here). std::min and
//   std::max work through <=>.
// - absl::Hash (AbslHashValue) and a GoogleTest PrintTo. No formatting hook
//   (the Abseil we build with predates AbslStringify): format `.value()`.
//
// Where they are used: codec::Command (the decoded command the engine
// consumes), and the engine's API and internals (OrderInfo, LevelInfo,
// FindOrder, FindOrderByClient, Book, the order records, the index). At the
// edge to the wire the value is taken with `.value()` or built with the
// constructor.
//
// Why the wire models of messages.h (NewLimit, Accepted, Filled, ...) stay
// plain integers: a model is the declaration of a frame body, read field by
// field by the Layout machinery (layout.h Field requires kIsWireScalar, the
// sizes come from sizeof(ValueType), views and encoders go through
// LoadLE<T>/StoreLE<T> and WireUnsigned<T>, the JSON form switches on the
// field's integer type). Strong members there would need a "wire
// representation" trait threaded through all of those, and every test,
// golden frame and fuzz target builds models with designated initializers of
// integer literals, which an explicit constructor rejects. The protection
// would also be weak where it matters least: a model is filled with
// designated initializers (`.order_id = ...`), so the field's name stands
// next to each value. The mix-ups this file prevents are positional ones -
// function calls taking several ids (FindOrderByClient(account, owner,
// client_order_id), the index's FindByClient/InsertClient/EraseClient) and
// assignments from the Command - and those are all on the Command and engine
// side of the boundary.
#ifndef ORDERWIRE_CODEC_STRONG_H_
#define ORDERWIRE_CODEC_STRONG_H_

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <type_traits>
#include <utility>

namespace orderwire::codec {

// A Tag with `static constexpr bool kAdditive = true` gets + and -.
template <typename Tag>
concept AdditiveTag = requires {
  requires Tag::kAdditive;
};

template <typename Tag, typename Rep>
class Strong {
  static_assert(std::is_integral_v<Rep> && !std::is_same_v<Rep, bool>);

 public:
  using RepType = Rep;

  // Trivial: uninitialised by default, zero under value-initialisation.
  Strong() = default;
  constexpr explicit Strong(Rep value) noexcept : value_(value) {}

  [[nodiscard]] constexpr Rep value() const noexcept { return value_; }

  friend constexpr bool operator==(Strong, Strong) noexcept = default;
  // clang-tidy 14 sees the 0 that a defaulted <=> compares its result with
  // (a known false positive of modernize-use-nullptr).
  // NOLINTNEXTLINE(modernize-use-nullptr)
  friend constexpr auto operator<=>(Strong, Strong) noexcept = default;

  // Quantity arithmetic (unsigned: wraps like the Rep; the engine subtracts
  // only what is there).
  friend constexpr Strong operator+(Strong a, Strong b) noexcept requires
      AdditiveTag<Tag> {
    return Strong(static_cast<Rep>(a.value_ + b.value_));
  }
  friend constexpr Strong operator-(Strong a, Strong b) noexcept requires
      AdditiveTag<Tag> {
    return Strong(static_cast<Rep>(a.value_ - b.value_));
  }
  constexpr Strong& operator+=(Strong other) noexcept requires
      AdditiveTag<Tag> {
    value_ = static_cast<Rep>(value_ + other.value_);
    return *this;
  }
  constexpr Strong& operator-=(Strong other) noexcept requires
      AdditiveTag<Tag> {
    value_ = static_cast<Rep>(value_ - other.value_);
    return *this;
  }

  template <typename H>
  friend H AbslHashValue(H h, Strong s) {
    return H::combine(std::move(h), s.value_);
  }
  // GoogleTest prints a value through this (found by ADL); <ostream> is the
  // caller's (it is only instantiated where a test prints one).
  friend void PrintTo(Strong s, std::ostream* os) { *os << +s.value_; }

 private:
  Rep value_;
};

struct OrderIdTag {};
struct AccountIdTag {};
struct ClientOrderIdTag {};
struct InstrumentIdTag {};
struct PriceTag {};
struct QuantityTag {
  static constexpr bool kAdditive = true;
};

// Assigned by the engine to every accepted order (1, 2, 3, ...).
using OrderId = Strong<OrderIdTag, std::uint64_t>;
using AccountId = Strong<AccountIdTag, std::uint64_t>;
// Chosen by the client; unique among the live orders of its account and owner.
using ClientOrderId = Strong<ClientOrderIdTag, std::uint64_t>;
using InstrumentId = Strong<InstrumentIdTag, std::uint32_t>;
// In ticks; signed on the wire (the engine's band is positive).
using Price = Strong<PriceTag, std::int64_t>;
// In lots.
using Quantity = Strong<QuantityTag, std::uint64_t>;

// Zero cost: each is its Rep, byte for byte.
template <typename T>
inline constexpr bool kIsZeroCostStrong =
    sizeof(T) == sizeof(typename T::RepType) &&
    alignof(T) == alignof(typename T::RepType) &&
    std::is_trivially_copyable_v<T>&& std::is_trivially_default_constructible_v<
        T>&& std::is_standard_layout_v<T>;
static_assert(kIsZeroCostStrong<OrderId>);
static_assert(kIsZeroCostStrong<AccountId>);
static_assert(kIsZeroCostStrong<ClientOrderId>);
static_assert(kIsZeroCostStrong<InstrumentId>);
static_assert(kIsZeroCostStrong<Price>);
static_assert(kIsZeroCostStrong<Quantity>);

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_STRONG_H_
