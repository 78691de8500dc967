// The market-data feed the StateMachine makes of each record
// (state/feed_producer.h, docs/MARKETDATA.md "From the journal to the
// feed"): the golden feed of the contract byte for byte, each row of the
// report-to-feed table, the directory's changes, a subscriber's book
// (marketdata::Book) made from the feed alone equal to the engine's after
// every record of long random streams, and the feed's state through a
// snapshot (restart == replay).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "codec/command.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "codec/wire.h"
#include "engine/config.h"
#include "engine/workload.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "state/record_flags.h"
#include "state/snapshot.h"
#include "state/state_machine.h"
#include "tests/feed/feed_test_support.h"
#include "tests/feed/golden.h"
#include "tests/support/bytes.h"
#include "tests/support/orders.h"

namespace orderwire::state {
namespace {

using codec::Side;
using feed::MessageKind;
using test_support::Bytes;
using test_support::Frame;
using test_support::GoodbyeInstead;
using test_support::LapseFrame;
using test_support::Limit;
using test_support::MassCancelInstead;

// The golden configuration: instrument 42 only, default bands.
StateMachineOptions Instrument42() {
  StateMachineOptions options;
  options.engine.min_instrument = 42;
  options.engine.max_instrument = 42;
  return options;
}

// Applies frames as consecutive records of their sessions and keeps every
// feed message made, in order, with its sequence.
class FeedRun {
 public:
  explicit FeedRun(StateMachineOptions options = {})
      : machine_(std::make_unique<StateMachine>(options)) {}
  // Goes on from a restored machine.
  explicit FeedRun(std::unique_ptr<StateMachine> machine)
      : machine_(std::move(machine)),
        next_index_(machine_->last_index() + 1),
        next_expected_(machine_->feed_producer().next_sequence()) {}

  // Applies one record; returns the number of feed messages it made.
  std::size_t Apply(std::uint32_t session, const Bytes& frame,
                    std::uint64_t receive_ns = 1000, std::uint32_t flags = 0) {
    const absl::Status applied = machine_->Apply(
        Record{next_index_++, receive_ns, session, flags, frame});
    EXPECT_TRUE(applied.ok()) << applied;
    for (const FeedMessage& m : machine_->feed()) {
      EXPECT_EQ(m.sequence, next_expected_++);
      messages_.emplace_back(m.bytes.begin(), m.bytes.end());
    }
    return machine_->feed().size();
  }
  // The next session sequence of `session`'s commands.
  std::uint64_t Next(std::uint32_t session) { return ++sequences_[session]; }

  StateMachine& machine() { return *machine_; }
  const std::vector<std::vector<std::byte>>& messages() const {
    return messages_;
  }
  // The kinds of the messages from `first` (0-based) on.
  std::vector<MessageKind> KindsFrom(std::size_t first) const {
    std::vector<MessageKind> kinds;
    for (std::size_t i = first; i < messages_.size(); ++i) {
      kinds.push_back(static_cast<MessageKind>(messages_[i][0]));
    }
    return kinds;
  }

 private:
  std::unique_ptr<StateMachine> machine_;
  std::uint64_t next_index_ = 1;
  std::uint64_t next_expected_ = 1;
  std::map<std::uint32_t, std::uint64_t> sequences_;
  std::vector<std::vector<std::byte>> messages_;
};

// The model of a message of kind `Model` (the test fails if it is another).
template <typename Model>
Model MessageAs(const std::vector<std::byte>& message) {
  EXPECT_EQ(static_cast<MessageKind>(message[0]),
            feed::MessageTraits<Model>::kKind);
  EXPECT_EQ(message.size(), feed::kMessageSize<Model>);
  Model model{};
  feed::MessageTraits<Model>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
        model.*field.member =
            codec::LoadLE<T>(message.data() + feed::kModelOffset + offset);
      });
  return model;
}

// A Data packet of the golden session holding `messages`, from `first`.
std::string DataPacketHex(std::span<const std::vector<std::byte>> messages,
                          std::uint64_t first) {
  std::array<std::byte, feed::kMaxPacketBytes> buffer{};
  feed::PacketBuilder builder(buffer);
  builder.BeginData(feed::golden::kSession, first);
  for (const std::vector<std::byte>& m : messages) {
    EXPECT_EQ(builder.AppendMessage(m), codec::CodecError::kOk);
  }
  return feed::test::Hex(builder.Finish());
}

std::string HexOf(const std::vector<std::byte>& bytes) {
  return feed::test::Hex(bytes);
}

