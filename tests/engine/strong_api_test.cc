// The engine's API takes the strong types of codec/strong.h: a swapped or
// untyped argument does not compile. Compile-time proof (static_assert over
// concepts, so that an unsatisfied requirement is "false", not a hard error),
// plus one run-time check that the typed lookups find what they should.
#include <cstdint>
#include <optional>

#include "codec/command.h"
#include "codec/strong.h"
#include "engine/engine.h"
#include "engine/internal/order_index.h"
#include "gtest/gtest.h"

namespace orderwire::engine {
namespace {

using codec::AccountId;
using codec::ClientOrderId;
using codec::InstrumentId;
using codec::OrderId;
using codec::Price;
using codec::Quantity;

// FindOrder(OrderId).
template <typename Id>
concept CanFindOrder = requires(const Engine& e, Id id) {
  e.FindOrder(id);
};
static_assert(CanFindOrder<OrderId>);
static_assert(!CanFindOrder<AccountId>);
static_assert(!CanFindOrder<ClientOrderId>);
static_assert(!CanFindOrder<std::uint64_t>);
static_assert(!CanFindOrder<int>);

// FindOrderByClient(AccountId, OwnerTag, ClientOrderId), in that order only.
template <typename A, typename C>
concept CanFindOrderByClient = requires(const Engine& e, A a, C c) {
  e.FindOrderByClient(a, OwnerTag{0}, c);
};
static_assert(CanFindOrderByClient<AccountId, ClientOrderId>);
static_assert(!CanFindOrderByClient<ClientOrderId, AccountId>);  // swapped
static_assert(!CanFindOrderByClient<AccountId, OrderId>);
static_assert(!CanFindOrderByClient<OrderId, ClientOrderId>);
static_assert(!CanFindOrderByClient<std::uint64_t, std::uint64_t>);

// Book(InstrumentId).
template <typename Id>
concept CanBook = requires(const Engine& e, Id id) {
  e.Book(id);
};
static_assert(CanBook<InstrumentId>);
static_assert(!CanBook<std::uint32_t>);
static_assert(!CanBook<OrderId>);
static_assert(!CanBook<AccountId>);

// What the engine hands back is typed too.
static_assert(std::is_same_v<decltype(OrderInfo::order_id), OrderId>);
static_assert(std::is_same_v<decltype(OrderInfo::account_id), AccountId>);
static_assert(
    std::is_same_v<decltype(OrderInfo::client_order_id), ClientOrderId>);
static_assert(std::is_same_v<decltype(OrderInfo::instrument_id), InstrumentId>);
static_assert(std::is_same_v<decltype(OrderInfo::price), Price>);
static_assert(std::is_same_v<decltype(OrderInfo::leaves_quantity), Quantity>);
static_assert(std::is_same_v<decltype(LevelInfo::price), Price>);
static_assert(std::is_same_v<decltype(LevelInfo::quantity), Quantity>);
static_assert(std::is_same_v<decltype(std::declval<const Engine&>()
                                          .Book(InstrumentId(1))
                                          .instrument_id()),
                             InstrumentId>);
static_assert(
    std::is_same_v<decltype(std::declval<const Engine&>().next_order_id()),
                   OrderId>);

// The index (internal): the client key's three parts cannot be swapped.
template <typename A, typename C>
concept CanFindByClient = requires(const internal::OrderIndex& index, A a, C c,
                                   const internal::Order* orders) {
  index.FindByClient(a, std::uint32_t{0}, c, orders);
};
static_assert(CanFindByClient<AccountId, ClientOrderId>);
static_assert(!CanFindByClient<ClientOrderId, AccountId>);
static_assert(!CanFindByClient<std::uint64_t, std::uint64_t>);
template <typename Id>
concept CanFindById = requires(const internal::OrderIndex& index, Id id,
                               const internal::Order* orders) {
  index.FindById(id, orders);
};
static_assert(CanFindById<OrderId>);
static_assert(!CanFindById<AccountId>);
static_assert(!CanFindById<std::uint64_t>);

TEST(StrongApi, TypedLookupsFindTheOrder) {
  Engine engine(EngineConfig{});
  ReportBuffer reports;
  const codec::Command command = codec::Command::From(
      1, codec::NewLimit{.account_id = 7,
                         .client_order_id = 1001,
                         .instrument_id = 3,
                         .side = codec::Side::kBuy,
                         .time_in_force = codec::TimeInForce::kGoodTillCancel,
                         .price = 100,
                         .quantity = 10});
  ASSERT_EQ(engine.Execute(command, reports), ExecuteStatus::kOk);
  const std::optional<OrderInfo> by_id = engine.FindOrder(OrderId(1));
  ASSERT_TRUE(by_id.has_value());
  EXPECT_EQ(by_id->account_id, AccountId(7));
  EXPECT_EQ(by_id->client_order_id, ClientOrderId(1001));
  EXPECT_EQ(by_id->instrument_id, InstrumentId(3));
  EXPECT_EQ(by_id->price, Price(100));
  EXPECT_EQ(by_id->leaves_quantity, Quantity(10));
  const auto by_client =
      engine.FindOrderByClient(AccountId(7), 0, ClientOrderId(1001));
  ASSERT_TRUE(by_client.has_value());
  EXPECT_EQ(by_client->order_id, OrderId(1));
  const auto best = engine.Book(InstrumentId(3)).Best(codec::Side::kBuy);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->price, Price(100));
  EXPECT_EQ(best->quantity, Quantity(10));
  EXPECT_EQ(engine.next_order_id(), OrderId(2));
}

}  // namespace
}  // namespace orderwire::engine
