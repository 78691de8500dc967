// The text form of feed messages (jsonl::FeedMessageToJson, docs/
// MARKETDATA.md "Text form"): one test per message kind, each on a golden
// message of MARKETDATA-GOLDEN.md, its expected line typed from
// the document's values and field table (not derived from the layouts), so
// a field missing, renamed, moved or misread fails the kind's test. Then
// extreme values, and a kind version 1 does not define.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "jsonl/jsonl.h"
#include "tests/feed/golden.h"

namespace orderwire::jsonl::feed_text_test {
namespace {

namespace golden = ::orderwire::feed::golden;

// The kinds with a test below, by MARKETDATA.md name.
constexpr std::array<std::string_view, 10> kKindsTested = {
    "SystemEvent",   "InstrumentDirectory", "TradingStatus", "OrderAdded",
    "OrderExecuted", "OrderReduced",        "OrderDeleted",  "OrderReplaced",
    "SnapshotStart", "SnapshotEnd"};

// The text of every message of a golden packet, numbered from `first`.
std::vector<std::string> PacketText(const golden::GoldenBytes& packet,
                                    std::uint64_t first) {
  static std::vector<std::vector<std::byte>> keep;  // the blocks point here
  keep.push_back(golden::FromHex(packet.hex));
  const auto parsed =
      feed::PacketView::Parse(keep.back(), feed::SessionFilter::Any());
  EXPECT_TRUE(parsed.ok()) << packet.name;
  std::vector<std::string> lines;
  if (!parsed.ok()) return lines;
  std::uint64_t sequence = first;
  for (const feed::MessageBlock block : *parsed) {
    lines.push_back(FeedMessageToJson(sequence++, block));
  }
  return lines;
}

// The text of one golden message (bytes only), numbered `sequence`.
std::string MessageText(const golden::GoldenBytes& message,
                        std::uint64_t sequence) {
  const std::vector<std::byte> bytes = golden::FromHex(message.hex);
  EXPECT_EQ(bytes.size(), message.size) << message.name;
  return FeedMessageToJson(
      sequence, feed::MessageBlock(bytes.data(),
                                   static_cast<std::uint16_t>(bytes.size())));
}

TEST(FeedMessageText, SystemEvent) {
  EXPECT_EQ(PacketText(golden::kStartOfFeed, 1).at(0),
            R"({"sequence":1,"kind":"SystemEvent",)"
            R"("timestamp":1700000000000000000,"event":1})");
}

TEST(FeedMessageText, InstrumentDirectory) {
  EXPECT_EQ(PacketText(golden::kStartOfFeed, 1).at(1),
            R"({"sequence":2,"kind":"InstrumentDirectory",)"
            R"("timestamp":1700000000000000000,"instrument_id":42,)"
            R"("min_price":1,"max_price":1000000000,"min_quantity":1,)"
            R"("max_quantity":1000000000})");
}

TEST(FeedMessageText, TradingStatus) {
  EXPECT_EQ(PacketText(golden::kStartOfFeed, 1).at(2),
            R"({"sequence":3,"kind":"TradingStatus",)"
            R"("timestamp":1700000000000000000,"instrument_id":42,"state":1})");
  EXPECT_EQ(MessageText(golden::kTradingStatusHalted, 9),
            R"({"sequence":9,"kind":"TradingStatus",)"
            R"("timestamp":1700000000000250000,"instrument_id":42,"state":2})");
}

TEST(FeedMessageText, OrderAdded) {
  EXPECT_EQ(PacketText(golden::kStartOfFeed, 1).at(3),
            R"({"sequence":4,"kind":"OrderAdded",)"
            R"("timestamp":1700000000000000000,"order_id":1,)"
            R"("instrument_id":42,"side":1,"price":10050,"quantity":300})");
  EXPECT_EQ(PacketText(golden::kExecutedAdded, 5).at(1),
            R"({"sequence":6,"kind":"OrderAdded",)"
            R"("timestamp":1700000000000250000,"order_id":2,)"
            R"("instrument_id":42,"side":2,"price":10040,"quantity":100})");
}

TEST(FeedMessageText, OrderExecuted) {
  EXPECT_EQ(PacketText(golden::kExecutedAdded, 5).at(0),
            R"({"sequence":5,"kind":"OrderExecuted",)"
            R"("timestamp":1700000000000250000,"order_id":1,)"
            R"("instrument_id":42,"side":1,"match_id":1,"price":10050,)"
            R"("quantity":300})");
}

TEST(FeedMessageText, OrderReduced) {
  EXPECT_EQ(MessageText(golden::kOrderReduced, 7),
            R"({"sequence":7,"kind":"OrderReduced",)"
            R"("timestamp":1700000000000250000,"order_id":2,)"
            R"("instrument_id":42,"cancelled_quantity":40})");
}

TEST(FeedMessageText, OrderDeleted) {
  EXPECT_EQ(MessageText(golden::kOrderDeleted, 8),
            R"({"sequence":8,"kind":"OrderDeleted",)"
            R"("timestamp":1700000000000250000,"order_id":2,)"
            R"("instrument_id":42})");
}

TEST(FeedMessageText, OrderReplaced) {
  EXPECT_EQ(MessageText(golden::kOrderReplaced, 8),
            R"({"sequence":8,"kind":"OrderReplaced",)"
            R"("timestamp":1700000000000250000,"order_id":2,)"
            R"("instrument_id":42,"price":10045,"quantity":150})");
}

// The snapshot reply's messages take the numbers the caller gives.
TEST(FeedMessageText, SnapshotStart) {
  EXPECT_EQ(PacketText(golden::kSnapshotReply, 1).at(0),
            R"({"sequence":1,"kind":"SnapshotStart",)"
            R"("timestamp":1700000000000250000,"feed_sequence":6,)"
            R"("instrument_id":42,"message_count":5})");
}

TEST(FeedMessageText, SnapshotEnd) {
  EXPECT_EQ(PacketText(golden::kSnapshotReply, 1).at(4),
            R"({"sequence":5,"kind":"SnapshotEnd",)"
            R"("timestamp":1700000000000250000,"feed_sequence":6})");
}

// Every kind of feed/messages.h has its test above.
TEST(FeedMessageText, EveryKindHasItsTest) {
  std::size_t kinds = 0;
  feed::ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    ++kinds;
    EXPECT_NE(std::find(kKindsTested.begin(), kKindsTested.end(),
                        feed::MessageTraits<Model>::kName),
              kKindsTested.end())
        << feed::MessageTraits<Model>::kName << " has no text test";
  });
  EXPECT_EQ(kinds, kKindsTested.size());
}

