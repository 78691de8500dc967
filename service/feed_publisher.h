// FeedPublisher: the live market-data feed of `serve --md-target`
// (docs/MARKETDATA.md "Publishing", "Sequence numbers and sessions",
// "Durability and determinism").
//
// The loop hands it the feed messages of each record it applies, once the
// record is answerable (StateMachine::feed(), after Apply in the same pass
// as the record's reports), and calls Flush() at the end of the pass: the
// messages go out packed greedily into Data packets of at most
// feed::kMaxPacketBytes, consecutive and ascending, none split, each packet
// to every target (one multicast group, or each of a list of unicast
// destinations: the same bytes). Start() sends a Heartbeat with the next
// sequence of the recovered state and makes it the first the live feed
// sends; Tick() sends a Heartbeat whenever no packet has gone for the
// heartbeat interval; End() sends EndOfSession three times, 1 ms apart, on
// a clean stop. Before Start() nothing is sent (Tick(), Flush() and End()
// do nothing): after an accepted loss the service starts it at the first
// record, whose feed session only then exists. Only the service's primary
// owns one (a standby's is made
// when it takes over, in the primary it becomes).
//
// Errors: Open() refuses, naming the flag, a target list that is empty,
// longer than kMaxFeedTargets, of mixed address families, a multicast
// setting the kernel refuses (an unknown interface), or a socket it cannot
// make. Sending never fails the service: a packet the kernel does not take
// (the socket buffer full, no route) is lost and counted (send_failures);
// a subscriber sees the gap and asks the request server. The first failure
// after a success is reported through `on_event`, the rest only counted.
//
// Cost: Add() copies each message once, into its packet; Flush() is one
// sendmmsg per up to kFeedPacketsPerSend packets x targets (none when
// nothing is waiting). Nothing allocates after Open(). Not thread-safe: the
// loop's thread only.
#ifndef ORDERWIRE_SERVICE_FEED_PUBLISHER_H_
#define ORDERWIRE_SERVICE_FEED_PUBLISHER_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "net/udp.h"
#include "service/feed_ring.h"
#include "state/feed_producer.h"

namespace orderwire::service {

// At most this many --md-target destinations.
inline constexpr std::size_t kMaxFeedTargets = 64;
// Packets built before Flush() sends them (a pass that makes more sends
// them as it goes): 64 x 1452 bytes.
inline constexpr std::size_t kFeedPacketsPerSend = 64;
// EndOfSession goes out this many times, kEndOfSessionGapNs apart.
inline constexpr int kEndOfSessionRepeats = 3;
inline constexpr std::int64_t kEndOfSessionGapNs = 1'000'000;

struct FeedPublisherOptions {
  // `--md-target`: a multicast group, or unicast destinations; one address
  // family. Packets go to each, in this order.
  std::vector<net::Endpoint> targets;
  // `--md-ttl`: multicast TTL (IPv4) or hop limit (IPv6), 0 to 255.
  int multicast_ttl = 1;
  // `--md-interface`: the interface multicast leaves by, as an IPv4
  // address of it or its name ("lo", "eth0"); empty: the kernel's route.
  std::string multicast_interface;
  // `--md-heartbeat-ms`: a Heartbeat whenever no packet went for this long.
  std::int64_t heartbeat_ns = 1'000'000'000;
  // Lines for the operator (a send failing after sends succeeded); null:
  // standard error.
  std::function<void(std::string_view)> on_event;
};

// What the publisher sent. Packets and datagrams: a packet sent to three
// unicast targets is one packet and three datagrams.
struct FeedPublisherStats {
  std::uint64_t messages = 0;    // feed messages sent live
  std::uint64_t packets = 0;     // Data packets sent
  std::uint64_t heartbeats = 0;  // Heartbeat packets sent
  std::uint64_t end_of_session = 0;
  std::uint64_t datagrams = 0;      // datagrams the kernel took
  std::uint64_t send_failures = 0;  // datagrams it did not (lost)
  // Messages whose number did not follow the last one's (a bug upstream;
  // each starts a new packet at its own number).
  std::uint64_t sequence_breaks = 0;
};

class FeedPublisher {
 public:
  // The sending socket, bound to an ephemeral port of the targets' family,
  // and its buffers. Errors: see the header comment.
  static absl::StatusOr<std::unique_ptr<FeedPublisher>> Open(
      FeedPublisherOptions options);