// MARKETDATA-GOLDEN.md: records 1 and 2 make messages 1 to 6,
// which pack into the two golden Data packets; then a size-down, a
// reprice and a cancel of order 2 at T2 make the golden OrderReduced,
// OrderReplaced and OrderDeleted.
TEST(FeedFromTheJournal, MakesTheGoldenFeedOfTheContract) {
  using feed::golden::kT1;
  using feed::golden::kT2;
  FeedRun run(Instrument42());
  EXPECT_EQ(run.Apply(1,
                      Frame(run.Next(1), Limit({.account_id = 1,
                                                .client_order_id = 1,
                                                .instrument_id = 42,
                                                .side = Side::kBuy,
                                                .price = 10050,
                                                .quantity = 300})),
                      kT1),
            4u);
  EXPECT_EQ(run.Apply(2,
                      Frame(run.Next(2), Limit({.account_id = 2,
                                                .client_order_id = 1,
                                                .instrument_id = 42,
                                                .side = Side::kSell,
                                                .price = 10040,
                                                .quantity = 400})),
                      kT2),
            2u);
  const std::span<const std::vector<std::byte>> all(run.messages());
  EXPECT_EQ(DataPacketHex(all.first(4), 1), feed::golden::kStartOfFeed.hex);
  EXPECT_EQ(DataPacketHex(all.subspan(4, 2), 5),
            feed::golden::kExecutedAdded.hex);
  EXPECT_EQ(run.machine().feed_producer().next_sequence(), 7u);

  // Order 2 (100 left at 10040): down to 60, priority kept.
  EXPECT_EQ(
      run.Apply(2,
                Frame(run.Next(2), codec::Replace{.account_id = 2,
                                                  .order_id = 2,
                                                  .new_client_order_id = 2,
                                                  .price = 10040,
                                                  .quantity = 60}),
                kT2),
      1u);
  EXPECT_EQ(HexOf(run.messages().back()), feed::golden::kOrderReduced.hex);
  // To 10045 for 150: priority lost, nothing to cross (the bids are gone).
  EXPECT_EQ(
      run.Apply(2,
                Frame(run.Next(2), codec::Replace{.account_id = 2,
                                                  .order_id = 2,
                                                  .new_client_order_id = 3,
                                                  .price = 10045,
                                                  .quantity = 150}),
                kT2),
      1u);
  EXPECT_EQ(HexOf(run.messages().back()), feed::golden::kOrderReplaced.hex);
  EXPECT_EQ(run.Apply(2,
                      Frame(run.Next(2), codec::CancelByOrder{.account_id = 2,
                                                              .order_id = 2}),
                      kT2),
            1u);
  EXPECT_EQ(HexOf(run.messages().back()), feed::golden::kOrderDeleted.hex);
}

// Rejects, IOC and FOK leftovers, market orders that find nothing and
// client-order-id-only replaces change no displayed order: no message.
TEST(FeedFromTheJournal, WhatChangesNoDisplayedOrderMakesNoMessage) {
  FeedRun run(Instrument42());
  ASSERT_EQ(run.Apply(1, Frame(run.Next(1), Limit({.client_order_id = 1,
                                                   .instrument_id = 42,
                                                   .price = 100,
                                                   .quantity = 10}))),
            4u);  // start of feed (3) and the order (1)
  // A reject (an instrument out of range).
  EXPECT_EQ(run.Apply(1, Frame(run.Next(1), Limit({.client_order_id = 2,
                                                   .instrument_id = 7,
                                                   .price = 100,
                                                   .quantity = 10}))),
            0u);
  // An ImmediateOrCancel sell that finds no bid at its price.
  EXPECT_EQ(
      run.Apply(2, Frame(run.Next(2),
                         Limit({.account_id = 2,
                                .client_order_id = 1,
                                .instrument_id = 42,
                                .side = Side::kSell,
                                .time_in_force =
                                    codec::TimeInForce::kImmediateOrCancel,
                                .price = 101,
                                .quantity = 10}))),
      0u);
  // A FillOrKill for more than the book holds.
  EXPECT_EQ(
      run.Apply(2,
                Frame(run.Next(2),
                      Limit({.account_id = 2,
                             .client_order_id = 2,
                             .instrument_id = 42,
                             .side = Side::kSell,
                             .time_in_force = codec::TimeInForce::kFillOrKill,
                             .price = 100,
                             .quantity = 11}))),
      0u);
  // A market buy: no ask at all.
  EXPECT_EQ(
      run.Apply(2, Frame(run.Next(2), codec::NewMarket{.account_id = 2,
                                                       .client_order_id = 3,
                                                       .instrument_id = 42,
                                                       .side = Side::kBuy,
                                                       .quantity = 5})),
      0u);
  // A replace that changes the client order id only.
  EXPECT_EQ(
      run.Apply(1, Frame(run.Next(1), codec::Replace{.account_id = 1,
                                                     .order_id = 1,
                                                     .new_client_order_id = 9,
                                                     .price = 100,
                                                     .quantity = 10})),
      0u);
}

