// marketdata::Book refuses every message the book contradicts
// (docs/MARKETDATA.md "A subscriber" step 6), names the contradiction, and
// changes nothing: each case is applied both as a model and as the bytes a
// publisher sends, to the same book, and the book's full dump is compared
// before and after.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using test::Added;
using test::Deleted;
using test::Directory;
using test::Executed;
using test::Reduced;
using test::Replaced;
using test::Side;
using test::Status;
using test::TradingState;

using AnyMessage =
    std::variant<feed::InstrumentDirectory, feed::TradingStatus,
                 feed::OrderAdded, feed::OrderExecuted, feed::OrderReduced,
                 feed::OrderDeleted, feed::OrderReplaced>;

struct Refusal {
  const char* what;
  AnyMessage message;
  BookError expected;
};

// Instruments 1 and 2 Trading, 3 Unlisted (known, empty), 7 never listed.
// Orders: 10 and 11 on 1 Buy 100 (50, 20), 12 on 1 Sell 105 (30), 20 on 2
// Sell 200 (5).
Book ContradictionFixture() {
  Book book;
  test::List(book, 1);
  test::List(book, 2);
  test::List(book, 3);
  EXPECT_EQ(book.Apply(Status(3, TradingState::kUnlisted)), BookError::kOk);
  EXPECT_EQ(book.Apply(Added(10, 1, Side::kBuy, 100, 50)), BookError::kOk);
  EXPECT_EQ(book.Apply(Added(11, 1, Side::kBuy, 100, 20)), BookError::kOk);
  EXPECT_EQ(book.Apply(Added(12, 1, Side::kSell, 105, 30)), BookError::kOk);
  EXPECT_EQ(book.Apply(Added(20, 2, Side::kSell, 200, 5)), BookError::kOk);
  return book;
}

std::vector<Refusal> Refusals() {
  const auto bad_side = static_cast<Side>(3);
  return {
      // An instrument not listed: never, or Unlisted.
      {"OrderAdded on an instrument never listed",
       Added(30, 7, Side::kBuy, 100, 1), BookError::kInstrumentNotListed},
      {"OrderAdded on an Unlisted instrument", Added(30, 3, Side::kBuy, 100, 1),
       BookError::kInstrumentNotListed},
      {"OrderExecuted on an instrument never listed",
       Executed(10, 7, Side::kBuy, 100, 1), BookError::kInstrumentNotListed},
      {"OrderReduced on an instrument never listed", Reduced(10, 7, 1),
       BookError::kInstrumentNotListed},
      {"OrderDeleted on an Unlisted instrument", Deleted(10, 3),
       BookError::kInstrumentNotListed},
      {"OrderReplaced on an instrument never listed", Replaced(10, 7, 100, 1),
       BookError::kInstrumentNotListed},
      {"TradingStatus of an instrument never listed",
       Status(7, TradingState::kTrading), BookError::kInstrumentNotListed},
      // Adding a live id.
      {"OrderAdded of a live id", Added(10, 1, Side::kBuy, 99, 1),
       BookError::kOrderIdLive},
      {"OrderAdded of a live id on another instrument",
       Added(20, 1, Side::kSell, 300, 1), BookError::kOrderIdLive},
      // Executing, reducing, replacing or deleting an unknown id.
      {"OrderExecuted of an unknown id", Executed(99, 1, Side::kBuy, 100, 1),
       BookError::kOrderIdUnknown},
      {"OrderReduced of an unknown id", Reduced(99, 1, 1),
       BookError::kOrderIdUnknown},
      {"OrderDeleted of an unknown id", Deleted(99, 1),
       BookError::kOrderIdUnknown},
      {"OrderReplaced of an unknown id", Replaced(99, 1, 100, 1),
       BookError::kOrderIdUnknown},
      // Naming another instrument than the order's.
      {"OrderExecuted on another instrument",
       Executed(10, 2, Side::kBuy, 100, 1), BookError::kInstrumentMismatch},
      {"OrderReduced on another instrument", Reduced(10, 2, 1),
       BookError::kInstrumentMismatch},
      {"OrderDeleted on another instrument", Deleted(10, 2),
       BookError::kInstrumentMismatch},
      {"OrderReplaced on another instrument", Replaced(10, 2, 100, 1),
       BookError::kInstrumentMismatch},
      // An execution that is not the resting order's.
      {"OrderExecuted with the other side",
       Executed(10, 1, Side::kSell, 100, 1), BookError::kSideMismatch},
      {"OrderExecuted with a side the contract lacks",
       Executed(10, 1, bad_side, 100, 1), BookError::kSideMismatch},
      {"OrderExecuted at another price", Executed(10, 1, Side::kBuy, 101, 1),
       BookError::kPriceMismatch},
      // Quantities above the leaves, a reduction to 0, zero quantities.
      {"OrderExecuted above the displayed quantity",
       Executed(10, 1, Side::kBuy, 100, 51), BookError::kAboveDisplayed},
      {"OrderReduced above the displayed quantity", Reduced(10, 1, 51),
       BookError::kAboveDisplayed},
      {"OrderReduced to 0", Reduced(10, 1, 50), BookError::kReducedToZero},
      {"OrderReduced by 0", Reduced(10, 1, 0), BookError::kZeroQuantity},
      {"OrderExecuted of 0", Executed(10, 1, Side::kBuy, 100, 0),
       BookError::kZeroQuantity},
      {"OrderAdded of 0", Added(30, 1, Side::kBuy, 100, 0),
       BookError::kZeroQuantity},
      {"OrderReplaced to 0", Replaced(10, 1, 101, 0), BookError::kZeroQuantity},
      // Values the contract does not define.
      {"OrderAdded with side 3", Added(30, 1, bad_side, 100, 1),
       BookError::kBadValue},
      {"OrderAdded with side 0", Added(30, 1, static_cast<Side>(0), 100, 1),
       BookError::kBadValue},
      {"TradingStatus with state 0", Status(1, static_cast<TradingState>(0)),
       BookError::kBadValue},
      {"TradingStatus with state 4", Status(1, static_cast<TradingState>(4)),
       BookError::kBadValue},
      // Unlisted means the book is empty.
      {"TradingStatus Unlisted while orders rest",
       Status(1, TradingState::kUnlisted), BookError::kUnlistedNotEmpty},
  };
}

