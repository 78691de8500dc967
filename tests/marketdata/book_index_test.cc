// marketdata::Book's structures (book.h "The structures") on feeds unlike
// the engine's: order ids sharing their low bits or near 2^64, more orders
// than Reserve()d, instrument ids past the direct array, extreme prices.
// Whatever the ids and prices, the book must answer as for any other.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "codec/strong.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using test::Added;
using test::Deleted;
using test::Executed;
using test::Level;
using test::Levels;
using test::Order;
using test::Side;
using ::testing::ElementsAre;

constexpr std::uint32_t kIndexInstrument = 3;

TEST(BookIndex, IdsSharingTheirLowBitsAreDistinctOrders) {
  Book book;
  book.Reserve(16, 16);  // 64 cells: ids equal modulo 64 share a cell
  test::List(book, kIndexInstrument);
  const std::vector<std::uint64_t> ids = {
      5, 5 + 64, 5 + (1ULL << 40), std::numeric_limits<std::uint64_t>::max(),
      (std::numeric_limits<std::uint64_t>::max() & ~63ULL) | 5};
  std::int64_t price = 10;
  for (const std::uint64_t id : ids) {
    ASSERT_EQ(book.Apply(Added(id, kIndexInstrument, Side::kBuy, price++, 2)),
              BookError::kOk);
  }
  for (const std::uint64_t id : ids) {
    EXPECT_EQ(book.Apply(Added(id, kIndexInstrument, Side::kSell, 1, 1)),
              BookError::kOrderIdLive);
  }
  EXPECT_EQ(book.Apply(Deleted(5 + 128, kIndexInstrument)),
            BookError::kOrderIdUnknown);
  // The cell's holder leaves; the others (in the overflow) stay found.
  ASSERT_EQ(book.Apply(Deleted(5, kIndexInstrument)), BookError::kOk);
  EXPECT_FALSE(book.FindOrder(codec::OrderId(5)).has_value());
  EXPECT_EQ(book.FindOrder(codec::OrderId(5 + 64)),
            Order(5 + 64, kIndexInstrument, Side::kBuy, 11, 2));
  ASSERT_EQ(book.Apply(Executed(ids[3], kIndexInstrument, Side::kBuy, 13, 2)),
            BookError::kOk);
  EXPECT_FALSE(book.FindOrder(codec::OrderId(ids[3])).has_value());
  // A new id of the same low bits takes the free cell.
  ASSERT_EQ(book.Apply(Added(5 + 192, kIndexInstrument, Side::kBuy, 20, 1)),
            BookError::kOk);
  for (const std::uint64_t id :
       {ids[1], ids[2], ids[4], std::uint64_t{5 + 192}}) {
    EXPECT_TRUE(book.FindOrder(codec::OrderId(id)).has_value()) << id;
    EXPECT_EQ(book.Apply(Deleted(id, kIndexInstrument)), BookError::kOk) << id;
  }
  EXPECT_EQ(book.order_count(), 0U);
  EXPECT_EQ(book.level_count(codec::InstrumentId(kIndexInstrument), Side::kBuy),
            0U);
}

TEST(BookIndex, TheIndexGrowsPastReserveAndClearForgetsEveryId) {
  Book book;
  test::List(book, kIndexInstrument);
  test::List(book, kIndexInstrument + 1);
  constexpr std::uint64_t kOrders = 5000;
  const auto id_of = [](std::uint64_t i) {
    return i % 3 == 0 ? i << 33 : i * 7919;  // some share low bits
  };
  for (std::uint64_t i = 1; i <= kOrders; ++i) {
    ASSERT_EQ(book.Apply(Added(id_of(i), kIndexInstrument + i % 2, Side::kSell,
                               100 + static_cast<std::int64_t>(i % 50), i)),
              BookError::kOk)
        << i;
  }
  EXPECT_EQ(book.order_count(), kOrders);
  for (std::uint64_t i = 1; i <= kOrders; ++i) {
    const std::optional<BookOrder> found =
        book.FindOrder(codec::OrderId(id_of(i)));
    ASSERT_TRUE(found.has_value()) << i;
    EXPECT_EQ(found->quantity, codec::Quantity(i));
  }
  book.Clear(codec::InstrumentId(kIndexInstrument));  // the even i
  EXPECT_EQ(book.order_count(), kOrders / 2);
  for (std::uint64_t i = 1; i <= kOrders; ++i) {
    EXPECT_EQ(book.FindOrder(codec::OrderId(id_of(i))).has_value(), i % 2 == 1)
        << i;
  }
  book.Clear();
  EXPECT_EQ(book.order_count(), 0U);
  test::List(book, kIndexInstrument);
  for (std::uint64_t i = 1; i <= kOrders; i += 7) {
    EXPECT_FALSE(book.FindOrder(codec::OrderId(id_of(i))).has_value()) << i;
    EXPECT_EQ(book.Apply(Added(id_of(i), kIndexInstrument, Side::kBuy, 5, 1)),
              BookError::kOk)
        << i;
  }
}