// A MassCancel deletes each order it cancels, in order-id order (not book
// order), and its MassCancelDone shows nothing (docs/MARKETDATA.md).
TEST(FeedFromTheJournal, AMassCancelDeletesEachOrderInIdOrder) {
  FeedRun run(Instrument42());
  for (const std::int64_t price : {100, 105, 100}) {
    run.Apply(1, Frame(run.Next(1),
                       Limit({.client_order_id = static_cast<std::uint64_t>(
                                  run.messages().size() + 1),
                              .instrument_id = 42,
                              .price = price,
                              .quantity = 10})));
  }
  const std::size_t before = run.messages().size();
  EXPECT_EQ(
      run.Apply(1, Frame(run.Next(1),
                         codec::MassCancel{
                             .account_id = 1,
                             .request_id = 5,
                             .instrument_id = 42,
                             .side = codec::MassCancelSide::kBuy,
                             .scope = codec::MassCancelScope::kInstrument})),
      3u);
  ASSERT_EQ(run.messages().size(), before + 3);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    const auto deleted =
        MessageAs<feed::OrderDeleted>(run.messages()[before + id - 1]);
    EXPECT_EQ(deleted.order_id, id);
    EXPECT_EQ(deleted.instrument_id, 42u);
  }
  EXPECT_TRUE(run.machine().engine().Book(codec::InstrumentId(42)).empty());
}

// An order that trades on arrival and does not rest shows only the
// makers' executions: an ImmediateOrCancel's remainder, a market order, a
// FillOrKill filled in full; a record the service journaled as
// Unauthorized (record_flags.h) and a PostOnly that would cross show
// nothing.
TEST(FeedFromTheJournal, WhatTradesWithoutRestingShowsOnlyExecutions) {
  FeedRun run(Instrument42());
  const auto ask = [&](std::uint64_t id, std::int64_t price,
                       std::uint64_t quantity) {
    return run.Apply(2, Frame(run.Next(2), Limit({.account_id = 2,
                                                  .client_order_id = id,
                                                  .instrument_id = 42,
                                                  .side = Side::kSell,
                                                  .price = price,
                                                  .quantity = quantity})));
  };
  ASSERT_EQ(ask(1, 100, 5), 4u);  // start of feed (3), order 1
  ASSERT_EQ(ask(2, 101, 5), 1u);  // order 2
  ASSERT_EQ(ask(3, 102, 5), 1u);  // order 3
  const auto buy = [&](std::uint64_t id, codec::TimeInForce tif,
                       std::int64_t price, std::uint64_t quantity,
                       std::uint32_t flags = 0) {
    return run.Apply(1,
                     Frame(run.Next(1), Limit({.account_id = 1,
                                               .client_order_id = id,
                                               .instrument_id = 42,
                                               .time_in_force = tif,
                                               .price = price,
                                               .quantity = quantity})),
                     1000, flags);
  };
  // Unauthorized: rejected, nothing trades.
  EXPECT_EQ(
      buy(1, codec::TimeInForce::kGoodTillCancel, 102, 15, kRecordUnauthorized),
      0u);
  // PostOnly at the ask: WouldCross, rejected.
  EXPECT_EQ(buy(2, codec::TimeInForce::kPostOnly, 100, 1), 0u);
  // IOC for 8 at 100: 5 of order 1, the rest cancelled, not added.
  std::size_t before = run.messages().size();
  EXPECT_EQ(buy(3, codec::TimeInForce::kImmediateOrCancel, 100, 8), 1u);
  EXPECT_EQ(run.KindsFrom(before),
            std::vector<MessageKind>{MessageKind::kOrderExecuted});
  EXPECT_EQ(MessageAs<feed::OrderExecuted>(run.messages().back()).quantity, 5u);
  // FillOrKill for 2 at 101: filled from order 2 in full.
  EXPECT_EQ(buy(4, codec::TimeInForce::kFillOrKill, 101, 2), 1u);
  // A market buy of 6: 3 left of order 2, then 3 of order 3.
  before = run.messages().size();
  EXPECT_EQ(
      run.Apply(1, Frame(run.Next(1), codec::NewMarket{.account_id = 1,
                                                       .client_order_id = 5,
                                                       .instrument_id = 42,
                                                       .side = Side::kBuy,
                                                       .quantity = 6})),
      2u);
  EXPECT_EQ(run.KindsFrom(before),
            (std::vector<MessageKind>{MessageKind::kOrderExecuted,
                                      MessageKind::kOrderExecuted}));
  EXPECT_EQ(MessageAs<feed::OrderExecuted>(run.messages()[before]).order_id,
            2u);
  EXPECT_EQ(MessageAs<feed::OrderExecuted>(run.messages().back()).order_id, 3u);
  EXPECT_EQ(run.machine().engine().live_orders(), 1u);  // 2 left of order 3
}

