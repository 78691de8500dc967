// The book's allocation claims (marketdata/book.h "Allocation"): once
// Reserve()d for its size, a book whose levels stay open allocates nothing
// per message (add, execute, reduce, replace, delete at existing levels, as
// models or as bytes), nor do its queries. And the subscriber's
// (marketdata/subscriber.h "Costs"): after construction, in-order packets,
// gaps, held packets, retransmit requests, their retries and replies
// allocate nothing. A binary of its own: it links orderwire::counting_new,
// which replaces the global operator new.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "tests/marketdata/book_test_support.h"
#include "tests/marketdata/subscriber_test_support.h"
#include "tests/support/counting_new.h"

namespace orderwire::marketdata {
namespace {

using test::Side;
using test_support::StartCountingAllocations;
using test_support::StopCountingAllocations;

TEST(BookAlloc, MessagesAtOpenLevelsAndQueriesAllocateNothing) {
  constexpr std::uint32_t kInstrumentId = 1;
  Book book;
  book.Reserve(1024, 64);
  test::List(book, kInstrumentId);
  // Anchors: one order per level, never touched, so no level closes.
  std::uint64_t next_id = 1;
  for (std::int64_t p = 0; p < 10; ++p) {
    ASSERT_EQ(book.Apply(test::Added(next_id++, kInstrumentId, Side::kBuy,
                                     100 + p, 1)),
              BookError::kOk);
    ASSERT_EQ(book.Apply(test::Added(next_id++, kInstrumentId, Side::kSell,
                                     200 + p, 1)),
              BookError::kOk);
  }
  const std::vector<std::byte> encoded_add =
      test::Encode(test::Added(999999, kInstrumentId, Side::kSell, 205, 7));
  const std::vector<std::byte> encoded_delete =
      test::Encode(test::Deleted(999999, kInstrumentId));
  std::array<LevelInfo, 4> depth{};
  std::size_t errors = 0;
  std::uint64_t sum = 0;

  StartCountingAllocations();
  for (int round = 0; round < 20000; ++round) {
    const std::uint64_t id = next_id++;
    const std::int64_t price = 100 + round % 10;
    errors += book.Apply(test::Added(id, kInstrumentId, Side::kBuy, price,
                                     50)) != BookError::kOk;
    errors += book.Apply(test::Executed(id, kInstrumentId, Side::kBuy, price,
                                        10)) != BookError::kOk;
    errors += book.Apply(test::Reduced(id, kInstrumentId, 5)) != BookError::kOk;
    errors +=
        book.Apply(test::Replaced(id, kInstrumentId, 100 + (round + 3) % 10,
                                  20)) != BookError::kOk;
    errors += book.ApplyMessage(encoded_add) != BookError::kOk;
    sum += book.FindOrder(codec::OrderId(id))->quantity.value();
    sum += book.Depth(codec::InstrumentId(kInstrumentId), Side::kSell, depth);
    book.ForEachOrder([&](const BookOrder& o) { sum += o.quantity.value(); });
    errors += book.ApplyMessage(encoded_delete) != BookError::kOk;
    errors += book.Apply(test::Deleted(id, kInstrumentId)) != BookError::kOk;
  }
  const std::size_t allocations = StopCountingAllocations();

  EXPECT_EQ(errors, 0U);
  EXPECT_GT(sum, 0U);
  EXPECT_EQ(allocations, 0U);
  EXPECT_EQ(book.order_count(), 20U);
}

TEST(BookAlloc, CollidingIdsAndLevelsWithinTheHighWaterAllocateNothing) {
  // Ids sharing their low bits with a resting order go to the order
  // index's overflow map, reserved for a quarter of the orders; levels
  // opened and closed (near the best and deep) reuse the side's vector
  // once it has held that many.
  constexpr std::uint32_t kInstrumentId = 70000;  // above the direct array
  Book book;
  book.Reserve(1024, 64);
  test::List(book, kInstrumentId);
  for (std::uint64_t id = 1; id <= 8; ++id) {
    ASSERT_EQ(book.Apply(test::Added(id, kInstrumentId, Side::kBuy,
                                     100 + static_cast<std::int64_t>(id), 1)),
              BookError::kOk);
  }
  std::size_t errors = 0;
  const auto round = [&](std::uint64_t n) {
    const std::uint64_t id = (n << 40) | (n % 8 + 1);  // collides with n%8+1
    const std::int64_t price = n % 2 == 0 ? 50 : 200;  // deep bid, new best
    errors += book.Apply(test::Added(id, kInstrumentId, Side::kBuy, price,
                                     5)) != BookError::kOk;
    errors += book.Apply(test::Added(id + 1024, kInstrumentId, Side::kSell,
                                     300 + price, 5)) != BookError::kOk;
    errors += book.Apply(test::Deleted(id, kInstrumentId)) != BookError::kOk;
    errors +=
        book.Apply(test::Deleted(id + 1024, kInstrumentId)) != BookError::kOk;
  };
  for (std::uint64_t n = 1; n <= 4; ++n) round(n);  // the sides' high water

  StartCountingAllocations();
  for (std::uint64_t n = 5; n < 20000; ++n) round(n);
  const std::size_t allocations = StopCountingAllocations();

  EXPECT_EQ(errors, 0U);
  EXPECT_EQ(allocations, 0U);
  EXPECT_EQ(book.order_count(), 8U);
}

// Remembers the last request in plain fields: a listener that allocates
// would hide the subscriber's own allocations.
class LastRequest : public SubscriberListener {
 public:
  void SendRequest(std::span<const std::byte> request) override {
    const auto parsed = feed::RequestView::Parse(request);
    ok = ok && parsed.ok();
    if (!parsed.ok()) return;
    ++count;
    sequence = parsed->sequence();
    token = parsed->token();
  }
  void OnMessage(std::uint64_t, feed::MessageBlock) override { ++messages; }
  void OnBestPrices(codec::InstrumentId, const BestPrices&) override { ++best; }

