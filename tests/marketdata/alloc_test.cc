// The book's allocation claims (marketdata/book.h "Allocation"): once
// Reserve()d for its size, a book whose levels stay open allocates nothing
// per message (add, execute, reduce, replace, delete at existing levels, as
// models or as bytes), nor do its queries. A binary of its own: it links
// orderwire::counting_new, which replaces the global operator new.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"
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

}  // namespace
}  // namespace orderwire::marketdata
