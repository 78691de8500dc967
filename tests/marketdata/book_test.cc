// marketdata::Book: the effect of each message kind on a book, as
// docs/MARKETDATA.md "Meaning for a book" says, the queries, and Clear.
#include "marketdata/book.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

using test::Added;
using test::Deleted;
using test::Directory;
using test::Executed;
using test::Level;
using test::Levels;
using test::Order;
using test::Orders;
using test::Queue;
using test::Reduced;
using test::Replaced;
using test::Side;
using test::Status;
using test::TradingState;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr std::uint32_t kInstrument = 42;
constexpr codec::InstrumentId kId42(kInstrument);

TEST(BookKinds, InstrumentDirectoryListsAnInstrumentWithItsBands) {
  Book book;
  EXPECT_FALSE(book.FindInstrument(kId42).has_value());
  ASSERT_EQ(book.Apply(Directory(kInstrument, 100, 2000, 5, 500)),
            BookError::kOk);
  const std::optional<InstrumentInfo> info = book.FindInstrument(kId42);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->instrument_id, kId42);
  EXPECT_EQ(info->min_price, codec::Price(100));
  EXPECT_EQ(info->max_price, codec::Price(2000));
  EXPECT_EQ(info->min_quantity, codec::Quantity(5));
  EXPECT_EQ(info->max_quantity, codec::Quantity(500));
  EXPECT_FALSE(info->state.has_value()) << "no TradingStatus yet";
  EXPECT_TRUE(info->listed());
}

TEST(BookKinds, InstrumentDirectoryAgainChangesTheBandsOnly) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kBuy, 150, 10)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Directory(kInstrument, 200, 300, 1, 9)), BookError::kOk);
  const std::optional<InstrumentInfo> info = book.FindInstrument(kId42);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->min_price, codec::Price(200));
  EXPECT_EQ(info->max_price, codec::Price(300));
  EXPECT_EQ(info->max_quantity, codec::Quantity(9));
  EXPECT_EQ(info->state, TradingState::kTrading);
  // The order outside the new band rests on (the engine keeps it).
  EXPECT_THAT(Orders(book), ElementsAre(Order(1, 42, Side::kBuy, 150, 10)));
}

TEST(BookKinds, TradingStatusSetsTheState) {
  Book book;
  ASSERT_EQ(book.Apply(Directory(kInstrument)), BookError::kOk);
  for (const TradingState state :
       {TradingState::kTrading, TradingState::kHalted, TradingState::kTrading,
        TradingState::kUnlisted, TradingState::kTrading}) {
    ASSERT_EQ(book.Apply(Status(kInstrument, state)), BookError::kOk);
    EXPECT_EQ(book.FindInstrument(kId42)->state, state);
    EXPECT_EQ(book.FindInstrument(kId42)->listed(),
              state != TradingState::kUnlisted);
  }
}

TEST(BookKinds, AHaltedBookStillChanges) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Status(kInstrument, TradingState::kHalted)),
            BookError::kOk);
  EXPECT_EQ(book.Apply(Added(1, kInstrument, Side::kSell, 10, 5)),
            BookError::kOk);
  EXPECT_EQ(book.Apply(Deleted(1, kInstrument)), BookError::kOk);
  EXPECT_EQ(book.order_count(), 0U);
}

TEST(BookKinds, OrderAddedGoesToTheBackOfItsLevel) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kBuy, 100, 10)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, kInstrument, Side::kBuy, 100, 20)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(3, kInstrument, Side::kBuy, 101, 5)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(4, kInstrument, Side::kBuy, 100, 7)),
            BookError::kOk);
  EXPECT_THAT(Queue(book, kInstrument, Side::kBuy, 100), ElementsAre(1, 2, 4));
  EXPECT_THAT(Levels(book, kInstrument, Side::kBuy),
              ElementsAre(Level(101, 5, 1), Level(100, 37, 3)));
  EXPECT_THAT(Levels(book, kInstrument, Side::kSell), IsEmpty());
  EXPECT_EQ(book.order_count(), 4U);
  EXPECT_EQ(book.order_count(kId42), 4U);
  EXPECT_EQ(book.FindOrder(codec::OrderId(2)),
            Order(2, kInstrument, Side::kBuy, 100, 20));
}

