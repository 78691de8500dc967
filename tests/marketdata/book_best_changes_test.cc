// Book::best_changes() (marketdata/book.h): it moves whenever a Best() of
// any side changed, and stays for messages behind both bests.
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "codec/strong.h"
#include "feed/messages.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using test::Side;

struct BestChangesTops {
  std::optional<LevelInfo> bid[2];
  std::optional<LevelInfo> ask[2];
  friend bool operator==(const BestChangesTops&,
                         const BestChangesTops&) = default;
};

BestChangesTops TopsOf(const Book& book) {
  BestChangesTops tops;
  for (std::uint32_t i = 0; i < 2; ++i) {
    tops.bid[i] = book.Best(codec::InstrumentId(i + 1), Side::kBuy);
    tops.ask[i] = book.Best(codec::InstrumentId(i + 1), Side::kSell);
  }
  return tops;
}

TEST(BookBestChanges, MovesWheneverABestChanged) {
  Book book;
  test::List(book, 1);
  test::List(book, 2);
  std::mt19937_64 random(7);
  std::vector<std::uint64_t> live;
  std::uint64_t next_id = 1;
  std::size_t moved = 0;
  std::size_t stayed = 0;
  for (int step = 0; step < 20000; ++step) {
    const BestChangesTops before = TopsOf(book);
    const std::uint64_t count = book.best_changes();
    const auto instrument = static_cast<std::uint32_t>(1 + random() % 2);
    const std::uint64_t pick = random() % 10;
    BookError error = BookError::kOk;
    if (live.empty() || pick < 4) {
      const Side side = random() % 2 == 0 ? Side::kBuy : Side::kSell;
      const auto price = static_cast<std::int64_t>(
          side == Side::kBuy ? 90 + random() % 12 : 99 + random() % 12);
      error = book.Apply(
          test::Added(next_id, instrument, side, price, 1 + random() % 5));
      if (error == BookError::kOk) live.push_back(next_id);
      ++next_id;
    } else {
      const std::size_t at = random() % live.size();
      const std::optional<BookOrder> order =
          book.FindOrder(codec::OrderId(live[at]));
      ASSERT_TRUE(order.has_value());
      const std::uint32_t on = order->instrument_id.value();
      if (pick < 6 && order->quantity.value() > 1) {
        error = book.Apply(test::Reduced(live[at], on, 1));
      } else if (pick < 8) {
        error = book.Apply(test::Executed(live[at], on, order->side,
                                          order->price.value(),
                                          order->quantity.value()));
        live[at] = live.back();
        live.pop_back();
      } else if (pick == 8) {
        const auto price = static_cast<std::int64_t>(order->side == Side::kBuy
                                                         ? 90 + random() % 12
                                                         : 99 + random() % 12);
        error = book.Apply(test::Replaced(live[at], on, price, 3));
      } else {
        error = book.Apply(test::Deleted(live[at], on));
        live[at] = live.back();
        live.pop_back();
      }
    }
    ASSERT_EQ(error, BookError::kOk);
    if (TopsOf(book) != before) {
      ASSERT_NE(book.best_changes(), count) << "step " << step;
    }
    (book.best_changes() == count ? stayed : moved) += 1;
  }
  EXPECT_GT(moved, 0U);
  EXPECT_GT(stayed, 0U);  // messages behind the bests leave it
  const std::uint64_t count = book.best_changes();
  book.Clear(codec::InstrumentId(1));
  EXPECT_NE(book.best_changes(), count);
}

TEST(BookBestChanges, StaysForMessagesBehindTheBest) {
  Book book;
  test::List(book, 1);
  ASSERT_EQ(book.Apply(test::Added(1, 1, Side::kBuy, 100, 5)), BookError::kOk);
  ASSERT_EQ(book.Apply(test::Added(2, 1, Side::kSell, 110, 5)), BookError::kOk);
  const std::uint64_t count = book.best_changes();
  ASSERT_EQ(book.Apply(test::Added(3, 1, Side::kBuy, 99, 5)), BookError::kOk);
  ASSERT_EQ(book.Apply(test::Added(4, 1, Side::kSell, 111, 5)), BookError::kOk);
  ASSERT_EQ(book.Apply(test::Reduced(3, 1, 1)), BookError::kOk);
  ASSERT_EQ(book.Apply(test::Executed(4, 1, Side::kSell, 111, 1)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(test::Deleted(3, 1)), BookError::kOk);
  EXPECT_EQ(book.best_changes(), count);
  ASSERT_EQ(book.Apply(test::Reduced(1, 1, 1)), BookError::kOk);  // the best
  EXPECT_NE(book.best_changes(), count);
}

}  // namespace
}  // namespace orderwire::marketdata