  FeedPublisher(const FeedPublisher&) = delete;
  FeedPublisher& operator=(const FeedPublisher&) = delete;
  ~FeedPublisher();

  // Where packets go, for the start-up banner ("multicast 239.1.2.3:7500
  // ttl 1 interface lo" or "unicast to A, B").
  [[nodiscard]] std::string description() const;

  // Every Data packet sent from Start() on is appended to `ring` too (the
  // request server's; null: none). Set before Start().
  void set_ring(FeedRing* ring) noexcept { ring_ = ring; }

  // The feed `session` continues at `next_sequence` (the recovered
  // state's): a Heartbeat now, at `now_ns` (monotonic). Messages below it
  // are never sent live.
  void Start(std::uint64_t session, std::uint64_t next_sequence,
             std::int64_t now_ns);

  // Queues the messages of one applied record, in feed order, continuing
  // the live feed (their sequences follow the last queued). Sends the
  // packets built so far when kFeedPacketsPerSend are waiting. Hot path.
  void Add(std::span<const state::FeedMessage> messages);

  // Sends every packet queued, the last one closed. `answerable_ns`
  // (CLOCK_REALTIME, 0: none) is when the pass found their records
  // answerable: the lag from it to the send is returned (0 when nothing
  // was sent) for the service's histogram.
  std::uint64_t Flush(std::int64_t now_ns, std::uint64_t answerable_ns);

  // A Heartbeat when no packet went for the heartbeat interval.
  void Tick(std::int64_t now_ns) {
    if (now_ns >= next_heartbeat_ns_) Heartbeat(now_ns);
  }
  // When Tick() next has something to do (monotonic ns).
  [[nodiscard]] std::int64_t next_heartbeat_ns() const noexcept {
    return next_heartbeat_ns_;
  }

  // EndOfSession with the next sequence, kEndOfSessionRepeats times,
  // kEndOfSessionGapNs apart (sleeps in between): everything queued is sent
  // first. For a clean stop only.
  void End();

  // The sequence the next message sent live will carry.
  [[nodiscard]] std::uint64_t next_sequence() const noexcept {
    return next_sequence_;
  }
  [[nodiscard]] const FeedPublisherStats& stats() const noexcept {
    return stats_;
  }
  // Targets that are unicast addresses (a multicast group's members are
  // not known).
  [[nodiscard]] std::size_t unicast_targets() const noexcept;

 private:
  struct Buffers;
  FeedPublisher(FeedPublisherOptions options, net::UdpSocket socket);
  absl::Status ConfigureMulticast();
  // Closes the packet being built (if it holds a message) and opens the
  // next one at next_sequence_.
  void ClosePacket();
  // Sends the queued packets to every target and empties the queue.
  void SendQueued(std::int64_t now_ns);
  // Sends `packet` (a Heartbeat or EndOfSession) to every target.
  void SendControl(std::span<const std::byte> packet, std::int64_t now_ns);
  void Heartbeat(std::int64_t now_ns);
  void NoteSent(std::size_t datagrams);
  void NoteFailures(std::size_t datagrams, int error);

  FeedPublisherOptions options_;
  net::UdpSocket socket_;
  std::unique_ptr<Buffers> buffers_;
  FeedRing* ring_ = nullptr;
  std::uint64_t session_ = 0;
  std::uint64_t next_sequence_ = 0;             // of the next message queued
  std::size_t queued_ = 0;                      // packets closed, not yet sent
  std::optional<feed::PacketBuilder> builder_;  // the packet being built
  // No Heartbeat is due before Start().
  std::int64_t next_heartbeat_ns_ = std::numeric_limits<std::int64_t>::max();
  bool failing_ = false;  // the last send failed (reported once)
  FeedPublisherStats stats_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_FEED_PUBLISHER_H_