TEST(BookContradictions, EachIsRefusedNamedAndChangesNothing) {
  Book book = ContradictionFixture();
  const std::string before = test::Dump(book);
  ASSERT_EQ(book.order_count(), 4U) << before;
  for (const Refusal& refusal : Refusals()) {
    SCOPED_TRACE(refusal.what);
    EXPECT_TRUE(IsContradiction(refusal.expected));
    const BookError typed =
        std::visit([&](const auto& message) { return book.Apply(message); },
                   refusal.message);
    EXPECT_EQ(typed, refusal.expected);
    EXPECT_EQ(test::Dump(book), before);
    const std::vector<std::byte> bytes =
        std::visit([](const auto& message) { return test::Encode(message); },
                   refusal.message);
    EXPECT_EQ(book.ApplyMessage(bytes), refusal.expected);
    EXPECT_EQ(test::Dump(book), before);
  }
}

TEST(BookContradictions, TheBookStillAppliesValidMessagesAfterRefusals) {
  Book book = ContradictionFixture();
  for (const Refusal& refusal : Refusals()) {
    EXPECT_EQ(std::visit([&](const auto& m) { return book.Apply(m); },
                         refusal.message),
              refusal.expected)
        << refusal.what;
  }
  // Exactly the messages just refused, made valid, now apply.
  EXPECT_EQ(book.Apply(Executed(10, 1, Side::kBuy, 100, 50)), BookError::kOk);
  EXPECT_EQ(book.Apply(Reduced(11, 1, 19)), BookError::kOk);
  EXPECT_EQ(book.Apply(Deleted(12, 1)), BookError::kOk);
  EXPECT_EQ(book.Apply(Replaced(20, 2, 201, 6)), BookError::kOk);
  EXPECT_THAT(test::Orders(book),
              ::testing::ElementsAre(test::Order(11, 1, Side::kBuy, 100, 1),
                                     test::Order(20, 2, Side::kSell, 201, 6)));
}

TEST(BookContradictions, UnlistedIsAcceptedOnlyOnceTheBookIsEmpty) {
  Book book = ContradictionFixture();
  EXPECT_EQ(book.Apply(Status(2, TradingState::kUnlisted)),
            BookError::kUnlistedNotEmpty);
  EXPECT_EQ(book.FindInstrument(codec::InstrumentId(2))->state,
            TradingState::kTrading);
  ASSERT_EQ(book.Apply(Deleted(20, 2)), BookError::kOk);
  ASSERT_EQ(book.Apply(Status(2, TradingState::kUnlisted)), BookError::kOk);
  EXPECT_FALSE(book.FindInstrument(codec::InstrumentId(2))->listed());
  EXPECT_EQ(book.Apply(Added(21, 2, Side::kBuy, 1, 1)),
            BookError::kInstrumentNotListed);
  // Back into the range (MARKETDATA.md "From the journal to the feed" step
  // 2): its InstrumentDirectory, then TradingStatus Trading.
  ASSERT_EQ(book.Apply(Directory(2, 5, 50, 1, 10)), BookError::kOk);
  EXPECT_EQ(book.FindInstrument(codec::InstrumentId(2))->state,
            TradingState::kUnlisted);
  ASSERT_EQ(book.Apply(Status(2, TradingState::kTrading)), BookError::kOk);
  EXPECT_EQ(book.Apply(Added(21, 2, Side::kBuy, 6, 1)), BookError::kOk);
}

}  // namespace
}  // namespace orderwire::marketdata
