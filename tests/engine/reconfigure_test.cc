// Engine::Reconfigure: new limits apply to new commands, live orders stay;
// capacity grows (indexes kept) or shrinks only to the live orders; the
// instrument range moves without losing a book; a refusal changes nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/scenario.h"

namespace orderwire::engine {
namespace {

using testing::CancelOrder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kBuy;
using testing::kGtc;
using testing::kSell;
using testing::Limit;
using testing::Market;
using testing::Replace;
using testing::Scenario;
using ::testing::StartsWith;

TEST(ReconfigureTest, NewBandsApplyToNewCommandsAndRestingOrdersStay) {
  Scenario s;
  ASSERT_THAT(s.Send(Limit(7, 1, 1, kBuy, kGtc, 500, 10)),
              ElementsAre(StartsWith("Accepted #1")));
  EngineConfig config;
  config.min_price = 1000;
  config.max_price = 2000;
  config.max_quantity = 50;
  ASSERT_TRUE(s.engine().Reconfigure(config).ok());
  EXPECT_EQ(s.engine().config().min_price, 1000);
  // Valid before, not now.
  EXPECT_THAT(s.Send(Limit(7, 2, 1, kBuy, kGtc, 500, 10)),
              ElementsAre(HasSubstr("InvalidPrice")));
  EXPECT_THAT(s.Send(Limit(7, 3, 1, kBuy, kGtc, 1500, 60)),
              ElementsAre(HasSubstr("InvalidQuantity")));
  EXPECT_THAT(s.Send(Limit(7, 4, 1, kBuy, kGtc, 1500, 10)),
              ElementsAre(StartsWith("Accepted #2")));
  // The order resting at 500 stays, trades and can be cancelled; a Replace
  // of it is checked against the new band.
  ASSERT_TRUE(s.engine().FindOrder(codec::OrderId(1)).has_value());
  EXPECT_THAT(s.Send(Replace(7, 1, 5, 500, 10)),
              ElementsAre(HasSubstr("InvalidPrice")));
  EXPECT_THAT(s.Send(CancelOrder(7, 1)),
              ElementsAre(StartsWith("Cancelled #1")));
  EXPECT_TRUE(s.engine().CheckInvariants().ok());
}

TEST(ReconfigureTest, TheInstrumentRangeMovesAndKeepsEveryBook) {
  EngineConfig config;
  config.min_instrument = 1;
  config.max_instrument = 10;
  Scenario s(config);
  ASSERT_THAT(s.Send(Limit(7, 1, 5, kBuy, kGtc, 100, 10)),
              ElementsAre(StartsWith("Accepted #1")));
  ASSERT_THAT(s.Send(Limit(7, 2, 10, kSell, kGtc, 200, 10)),
              ElementsAre(StartsWith("Accepted #2")));
  config.min_instrument = 3;
  config.max_instrument = 20;
  ASSERT_TRUE(s.engine().Reconfigure(config).ok());
  EXPECT_THAT(s.Send(Limit(7, 3, 2, kBuy, kGtc, 100, 10)),
              ElementsAre(HasSubstr("UnknownInstrument")));
  EXPECT_THAT(s.Send(Limit(7, 4, 15, kBuy, kGtc, 100, 10)),
              ElementsAre(StartsWith("Accepted #3")));
  const auto best = s.engine().Book(codec::InstrumentId(5)).Best(kBuy);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->price, codec::Price(100));
  // The order on instrument 10 still trades.
  EXPECT_THAT(s.Send(Limit(8, 5, 10, kBuy, kGtc, 200, 4)),
              ElementsAre(StartsWith("Accepted #4"), StartsWith("Filled #2"),
                          StartsWith("Filled #4")));
  EXPECT_TRUE(s.engine().CheckInvariants().ok());
}

TEST(ReconfigureTest, RefusesToLeaveOutAnInstrumentWithLiveOrders) {
  EngineConfig config;
  config.max_instrument = 10;
  Scenario s(config);
  ASSERT_THAT(s.Send(Limit(7, 1, 5, kBuy, kGtc, 100, 10)),
              ElementsAre(StartsWith("Accepted #1")));
  EngineConfig narrower = config;
  narrower.min_instrument = 6;
  narrower.max_price = 50;
  const absl::Status status = s.engine().Reconfigure(narrower);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("instrument 5 has live orders"));
  // Nothing changed: the old limits hold, the book is there.
  EXPECT_EQ(s.engine().config().min_instrument, 1u);
  EXPECT_EQ(s.engine().config().max_price, config.max_price);
  EXPECT_THAT(s.Send(Limit(7, 2, 1, kBuy, kGtc, 100, 10)),
              ElementsAre(StartsWith("Accepted #2")));
  EXPECT_TRUE(s.engine().Book(codec::InstrumentId(5)).Best(kBuy).has_value());
}

