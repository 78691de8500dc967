// marketdata::Subscriber on a lossy network: a feed made by a
// state::StateMachine from random commands (three instruments, narrow
// prices, so it trades), packed into live packets with feed::PacketBuilder;
// 1% of packets lost, bursts lost, some duplicated; a request server model
// that keeps every message (retransmissions, at most 1024 a reply), builds
// snapshots from its own Book replica at the feed's current point, refuses
// some requests RateLimited and goes deaf for a while now and then (so
// tries run out and snapshots recover). Whatever happens, the subscriber's
// book must end equal to the engine's live orders, and to a Book fed every
// message in order.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "engine/engine.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "state/state_machine.h"
#include "tests/marketdata/book_test_support.h"
#include "tests/marketdata/subscriber_test_support.h"

namespace orderwire::marketdata::subscriber_lossy {
namespace {

using subscriber_test::Bytes;
using subscriber_test::FeedScript;
using subscriber_test::SentRequest;

constexpr std::uint32_t kLossyInstruments = 3;
constexpr std::uint64_t kLossySession = 0xFEED0001;
constexpr std::int64_t kStepNs = 1'000'000;  // 1 ms a live packet

// Random commands: limits (some crossing), cancels and replaces.
class LossyCommands {
 public:
  explicit LossyCommands(std::mt19937_64& rng) : rng_(rng) {}

  codec::Command Next(const engine::Engine& engine) {
    ++sequence_;
    const std::uint64_t roll = Below(100);
    if (roll >= 60 && next_id_ > 1) {
      const std::uint64_t id = 1 + Below(next_id_ - 1);
      if (const auto order = engine.FindOrder(codec::OrderId(id))) {
        if (roll < 85) {
          return codec::Command::From(
              sequence_, codec::CancelByOrder{order->account_id.value(), id});
        }
        return codec::Command::From(
            sequence_,
            codec::Replace{order->account_id.value(), id, ++client_order_id_,
                           Price(), 1 + Below(50)});
      }
    }
    return codec::Command::From(
        sequence_,
        codec::NewLimit{
            1 + Below(3), ++client_order_id_,
            static_cast<std::uint32_t>(1 + Below(kLossyInstruments)),
            Below(2) == 0 ? codec::Side::kBuy : codec::Side::kSell,
            codec::TimeInForce::kGoodTillCancel, Price(), 1 + Below(50)});
  }
  void Note(const engine::Engine& engine) {
    next_id_ = engine.next_order_id().value();
  }

 private:
  std::uint64_t Below(std::uint64_t n) { return rng_() % n; }
  std::int64_t Price() { return 995 + static_cast<std::int64_t>(Below(11)); }

  std::mt19937_64& rng_;
  std::uint64_t sequence_ = 0;
  std::uint64_t client_order_id_ = 0;
  std::uint64_t next_id_ = 1;
};

// The publisher and request server: every message kept, a Book replica at
// the published point for snapshots.
class LossyServer {
 public:
  explicit LossyServer(std::mt19937_64& rng)
      : rng_(rng), script_(kLossySession) {}

  // Publishes messages up to script().next() - 1 (already added).
  void Publish(std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t s = first; s <= last; ++s) {
      ASSERT_EQ(replica_.ApplyMessage(script_.message(s)), BookError::kOk);
    }
  }
  // Answers one request: the datagrams to deliver (some lost).
  std::vector<Bytes> Answer(const SentRequest& r, std::int64_t now_ns) {
    ++requests_;
    if (now_ns < deaf_until_ns_ || Chance(10)) return {};
    if (Chance(50)) deaf_until_ns_ = now_ns + 200 * kStepNs;  // an outage
    if (Chance(100)) {
      return {script_.Refused(r.sequence, r.token,
                              feed::RefusedReason::kRateLimited)};
    }
    const std::uint64_t next = script_.next();
    if (r.type == feed::PacketType::kSnapshotRequest) {
      ++snapshots_;
      std::vector<Bytes> packets = subscriber_test::SnapshotOf(
          replica_, kLossySession, r.token, next - 1, 20);
      if (packets.size() > 2 && Chance(20)) std::swap(packets[0], packets[1]);
      return Lossy(std::move(packets));
    }
    if (r.sequence >= next) {
      return {script_.Refused(r.sequence, r.token,
                              feed::RefusedReason::kBeyondEnd)};
    }
    const std::uint64_t last =
        std::min<std::uint64_t>(r.sequence + r.count, next) - 1;
    return Lossy(script_.Packets(r.sequence, last, r.token));
  }

  FeedScript& script() { return script_; }
  [[nodiscard]] const Book& replica() const { return replica_; }
  [[nodiscard]] int snapshots() const { return snapshots_; }
  [[nodiscard]] int requests() const { return requests_; }
  bool Chance(int percent_tenths) {
    return static_cast<int>(rng_() % 1000) < percent_tenths;
  }

 private:
  std::vector<Bytes> Lossy(std::vector<Bytes> packets) {
    std::vector<Bytes> out;
    for (Bytes& p : packets) {
      if (!Chance(10)) out.push_back(std::move(p));
    }
    return out;
  }

  std::mt19937_64& rng_;
  FeedScript script_;
  Book replica_;
  std::int64_t deaf_until_ns_ = 0;
  int snapshots_ = 0;
  int requests_ = 0;
};

// Collects the requests, answered after the subscriber's call returns.
class QueueListener : public SubscriberListener {
 public:
  void SendRequest(std::span<const std::byte> request) override {
    pending.push_back(subscriber_test::DecodeRequest(request));
  }
  std::deque<SentRequest> pending;
};

struct LossyRun {
  int commands;
  int join_after;  // commands before the subscriber starts
};

class LossyHarness {
 public:
  explicit LossyHarness(std::uint64_t seed)
      : rng_(seed), server_(rng_), commands_(rng_) {
    state::StateMachineOptions options;
    options.engine.min_instrument = 1;
    options.engine.max_instrument = kLossyInstruments;
    machine_.emplace(options);
  }