TEST(BookKinds, OrderExecutedLowersTheQuantityInPlace) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kSell, 100, 10)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, kInstrument, Side::kSell, 100, 20)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Executed(1, kInstrument, Side::kSell, 100, 4)),
            BookError::kOk);
  EXPECT_EQ(book.FindOrder(codec::OrderId(1)),
            Order(1, kInstrument, Side::kSell, 100, 6));
  EXPECT_THAT(Queue(book, kInstrument, Side::kSell, 100), ElementsAre(1, 2));
  EXPECT_THAT(Levels(book, kInstrument, Side::kSell),
              ElementsAre(Level(100, 26, 2)));
}

TEST(BookKinds, ExecutionToZeroRemovesTheOrderAndClosesAnEmptyLevel) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kSell, 100, 10)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, kInstrument, Side::kSell, 101, 20)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Executed(1, kInstrument, Side::kSell, 100, 6)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Executed(1, kInstrument, Side::kSell, 100, 4)),
            BookError::kOk);
  EXPECT_FALSE(book.FindOrder(codec::OrderId(1)).has_value());
  EXPECT_THAT(Levels(book, kInstrument, Side::kSell),
              ElementsAre(Level(101, 20, 1)));
  EXPECT_EQ(book.order_count(), 1U);
  // No OrderDeleted follows: one now is a contradiction.
  EXPECT_EQ(book.Apply(Deleted(1, kInstrument)), BookError::kOrderIdUnknown);
  // The id may come back (a crossing replace rests again under its id).
  EXPECT_EQ(book.Apply(Added(1, kInstrument, Side::kSell, 102, 3)),
            BookError::kOk);
  EXPECT_THAT(Queue(book, kInstrument, Side::kSell, 102), ElementsAre(1));
}

TEST(BookKinds, OrderReducedKeepsItsPlace) {
  Book book;
  test::List(book, kInstrument);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_EQ(book.Apply(Added(id, kInstrument, Side::kBuy, 100, 10 * id)),
              BookError::kOk);
  }
  ASSERT_EQ(book.Apply(Reduced(1, kInstrument, 9)), BookError::kOk);
  EXPECT_EQ(book.FindOrder(codec::OrderId(1))->quantity, codec::Quantity(1));
  EXPECT_THAT(Queue(book, kInstrument, Side::kBuy, 100), ElementsAre(1, 2, 3));
  EXPECT_THAT(Levels(book, kInstrument, Side::kBuy),
              ElementsAre(Level(100, 51, 3)));
}

TEST(BookKinds, OrderReplacedAtTheSamePriceLosesItsPlace) {
  // Against OrderReducedKeepsItsPlace: the same level, the same order, but a
  // replace always goes to the back.
  Book book;
  test::List(book, kInstrument);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_EQ(book.Apply(Added(id, kInstrument, Side::kBuy, 100, 10 * id)),
              BookError::kOk);
  }
  ASSERT_EQ(book.Apply(Replaced(1, kInstrument, 100, 15)), BookError::kOk);
  EXPECT_THAT(Queue(book, kInstrument, Side::kBuy, 100), ElementsAre(2, 3, 1));
  EXPECT_EQ(book.FindOrder(codec::OrderId(1)),
            Order(1, kInstrument, Side::kBuy, 100, 15));
  EXPECT_THAT(Levels(book, kInstrument, Side::kBuy),
              ElementsAre(Level(100, 65, 3)));
}