TEST(ReconfigureTest, CapacityGrowsAndKeepsEveryLiveOrder) {
  EngineConfig config;
  config.max_live_orders = 4;
  Scenario s(config);
  for (std::uint64_t i = 1; i <= 4; ++i) {
    ASSERT_THAT(
        s.Send(Limit(7, i, 1, kBuy, kGtc, 100 + static_cast<int>(i), 10)),
        ElementsAre(StartsWith("Accepted")));
  }
  EXPECT_THAT(s.Send(Limit(7, 5, 1, kBuy, kGtc, 100, 10)),
              ElementsAre(HasSubstr("BookFull")));
  // Order #4 (the best bid) traded 3: its executed quantity moves with it.
  ASSERT_THAT(s.Send(Market(8, 99, 1, kSell, 3)),
              ElementsAre(StartsWith("Accepted"), StartsWith("Filled #4"),
                          StartsWith("Filled")));
  config.max_live_orders = 10'000;
  ASSERT_TRUE(s.engine().Reconfigure(config).ok());
  // Past every table growth: thousands of orders, the first four intact.
  for (std::uint64_t i = 6; i < 5000; ++i) {
    ASSERT_THAT(
        s.Send(Limit(8, i, 1, kSell, kGtc, 1000 + static_cast<int>(i), 1)),
        ElementsAre(StartsWith("Accepted")));
  }
  EXPECT_EQ(s.engine().live_orders(), 4998u);
  for (std::uint64_t id = 1; id <= 4; ++id) {
    EXPECT_TRUE(s.engine().FindOrder(codec::OrderId(id)).has_value());
  }
  EXPECT_EQ(s.engine().FindOrder(codec::OrderId(4))->executed_quantity,
            codec::Quantity(3));
  EXPECT_THAT(s.Send(CancelOrder(7, 2)),
              ElementsAre(StartsWith("Cancelled #2")));
  EXPECT_TRUE(s.engine().CheckInvariants().ok());
}

TEST(ReconfigureTest, CapacityShrinksOnlyToTheLiveOrders) {
  Scenario s;
  for (std::uint64_t i = 1; i <= 5; ++i) {
    ASSERT_THAT(s.Send(Limit(7, i, 1, kBuy, kGtc, 100, 10)),
                ElementsAre(StartsWith("Accepted")));
  }
  EngineConfig config;
  config.max_live_orders = 4;
  const absl::Status status = s.engine().Reconfigure(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("below the 5 orders live"));
  EXPECT_EQ(s.engine().config().max_live_orders,
            EngineConfig{}.max_live_orders);
  config.max_live_orders = 5;
  ASSERT_TRUE(s.engine().Reconfigure(config).ok());
  EXPECT_THAT(s.Send(Limit(7, 6, 1, kBuy, kGtc, 100, 10)),
              ElementsAre(HasSubstr("BookFull")));
}

TEST(ReconfigureTest, RefusesLimitsUnderWhichABookTotalCouldOverflow) {
  EngineConfig config;
  config.max_live_orders = 1;
  config.max_quantity = std::uint64_t{1} << 62;
  Scenario s(config);
  ASSERT_THAT(s.Send(Limit(7, 1, 1, kBuy, kGtc, 100, std::uint64_t{1} << 62)),
              ElementsAre(StartsWith("Accepted")));
  EngineConfig more = config;
  more.max_live_orders = 2;
  more.max_quantity = (std::uint64_t{1} << 62) - 1;  // valid on its own
  ASSERT_TRUE(ValidateConfig(more).ok());
  const absl::Status status = s.engine().Reconfigure(more);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("could overflow"));
  EXPECT_EQ(s.engine().config().max_live_orders, 1u);
}

TEST(ReconfigureTest, AnInvalidConfigurationIsRefused) {
  Scenario s;
  EngineConfig bad;
  bad.min_price = 10;
  bad.max_price = 5;
  EXPECT_EQ(s.engine().Reconfigure(bad).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.engine().config().max_price, EngineConfig{}.max_price);
}

}  // namespace
}  // namespace orderwire::engine
