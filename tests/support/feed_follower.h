// FeedFollower: a subscriber of the live market-data feed for end-to-end
// tests across a publisher's SIGKILL and restart or a standby's takeover
// (docs/MARKETDATA.md "Sequence numbers and sessions", "A subscriber"): a
// marketdata::Subscriber following the feed from sequence 1, fed from one
// UDP socket on 127.0.0.1 (the publishers' --md-target) by a thread of its
// own, sending each request to every request server it is given (one that
// is down or not serving yet does not answer; the subscriber asks again, or
// recovers by snapshot). It keeps what a test checks afterwards: every
// datagram received with its source, and in order every message applied
// and every snapshot applied (with the book right after it).
//
// The checks compare it with a journal (ReplayJournalBySession): what it
// applied and holds is the journal's feed and the engine's books, every
// packet agrees with that feed, and each publisher that started after
// another continued the feed where its recovered state ends. A breach fails
// the test (gtest EXPECTs); nothing throws.
//
// Threading: the follower's thread owns the subscriber; next_sequence() and
// WaitForNext() lock; the other accessors are for after Stop(). Part of
// orderwire::test_support_service.
#ifndef ORDERWIRE_TESTS_SUPPORT_FEED_FOLLOWER_H_
#define ORDERWIRE_TESTS_SUPPORT_FEED_FOLLOWER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "net/udp.h"
#include "tests/support/bytes.h"
#include "tests/support/journal_replay.h"

namespace orderwire::test_support {

// A datagram the follower received, and where from.
struct ReceivedPacket {
  net::Endpoint from;
  Bytes bytes;
};

// A message the subscriber applied (its sequence and bytes), or a snapshot
// it applied (S, and every order of its book right after).
struct FollowedEvent {
  bool snapshot = false;
  std::uint64_t sequence = 0;
  Bytes message;
  std::vector<marketdata::BookOrder> book;
};

class FeedFollower : private marketdata::SubscriberListener {
 public:
  // `heartbeat_ns`: the publishers' --md-heartbeat-ms, in ns.
  FeedFollower(std::vector<net::Endpoint> request_servers,
               std::int64_t heartbeat_ns);
  FeedFollower(const FeedFollower&) = delete;
  FeedFollower& operator=(const FeedFollower&) = delete;
  ~FeedFollower() override;

  // Where the feed is to be sent (--md-target).
  [[nodiscard]] const net::Endpoint& endpoint() const { return endpoint_; }
  // The sequence the subscriber expects next.
  [[nodiscard]] std::uint64_t next_sequence();
  // Waits until the subscriber expects `next` or later; false after
  // `timeout`.
  bool WaitForNext(std::uint64_t next, std::chrono::milliseconds timeout);
  // Waits until the live feed is idle (the last live packet received is a
  // Heartbeat) and the subscriber expects that Heartbeat's sequence or
  // later: every message published so far is applied. A test calls it
  // before stopping the publisher whose request server fills the last gap
  // (a message no publisher sent live, its publisher killed first); false
  // after `timeout`.
  bool WaitCaughtUp(std::chrono::milliseconds timeout);
  // Summary(subscriber()) while the thread runs (it locks).
  [[nodiscard]] std::string SummaryNow();
  // Stops and joins the thread (idempotent).
  void Stop();

  // After Stop().
  [[nodiscard]] const marketdata::Subscriber& subscriber() const {
    return *subscriber_;
  }
  [[nodiscard]] const std::vector<ReceivedPacket>& packets() const {
    return packets_;
  }
  [[nodiscard]] const std::vector<FollowedEvent>& events() const {
    return events_;
  }

 private:
  void Loop();
  void NoteLive(std::span<const std::byte> datagram);
  void SendRequest(std::span<const std::byte> request) override;
  void OnMessage(std::uint64_t sequence, feed::MessageBlock message) override;
  void OnSnapshot(std::uint64_t feed_sequence) override;

  std::vector<net::Endpoint> servers_;
  std::optional<net::UdpSocket> socket_;
  net::Endpoint endpoint_;
  net::DatagramBatch rx_{64};
  net::DatagramBatch tx_;
  std::unique_ptr<marketdata::Subscriber> subscriber_;
  std::vector<ReceivedPacket> packets_;
  std::vector<FollowedEvent> events_;
  // The last live packet's sequence if it was a Heartbeat, else 0.
  std::uint64_t idle_next_ = 0;
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One line of what the subscriber did, for a test's output: its state,
// next sequence, gaps, requests and their answers by kind, snapshots.
std::string Summary(const marketdata::Subscriber& subscriber);

// Every order of `book`, in Book::ForEachOrder's order.
std::vector<marketdata::BookOrder> OrdersOf(const marketdata::Book& book);

// The books after messages 1 to `through` of `feed` (feed[i]: sequence
// i + 1), each message applied without error.
marketdata::Book BookOfFeed(const std::vector<Bytes>& feed,
                            std::uint64_t through);

// After Stop(): the follower ends following `replay.feed` at its end (or
// Stale after it, the publishers stopped), with nothing refused as
// malformed (another session's packets included) and no contradiction;
// every message it applied is the journal's at that number, in one
// contiguous sequence (a snapshot at S continues it at S + 1, its book the
// journal's at S); every Data packet it received, live or resent, carries
// the journal's messages; and its book is the engine's
// (`replay.live_orders`, queue by queue).
void ExpectFollowedTheJournalsFeed(const FeedFollower& follower,
                                   const SessionReplay& replay);

// The live feed of one publisher (packets with token 0 from one source).
struct PublisherRun {
  net::Endpoint from;
  std::uint64_t start = 0;  // its first packet's (a Heartbeat) sequence
  std::uint64_t end = 0;    // one past the last message it sent (start: none)
};

// The live packets of `packets` by publisher, in the order each first
// appears. Each publisher's first packet is a Heartbeat with the next
// sequence of its recovered state; its Data packets hold messages from
// there on, ascending, each once, and its Heartbeats the next sequence;
// one that starts after another starts at or after where the other's
// messages ended. Each breach fails the test.
std::vector<PublisherRun> ExpectEachPublisherContinuesTheFeed(
    const std::vector<ReceivedPacket>& packets);

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_FEED_FOLLOWER_H_