TEST(BookKinds, OrderReplacedMovesToTheBackOfTheNewLevelSameIdAndSide) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kSell, 100, 10)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, kInstrument, Side::kSell, 105, 20)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(3, kInstrument, Side::kSell, 100, 30)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Replaced(1, kInstrument, 105, 40)), BookError::kOk);
  EXPECT_THAT(Queue(book, kInstrument, Side::kSell, 105), ElementsAre(2, 1));
  EXPECT_THAT(Queue(book, kInstrument, Side::kSell, 100), ElementsAre(3));
  EXPECT_THAT(Levels(book, kInstrument, Side::kSell),
              ElementsAre(Level(100, 30, 1), Level(105, 60, 2)));
  // Moving the last order of a level closes it and opens the new one.
  ASSERT_EQ(book.Apply(Replaced(3, kInstrument, 99, 1)), BookError::kOk);
  EXPECT_THAT(Levels(book, kInstrument, Side::kSell),
              ElementsAre(Level(99, 1, 1), Level(105, 60, 2)));
  EXPECT_EQ(book.FindOrder(codec::OrderId(3)),
            Order(3, kInstrument, Side::kSell, 99, 1));
}

TEST(BookKinds, OrderDeletedRemovesIt) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kBuy, 100, 10)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, kInstrument, Side::kBuy, 100, 20)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Added(3, kInstrument, Side::kBuy, 100, 30)),
            BookError::kOk);
  ASSERT_EQ(book.Apply(Deleted(2, kInstrument)), BookError::kOk);
  EXPECT_THAT(Queue(book, kInstrument, Side::kBuy, 100), ElementsAre(1, 3));
  ASSERT_EQ(book.Apply(Deleted(1, kInstrument)), BookError::kOk);
  ASSERT_EQ(book.Apply(Deleted(3, kInstrument)), BookError::kOk);
  EXPECT_THAT(Levels(book, kInstrument, Side::kBuy), IsEmpty());
  EXPECT_FALSE(book.Best(kId42, Side::kBuy).has_value());
  EXPECT_EQ(book.order_count(), 0U);
}

TEST(BookKinds, SystemEventAndSnapshotMarkersChangeNothing) {
  Book book;
  test::List(book, kInstrument);
  ASSERT_EQ(book.Apply(Added(1, kInstrument, Side::kBuy, 100, 10)),
            BookError::kOk);
  const std::string before = test::Dump(book);
  EXPECT_EQ(book.ApplyMessage(test::Encode(feed::SystemEvent{
                test::kTs, feed::SystemEventCode::kStartOfFeed})),
            BookError::kOk);
  EXPECT_EQ(
      book.ApplyMessage(test::Encode(feed::SnapshotStart{test::kTs, 6, 42, 5})),
      BookError::kOk);
  EXPECT_EQ(book.ApplyMessage(test::Encode(feed::SnapshotEnd{test::kTs, 6})),
            BookError::kOk);
  EXPECT_EQ(test::Dump(book), before);
}

TEST(BookQueries, LevelsAreBestFirstOnEachSide) {
  Book book;
  test::List(book, kInstrument);
  const std::int64_t bids[] = {100, 98, 103, 99};
  const std::int64_t asks[] = {110, 107, 120};
  std::uint64_t id = 0;
  for (const std::int64_t p : bids) {
    ASSERT_EQ(book.Apply(Added(++id, kInstrument, Side::kBuy, p, 1)),
              BookError::kOk);
  }
  for (const std::int64_t p : asks) {
    ASSERT_EQ(book.Apply(Added(++id, kInstrument, Side::kSell, p, 2)),
              BookError::kOk);
  }
  EXPECT_THAT(Levels(book, kInstrument, Side::kBuy),
              ElementsAre(Level(103, 1, 1), Level(100, 1, 1), Level(99, 1, 1),
                          Level(98, 1, 1)));
  EXPECT_THAT(
      Levels(book, kInstrument, Side::kSell),
      ElementsAre(Level(107, 2, 1), Level(110, 2, 1), Level(120, 2, 1)));
  EXPECT_EQ(book.Best(kId42, Side::kBuy), Level(103, 1, 1));
  EXPECT_EQ(book.Best(kId42, Side::kSell), Level(107, 2, 1));
  EXPECT_EQ(book.level_count(kId42, Side::kBuy), 4U);
  EXPECT_EQ(book.level_count(kId42, Side::kSell), 3U);
  std::array<LevelInfo, 2> top{};
  ASSERT_EQ(book.Depth(kId42, Side::kBuy, top), 2U);
  EXPECT_EQ(top[0], Level(103, 1, 1));
  EXPECT_EQ(top[1], Level(100, 1, 1));
  std::array<LevelInfo, 5> all{};
  ASSERT_EQ(book.Depth(kId42, Side::kSell, all), 3U);
  EXPECT_EQ(all[2], Level(120, 2, 1));
  EXPECT_EQ(book.Depth(codec::InstrumentId(7), Side::kSell, all), 0U);
}