// A replace that crosses leaves the book while it trades: OrderDeleted,
// the makers' executions, then OrderAdded with its remainder (its id comes
// back); an aggressor's self-trade cancel of a resting order of its own
// account is OrderDeleted where it happens.
TEST(FeedFromTheJournal, ACrossingReplaceIsDeletedTradesAndIsAddedAgain) {
  FeedRun run(Instrument42());
  const auto sell = [&](std::uint64_t account, std::uint64_t id,
                        std::int64_t price, std::uint64_t quantity) {
    return run.Apply(static_cast<std::uint32_t>(account),
                     Frame(run.Next(static_cast<std::uint32_t>(account)),
                           Limit({.account_id = account,
                                  .client_order_id = id,
                                  .instrument_id = 42,
                                  .side = Side::kSell,
                                  .price = price,
                                  .quantity = quantity})));
  };
  ASSERT_EQ(sell(2, 1, 105, 5), 4u);  // order 1
  ASSERT_EQ(sell(1, 1, 106, 5), 1u);  // order 2: account 1's own ask
  ASSERT_EQ(sell(3, 1, 107, 5), 1u);  // order 3
  // Account 1 bids 12 at 100 (order 4), then reprices it to 107.
  ASSERT_EQ(run.Apply(1, Frame(run.Next(1), Limit({.account_id = 1,
                                                   .client_order_id = 2,
                                                   .instrument_id = 42,
                                                   .price = 100,
                                                   .quantity = 12}))),
            1u);
  const std::size_t before = run.messages().size();
  ASSERT_EQ(
      run.Apply(1, Frame(run.Next(1), codec::Replace{.account_id = 1,
                                                     .order_id = 4,
                                                     .new_client_order_id = 3,
                                                     .price = 107,
                                                     .quantity = 12})),
      5u);
  EXPECT_EQ(run.KindsFrom(before),
            (std::vector<MessageKind>{
                MessageKind::kOrderDeleted, MessageKind::kOrderExecuted,
                MessageKind::kOrderDeleted, MessageKind::kOrderExecuted,
                MessageKind::kOrderAdded}));
  const auto& m = run.messages();
  EXPECT_EQ(MessageAs<feed::OrderDeleted>(m[before]).order_id, 4u);
  const auto first = MessageAs<feed::OrderExecuted>(m[before + 1]);
  EXPECT_EQ(first.order_id, 1u);
  EXPECT_EQ(first.match_id, 1u);
  EXPECT_EQ(first.quantity, 5u);
  EXPECT_EQ(first.side, Side::kSell);
  EXPECT_EQ(MessageAs<feed::OrderDeleted>(m[before + 2]).order_id, 2u);  // self
  const auto second = MessageAs<feed::OrderExecuted>(m[before + 3]);
  EXPECT_EQ(second.order_id, 3u);
  EXPECT_EQ(second.match_id, 2u);
  EXPECT_EQ(second.quantity, 5u);
  const auto added = MessageAs<feed::OrderAdded>(m[before + 4]);
  EXPECT_EQ(added.order_id, 4u);
  EXPECT_EQ(added.side, Side::kBuy);
  EXPECT_EQ(added.price, 107);
  EXPECT_EQ(added.quantity, 2u);  // 12 - 5 - 5
}

