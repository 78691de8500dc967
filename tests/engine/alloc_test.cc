// No heap allocation in steady state: 1,000,000 commands run after a warm-up
// with none (tests/support/counting_new.h counts; its own binary, because
// it replaces the global operator new).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "codec/command.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "tests/support/counting_new.h"

namespace orderwire::engine {
namespace {

// Runs `warm_up` commands, then counts allocations over the next `counted`.
std::size_t AllocationsInSteadyState(workload::Workload which,
                                     std::size_t warm_up, std::size_t counted) {
  const std::vector<codec::Command> commands =
      workload::Generate(which, warm_up + counted, 1);
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports;
  for (std::size_t i = 0; i < warm_up; ++i) {
    reports.Clear();
    (void)engine->Execute(commands[i], reports);
  }
  test_support::StartCountingAllocations();
  std::size_t executed = 0;
  for (std::size_t i = warm_up; i < commands.size(); ++i) {
    reports.Clear();
    executed += engine->Execute(commands[i], reports) == ExecuteStatus::kOk;
  }
  const std::size_t allocations = test_support::StopCountingAllocations();
  EXPECT_EQ(executed, counted);
  return allocations;
}

TEST(Allocation, CountingWorks) {
  test_support::StartCountingAllocations();
  auto p = std::make_unique<int>(1);
  EXPECT_EQ(test_support::StopCountingAllocations(), 1u);
}

TEST(Allocation, NoneOverAMillionMixedCommandsAfterWarmUp) {
  EXPECT_EQ(AllocationsInSteadyState(workload::Workload::kMixed, 1'000'000,
                                     1'000'000),
            0u);
}

// wl1 is not a steady state: its mid price wanders and orders left behind
// are never cancelled, so its book keeps gaining price levels (about 940
// after 1M commands, 1,300 after 2M). A side's level array doubles when it
// passes its largest size so far - log2(levels) times in a book's life - and
// nothing else allocates. Over the second million, that is at most one
// doubling per side.
TEST(Allocation, OnlyBookGrowthAllocatesOverAMillionWl1Commands) {
  EXPECT_LE(
      AllocationsInSteadyState(workload::Workload::kWl1, 1'000'000, 1'000'000),
      2u);
}

// MassCancel and CloseSession collect the orders they cancel into one
// scratch vector, grown only past its largest size: once it has held the
// most, rounds of resting and cancelling as many orders allocate nothing.
TEST(Allocation, MassCancelsAndClosesReuseTheirScratch) {
  constexpr std::uint64_t kOrders = 3000;
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports;
  const auto rest_all = [&] {
    for (std::uint64_t i = 0; i < kOrders; ++i) {
      reports.Clear();
      (void)engine->Execute(
          codec::Command::From(
              0,
              codec::NewLimit{
                  .account_id = 1 + i % 4,
                  .client_order_id = 1 + i,
                  .instrument_id = static_cast<std::uint32_t>(1 + i % 8),
                  .side = codec::Side::kBuy,
                  .time_in_force = codec::TimeInForce::kGoodTillCancel,
                  .price = static_cast<std::int64_t>(100 + i % 50),
                  .quantity = 1}),
          reports);
    }
  };
  const auto close = [&] {
    reports.Clear();
    engine->CloseSession(
        codec::Command::From(0,
                             codec::Goodbye{.account_id = 1, .request_id = 0}),
        0, codec::SessionCloseReason::kGoodbye, /*cancel_orders=*/true,
        reports);
    return reports.size();
  };
  const auto mass_cancel = [&](std::uint64_t account) {
    reports.Clear();
    (void)engine->Execute(
        codec::Command::From(
            0, codec::MassCancel{.account_id = account,
                                 .request_id = 1,
                                 .instrument_id = 0,
                                 .side = codec::MassCancelSide::kBoth,
                                 .scope = codec::MassCancelScope::kAccount}),
        reports);
  };
  rest_all();
  ASSERT_EQ(close(), kOrders + 1);  // the scratch holds the most
  test_support::StartCountingAllocations();
  for (int round = 0; round < 10; ++round) {
    rest_all();
    mass_cancel(1 + static_cast<std::uint64_t>(round) % 4);
    (void)close();
  }
  const std::size_t allocations = test_support::StopCountingAllocations();
  EXPECT_EQ(engine->live_orders(), 0u);
  EXPECT_EQ(allocations, 0u);
}

}  // namespace
}  // namespace orderwire::engine
