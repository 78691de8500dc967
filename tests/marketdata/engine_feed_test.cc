// marketdata::Book against the engine itself: random commands applied as
// journal records by a state::StateMachine, which makes each record's feed
// messages (docs/MARKETDATA.md "From the journal to the feed"); their bytes
// are applied to a Book, and after every command the book must hold the
// engine's live orders, field by field, in the same (canonical) order, and
// the same levels. tests/state/feed_producer_test.cc holds the feed's own
// rules; this test holds the subscriber's book to the engine on a stream
// made for crossing and self-trades (three instruments, eleven prices, four
// accounts).
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "state/state_machine.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using codec::Side;

constexpr std::uint32_t kEngineInstruments = 3;

// Random commands over a narrow band of prices, a few accounts (so that
// self-trade prevention fires), every time in force, cancels and replaces
// of live orders.
class CommandSource {
 public:
  explicit CommandSource(std::uint64_t seed) : rng_(seed) {}

  codec::Command Next(const engine::Engine& engine) {
    ++sequence_;
    const std::uint64_t roll = Below(100);
    if (roll < 50 || live_.empty()) return NewLimit();
    if (roll < 55) return NewMarket();
    const std::uint64_t id = live_[Below(live_.size())];
    const std::optional<engine::OrderInfo> order =
        engine.FindOrder(codec::OrderId(id));
    if (!order) return NewLimit();
    if (roll < 75) {
      return codec::Command::From(
          sequence_, codec::CancelByOrder{order->account_id.value(), id});
    }
    return codec::Command::From(
        sequence_,
        codec::Replace{order->account_id.value(), id, ++client_order_id_,
                       Below(4) == 0 ? order->price.value() : Price(),
                       1 + Below(60)});
  }

  // Remembers the orders that may rest, for later cancels and replaces.
  void Note(const engine::Engine& engine) {
    std::vector<std::uint64_t> still;
    for (const std::uint64_t id : live_) {
      if (engine.FindOrder(codec::OrderId(id))) still.push_back(id);
    }
    live_ = std::move(still);
    for (std::uint64_t id = next_seen_; id < engine.next_order_id().value();
         ++id) {
      if (engine.FindOrder(codec::OrderId(id))) live_.push_back(id);
    }
    next_seen_ = engine.next_order_id().value();
  }

 private:
  std::uint64_t Below(std::uint64_t n) { return rng_() % n; }
  std::int64_t Price() { return 995 + static_cast<std::int64_t>(Below(11)); }

  codec::Command NewLimit() {
    static constexpr codec::TimeInForce kTifs[] = {
        codec::TimeInForce::kGoodTillCancel,
        codec::TimeInForce::kGoodTillCancel,
        codec::TimeInForce::kGoodTillCancel,
        codec::TimeInForce::kImmediateOrCancel,
        codec::TimeInForce::kFillOrKill,
        codec::TimeInForce::kPostOnly};
    return codec::Command::From(
        sequence_,
        codec::NewLimit{
            1 + Below(4), ++client_order_id_,
            static_cast<std::uint32_t>(1 + Below(kEngineInstruments)),
            Below(2) == 0 ? Side::kBuy : Side::kSell,
            kTifs[Below(std::size(kTifs))], Price(), 1 + Below(60)});
  }
  codec::Command NewMarket() {
    return codec::Command::From(
        sequence_,
        codec::NewMarket{
            1 + Below(4), ++client_order_id_,
            static_cast<std::uint32_t>(1 + Below(kEngineInstruments)),
            Below(2) == 0 ? Side::kBuy : Side::kSell, 1 + Below(80)});
  }

  std::mt19937_64 rng_;
  std::uint64_t sequence_ = 0;
  std::uint64_t client_order_id_ = 0;
  std::uint64_t next_seen_ = 1;
  std::vector<std::uint64_t> live_;
};

void ExpectBookIsEngines(const Book& book, const engine::Engine& engine) {
  std::vector<BookOrder> expected;
  engine.ForEachLiveOrder([&](const engine::OrderInfo& o) {
    expected.push_back(
        {o.order_id, o.instrument_id, o.side, o.price, o.leaves_quantity});
  });
  ASSERT_EQ(test::Orders(book), expected);
  for (std::uint32_t id = 1; id <= kEngineInstruments; ++id) {
    const codec::InstrumentId instrument(id);
    for (const Side side : {Side::kBuy, Side::kSell}) {
      const auto view = engine.Book(instrument);
      std::vector<engine::LevelInfo> levels(view.level_count(side));
      ASSERT_EQ(view.Depth(side, levels), levels.size());
      std::vector<LevelInfo> engine_levels;
      for (const engine::LevelInfo& l : levels) {
        engine_levels.push_back({l.price, l.quantity, l.order_count});
      }
      ASSERT_EQ(test::Levels(book, id, side), engine_levels)
          << "instrument " << id << " " << codec::Name(side);
      ASSERT_EQ(book.Best(instrument, side).has_value(), !levels.empty());
    }
  }
}

void RunEngineFeed(std::uint64_t seed, int commands) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  state::StateMachineOptions options;
  options.engine.min_instrument = 1;
  options.engine.max_instrument = kEngineInstruments;
  state::StateMachine machine(options);
  Book book;
  CommandSource source(seed);
  std::size_t messages = 0;
  std::size_t executions = 0;
  std::array<std::byte, codec::kMaxFrameSize> frame{};
  for (int i = 0; i < commands; ++i) {
    const codec::Command command = source.Next(machine.engine());
    const auto size = codec::EncodeCommand(command, frame);
    ASSERT_TRUE(size.ok());
    const auto index = static_cast<std::uint64_t>(i) + 1;
    ASSERT_TRUE(machine
                    .Apply(state::Record{index, 1000 + index, 1, 0,
                                         std::span(frame).first(*size)})
                    .ok());
    for (const state::FeedMessage& message : machine.feed()) {
      ASSERT_EQ(book.ApplyMessage(message.bytes), BookError::kOk)
          << "command " << i << ", feed message " << message.sequence;
      ++messages;
      executions += static_cast<feed::MessageKind>(message.bytes[0]) ==
                            feed::MessageKind::kOrderExecuted
                        ? 1U
                        : 0U;
    }
    ExpectBookIsEngines(book, machine.engine());
    if (::testing::Test::HasFatalFailure()) FAIL() << "after command " << i;
    source.Note(machine.engine());
  }
  // Not a trivial run: the book traded and held orders.
  EXPECT_GT(executions, static_cast<std::size_t>(commands / 20));
  EXPECT_GT(messages, static_cast<std::size_t>(commands / 2));
}

TEST(BookAgainstEngine, HoldsTheEnginesLiveOrdersAfterEveryCommand) {
  for (const std::uint64_t seed : {11U, 12U, 13U}) {
    RunEngineFeed(seed, 4000);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace orderwire::marketdata
