// codec/strong.h: the strong identifier and quantity types. Most of this file
// is compile-time proof (static_assert): that the types cost nothing (size,
// alignment, trivially copyable, standard layout, Command's layout unchanged)
// and that mixing them up does not compile. The requirements are written as
// concepts (templated) so that a failing requirement is "false" rather than
// a hard error on every compiler.
#include "codec/strong.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <tuple>
#include <type_traits>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "codec/command.h"
#include "gtest/gtest.h"

namespace orderwire::codec {
namespace {

using AllStrong = std::tuple<OrderId, AccountId, ClientOrderId, InstrumentId,
                             Price, Quantity>;

// --- Zero cost --------------------------------------------------------------

template <typename T, typename Rep>
constexpr bool kSameAsRep =
    std::is_same_v<typename T::RepType, Rep> && sizeof(T) == sizeof(Rep) &&
    alignof(T) == alignof(Rep) &&
    std::is_trivially_copyable_v<T>&& std::is_trivially_default_constructible_v<
        T>&& std::is_trivially_destructible_v<T>&& std::is_standard_layout_v<T>;
static_assert(kSameAsRep<OrderId, std::uint64_t>);
static_assert(kSameAsRep<AccountId, std::uint64_t>);
static_assert(kSameAsRep<ClientOrderId, std::uint64_t>);
static_assert(kSameAsRep<InstrumentId, std::uint32_t>);
static_assert(kSameAsRep<Price, std::int64_t>);
static_assert(kSameAsRep<Quantity, std::uint64_t>);

// Command keeps the layout the decoders' recipes and byte permutation were
// built for (command.cc derives them with offsetof; these pin it).
static_assert(sizeof(Command) == 56 && alignof(Command) == 8);
static_assert(std::is_trivially_copyable_v<Command> &&
              std::is_standard_layout_v<Command>);
static_assert(offsetof(Command, sequence) == 0);
static_assert(offsetof(Command, account_id) == 8);
static_assert(offsetof(Command, client_order_id) == 16);
static_assert(offsetof(Command, order_id) == 24);
static_assert(offsetof(Command, price) == 32);
static_assert(offsetof(Command, quantity) == 40);
static_assert(offsetof(Command, instrument_id) == 48);
static_assert(offsetof(Command, kind) == 52);
static_assert(offsetof(Command, side) == 53);
static_assert(offsetof(Command, time_in_force) == 54);

// --- No conversion between two strong types, or from/to their integer -------

template <typename From, typename To>
constexpr bool kNoConversion =
    !std::is_convertible_v<From, To> && !std::is_constructible_v<To, From> &&
    !std::is_assignable_v<To&, From>;

// Every ordered pair of distinct strong types.
template <typename A, typename... Bs>
constexpr bool kSeparateFromEach = ((std::is_same_v<A, Bs> ||
                                     kNoConversion<A, Bs>)&&...);
template <typename... Ts>
constexpr bool AllPairsSeparate(std::tuple<Ts...>*) {
  return (kSeparateFromEach<Ts, Ts...> && ...);
}
static_assert(AllPairsSeparate(static_cast<AllStrong*>(nullptr)));

// The likeliest mix-ups (the ids, price and quantity), spelled out.
static_assert(!std::is_convertible_v<OrderId, AccountId>);
static_assert(!std::is_convertible_v<AccountId, OrderId>);
static_assert(!std::is_constructible_v<AccountId, OrderId>);
static_assert(!std::is_convertible_v<ClientOrderId, OrderId>);
static_assert(!std::is_convertible_v<Price, Quantity>);
static_assert(!std::is_convertible_v<Quantity, Price>);

// From the integer: explicit only. To the integer: only through .value().
static_assert(!std::is_convertible_v<std::uint64_t, OrderId>);
static_assert(std::is_constructible_v<OrderId, std::uint64_t>);
static_assert(!std::is_convertible_v<OrderId, std::uint64_t>);
static_assert(!std::is_constructible_v<std::uint64_t, OrderId>);
static_assert(!std::is_convertible_v<int, Quantity>);
static_assert(!std::is_convertible_v<std::int64_t, Price>);
static_assert(!std::is_convertible_v<Price, std::int64_t>);
static_assert(!std::is_convertible_v<std::uint32_t, InstrumentId>);
static_assert(!std::is_assignable_v<AccountId&, std::uint64_t>);
static_assert(std::is_same_v<decltype(OrderId(1).value()), std::uint64_t>);

// Command's fields take only their own type.
template <typename V>
concept CanAssignAccountIdField = requires(Command c, V v) {
  c.account_id = v;
};
static_assert(CanAssignAccountIdField<AccountId>);
static_assert(!CanAssignAccountIdField<OrderId>);
static_assert(!CanAssignAccountIdField<ClientOrderId>);
static_assert(!CanAssignAccountIdField<std::uint64_t>);
template <typename V>
concept CanAssignPriceField = requires(Command c, V v) {
  c.price = v;
};
static_assert(CanAssignPriceField<Price>);
static_assert(!CanAssignPriceField<Quantity>);
static_assert(!CanAssignPriceField<std::int64_t>);

// --- Operations: comparison for all, + and - for Quantity only ---------------

template <typename A, typename B>
concept CanAdd = requires(A a, B b) {
  a + b;
};
template <typename A, typename B>
concept CanSubtract = requires(A a, B b) {
  a - b;
};
template <typename A, typename B>
concept CanAddAssign = requires(A a, B b) {
  a += b;
};
template <typename A, typename B>
concept CanCompare = requires(A a, B b) {
  a == b;
  a < b;
  a <=> b;
};

static_assert(CanAdd<Quantity, Quantity> && CanSubtract<Quantity, Quantity> &&
              CanAddAssign<Quantity, Quantity>);
static_assert(!CanAdd<Quantity, std::uint64_t> && !CanAdd<Quantity, int>);
static_assert(!CanAdd<Quantity, Price> && !CanSubtract<Quantity, Price>);
static_assert(!CanAdd<OrderId, OrderId> && !CanSubtract<OrderId, OrderId>);
static_assert(!CanAdd<AccountId, AccountId>);
static_assert(!CanAdd<ClientOrderId, ClientOrderId>);
static_assert(!CanAdd<InstrumentId, InstrumentId>);
static_assert(!CanAdd<Price, Price> && !CanAddAssign<Price, Price>);
static_assert(CanCompare<Price, Price> && CanCompare<Quantity, Quantity> &&
              CanCompare<OrderId, OrderId>);
static_assert(!CanCompare<Price, Quantity>);
static_assert(!CanCompare<OrderId, AccountId>);
static_assert(!CanCompare<Quantity, std::uint64_t>);
static_assert(!CanCompare<Price, int>);

// constexpr throughout.
static_assert(Quantity(3) + Quantity(4) == Quantity(7));
static_assert(Quantity(7) - Quantity(4) == Quantity(3));
static_assert(Price(-5) < Price(3));
static_assert(OrderId(2) > OrderId(1));

TEST(StrongTypes, ValueRoundTripsAndZeroInitialises) {
  EXPECT_EQ(OrderId(42).value(), 42u);
  EXPECT_EQ(Price(-7).value(), -7);
  EXPECT_EQ(InstrumentId(0xFFFF'FFFFu).value(), 0xFFFF'FFFFu);
  const Command command{};
  EXPECT_EQ(command.account_id, AccountId(0));
  EXPECT_EQ(command.price, Price(0));
  EXPECT_EQ(command.quantity, Quantity(0));
}

TEST(StrongTypes, QuantityArithmetic) {
  Quantity q(10);
  q -= Quantity(3);
  EXPECT_EQ(q, Quantity(7));
  q += Quantity(5);
  EXPECT_EQ(q, Quantity(12));
  EXPECT_EQ(std::min(Quantity(4), Quantity(9)), Quantity(4));
  EXPECT_EQ(std::max(Quantity(4), Quantity(9)), Quantity(9));
}

TEST(StrongTypes, HashesAsItsInteger) {
  EXPECT_EQ(absl::Hash<OrderId>()(OrderId(12345)),
            absl::Hash<std::uint64_t>()(12345));
  EXPECT_EQ(absl::Hash<Price>()(Price(-3)), absl::Hash<std::int64_t>()(-3));
  absl::flat_hash_set<OrderId> ids = {OrderId(1), OrderId(2)};
  EXPECT_TRUE(ids.contains(OrderId(2)));
  EXPECT_FALSE(ids.contains(OrderId(3)));
}

TEST(StrongTypes, DecodedCommandCarriesTheWireIntegers) {
  const NewLimit model{.account_id = 7,
                       .client_order_id = 1001,
                       .instrument_id = 42,
                       .side = Side::kBuy,
                       .time_in_force = TimeInForce::kGoodTillCancel,
                       .price = -10050,
                       .quantity = 300};
  const Command command = Command::From(9, model);
  EXPECT_EQ(command.account_id, AccountId(7));
  EXPECT_EQ(command.client_order_id, ClientOrderId(1001));
  EXPECT_EQ(command.instrument_id, InstrumentId(42));
  EXPECT_EQ(command.price, Price(-10050));
  EXPECT_EQ(command.quantity, Quantity(300));
  std::array<std::byte, kMaxFrameSize> frame{};
  const Result<std::size_t> size = EncodeCommand(command, frame);
  ASSERT_TRUE(size.ok());
  Command decoded;
  ASSERT_TRUE(DecodeCommand(std::span(frame).first(*size), decoded).ok());
  EXPECT_EQ(decoded.account_id, command.account_id);
  EXPECT_EQ(decoded.client_order_id, command.client_order_id);
  EXPECT_EQ(decoded.price, command.price);
  EXPECT_EQ(decoded.quantity, command.quantity);
  EXPECT_EQ(decoded.instrument_id, command.instrument_id);
}

}  // namespace
}  // namespace orderwire::codec
