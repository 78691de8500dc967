// The feed follower of end-to-end feed tests; see feed_follower.h.
#include "tests/support/feed_follower.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "feed/packet.h"
#include "gtest/gtest.h"

namespace orderwire::test_support {

FeedFollower::FeedFollower(std::vector<net::Endpoint> request_servers,
                           std::int64_t heartbeat_ns)
    : servers_(std::move(request_servers)),
      tx_(std::max<std::size_t>(1, servers_.size())) {
  absl::StatusOr<net::UdpSocket> socket =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  EXPECT_TRUE(socket.ok()) << socket.status();
  if (!socket.ok()) return;
  socket_.emplace(*std::move(socket));
  endpoint_ = *socket_->LocalEndpoint();
  marketdata::SubscriberOptions options;
  options.first_sequence = 1;  // it listens from the feed's start
  options.heartbeat_interval_ns = heartbeat_ns;
  marketdata::SubscriberListener& listener = *this;
  subscriber_ = std::make_unique<marketdata::Subscriber>(options, listener);
  thread_ = std::thread([this] { Loop(); });
}

FeedFollower::~FeedFollower() { Stop(); }

std::uint64_t FeedFollower::next_sequence() {
  std::lock_guard lock(mu_);
  return subscriber_ == nullptr ? 0 : subscriber_->next_sequence();
}

bool FeedFollower::WaitForNext(std::uint64_t next,
                               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (next_sequence() < next) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool FeedFollower::WaitCaughtUp(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (subscriber_ == nullptr) return false;
      if (idle_next_ != 0 && subscriber_->next_sequence() >= idle_next_) {
        return true;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string FeedFollower::SummaryNow() {
  std::lock_guard lock(mu_);
  return subscriber_ == nullptr ? "no subscriber" : Summary(*subscriber_);
}

void FeedFollower::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void FeedFollower::Loop() {
  while (!stop_.load()) {
    const bool readable = socket_->WaitReadable(5);
    std::lock_guard lock(mu_);
    const std::int64_t now = base::MonotonicNs();
    if (readable) {
      const int n = socket_->Receive(rx_, rx_.capacity());
      for (int i = 0; i < n; ++i) {
        const auto slot = static_cast<std::size_t>(i);
        const std::span<const std::byte> d = rx_.datagram(slot);
        packets_.push_back({rx_.peer(slot), Bytes(d.begin(), d.end())});
        NoteLive(d);
        subscriber_->OnPacket(d, now);
      }
    }
    subscriber_->Poll(now);
  }
}

void FeedFollower::NoteLive(std::span<const std::byte> datagram) {
  const auto view =
      feed::PacketView::Parse(datagram, feed::SessionFilter::Any());
  if (!view.ok() || view->token() != 0) return;  // a reply, or malformed
  idle_next_ =
      view->type() == feed::PacketType::kHeartbeat ? view->sequence() : 0;
}

void FeedFollower::SendRequest(std::span<const std::byte> request) {
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    std::copy(request.begin(), request.end(), tx_.buffer(i).begin());
    tx_.set_length(i, request.size());
    tx_.set_peer(i, servers_[i]);
  }
  (void)socket_->Send(tx_, servers_.size());  // lost: asked again
}

void FeedFollower::OnMessage(std::uint64_t sequence,
                             feed::MessageBlock message) {
  FollowedEvent event;
  event.sequence = sequence;
  event.message.assign(message.bytes().begin(), message.bytes().end());
  events_.push_back(std::move(event));
}

void FeedFollower::OnSnapshot(std::uint64_t feed_sequence) {
  FollowedEvent event;
  event.snapshot = true;
  event.sequence = feed_sequence;
  event.book = OrdersOf(subscriber_->book());
  events_.push_back(std::move(event));
}

std::string Summary(const marketdata::Subscriber& subscriber) {
  const marketdata::SubscriberCounters& c = subscriber.counters();
  std::string refused;
  for (std::size_t r = 1; r < c.refused.size(); ++r) {
    if (c.refused[r] == 0) continue;
    absl::StrAppend(&refused, refused.empty() ? "" : ", ", "reason ", r, " x",
                    c.refused[r]);
  }
  return absl::StrCat(
      "subscriber ", std::string(marketdata::Name(subscriber.state())),
      ", next ", subscriber.next_sequence(), ": ", c.gaps, " gaps, ",
      c.retransmit_requests, " retransmission requests (", c.retransmit_replies,
      " Data replies, refused: ", refused.empty() ? "none" : refused, ", ",
      c.stale_replies, " stale), ", c.snapshot_requests, " snapshot requests, ",
      c.snapshots_completed, " snapshots, ", c.contradictions,
      " contradictions, ", subscriber.held(), " packets held");
}

std::vector<marketdata::BookOrder> OrdersOf(const marketdata::Book& book) {
  std::vector<marketdata::BookOrder> orders;
  book.ForEachOrder(
      [&](const marketdata::BookOrder& o) { orders.push_back(o); });
  return orders;
}

marketdata::Book BookOfFeed(const std::vector<Bytes>& feed,
                            std::uint64_t through) {
  marketdata::Book book;
  for (std::uint64_t s = 1; s <= through && s <= feed.size(); ++s) {
    EXPECT_EQ(book.ApplyMessage(feed[s - 1]), marketdata::BookError::kOk)
        << "feed message " << s;
  }
  return book;
}

namespace {

// Orders by queue: (instrument, side) -> its orders in priority order.
using Queues =
    std::map<std::pair<std::uint32_t, int>, std::vector<marketdata::BookOrder>>;

Queues QueuesOf(const std::vector<marketdata::BookOrder>& orders) {
  Queues queues;
  for (const marketdata::BookOrder& o : orders) {
    queues[{o.instrument_id.value(), static_cast<int>(o.side)}].push_back(o);
  }
  return queues;
}

// The subscriber's messages and snapshots continue one another: message
// numbers run on by one, a snapshot at S (its book the journal's at S)
// continues at S + 1; each message is the journal's; the
// first few mismatches reported.
void ExpectAppliedIsTheFeed(const std::vector<FollowedEvent>& events,
                            const std::vector<Bytes>& feed) {
  std::uint64_t expected = 1;
  std::size_t mismatches = 0;
  for (const FollowedEvent& e : events) {
    if (e.snapshot) {
      ASSERT_LE(e.sequence, feed.size()) << "a snapshot past the journal";
      EXPECT_TRUE(QueuesOf(e.book) ==
                  QueuesOf(OrdersOf(BookOfFeed(feed, e.sequence))))
          << "the snapshot at " << e.sequence << " is not the journal's books";
      expected = e.sequence + 1;
      continue;
    }
    const bool ok = e.sequence == expected && e.sequence <= feed.size() &&
                    e.message == feed[e.sequence - 1];
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << "applied message " << e.sequence << " (expected "
                    << expected << ") is not the journal's feed message";
    }
    expected = e.sequence + 1;
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(expected, feed.size() + 1);
}

// Every packet is of `session`; every Data packet's messages are the
// journal's at their numbers; Heartbeats and EndOfSessions say no more
// than the journal has. The first few breaches are reported.
void ExpectPacketsAgreeWithTheFeed(const std::vector<ReceivedPacket>& packets,
                                   std::uint64_t session,
                                   const std::vector<Bytes>& feed) {
  std::size_t mismatches = 0;
  for (const ReceivedPacket& p : packets) {
    const auto view =
        feed::PacketView::Parse(p.bytes, feed::SessionFilter::Any());
    ASSERT_TRUE(view.ok()) << "a malformed packet from " << p.from.ToString();
    if (view->session() != session && ++mismatches <= 5) {
      ADD_FAILURE() << "a packet of session " << view->session() << " from "
                    << p.from.ToString() << ", following " << session;
    }
    if (view->type() == feed::PacketType::kHeartbeat ||
        view->type() == feed::PacketType::kEndOfSession) {
      EXPECT_LE(view->sequence(), feed.size() + 1);
    }
    if (view->type() != feed::PacketType::kData) continue;
    std::uint64_t sequence = view->sequence();
    for (const feed::MessageBlock block : *view) {
      const bool ok =
          sequence <= feed.size() &&
          std::equal(block.bytes().begin(), block.bytes().end(),
                     feed[sequence - 1].begin(), feed[sequence - 1].end());
      if (!ok && ++mismatches <= 5) {
        ADD_FAILURE() << "message " << sequence << " from " << p.from.ToString()
                      << " contradicts the journal";
      }
      ++sequence;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

}  // namespace

void ExpectFollowedTheJournalsFeed(const FeedFollower& follower,
                                   const SessionReplay& replay) {
  const marketdata::Subscriber& s = follower.subscriber();
  ASSERT_GT(replay.feed.size(), 0u);
  // Following, or Stale once the last publisher stopped.
  EXPECT_TRUE(s.state() == marketdata::SubscriberState::kFollowing ||
              s.state() == marketdata::SubscriberState::kStale)
      << marketdata::Name(s.state());
  EXPECT_EQ(s.next_sequence(), replay.feed.size() + 1);
  EXPECT_NE(s.session(), 0u);
  EXPECT_EQ(s.counters().contradictions, 0u);
  for (std::size_t cause = 1; cause < s.counters().malformed.size(); ++cause) {
    EXPECT_EQ(s.counters().malformed[cause], 0u) << "check cause " << cause;
  }
  ExpectAppliedIsTheFeed(follower.events(), replay.feed);
  ExpectPacketsAgreeWithTheFeed(follower.packets(), s.session(), replay.feed);
  std::vector<marketdata::BookOrder> engine;
  for (const engine::OrderInfo& o : replay.live_orders) {
    engine.push_back({.order_id = o.order_id,
                      .instrument_id = o.instrument_id,
                      .side = o.side,
                      .price = o.price,
                      .quantity = o.leaves_quantity});
  }
  EXPECT_TRUE(QueuesOf(OrdersOf(s.book())) == QueuesOf(engine))
      << "the subscriber's books (" << s.book().order_count()
      << " orders) are not the engine's (" << engine.size() << ")";
  EXPECT_GT(engine.size(), 0u) << "no resting order to compare";
}

std::vector<PublisherRun> ExpectEachPublisherContinuesTheFeed(
    const std::vector<ReceivedPacket>& packets) {
  std::vector<PublisherRun> runs;
  std::uint64_t ended = 1;  // past the last message any earlier run sent
  for (const ReceivedPacket& p : packets) {
    const auto view =
        feed::PacketView::Parse(p.bytes, feed::SessionFilter::Any());
    if (!view.ok() || view->token() != 0) continue;  // checked elsewhere
    auto run = std::find_if(runs.begin(), runs.end(),
                            [&](const auto& r) { return r.from == p.from; });
    if (run == runs.end()) {
      EXPECT_EQ(view->type(), feed::PacketType::kHeartbeat)
          << "publisher " << runs.size() + 1 << " did not start with one";
      EXPECT_GE(view->sequence(), ended)
          << "publisher " << runs.size() + 1 << " starts below what was sent";
      runs.push_back({p.from, view->sequence(), view->sequence()});
      run = runs.end() - 1;
    }
    const std::uint64_t first = view->sequence();
    if (view->type() == feed::PacketType::kData) {
      EXPECT_GE(first, run->end)
          << "a message sent live twice, or below the publisher's start";
      run->end = first + view->count();
      ended = std::max(ended, run->end);
    } else if (view->type() == feed::PacketType::kHeartbeat ||
               view->type() == feed::PacketType::kEndOfSession) {
      EXPECT_GE(first, run->end) << "a Heartbeat below what was sent";
    }
  }
  return runs;
}

}  // namespace orderwire::test_support
