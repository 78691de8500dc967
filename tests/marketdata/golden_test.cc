// marketdata::Book on docs/MARKETDATA-GOLDEN.md's golden feed ("Golden
// packets"): the live packets of messages 1 to 6, parsed and applied block by
// block; the snapshot reply at S = 6, which must rebuild the same book; and the
// "other kinds at T2" applied to the book after message 6.
#include "tests/feed/golden.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "tests/marketdata/book_test_support.h"

namespace orderwire::marketdata {
namespace {

namespace golden = feed::golden;
using test::Level;
using test::Levels;
using test::Order;
using test::Orders;
using test::Side;
using test::TradingState;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr codec::InstrumentId kGoldenInstrument(42);

// Applies every block of a golden packet; the parse must pass.
void ApplyPacket(Book& book, const golden::GoldenBytes& packet) {
  const std::vector<std::byte> bytes = golden::FromHex(packet.hex);
  const auto view = feed::PacketView::Parse(
      bytes, feed::SessionFilter::Only(golden::kSession));
  ASSERT_TRUE(view.ok()) << packet.name;
  for (const feed::MessageBlock block : *view) {
    ASSERT_TRUE(block.known());
    ASSERT_EQ(book.Apply(block), BookError::kOk)
        << packet.name << ": " << feed::Name(block.kind());
  }
}

void ExpectGoldenInstrument(const Book& book, TradingState state) {
  const std::optional<InstrumentInfo> info =
      book.FindInstrument(kGoldenInstrument);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->min_price, codec::Price(1));
  EXPECT_EQ(info->max_price, codec::Price(1000000000));
  EXPECT_EQ(info->min_quantity, codec::Quantity(1));
  EXPECT_EQ(info->max_quantity, codec::Quantity(1000000000));
  EXPECT_EQ(info->state, state);
}

// The book after the live feed's messages 1 to 6.
Book GoldenLiveBook() {
  Book book;
  ApplyPacket(book, golden::kStartOfFeed);
  ApplyPacket(book, golden::kExecutedAdded);
  return book;
}

TEST(BookGolden, MessagesOneToFourRestOrderOne) {
  Book book;
  ApplyPacket(book, golden::kStartOfFeed);
  ExpectGoldenInstrument(book, TradingState::kTrading);
  EXPECT_THAT(Orders(book), ElementsAre(Order(1, 42, Side::kBuy, 10050, 300)));
  EXPECT_THAT(Levels(book, 42, Side::kBuy), ElementsAre(Level(10050, 300, 1)));
  EXPECT_THAT(Levels(book, 42, Side::kSell), IsEmpty());
}

TEST(BookGolden, MessagesFiveAndSixLeaveOrderTwoSell10040For100) {
  const Book book = GoldenLiveBook();
  ExpectGoldenInstrument(book, TradingState::kTrading);
  // Order 1 executed to 0 left the book (no OrderDeleted in the feed).
  EXPECT_FALSE(book.FindOrder(codec::OrderId(1)).has_value());
  EXPECT_THAT(Orders(book), ElementsAre(Order(2, 42, Side::kSell, 10040, 100)));
  EXPECT_THAT(Levels(book, 42, Side::kBuy), IsEmpty());
  EXPECT_THAT(Levels(book, 42, Side::kSell), ElementsAre(Level(10040, 100, 1)));
  EXPECT_EQ(book.order_count(), 1U);
}

TEST(BookGolden, TheSnapshotReplyAtSixRebuildsTheLiveBook) {
  const Book live = GoldenLiveBook();
  // A subscriber that joins late (or recovers): clear the books concerned,
  // apply the snapshot.
  Book joined;
  ApplyPacket(joined, golden::kSnapshotReply);
  EXPECT_THAT(Orders(joined),
              ElementsAre(Order(2, 42, Side::kSell, 10040, 100)));
  ExpectGoldenInstrument(joined, TradingState::kTrading);
  EXPECT_EQ(test::Dump(joined), test::Dump(live));

  // Recovery over a book that went wrong: Clear(42), then the snapshot.
  Book recovering = GoldenLiveBook();
  ASSERT_EQ(recovering.Apply(test::Reduced(2, 42, 30)), BookError::kOk);
  recovering.Clear(kGoldenInstrument);
  ApplyPacket(recovering, golden::kSnapshotReply);
  EXPECT_EQ(test::Dump(recovering), test::Dump(live));
}

TEST(BookGolden, TheSnapshotsOrderAddedAreTheBooksOrdersInCanonicalOrder) {
  // MARKETDATA.md "Snapshots": OrderAdded for each live order, bids then
  // asks, best price first, oldest first: what ForEachOrder yields.
  const Book live = GoldenLiveBook();
  const std::vector<std::byte> bytes =
      golden::FromHex(golden::kSnapshotReply.hex);
  const auto view = feed::PacketView::Parse(
      bytes, feed::SessionFilter::Only(golden::kSession));
  ASSERT_TRUE(view.ok());
  std::vector<BookOrder> added;
  for (const feed::MessageBlock block : *view) {
    if (block.kind() != feed::MessageKind::kOrderAdded) continue;
    const feed::OrderAdded m =
        feed::MessageView<feed::OrderAdded>::FromBlock(block)->ToModel();
    added.push_back(
        Order(m.order_id, m.instrument_id, m.side, m.price, m.quantity));
  }
  EXPECT_EQ(added, Orders(live));
}

TEST(BookGolden, TheOtherKindsAtT2ApplyToTheBookAfterSix) {
  {
    Book book = GoldenLiveBook();
    ASSERT_EQ(book.ApplyMessage(golden::FromHex(golden::kOrderReduced.hex)),
              BookError::kOk);
    EXPECT_THAT(Orders(book),
                ElementsAre(Order(2, 42, Side::kSell, 10040, 60)));
  }
  {
    Book book = GoldenLiveBook();
    ASSERT_EQ(book.ApplyMessage(golden::FromHex(golden::kOrderDeleted.hex)),
              BookError::kOk);
    EXPECT_THAT(Orders(book), IsEmpty());
    EXPECT_THAT(Levels(book, 42, Side::kSell), IsEmpty());
  }
  {
    Book book = GoldenLiveBook();
    ASSERT_EQ(book.ApplyMessage(golden::FromHex(golden::kOrderReplaced.hex)),
              BookError::kOk);
    EXPECT_THAT(Orders(book),
                ElementsAre(Order(2, 42, Side::kSell, 10045, 150)));
    EXPECT_THAT(Levels(book, 42, Side::kSell),
                ElementsAre(Level(10045, 150, 1)));
  }
  {
    Book book = GoldenLiveBook();
    ASSERT_EQ(
        book.ApplyMessage(golden::FromHex(golden::kTradingStatusHalted.hex)),
        BookError::kOk);
    ExpectGoldenInstrument(book, TradingState::kHalted);
    EXPECT_EQ(book.order_count(), 1U);
  }
}

TEST(BookGolden, TheLiveFeedAppliedTwiceIsAContradiction) {
  // Duplicates a subscriber failed to skip: message 4 again adds a live id;
  // after message 6, message 5 again executes an unknown id (order 1 left)
  // and message 6 again adds a live id. Refused, the book unchanged.
  Book book;
  ApplyPacket(book, golden::kStartOfFeed);
  const std::vector<std::byte> bytes =
      golden::FromHex(golden::kStartOfFeed.hex);
  const auto view = feed::PacketView::Parse(
      bytes, feed::SessionFilter::Only(golden::kSession));
  ASSERT_TRUE(view.ok());
  std::vector<BookError> again;
  for (const feed::MessageBlock block : *view)
    again.push_back(book.Apply(block));
  // SystemEvent: no change; InstrumentDirectory, TradingStatus: idempotent;
  // OrderAdded of order 1: a live id.
  EXPECT_THAT(again, ElementsAre(BookError::kOk, BookError::kOk, BookError::kOk,
                                 BookError::kOrderIdLive));
  ApplyPacket(book, golden::kExecutedAdded);
  const std::string after_six = test::Dump(book);
  const std::vector<std::byte> executed =
      golden::FromHex(golden::kExecutedAdded.hex);
  const auto view2 = feed::PacketView::Parse(
      executed, feed::SessionFilter::Only(golden::kSession));
  ASSERT_TRUE(view2.ok());
  again.clear();
  for (const feed::MessageBlock block : *view2) {
    again.push_back(book.Apply(block));
  }
  EXPECT_THAT(again,
              ElementsAre(BookError::kOrderIdUnknown, BookError::kOrderIdLive));
  EXPECT_EQ(test::Dump(book), after_six);
}

}  // namespace
}  // namespace orderwire::marketdata