  bool ok = true;
  std::size_t count = 0;
  std::uint64_t sequence = 0;
  std::uint16_t token = 0;
  std::size_t messages = 0;
  std::size_t best = 0;
};

// Messages 1 to 3 list instrument 1; anchors rest at 10 bid and 10 ask
// levels; then rounds that add, execute, reduce, replace and delete at
// those levels (no level opens or closes).
subscriber_test::FeedScript SteadyFeed(int rounds) {
  constexpr std::uint32_t kId = 1;
  subscriber_test::FeedScript feed(99);
  feed.Add(feed::SystemEvent{test::kTs, feed::SystemEventCode::kStartOfFeed});
  feed.Add(test::Directory(kId));
  feed.Add(test::Status(kId, feed::TradingState::kTrading));
  std::uint64_t next_id = 1;
  for (std::int64_t p = 0; p < 10; ++p) {
    feed.Add(test::Added(next_id++, kId, Side::kBuy, 100 + p, 1));
    feed.Add(test::Added(next_id++, kId, Side::kSell, 200 + p, 1));
  }
  for (int round = 0; round < rounds; ++round) {
    const std::uint64_t id = next_id++;
    const std::int64_t price = 100 + round % 10;
    feed.Add(test::Added(id, kId, Side::kBuy, price, 50));
    feed.Add(test::Executed(id, kId, Side::kBuy, price, 10));
    feed.Add(test::Reduced(id, kId, 5));
    feed.Add(test::Replaced(id, kId, 100 + (round + 3) % 10, 20));
    feed.Add(test::Deleted(id, kId));
  }
  return feed;
}

TEST(SubscriberAlloc, InOrderGapsRetriesAndRepliesAllocateNothing) {
  const subscriber_test::FeedScript feed = SteadyFeed(4000);
  std::vector<std::vector<std::byte>> packets;
  for (std::uint64_t s = 24; s < feed.next(); s += 5) {
    packets.push_back(feed.Data(s, std::min(s + 4, feed.next() - 1)));
  }
  LastRequest listener;
  SubscriberOptions options;
  options.first_sequence = 1;
  options.reserve_orders = 1024;
  options.reserve_levels = 64;
  Subscriber sub(options, listener);
  std::int64_t now = 1'000'000'000;
  sub.OnPacket(feed.Data(1, 23), now);
  ASSERT_EQ(sub.next_sequence(), 24U);
  std::array<std::byte, feed::kMaxPacketBytes> reply{};
  std::size_t in_order = 0;

  StartCountingAllocations();
  for (std::size_t i = 0; i < packets.size(); ++i) {
    now += 1'000'000;
    sub.Poll(now);
    if (i < packets.size() / 2 || i % 8 != 3 || i + 2 >= packets.size()) {
      sub.OnPacket(packets[i], now);
      in_order += i < packets.size() / 2 ? 1U : 0U;
      continue;
    }
    // Lost: the next two arrive (held), asked, one retry, then the reply.
    sub.OnPacket(packets[i + 1], now);
    sub.OnPacket(packets[i + 2], now);
    now += 50'000'000;
    sub.Poll(now);
    std::memcpy(reply.data(), packets[i].data(), packets[i].size());
    reply[22] = static_cast<std::byte>(listener.token & 0xFF);
    reply[23] = static_cast<std::byte>(listener.token >> 8);
    sub.OnPacket(std::span(reply).first(packets[i].size()), now);
    i += 2;
  }
  const std::size_t allocations = StopCountingAllocations();

  EXPECT_EQ(allocations, 0U);
  EXPECT_TRUE(listener.ok);
  EXPECT_EQ(sub.next_sequence(), feed.next());
  EXPECT_GT(in_order, 1000U);
  EXPECT_GT(sub.counters().retransmit_requests, 200U);
  EXPECT_EQ(listener.count, sub.counters().retransmit_requests);
  EXPECT_EQ(sub.counters().retransmit_replies,
            sub.counters().retransmit_requests / 2);
  EXPECT_EQ(sub.counters().snapshot_requests, 0U);
  EXPECT_EQ(listener.messages, feed.next() - 1);
  EXPECT_GT(listener.best, 100U);
}

}  // namespace
}  // namespace orderwire::marketdata