  void Run(const LossyRun& run) {
    SubscriberOptions options;
    options.hold_packets = 64;
    options.hold_bytes = 64 * 1024;
    options.first_sequence = run.join_after == 0 ? 1 : 0;
    for (int i = 0; i < run.commands; ++i) {
      if (i == run.join_after) sub_.emplace(options, listener_);
      Command(i);
      if (::testing::Test::HasFatalFailure()) return;
    }
    Drain();
  }

  void ExpectBooksEqual() {
    Book reference;
    for (std::uint64_t s = 1; s < server_.script().next(); ++s) {
      ASSERT_EQ(reference.ApplyMessage(server_.script().message(s)),
                BookError::kOk);
    }
    ASSERT_EQ(sub_->next_sequence(), server_.script().next());
    EXPECT_EQ(test::Dump(sub_->book()), test::Dump(reference));
    std::vector<BookOrder> engine_orders;
    machine_->engine().ForEachLiveOrder([&](const engine::OrderInfo& o) {
      engine_orders.push_back(
          {o.order_id, o.instrument_id, o.side, o.price, o.leaves_quantity});
    });
    EXPECT_EQ(test::Orders(sub_->book()), engine_orders);
    EXPECT_GT(engine_orders.size(), 10U);
  }

  [[nodiscard]] const Subscriber& sub() const { return *sub_; }
  [[nodiscard]] const LossyServer& server() const { return server_; }

 private:
  void Command(int i) {
    const codec::Command command = commands_.Next(machine_->engine());
    std::array<std::byte, codec::kMaxFrameSize> frame{};
    const auto size = codec::EncodeCommand(command, frame);
    ASSERT_TRUE(size.ok());
    const auto index = static_cast<std::uint64_t>(i) + 1;
    ASSERT_TRUE(machine_
                    ->Apply(state::Record{index, 1000 + index, 1, 0,
                                          std::span(frame).first(*size)})
                    .ok());
    commands_.Note(machine_->engine());
    const std::uint64_t first = server_.script().next();
    for (const state::FeedMessage& m : machine_->feed()) {
      server_.script().AddBytes(Bytes(m.bytes.begin(), m.bytes.end()));
    }
    const std::uint64_t last = server_.script().next() - 1;
    if (last < first) return;
    server_.Publish(first, last);
    for (const Bytes& p : server_.script().Packets(first, last)) Live(p);
    if (i % 20 == 0) Live(server_.script().Heartbeat(last + 1));
  }

  void Live(const Bytes& packet) {
    now_ += kStepNs;
    if (sub_) sub_->Poll(now_);
    if (burst_ > 0) {
      --burst_;
    } else if (server_.Chance(3)) {
      burst_ = 5 + static_cast<int>(rng_() % 30);
    } else if (!server_.Chance(10)) {
      Deliver(packet);
      if (server_.Chance(5)) Deliver(packet);  // duplicated
    }
    Serve();
  }

  void Deliver(const Bytes& packet) {
    if (sub_) sub_->OnPacket(packet, now_);
  }

  void Serve() {
    while (!listener_.pending.empty()) {
      const SentRequest request = listener_.pending.front();
      listener_.pending.pop_front();
      for (const Bytes& reply : server_.Answer(request, now_)) Deliver(reply);
    }
  }

  // The feed stops; heartbeats (none lost) until the subscriber catches up.
  void Drain() {
    const Bytes heartbeat = server_.script().Heartbeat(server_.script().next());
    for (int i = 0;
         i < 20000 && sub_->next_sequence() < server_.script().next(); ++i) {
      now_ += 10 * kStepNs;
      if (i % 50 == 0) sub_->OnPacket(heartbeat, now_);
      sub_->Poll(now_);
      Serve();
    }
  }

  std::mt19937_64 rng_;
  LossyServer server_;
  LossyCommands commands_;
  std::optional<state::StateMachine> machine_;
  QueueListener listener_;
  std::optional<Subscriber> sub_;
  std::int64_t now_ = 1'000'000'000;
  int burst_ = 0;
};

TEST(SubscriberLossy, EndsWithTheEnginesBookFromTheStart) {
  for (const std::uint64_t seed : {21U, 22U, 23U}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    LossyHarness harness(seed);
    harness.Run({6000, 0});
    if (::testing::Test::HasFatalFailure()) return;
    harness.ExpectBooksEqual();
    const SubscriberCounters& c = harness.sub().counters();
    EXPECT_GT(c.gaps, 10U);
    EXPECT_GT(c.retransmit_requests, 10U);
    EXPECT_GT(c.duplicates, 0U);
    EXPECT_GT(c.refused_for(feed::RefusedReason::kRateLimited), 0U);
    EXPECT_GT(c.snapshots_completed, 0U);  // the server's outages
    EXPECT_EQ(c.malformed_for(feed::CheckCause::kOtherSession), 0U);
    EXPECT_EQ(harness.sub().state(), SubscriberState::kFollowing);
  }
}

TEST(SubscriberLossy, EndsWithTheEnginesBookAfterALateJoin) {
  for (const std::uint64_t seed : {31U, 32U}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    LossyHarness harness(seed);
    harness.Run({5000, 2000});
    if (::testing::Test::HasFatalFailure()) return;
    harness.ExpectBooksEqual();
    EXPECT_GT(harness.sub().counters().snapshots_completed, 0U);
  }
}

}  // namespace
}  // namespace orderwire::marketdata::subscriber_lossy
