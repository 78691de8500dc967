// Helpers shared by the marketdata tests: message models built from their
// fields, the book read back as plain values (orders in the canonical order,
// levels, queues), a full textual dump to compare "nothing changed", and
// GoogleTest printers.
#ifndef ORDERWIRE_TESTS_MARKETDATA_BOOK_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_MARKETDATA_BOOK_TEST_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"

namespace orderwire::marketdata {

inline void PrintTo(BookError error, std::ostream* os) {
  *os << Name(error) << " (" << static_cast<int>(error) << ")";
}
inline void PrintTo(const BookOrder& o, std::ostream* os) {
  *os << "{order " << o.order_id.value() << ", instrument "
      << o.instrument_id.value() << ", " << codec::Name(o.side) << ", "
      << o.price.value() << ", " << o.quantity.value() << "}";
}
inline void PrintTo(const LevelInfo& l, std::ostream* os) {
  *os << "{" << l.price.value() << ", " << l.quantity.value() << ", "
      << l.order_count << " orders}";
}

}  // namespace orderwire::marketdata

namespace orderwire::marketdata::test {

using codec::Side;
using feed::TradingState;

inline constexpr std::uint64_t kTs = 1700000000000000000;

// The message models, fields in wire order (timestamp kTs).
inline feed::InstrumentDirectory Directory(
    std::uint32_t instrument, std::int64_t min_price = 1,
    std::int64_t max_price = 1000000000, std::uint64_t min_quantity = 1,
    std::uint64_t max_quantity = 1000000000) {
  return {kTs, instrument, min_price, max_price, min_quantity, max_quantity};
}
inline feed::TradingStatus Status(std::uint32_t instrument,
                                  TradingState state) {
  return {kTs, instrument, state};
}
inline feed::OrderAdded Added(std::uint64_t id, std::uint32_t instrument,
                              Side side, std::int64_t price,
                              std::uint64_t quantity) {
  return {kTs, id, instrument, side, price, quantity};
}
inline feed::OrderExecuted Executed(std::uint64_t id, std::uint32_t instrument,
                                    Side side, std::int64_t price,
                                    std::uint64_t quantity,
                                    std::uint64_t match_id = 1) {
  return {kTs, id, instrument, side, match_id, price, quantity};
}
inline feed::OrderReduced Reduced(std::uint64_t id, std::uint32_t instrument,
                                  std::uint64_t cancelled) {
  return {kTs, id, instrument, cancelled};
}
inline feed::OrderDeleted Deleted(std::uint64_t id, std::uint32_t instrument) {
  return {kTs, id, instrument};
}
inline feed::OrderReplaced Replaced(std::uint64_t id, std::uint32_t instrument,
                                    std::int64_t price,
                                    std::uint64_t quantity) {
  return {kTs, id, instrument, price, quantity};
}

// The bytes of a message, as a publisher encodes it.
template <typename Model>
std::vector<std::byte> Encode(const Model& model) {
  std::vector<std::byte> bytes(feed::kMessageSize<Model>);
  feed::EncodeMessage(model, bytes.data());
  return bytes;
}

inline BookOrder Order(std::uint64_t id, std::uint32_t instrument, Side side,
                       std::int64_t price, std::uint64_t quantity) {
  return {codec::OrderId(id), codec::InstrumentId(instrument), side,
          codec::Price(price), codec::Quantity(quantity)};
}
inline LevelInfo Level(std::int64_t price, std::uint64_t quantity,
                       std::uint32_t orders) {
  return {codec::Price(price), codec::Quantity(quantity), orders};
}

// Every resting order, in ForEachOrder's (canonical) order.
inline std::vector<BookOrder> Orders(const Book& book) {
  std::vector<BookOrder> out;
  book.ForEachOrder([&](const BookOrder& o) { out.push_back(o); });
  return out;
}
// The levels of one side, best first.
inline std::vector<LevelInfo> Levels(const Book& book, std::uint32_t instrument,
                                     Side side) {
  std::vector<LevelInfo> out;
  book.ForEachLevel(codec::InstrumentId(instrument), side,
                    [&](const LevelInfo& l) { out.push_back(l); });
  return out;
}
// The ids of one level's queue, oldest first.
inline std::vector<std::uint64_t> Queue(const Book& book,
                                        std::uint32_t instrument, Side side,
                                        std::int64_t price) {
  std::vector<std::uint64_t> out;
  book.ForEachOrderAt(
      codec::InstrumentId(instrument), side, codec::Price(price),
      [&](const BookOrder& o) { out.push_back(o.order_id.value()); });
  return out;
}

// Everything a query can see, as text: instruments (bands, state), every
// level of both sides with its queue, the order count. Two books with the
// same dump answer every query alike.
inline std::string Dump(const Book& book) {
  std::ostringstream out;
  out << "orders " << book.order_count() << "\n";
  book.ForEachInstrument([&](const InstrumentInfo& info) {
    const std::uint32_t id = info.instrument_id.value();
    out << "instrument " << id << " " << info.min_price.value() << ".."
        << info.max_price.value() << " " << info.min_quantity.value() << ".."
        << info.max_quantity.value() << " state "
        << (info.state ? static_cast<int>(*info.state) : 0) << " orders "
        << book.order_count(info.instrument_id) << "\n";
    for (const Side side : {Side::kBuy, Side::kSell}) {
      for (const LevelInfo& level : Levels(book, id, side)) {
        out << "  " << codec::Name(side) << " " << level.price.value() << " "
            << level.quantity.value() << " " << level.order_count << ":";
        book.ForEachOrderAt(
            info.instrument_id, side, level.price, [&](const BookOrder& o) {
              out << " " << o.order_id.value() << "x" << o.quantity.value();
            });
        out << "\n";
      }
    }
  });
  return out.str();
}

// A book with instrument `instrument` listed and Trading.
inline void List(Book& book, std::uint32_t instrument) {
  EXPECT_EQ(book.Apply(Directory(instrument)), BookError::kOk);
  EXPECT_EQ(book.Apply(Status(instrument, TradingState::kTrading)),
            BookError::kOk);
}

}  // namespace orderwire::marketdata::test

#endif  // ORDERWIRE_TESTS_MARKETDATA_BOOK_TEST_SUPPORT_H_