TEST(BookQueries, ForEachOrderIsTheEnginesCanonicalOrder) {
  // Instrument ascending (listed out of order), bids then asks, best price
  // first, oldest first.
  Book book;
  test::List(book, 9);
  test::List(book, 3);
  test::List(book, 5);
  ASSERT_EQ(book.Apply(Added(1, 9, Side::kSell, 50, 1)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, 9, Side::kBuy, 40, 2)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(3, 3, Side::kSell, 60, 3)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(4, 3, Side::kSell, 55, 4)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(5, 3, Side::kBuy, 30, 5)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(6, 3, Side::kBuy, 31, 6)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(7, 3, Side::kBuy, 30, 7)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(8, 3, Side::kSell, 55, 8)), BookError::kOk);
  EXPECT_THAT(
      Orders(book),
      ElementsAre(
          Order(6, 3, Side::kBuy, 31, 6), Order(5, 3, Side::kBuy, 30, 5),
          Order(7, 3, Side::kBuy, 30, 7), Order(4, 3, Side::kSell, 55, 4),
          Order(8, 3, Side::kSell, 55, 8), Order(3, 3, Side::kSell, 60, 3),
          Order(2, 9, Side::kBuy, 40, 2), Order(1, 9, Side::kSell, 50, 1)));
  std::vector<std::uint32_t> instruments;
  book.ForEachInstrument([&](const InstrumentInfo& info) {
    instruments.push_back(info.instrument_id.value());
  });
  EXPECT_THAT(instruments, ElementsAre(3, 5, 9));
}

TEST(BookQueries, TheSameIdOnTwoInstrumentsIsOneOrder) {
  // Ids are the engine's, one counter for all instruments.
  Book book;
  test::List(book, 1);
  test::List(book, 2);
  ASSERT_EQ(book.Apply(Added(7, 1, Side::kBuy, 10, 1)), BookError::kOk);
  EXPECT_EQ(book.Apply(Added(7, 2, Side::kBuy, 10, 1)),
            BookError::kOrderIdLive);
}

TEST(BookClear, ClearOneInstrumentForgetsItAndKeepsTheOthers) {
  Book book;
  test::List(book, 1);
  test::List(book, 2);
  ASSERT_EQ(book.Apply(Added(1, 1, Side::kBuy, 10, 1)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(2, 2, Side::kSell, 20, 2)), BookError::kOk);
  ASSERT_EQ(book.Apply(Added(3, 1, Side::kSell, 30, 3)), BookError::kOk);
  book.Clear(codec::InstrumentId(1));
  EXPECT_FALSE(book.FindInstrument(codec::InstrumentId(1)).has_value());
  EXPECT_FALSE(book.FindOrder(codec::OrderId(1)).has_value());
  EXPECT_FALSE(book.FindOrder(codec::OrderId(3)).has_value());
  EXPECT_THAT(Orders(book), ElementsAre(Order(2, 2, Side::kSell, 20, 2)));
  EXPECT_EQ(book.order_count(), 1U);
  // Not listed until a snapshot lists it again.
  EXPECT_EQ(book.Apply(Added(4, 1, Side::kBuy, 10, 1)),
            BookError::kInstrumentNotListed);
  test::List(book, 1);
  ASSERT_EQ(book.Apply(Added(1, 1, Side::kBuy, 11, 5)), BookError::kOk);
  EXPECT_THAT(Orders(book), ElementsAre(Order(1, 1, Side::kBuy, 11, 5),
                                        Order(2, 2, Side::kSell, 20, 2)));
  EXPECT_THAT(Levels(book, 1, Side::kSell), IsEmpty());
}