// MARKETDATA.md step 2: a record applied under another instrument range or
// bands than the directory announced starts with Unlisted for what left,
// the directory of the new range, Trading for what entered; a change of
// capacity alone says nothing.
TEST(FeedFromTheJournal, ARecordAfterAReconfigurationStartsWithTheChanges) {
  StateMachineOptions options;
  options.engine.min_instrument = 1;
  options.engine.max_instrument = 3;
  FeedRun run(options);
  ASSERT_EQ(run.Apply(1, Frame(run.Next(1), Limit({.client_order_id = 1,
                                                   .instrument_id = 2,
                                                   .price = 100,
                                                   .quantity = 10}))),
            8u);  // S, 3 x (R, H), A
  engine::EngineConfig bigger = options.engine;
  bigger.max_live_orders *= 2;
  ASSERT_TRUE(run.machine().Reconfigure(bigger, 1024).ok());
  EXPECT_EQ(run.Apply(1, Frame(run.Next(1), Limit({.client_order_id = 2,
                                                   .instrument_id = 2,
                                                   .price = 99,
                                                   .quantity = 10}))),
            1u);  // the order alone
  engine::EngineConfig moved = bigger;
  moved.min_instrument = 2;
  moved.max_instrument = 4;
  moved.max_price = 5000;
  ASSERT_TRUE(run.machine().Reconfigure(moved, 1024).ok());
  const std::size_t before = run.messages().size();
  EXPECT_EQ(run.Apply(1, Frame(run.Next(1), Limit({.client_order_id = 3,
                                                   .instrument_id = 4,
                                                   .price = 99,
                                                   .quantity = 10}))),
            6u);
  EXPECT_EQ(
      run.KindsFrom(before),
      (std::vector<MessageKind>{
          MessageKind::kTradingStatus, MessageKind::kInstrumentDirectory,
          MessageKind::kInstrumentDirectory, MessageKind::kInstrumentDirectory,
          MessageKind::kTradingStatus, MessageKind::kOrderAdded}));
  const auto& m = run.messages();
  const auto unlisted = MessageAs<feed::TradingStatus>(m[before]);
  EXPECT_EQ(unlisted.instrument_id, 1u);
  EXPECT_EQ(unlisted.state, feed::TradingState::kUnlisted);
  for (std::uint32_t i = 0; i < 3; ++i) {
    const auto directory =
        MessageAs<feed::InstrumentDirectory>(m[before + 1 + i]);
    EXPECT_EQ(directory.instrument_id, 2 + i);
    EXPECT_EQ(directory.max_price, 5000);
  }
  const auto entered = MessageAs<feed::TradingStatus>(m[before + 4]);
  EXPECT_EQ(entered.instrument_id, 4u);
  EXPECT_EQ(entered.state, feed::TradingState::kTrading);
  EXPECT_EQ(MessageAs<feed::OrderAdded>(m[before + 5]).instrument_id, 4u);
}

// PROTOCOL.md "Journal record flags", MARKETDATA.md "Sequence numbers and
// sessions": a record flagged NewFeedSession begins a session at its index
// before its messages: sequence 1 is StartOfFeed, then the directory and
// the statuses, then the record's own messages; the records after it go
// on in that session. A refused flagged record changes nothing.
TEST(FeedFromTheJournal, AFlaggedRecordBeginsANewSessionAtSequenceOne) {
  StateMachineOptions options;
  options.engine.min_instrument = 1;
  options.engine.max_instrument = 2;
  StateMachine machine(options);
  const auto apply = [&](std::uint64_t index, std::uint64_t sequence,
                         std::uint32_t flags) {
    return machine.Apply(
        Record{index, 1000 + index, 1, flags,
               Frame(sequence,
                     Limit({.client_order_id = sequence,
                            .instrument_id = 1,
                            .price = 100 + static_cast<std::int64_t>(sequence),
                            .quantity = 10}))});
  };
  ASSERT_TRUE(apply(1, 1, 0).ok());
  ASSERT_EQ(machine.feed_producer().next_sequence(), 7u);  // S, 2 x (R, H), A
  EXPECT_EQ(machine.feed_producer().session_start(), 0u);
  // Refused (its session sequence is wrong): nothing changes.
  ASSERT_FALSE(apply(2, 5, kRecordNewFeedSession).ok());
  EXPECT_EQ(machine.feed_producer().next_sequence(), 7u);
  EXPECT_EQ(machine.feed_producer().session_start(), 0u);
  // Another bit has no meaning: refused.
  ASSERT_FALSE(apply(2, 2, 1u << 2).ok());

  ASSERT_TRUE(apply(2, 2, kRecordNewFeedSession).ok());
  EXPECT_EQ(machine.feed_producer().session_start(), 2u);
  std::vector<MessageKind> kinds;
  std::uint64_t expected = 1;
  for (const FeedMessage& m : machine.feed()) {
    EXPECT_EQ(m.sequence, expected++);
    kinds.push_back(static_cast<MessageKind>(m.bytes[0]));
  }
  EXPECT_EQ(kinds,
            (std::vector<MessageKind>{
                MessageKind::kSystemEvent, MessageKind::kInstrumentDirectory,
                MessageKind::kTradingStatus, MessageKind::kInstrumentDirectory,
                MessageKind::kTradingStatus, MessageKind::kOrderAdded}));
  const std::vector<std::byte> start(machine.feed()[0].bytes.begin(),
                                     machine.feed()[0].bytes.end());
  EXPECT_EQ(MessageAs<feed::SystemEvent>(start).event,
            feed::SystemEventCode::kStartOfFeed);
  EXPECT_EQ(MessageAs<feed::SystemEvent>(start).timestamp, 1002u);
  // The order of record 1 still rests (the books are not re-announced).
  EXPECT_EQ(machine.engine().live_orders(), 2u);

  ASSERT_TRUE(apply(3, 3, 0).ok());
  ASSERT_EQ(machine.feed().size(), 1u);
  EXPECT_EQ(machine.feed()[0].sequence, 7u);
  EXPECT_EQ(machine.feed_producer().session_start(), 2u);
}