TEST(BookIndex, InstrumentIdsPastTheDirectArrayHaveTheirOwnBooks) {
  Book book;
  const std::vector<std::uint32_t> instruments = {
      std::numeric_limits<std::uint32_t>::max(), 65536, 0, 65535, 1};
  std::uint64_t id = 0;
  for (const std::uint32_t instrument : instruments) {
    test::List(book, instrument);
    ++id;
    ASSERT_EQ(book.Apply(Added(id, instrument, Side::kBuy, 7, id)),
              BookError::kOk);
  }
  std::vector<std::uint32_t> listed;
  book.ForEachInstrument([&](const InstrumentInfo& info) {
    listed.push_back(info.instrument_id.value());
  });
  EXPECT_THAT(listed, ElementsAre(0, 1, 65535, 65536,
                                  std::numeric_limits<std::uint32_t>::max()));
  id = 0;
  for (const std::uint32_t instrument : instruments) {
    ++id;
    EXPECT_EQ(book.Best(codec::InstrumentId(instrument), Side::kBuy),
              Level(7, id, 1));
    EXPECT_EQ(book.order_count(codec::InstrumentId(instrument)), 1U);
  }
  EXPECT_FALSE(book.FindInstrument(codec::InstrumentId(65537)).has_value());
  EXPECT_EQ(book.Apply(Added(99, 65537, Side::kBuy, 7, 1)),
            BookError::kInstrumentNotListed);
}

TEST(BookIndex, LevelsStayBestFirstForAnyPricesOpenedAndClosedAnywhere) {
  // Against a std::map per side; extreme prices included (the asks' key is
  // the price's complement, defined for every int64).
  Book book;
  test::List(book, kIndexInstrument);
  const std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::map<std::int64_t, std::uint64_t> reference[2];  // price -> quantity
  std::map<std::uint64_t, std::pair<int, std::int64_t>> live;
  std::uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (std::uint64_t step = 1; step <= 20000; ++step) {
    if (!live.empty() && next() % 5 < 2) {
      const auto it = live.lower_bound(next() % step);
      const auto victim = it == live.end() ? live.begin() : it;
      const auto [side, price] = victim->second;
      ASSERT_EQ(book.Apply(Deleted(victim->first, kIndexInstrument)),
                BookError::kOk);
      if (--reference[side][price] == 0) reference[side].erase(price);
      live.erase(victim);
      continue;
    }
    const int side = static_cast<int>(next() % 2);
    const std::uint64_t r = next() % 100;
    const std::int64_t price =
        r == 0   ? kMin
        : r == 1 ? kMax
                 : static_cast<std::int64_t>(next() % 400) - 200;
    ASSERT_EQ(book.Apply(Added(step, kIndexInstrument,
                               side == 0 ? Side::kBuy : Side::kSell, price, 1)),
              BookError::kOk);
    ++reference[side][price];
    live[step] = {side, price};
  }
  std::vector<LevelInfo> bids;
  for (auto it = reference[0].rbegin(); it != reference[0].rend(); ++it) {
    bids.push_back(
        Level(it->first, it->second, static_cast<std::uint32_t>(it->second)));
  }
  std::vector<LevelInfo> asks;
  for (const auto& [price, quantity] : reference[1]) {
    asks.push_back(
        Level(price, quantity, static_cast<std::uint32_t>(quantity)));
  }
  EXPECT_EQ(Levels(book, kIndexInstrument, Side::kBuy), bids);
  EXPECT_EQ(Levels(book, kIndexInstrument, Side::kSell), asks);
  const codec::InstrumentId instrument(kIndexInstrument);
  for (const int side : {0, 1}) {
    const Side s = side == 0 ? Side::kBuy : Side::kSell;
    for (const auto& [price, quantity] : reference[side]) {
      std::uint64_t total = 0;
      book.ForEachOrderAt(
          instrument, s, codec::Price(price),
          [&](const BookOrder& o) { total += o.quantity.value(); });
      EXPECT_EQ(total, quantity) << price;
    }
  }
}

}  // namespace
}  // namespace orderwire::marketdata
