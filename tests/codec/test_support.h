// Helpers shared by the codec tests: exact-size heap buffers (so that
// AddressSanitizer catches any read past a span), random and extreme models of
// every kind, field-by-field model comparison, and the list of all 12 models
// for typed tests. Bytes, hex and frames are the shared ones of
// tests/support/bytes.h.
#ifndef ORDERWIRE_TESTS_CODEC_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_CODEC_TEST_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/error.h"
#include "codec/messages.h"
#include "codec/testing/random_commands.h"
#include "codec/wire.h"
#include "gtest/gtest.h"
#include "tests/support/bytes.h"

namespace orderwire::codec {

// GoogleTest printers, so that failures show names rather than raw bytes.
inline void PrintTo(CodecError e, std::ostream* os) {
  *os << Name(e) << " (" << static_cast<int>(e) << ")";
}
inline void PrintTo(Kind k, std::ostream* os) {
  *os << "0x" << std::hex << static_cast<int>(k) << std::dec;
}
inline void PrintTo(Side v, std::ostream* os) { *os << static_cast<int>(v); }
inline void PrintTo(TimeInForce v, std::ostream* os) {
  *os << static_cast<int>(v);
}

}  // namespace orderwire::codec

namespace orderwire::codec::test {

// Every kind, in ForEachMessage's order (commands first).
using AllModels =
    ::testing::Types<NewLimit, NewMarket, CancelByOrder, CancelByClient,
                     Replace, MassCancel, Heartbeat, Goodbye,
                     OrderStatusRequest, Accepted, Rejected, Filled, Cancelled,
                     Replaced, SequenceGap, ReportsGone, Busy, MassCancelDone,
                     HeartbeatAck, SessionClosed, OrderStatus>;

// Every command kind (a Heartbeat is not one).
using CommandModels =
    ::testing::Types<NewLimit, NewMarket, CancelByOrder, CancelByClient,
                     Replace, MassCancel, Goodbye, OrderStatusRequest>;

// Names typed tests after the docs/PROTOCOL.md kind name (e.g. "/NewLimit").
struct ModelName {
  template <typename Model>
  static std::string GetName(int) {
    return std::string(MessageTraits<Model>::kName);
  }
};

// Bytes, hex and frames: the shared helpers of tests/support/bytes.h.
using ::orderwire::test_support::Bytes;
using ::orderwire::test_support::Frame;
using ::orderwire::test_support::FromHex;
using ::orderwire::test_support::Hex;

// A heap block of exactly `size` bytes holding a copy of the first `size`
// bytes of `source`: any read past span() is a heap-buffer-overflow under
// AddressSanitizer.
class ExactBuffer {
 public:
  ExactBuffer(std::span<const std::byte> source, std::size_t size)
      : data_(new std::byte[size]), size_(size) {
    if (size > source.size()) std::abort();
    if (size != 0) std::memcpy(data_.get(), source.data(), size);
  }
  explicit ExactBuffer(std::span<const std::byte> source)
      : ExactBuffer(source, source.size()) {}

  [[nodiscard]] std::span<const std::byte> span() const {
    return {data_.get(), size_};
  }
  [[nodiscard]] std::span<std::byte> mutable_span() {
    return {data_.get(), size_};
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_;
};

// The extreme values of an integer type: 0, 1, max-1, max, and the sign bit
// alone (the most negative value of the signed type of that width).
template <typename T>
std::vector<T> ExtremeValues() {
  using U = internal::WireUnsigned<T>;
  constexpr U kMax = std::numeric_limits<U>::max();
  return {static_cast<T>(U{0}), static_cast<T>(U{1}),
          static_cast<T>(static_cast<U>(kMax - 1)), static_cast<T>(kMax),
          static_cast<T>(static_cast<U>(kMax / 2 + 1))};
}

// A value of T: with `extreme`, one of ExtremeValues<T>() or a random one
// (so enums take any byte), else uniformly random over T's whole width.
template <typename T>
T RandomValue(testing::SplitMix64& rng, bool extreme) {
  using U = internal::WireUnsigned<T>;
  if (extreme) {
    const std::vector<T> values = ExtremeValues<T>();
    const std::uint64_t pick = rng.Below(values.size() + 1);
    if (pick < values.size()) return values[pick];
  }
  return static_cast<T>(static_cast<U>(rng.Next()));
}

// A model whose every field is drawn by RandomValue.
template <typename Model>
Model RandomModel(testing::SplitMix64& rng, bool extreme) {
  Model model{};
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    model.*field.member = RandomValue<T>(rng, extreme);
  });
  return model;
}

// A model whose every field holds the same bit pattern `raw`, truncated to
// the field's width (all zeros, all ones, ...).
template <typename Model>
Model PatternModel(std::uint64_t raw) {
  Model model{};
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    using U = internal::WireUnsigned<T>;
    model.*field.member = static_cast<T>(static_cast<U>(raw));
  });
  return model;
}

// The value of a field as an unsigned 64-bit number, for messages.
template <typename T>
std::uint64_t Widen(T value) {
  return static_cast<std::uint64_t>(
      static_cast<internal::WireUnsigned<T>>(value));
}

// Field-by-field equality of two models; the failure names every field that
// differs.
template <typename Model>
::testing::AssertionResult ModelsEqual(const Model& expected,
                                       const Model& actual) {
  std::string diff;
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    if (expected.*field.member != actual.*field.member) {
      absl::StrAppendFormat(&diff, " %s: expected %d, got %d;", field.name,
                            Widen(expected.*field.member),
                            Widen(actual.*field.member));
    }
  });
  if (diff.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << MessageTraits<Model>::kName << " differs:" << diff;
}

// Calls fn(std::integral_constant<std::size_t, I>) for every field index of
// Model's layout, so a test can name the field's member pointer at compile
// time (e.g. to call View<Model>::Get).
template <typename Model, typename Fn>
void ForEachFieldIndex(Fn&& fn) {
  constexpr std::size_t kCount = MessageTraits<Model>::kLayout.kFieldCount;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (fn(std::integral_constant<std::size_t, I>{}), ...);
  }
  (std::make_index_sequence<kCount>{});
}

// The member pointer of field I of Model's layout.
template <typename Model, std::size_t I>
inline constexpr auto kMemberAt =
    std::get<I>(MessageTraits<Model>::kLayout.fields).member;

}  // namespace orderwire::codec::test

#endif  // ORDERWIRE_TESTS_CODEC_TEST_SUPPORT_H_