// The engine's live orders, as a subscriber's book lists them.
std::vector<marketdata::BookOrder> EngineOrders(const engine::Engine& engine) {
  std::vector<marketdata::BookOrder> out;
  engine.ForEachLiveOrder([&](const engine::OrderInfo& o) {
    out.push_back(
        {o.order_id, o.instrument_id, o.side, o.price, o.leaves_quantity});
  });
  return out;
}

std::vector<marketdata::BookOrder> BookOrders(const marketdata::Book& book) {
  std::vector<marketdata::BookOrder> out;
  book.ForEachOrder([&](const marketdata::BookOrder& o) { out.push_back(o); });
  return out;
}

// The flags InterleavedStreams' records are journaled with: session 1 has
// cancel-on-disconnect; a Goodbye of sequence 0 is a lapse.
std::uint32_t StreamFlags(const std::pair<std::uint32_t, Bytes>& record) {
  const bool lapse = record.second[codec::kKindOffset] ==
                         static_cast<std::byte>(codec::Kind::kGoodbye) &&
                     codec::LoadLE<std::uint64_t>(record.second.data()) == 0;
  return (record.first == 1 ? kRecordCancelOnDisconnect : 0) |
         (lapse ? kRecordLapse : 0);
}

// The records of three sessions trading together: two `mixed` streams
// (every command kind, self-trades, rejects; every 50th NewLimit of the
// two a MassCancel instead, every 71st a Goodbye, and lapse records between)
// and a `churn` stream (replaces that cross and that keep priority),
// interleaved by a fixed draw. Apply them with StreamFlags.
std::vector<std::pair<std::uint32_t, Bytes>> InterleavedStreams(
    std::size_t per_stream) {
  const std::vector<std::vector<codec::Command>> streams = {
      workload::Generate(workload::Workload::kMixed, per_stream, 11),
      workload::Generate(workload::Workload::kMixed, per_stream, 12),
      workload::Generate(workload::Workload::kChurn, per_stream, 13)};
  std::vector<std::size_t> next(streams.size(), 0);
  std::vector<std::pair<std::uint32_t, Bytes>> records;
  std::uint64_t new_limits = 0;
  std::uint64_t draw = 0x9E3779B97F4A7C15ull;
  while (records.size() < streams.size() * per_stream) {
    draw = draw * 6364136223846793005ull + 1442695040888963407ull;
    std::size_t s = (draw >> 33) % streams.size();
    while (next[s] == per_stream) s = (s + 1) % streams.size();
    if (s < 2 && next[s] > 0 && (draw >> 20) % 97 == 0) {
      records.emplace_back(static_cast<std::uint32_t>(s + 1), LapseFrame());
      continue;
    }
    codec::Command command = streams[s][next[s]++];
    if (s < 2 && command.kind == codec::Kind::kNewLimit &&
        ++new_limits % 50 == 0) {
      command = MassCancelInstead(command, new_limits / 50);
    } else if (s < 2 && command.kind == codec::Kind::kNewLimit &&
               new_limits % 71 == 0) {
      command = GoodbyeInstead(command, new_limits);
    }
    Bytes frame(codec::kMaxFrameSize);
    const auto size = codec::EncodeCommand(command, frame);
    EXPECT_TRUE(size.ok());
    frame.resize(*size);
    records.emplace_back(static_cast<std::uint32_t>(s + 1), std::move(frame));
  }
  return records;
}

// One session's stream, as `orderwire submit --workload` sends it: the
// generator follows a default engine of its own, so alone on a machine its
// cancels and replaces find their orders live.
std::vector<std::pair<std::uint32_t, Bytes>> OneStream(
    workload::Workload workload, std::size_t count, std::uint64_t seed) {
  std::vector<std::pair<std::uint32_t, Bytes>> records;
  for (const codec::Command& command :
       workload::Generate(workload, count, seed)) {
    Bytes frame(codec::kMaxFrameSize);
    const auto size = codec::EncodeCommand(command, frame);
    EXPECT_TRUE(size.ok());
    frame.resize(*size);
    records.emplace_back(1, std::move(frame));
  }
  return records;
}