// Each integer as its type holds it: u64 and i64 at their extremes, a u8
// enumeration byte that names no value as its number.
TEST(FeedMessageText, ExtremeValuesAsTheirIntegers) {
  std::array<std::byte, feed::kMessageSize<feed::OrderExecuted>> bytes{};
  feed::EncodeMessage(
      feed::OrderExecuted{.timestamp = UINT64_MAX,
                          .order_id = UINT64_MAX,
                          .instrument_id = UINT32_MAX,
                          .side = static_cast<codec::Side>(0xFF),
                          .match_id = 0,
                          .price = INT64_MIN,
                          .quantity = UINT64_MAX},
      bytes.data());
  EXPECT_EQ(
      FeedMessageToJson(UINT64_MAX,
                        feed::MessageBlock(bytes.data(), bytes.size())),
      R"({"sequence":18446744073709551615,"kind":"OrderExecuted",)"
      R"("timestamp":18446744073709551615,"order_id":18446744073709551615,)"
      R"("instrument_id":4294967295,"side":255,"match_id":0,)"
      R"("price":-9223372036854775808,"quantity":18446744073709551615})");
}

// A kind version 1 does not define (the reserved 'P') keeps its number.
TEST(FeedMessageText, UnknownKindKeepsItsByteAndLength) {
  std::vector<std::byte> bytes = golden::FromHex(golden::kOrderDeleted.hex);
  bytes[0] = static_cast<std::byte>(feed::MessageKind::kReservedTrade);
  EXPECT_EQ(FeedMessageToJson(
                12, feed::MessageBlock(bytes.data(), static_cast<std::uint16_t>(
                                                         bytes.size()))),
            R"({"sequence":12,"kind":"Unknown","kind_byte":80,)"
            R"("timestamp":1700000000000250000,"length":21})");
}

}  // namespace
}  // namespace orderwire::jsonl::feed_text_test
