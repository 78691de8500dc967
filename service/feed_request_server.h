// FeedRequestServer: `serve --md-request-listen`, the feed's request server
// (docs/MARKETDATA.md "Retransmission", "Snapshots"), on a thread of its
// own with a UDP socket of its own.
//
// A RetransmitRequest (S, N) is answered by unicast to its source with Data
// packets, the request's token echoed, holding messages S to S + N' - 1,
// N' = min(N, 1024, next - S), the bytes the live feed sent, from the
// FeedRing the publisher appends to. Checks, in the contract's order: the
// source over its budget (Refused RateLimited, at most once a second per
// source, else dropped), WrongSession, S below what the ring retains
// (NotRetained with F), S at or beyond the next sequence (BeyondEnd). A
// SnapshotRequest is checked the same way (session 0 allowed) and then
// answered Unavailable: this version serves no snapshot yet. A datagram
// that fails RequestView's checks is dropped and counted by cause.
//
// Never the loop's business: the loop appends to the ring (lock-free) and
// reads the counters (relaxed atomics). A flood of requests costs this
// thread's CPU, not the loop's.
//
// Errors: Open() refuses an address it cannot bind (naming it). While
// running, a failed send is counted and the request forgotten (the
// subscriber asks again).
//
// Budgets are per source address (IPv6: per /64), any port; once
// kMaxRequestSources are known, new sources share one budget, so forged
// addresses cannot lock known subscribers out.
//
// Memory: the ring (`ring_bytes`), one reply batch, and per source address
// seen in the last minute a few words, at most kMaxRequestSources.
#ifndef ORDERWIRE_SERVICE_FEED_REQUEST_SERVER_H_
#define ORDERWIRE_SERVICE_FEED_REQUEST_SERVER_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "feed/types.h"
#include "net/udp.h"
#include "service/feed_ring.h"

namespace orderwire::service {

// Messages in one reply, at most (MARKETDATA.md: a larger N is served in
// part).
inline constexpr std::size_t kMaxRetransmitMessages = 1024;
// Source addresses with a budget, at most.
inline constexpr std::size_t kMaxRequestSources = 65536;

struct FeedRequestServerOptions {
  net::Endpoint listen;                            // `--md-request-listen`
  std::size_t ring_bytes = kDefaultFeedRingBytes;  // `--md-ring-bytes`
  // Per source address (any port): requests a second, and the burst.
  double requests_per_second = 100;
  double burst = 100;
};

// What the server did; read from any thread (relaxed).
struct FeedRequestCounters {
  std::uint64_t retransmit_requests = 0;   // answered with messages
  std::uint64_t retransmit_messages = 0;   // messages in those answers
  std::uint64_t snapshot_requests = 0;     // SnapshotRequests received, valid
  std::uint64_t dropped = 0;               // over budget beyond the Refused
  std::uint64_t send_failures = 0;         // reply datagrams not sent
  std::uint64_t sources = 0;               // addresses seen in the last minute
  std::array<std::uint64_t, 8> refused{};  // by feed::RefusedReason
  std::array<std::uint64_t, feed::kCheckCauseCount> malformed{};  // by cause
};

class FeedRequestServer {
 public:
  // Binds `options.listen` and allocates the ring; serves nothing before
  // Start().
  static absl::StatusOr<std::unique_ptr<FeedRequestServer>> Open(
      const FeedRequestServerOptions& options);
  // Stops the thread (if started).
  ~FeedRequestServer();
  FeedRequestServer(const FeedRequestServer&) = delete;
  FeedRequestServer& operator=(const FeedRequestServer&) = delete;

  // The ring the publisher appends to (FeedPublisher::set_ring). Reset it
  // before Start().
  [[nodiscard]] FeedRing& ring() noexcept { return ring_; }
  // Starts answering for the feed `session`.
  void Start(std::uint64_t session);
  // Stops answering (the thread joined within 100 ms); idempotent. The
  // service stops it when Run() returns: a stopped primary, or one that
  // lost its lease, answers nothing more.
  void Stop();

  [[nodiscard]] const net::Endpoint& local_endpoint() const noexcept {
    return local_;
  }
  [[nodiscard]] FeedRequestCounters counters() const noexcept;
  [[nodiscard]] std::string description() const;

 private:
  friend class FeedRequestHandler;
  struct State;
  FeedRequestServer(const FeedRequestServerOptions& options,
                    net::UdpSocket socket, net::Endpoint local);
  void Run();
  // Sends the replies queued in the State's tx batch.
  void SendReplies();
  // Forgets sources idle for a minute; updates the sources gauge.
  void Sweep(std::int64_t now_ns);

  FeedRequestServerOptions options_;
  net::UdpSocket socket_;
  net::Endpoint local_;
  FeedRing ring_;
  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_FEED_REQUEST_SERVER_H_