// How many messages of each kind a run made, and how many records both
// deleted and added one order (a crossing replace that rested again).
struct KindCounts {
  std::map<MessageKind, std::size_t> kinds;
  std::size_t deleted_then_added = 0;
};

// Applies `records`, the feed to a subscriber's book (marketdata::Book),
// and compares the book with the engine's after every record (every
// `stride`-th after the first `every_until`, for time); fails on any
// message the book contradicts or a match id out of turn.
KindCounts BookAgainstEngine(
    const std::vector<std::pair<std::uint32_t, Bytes>>& records,
    std::size_t every_until, std::size_t stride) {
  FeedRun run;
  marketdata::Book book;
  KindCounts counts;
  std::size_t messages = 0;
  std::uint64_t next_match = 1;
  for (std::size_t r = 0; r < records.size(); ++r) {
    run.Apply(records[r].first, records[r].second, 1000 + r,
              StreamFlags(records[r]));
    std::set<std::uint64_t> deleted;  // by this record
    for (; messages < run.messages().size(); ++messages) {
      const std::vector<std::byte>& m = run.messages()[messages];
      EXPECT_EQ(book.ApplyMessage(m), marketdata::BookError::kOk)
          << "message " << messages + 1 << ", record " << r + 1;
      const auto kind = static_cast<MessageKind>(m[0]);
      ++counts.kinds[kind];
      if (kind == MessageKind::kOrderExecuted) {
        // One execution per match: match ids 1, 2, 3, ... with no gap.
        EXPECT_EQ(MessageAs<feed::OrderExecuted>(m).match_id, next_match++);
      } else if (kind == MessageKind::kOrderDeleted) {
        deleted.insert(MessageAs<feed::OrderDeleted>(m).order_id);
      } else if (kind == MessageKind::kOrderAdded &&
                 deleted.contains(MessageAs<feed::OrderAdded>(m).order_id)) {
        ++counts.deleted_then_added;
      }
    }
    if (r < every_until || r % stride == 0 || r + 1 == records.size()) {
      EXPECT_EQ(BookOrders(book), EngineOrders(run.machine().engine()))
          << "after record " << r + 1;
    }
    if (::testing::Test::HasFailure()) return counts;
  }
  EXPECT_EQ(next_match, run.machine().engine().next_match_id());
  return counts;
}

// The heart of the contract: a subscriber applying the feed holds the
// engine's books, order by order and in queue order, after every record:
// a `mixed` session (every command kind, self-trades, rejects) and a
// `churn` session (replaces that keep priority, reprice and cross), each
// checked to make every kind of order message; then three sessions
// trading together (their cancels and replaces mostly refused: the
// generators follow engines of their own), checked every 25th record.
TEST(FeedFromTheJournal, ABookMadeFromTheFeedIsTheEnginesAfterEveryRecord) {
  for (const auto workload :
       {workload::Workload::kMixed, workload::Workload::kChurn}) {
    SCOPED_TRACE(std::string(workload::Name(workload)));
    const KindCounts counts =
        BookAgainstEngine(OneStream(workload, 6000, 21), 6000, 1);
    ASSERT_FALSE(::testing::Test::HasFailure());
    for (const MessageKind kind :
         {MessageKind::kOrderAdded, MessageKind::kOrderExecuted,
          MessageKind::kOrderReduced, MessageKind::kOrderDeleted,
          MessageKind::kOrderReplaced}) {
      EXPECT_GT(counts.kinds.count(kind) ? counts.kinds.at(kind) : 0u, 20u)
          << "kind 0x" << std::hex << static_cast<int>(kind);
    }
    EXPECT_GE(counts.deleted_then_added, 1u);
  }
  const std::vector<std::pair<std::uint32_t, Bytes>> records =
      InterleavedStreams(3000);
  const auto mass_cancels =
      std::count_if(records.begin(), records.end(), [](const auto& record) {
        return record.second[codec::kKindOffset] ==
               static_cast<std::byte>(codec::Kind::kMassCancel);
      });
  EXPECT_GT(mass_cancels, 20);
  const auto lapses_and_goodbyes =
      std::count_if(records.begin(), records.end(), [](const auto& record) {
        return record.second[codec::kKindOffset] ==
               static_cast<std::byte>(codec::Kind::kGoodbye);
      });
  EXPECT_GT(lapses_and_goodbyes, 40);
  KindCounts together = BookAgainstEngine(records, 0, 25);
  EXPECT_GT(together.kinds[MessageKind::kOrderExecuted], 1000u);
}