TEST(BookClear, ClearAllForgetsEverythingAndTheBookIsReusable) {
  Book book;
  book.Reserve(16, 8);
  test::List(book, 1);
  for (std::uint64_t id = 1; id <= 10; ++id) {
    ASSERT_EQ(book.Apply(Added(id, 1, id % 2 ? Side::kBuy : Side::kSell,
                               static_cast<std::int64_t>(id), id)),
              BookError::kOk);
  }
  book.Clear();
  EXPECT_EQ(book.order_count(), 0U);
  EXPECT_FALSE(book.FindInstrument(codec::InstrumentId(1)).has_value());
  EXPECT_EQ(test::Dump(book), test::Dump(Book{}));
  test::List(book, 1);
  ASSERT_EQ(book.Apply(Added(5, 1, Side::kBuy, 3, 4)), BookError::kOk);
  EXPECT_THAT(Orders(book), ElementsAre(Order(5, 1, Side::kBuy, 3, 4)));
  EXPECT_THAT(Levels(book, 1, Side::kBuy), ElementsAre(Level(3, 4, 1)));
}

TEST(BookBytes, AppliesEncodedMessagesAndIgnoresALaterRevisionsExtraBytes) {
  Book book;
  ASSERT_EQ(book.ApplyMessage(test::Encode(Directory(kInstrument))),
            BookError::kOk);
  ASSERT_EQ(book.ApplyMessage(
                test::Encode(Status(kInstrument, TradingState::kTrading))),
            BookError::kOk);
  std::vector<std::byte> added =
      test::Encode(Added(1, kInstrument, Side::kBuy, 100, 10));
  added.resize(added.size() + 5, std::byte{0xEE});  // fields appended later
  ASSERT_EQ(book.ApplyMessage(added), BookError::kOk);
  EXPECT_EQ(book.FindOrder(codec::OrderId(1)),
            Order(1, kInstrument, Side::kBuy, 100, 10));
}

TEST(BookBytes, RefusesAShortMessageAndLeavesAnUnknownKindToTheCaller) {
  Book book;
  test::List(book, kInstrument);
  const std::vector<std::byte> added =
      test::Encode(Added(1, kInstrument, Side::kBuy, 100, 10));
  const std::string before = test::Dump(book);
  for (std::size_t n = 0; n < added.size(); ++n) {
    EXPECT_EQ(book.ApplyMessage(std::span(added.data(), n)),
              BookError::kBadLength)
        << n << " bytes";
  }
  std::vector<std::byte> unknown(9, std::byte{0});
  unknown[0] = static_cast<std::byte>(feed::MessageKind::kReservedTrade);
  EXPECT_EQ(book.ApplyMessage(unknown), BookError::kUnknownKind);
  EXPECT_FALSE(IsContradiction(BookError::kUnknownKind));
  EXPECT_FALSE(IsContradiction(BookError::kBadLength));
  EXPECT_EQ(test::Dump(book), before);
}

TEST(BookErrors, NamesAndStatuses) {
  EXPECT_EQ(Name(BookError::kOrderIdUnknown), "OrderIdUnknown");
  EXPECT_EQ(Name(BookError::kUnlistedNotEmpty), "UnlistedNotEmpty");
  EXPECT_TRUE(ToStatus(BookError::kOk).ok());
  EXPECT_EQ(ToStatus(BookError::kReducedToZero).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ToStatus(BookError::kReducedToZero).message(),
            "Contradiction: ReducedToZero");
  EXPECT_EQ(ToStatus(BookError::kUnknownKind).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace orderwire::marketdata
