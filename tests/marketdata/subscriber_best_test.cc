// marketdata::Subscriber's best prices (subscriber.h "OnBestPrices"): told
// exactly when an instrument's best bid or offer (price or quantity)
// changes, including when a message behind the best skips the check
// (Book::best_changes() did not move): the last told bests always equal
// the book's.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "codec/strong.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "tests/marketdata/book_test_support.h"
#include "tests/marketdata/subscriber_test_support.h"

namespace orderwire::marketdata::subscriber_best {
namespace {

using subscriber_test::Bytes;
using subscriber_test::FeedScript;
using subscriber_test::Recorder;
using test::Side;

constexpr std::uint64_t kBestSession = 0xBE57;

FeedScript Listed(const std::vector<std::uint32_t>& instruments) {
  FeedScript feed(kBestSession);
  feed.Add(feed::SystemEvent{test::kTs, feed::SystemEventCode::kStartOfFeed});
  for (const std::uint32_t instrument : instruments) {
    feed.Add(test::Directory(instrument));
    feed.Add(test::Status(instrument, feed::TradingState::kTrading));
  }
  return feed;
}

SubscriberOptions BestOptions() {
  SubscriberOptions options;
  options.first_sequence = 1;
  options.session = kBestSession;
  return options;
}

TEST(SubscriberBest, AddsAtBehindAndBeyondTheBestOnEachSide) {
  constexpr std::uint32_t kId = 4;
  FeedScript feed = Listed({kId});
  const std::uint64_t first = feed.next();
  // Each add, and whether the best changes (price or quantity).
  const std::vector<std::pair<feed::OrderAdded, bool>> adds = {
      {test::Added(1, kId, Side::kBuy, 100, 10), true},    // first bid
      {test::Added(2, kId, Side::kBuy, 99, 10), false},    // behind
      {test::Added(3, kId, Side::kBuy, 100, 5), true},     // at: 100x15
      {test::Added(4, kId, Side::kBuy, 101, 1), true},     // better
      {test::Added(5, kId, Side::kSell, 110, 10), true},   // first ask
      {test::Added(6, kId, Side::kSell, 111, 10), false},  // behind
      {test::Added(7, kId, Side::kSell, 110, 2), true},    // at: 110x12
      {test::Added(8, kId, Side::kSell, 109, 1), true},    // better
      {test::Added(9, kId, Side::kBuy, 50, 1), false},     // far behind
  };
  for (const auto& [added, changes] : adds) feed.Add(added);
  Recorder recorder;
  Subscriber subscriber(BestOptions(), recorder);
  subscriber.OnPacket(feed.Data(1, first - 1), 1);
  ASSERT_TRUE(recorder.best.empty());
  std::size_t told = 0;
  for (std::size_t i = 0; i < adds.size(); ++i) {
    subscriber.OnPacket(feed.Data(first + i, first + i), 1);
    if (adds[i].second) ++told;
    ASSERT_EQ(recorder.best.size(), told) << "add " << i + 1;
  }
  const BestPrices& last = recorder.best.back().second;
  EXPECT_EQ(last.bid, test::Level(101, 1, 1));
  EXPECT_EQ(last.ask, test::Level(109, 1, 1));
  EXPECT_EQ(recorder.best[1].second.bid, test::Level(100, 15, 2));
  EXPECT_EQ(recorder.best[4].second.ask, test::Level(110, 12, 2));
}

TEST(SubscriberBest, TheLastToldBestsAreAlwaysTheBooks) {
  const std::vector<std::uint32_t> instruments = {1, 2, 5000};
  FeedScript feed = Listed(instruments);
  std::map<std::uint64_t, feed::OrderAdded> live;
  std::uint64_t state = 99;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  std::uint64_t id = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t roll = next() % 10;
    if (roll < 4 && !live.empty()) {
      const auto it = live.lower_bound(next() % (id + 1));
      const auto victim = it == live.end() ? live.begin() : it;
      const feed::OrderAdded& o = victim->second;
      if (roll < 2 && o.quantity > 1) {
        feed.Add(
            test::Executed(o.order_id, o.instrument_id, o.side, o.price, 1));
        --victim->second.quantity;
      } else {
        feed.Add(test::Deleted(o.order_id, o.instrument_id));
        live.erase(victim);
      }
      continue;
    }
    const std::uint32_t instrument = instruments[next() % instruments.size()];
    const Side side = next() % 2 == 0 ? Side::kBuy : Side::kSell;
    const std::int64_t offset = static_cast<std::int64_t>(next() % 20);
    const std::int64_t price = side == Side::kBuy ? 100 - offset : 101 + offset;
    const feed::OrderAdded added =
        test::Added(++id, instrument, side, price, 1 + next() % 5);
    feed.Add(added);
    live[id] = added;
  }
  Recorder recorder;
  Subscriber subscriber(BestOptions(), recorder);
  for (std::uint64_t s = 1; s < feed.next(); s += 3) {
    subscriber.OnPacket(feed.Data(s, std::min(s + 2, feed.next() - 1)), 1);
    std::map<std::uint32_t, BestPrices> told;
    for (const auto& [instrument, best] : recorder.best)
      told[instrument] = best;
    for (const std::uint32_t instrument : instruments) {
      const codec::InstrumentId key(instrument);
      const BestPrices& last = told[instrument];
      ASSERT_EQ(last.bid, subscriber.book().Best(key, Side::kBuy)) << s;
      ASSERT_EQ(last.ask, subscriber.book().Best(key, Side::kSell)) << s;
    }
  }
  EXPECT_EQ(subscriber.counters().messages_applied, feed.next() - 1);
}

}  // namespace
}  // namespace orderwire::marketdata::subscriber_best