// The feed's state is state: a machine restored from a snapshot taken at
// any of several points makes, from there, the very messages with the very
// numbers of a machine that applied everything (restart == replay), also
// across a reconfiguration made before the snapshot and shown after it.
TEST(FeedFromTheJournal, ASnapshotCarriesTheFeedOnByteForByte) {
  const auto records = InterleavedStreams(1500);
  engine::EngineConfig narrower;
  narrower.max_instrument = 16;
  // The reference: every record, reconfigured before record 2001.
  FeedRun reference;
  std::vector<std::size_t> messages_before(records.size() + 1, 0);
  for (std::size_t r = 0; r < records.size(); ++r) {
    if (r == 2000) {
      ASSERT_TRUE(reference.machine().Reconfigure(narrower, 1024).ok());
    }
    messages_before[r] = reference.messages().size();
    reference.Apply(records[r].first, records[r].second, 1000 + r,
                    StreamFlags(records[r]));
  }
  for (const std::size_t at : {std::size_t{1}, std::size_t{1999},
                               std::size_t{2000}, std::size_t{3333}}) {
    SCOPED_TRACE("snapshot after record " + std::to_string(at));
    FeedRun first;
    for (std::size_t r = 0; r < at; ++r) {
      if (r == 2000) {
        ASSERT_TRUE(first.machine().Reconfigure(narrower, 1024).ok());
      }
      first.Apply(records[r].first, records[r].second, 1000 + r,
                  StreamFlags(records[r]));
    }
    // At 2000 the snapshot is taken after the reconfiguration, before the
    // record that shows it.
    if (at == 2000) {
      ASSERT_TRUE(first.machine().Reconfigure(narrower, 1024).ok());
    }
    auto loaded =
        DecodeSnapshot(EncodeSnapshot(first.machine(), 7, 0), "feed-state", 7);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->machine->feed_producer().next_sequence(),
              messages_before[at] + 1);
    FeedRun restored(std::move(loaded->machine));
    for (std::size_t r = at; r < records.size(); ++r) {
      if (r == 2000 && at < 2000) {
        ASSERT_TRUE(restored.machine().Reconfigure(narrower, 1024).ok());
      }
      restored.Apply(records[r].first, records[r].second, 1000 + r,
                     StreamFlags(records[r]));
    }
    const auto& all = reference.messages();
    ASSERT_EQ(restored.messages().size(), all.size() - messages_before[at]);
    for (std::size_t i = 0; i < restored.messages().size(); ++i) {
      ASSERT_EQ(restored.messages()[i], all[messages_before[at] + i])
          << "message " << messages_before[at] + i + 1;
    }
  }
}

// The timestamp of the last message (the snapshot server's S): 0 before
// any, then its record's receive_ns; a record without message keeps it; a
// state restored from a snapshot file does not know it until a message.
TEST(FeedFromTheJournal, KnowsTheTimestampOfItsLastMessageUnlessRestored) {
  using feed::golden::kT1;
  using feed::golden::kT2;
  FeedRun run(Instrument42());
  EXPECT_EQ(run.machine().feed_producer().last_timestamp(), 0u);
  const auto limit = [&](std::uint32_t session, std::uint32_t instrument,
                         Side side) {
    return Frame(run.Next(session), Limit({.account_id = session,
                                           .client_order_id = 1,
                                           .instrument_id = instrument,
                                           .side = side,
                                           .price = 10050,
                                           .quantity = 300}));
  };
  EXPECT_EQ(run.Apply(1, limit(1, 42, Side::kBuy), kT1), 4u);
  EXPECT_EQ(run.machine().feed_producer().last_timestamp(), kT1);
  EXPECT_EQ(run.Apply(2, limit(2, 43, Side::kSell), kT2), 0u);  // rejected
  EXPECT_EQ(run.machine().feed_producer().last_timestamp(), kT1);
  auto loaded =
      DecodeSnapshot(EncodeSnapshot(run.machine(), 7, 0), "feed-state", 7);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  FeedRun restored(std::move(loaded->machine));
  EXPECT_EQ(restored.machine().feed_producer().last_timestamp(), std::nullopt);
  EXPECT_EQ(restored.Apply(3,
                           Frame(restored.Next(3), Limit({.account_id = 3,
                                                          .client_order_id = 1,
                                                          .instrument_id = 42,
                                                          .side = Side::kSell,
                                                          .price = 10050,
                                                          .quantity = 100})),
                           kT2),
            1u);
  EXPECT_EQ(restored.machine().feed_producer().last_timestamp(), kT2);
}

}  // namespace
}  // namespace orderwire::state
