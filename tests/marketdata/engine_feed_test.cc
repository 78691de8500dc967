// marketdata::Book against the engine itself: random commands run through
// engine::Engine, each command's reports turned into feed messages by the
// table of docs/MARKETDATA.md "From the journal to the feed" (step 3; the
// publisher is not built yet, so the table is written out here), applied to
// a Book; after every command the book must hold the engine's live orders,
// field by field, in the same (canonical) order, and the same levels.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "codec/command.h"
#include "codec/messages.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using codec::Side;

using EngineFeedMessage =
    std::variant<feed::OrderAdded, feed::OrderExecuted, feed::OrderReduced,
                 feed::OrderDeleted, feed::OrderReplaced>;

constexpr std::uint32_t kEngineInstruments = 3;

// What the table needs to know of the book before the command: the order a
// Replace names, and the best opposite level it could reach.
struct BeforeCommand {
  std::optional<engine::OrderInfo> replaced;
  std::optional<engine::LevelInfo> best_opposite;
};

BeforeCommand Observe(const engine::Engine& engine,
                      const codec::Command& command) {
  BeforeCommand before;
  if (command.kind != codec::Kind::kReplace) return before;
  before.replaced = engine.FindOrder(command.order_id);
  if (before.replaced) {
    const Side opposite =
        before.replaced->side == Side::kBuy ? Side::kSell : Side::kBuy;
    before.best_opposite =
        engine.Book(before.replaced->instrument_id).Best(opposite);
  }
  return before;
}

// The feed messages of one command's reports, in report order, then the
// OrderAdded of the order that rests at its end.
class FeedTable {
 public:
  FeedTable(const engine::Engine& engine, const engine::ReportBuffer& reports,
            const BeforeCommand& before)
      : engine_(engine), reports_(reports), before_(before) {}

  std::vector<EngineFeedMessage> Messages() {
    for (const engine::Report& report : reports_.reports()) Translate(report);
    if (taker_ != 0) {
      const std::optional<engine::OrderInfo> rests =
          engine_.FindOrder(codec::OrderId(taker_));
      if (rests) {
        out_.push_back(test::Added(taker_, rests->instrument_id.value(),
                                   rests->side, rests->price.value(),
                                   rests->leaves_quantity.value()));
      }
    }
    return out_;
  }

 private:
  void Translate(const engine::Report& report) {
    switch (report.kind) {
      case codec::Kind::kAccepted:
        taker_ = reports_.Get<codec::Accepted>(report).order_id;
        return;
      case codec::Kind::kFilled: {
        const codec::Filled f = reports_.Get<codec::Filled>(report);
        if (f.liquidity == codec::Liquidity::kMaker) {
          out_.push_back(test::Executed(f.order_id, f.instrument_id, f.side,
                                        f.price, f.quantity, f.match_id));
        }
        return;
      }
      case codec::Kind::kCancelled: {
        const codec::Cancelled c = reports_.Get<codec::Cancelled>(report);
        if (c.reason == codec::CancelReason::kRequested ||
            (c.reason == codec::CancelReason::kSelfTrade &&
             c.order_id != taker_)) {
          out_.push_back(test::Deleted(c.order_id, c.instrument_id));
        }
        return;
      }
      case codec::Kind::kReplaced:
        Replaced(reports_.Get<codec::Replaced>(report));
        return;
      default:
        return;  // Rejected: nothing, never
    }
  }

  void Replaced(const codec::Replaced& r) {
    ASSERT_TRUE(before_.replaced.has_value());
    const engine::OrderInfo& old = *before_.replaced;
    const std::uint32_t instrument = old.instrument_id.value();
    if (r.priority_kept == codec::PriorityKept::kYes) {
      if (r.quantity < old.leaves_quantity.value()) {
        out_.push_back(test::Reduced(r.order_id, instrument,
                                     old.leaves_quantity.value() - r.quantity));
      }
      return;
    }
    const bool crossing =
        before_.best_opposite.has_value() &&
        (old.side == Side::kBuy
             ? before_.best_opposite->price.value() <= r.price
             : before_.best_opposite->price.value() >= r.price);
    if (!crossing) {
      out_.push_back(
          test::Replaced(r.order_id, instrument, r.price, r.quantity));
      return;
    }
    // Out of the book while it trades; added again if it rests.
    out_.push_back(test::Deleted(r.order_id, instrument));
    taker_ = r.order_id;
  }

  const engine::Engine& engine_;
  const engine::ReportBuffer& reports_;
  const BeforeCommand& before_;
  std::uint64_t taker_ = 0;
  std::vector<EngineFeedMessage> out_;
};

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
  engine::EngineConfig config;
  config.min_instrument = 1;
  config.max_instrument = kEngineInstruments;
  engine::Engine engine(config);
  engine::ReportBuffer reports;
  Book book;
  // The feed's start (MARKETDATA.md step 1): every instrument listed.
  for (std::uint32_t id = 1; id <= kEngineInstruments; ++id) {
    test::List(book, id);
  }
  CommandSource source(seed);
  std::size_t messages = 0;
  std::size_t executions = 0;
  for (int i = 0; i < commands; ++i) {
    const codec::Command command = source.Next(engine);
    const BeforeCommand before = Observe(engine, command);
    reports.Clear();
    ASSERT_EQ(engine.Execute(command, reports), engine::ExecuteStatus::kOk);
    FeedTable table(engine, reports, before);
    for (const EngineFeedMessage& message : table.Messages()) {
      const BookError error =
          std::visit([&](const auto& m) { return book.Apply(m); }, message);
      ASSERT_EQ(error, BookError::kOk)
          << "command " << i << ", message kind " << message.index();
      ++messages;
      executions += message.index() == 1 ? 1U : 0U;
    }
    ExpectBookIsEngines(book, engine);
    if (::testing::Test::HasFatalFailure()) FAIL() << "after command " << i;
    source.Note(engine);
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
