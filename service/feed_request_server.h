// FeedRequestServer: `serve --md-request-listen`, the feed's request server
// (docs/MARKETDATA.md "Retransmission", "Snapshots"), on a thread of its
// own with a UDP socket of its own.
//
// A RetransmitRequest (S, N) is answered by unicast to its source with Data
// packets, the request's token echoed, holding messages S to S + N' - 1,
// N' = min(N, 1024, next - S), the bytes the live feed sent, from the
// FeedRing the publisher appends to, or, below the ring, made again from the
// journal (feed_regenerator.h, when Start() is given the journal). Checks,
// in the contract's order: the source over its budget (Refused RateLimited,
// at most once a second per source, else dropped), WrongSession, S below F
// (NotRetained with F: the ring's first, or the journal's first regenerable
// sequence if lower), S at or beyond the next sequence (BeyondEnd), the
// journal cannot be read (Unavailable), the replies' budget below short of
// the reply's N' messages (RateLimited). A datagram that fails
// RequestView's checks is dropped and counted by cause.
//
// Regeneration: one at a time; another request below the ring meanwhile is
// refused Unavailable (the subscriber asks again; the same request again
// too, while its reply is being made, with the first request's token). Each
// pass of the thread applies at most FeedRegeneratorOptions::
// records_per_pass records, then serves what is waiting (retransmissions
// from the ring, snapshot packets), and waits on its socket not at all
// while a regeneration is under way. The regenerator keeps its position
// for a subscriber catching up, and is freed after kRegeneratorIdleNs
// without a request below the ring. A failure (journal damaged, pruned
// under it) is refused Unavailable, counted and reported (`on_event`).
//
// A SnapshotRequest is answered from the FeedReplica (feed_replica.h: the
// books the thread keeps by following the ring, seeded at Start) with the
// Snapshot packets of the books at its S. The source's budget is checked
// first (as above); a request within it ends the snapshot under way to the
// same source address, if any (the subscriber asks again after a loss);
// then, in order: RateLimited (the address started
// kSnapshotsPerSourceMinute snapshots in the last minute); WrongSession
// (neither 0 nor the feed's); UnknownInstrument (neither 0 nor listed);
// Unavailable (kMaxSnapshotsUnderWay under way in all, or the replica lost
// or not yet knowing S's timestamp); RateLimited (the replies' budget below,
// charged the book's orders + 2 and settled with the snapshot's real
// message count once made). The packets are made at once (a copy
// of the books: later messages change nothing of it; O(its orders) on this
// thread, other requests waiting in the socket's buffer) and sent paced at
// `snapshot_bytes_per_second` each, interleaved with the answers to other
// requests: the thread waits at most 1 ms on its socket while a snapshot is
// under way, so retransmissions are answered meanwhile.
//
// Never the loop's business: the loop appends to the ring (lock-free), and
// reads the counters (relaxed atomics); the seed is made once, before the
// thread starts. The thread ("md-requests" in top -H) runs at nice
// kRequestThreadNice: where it shares a CPU with the loop (nice 0) it gets
// about a tenth of it under contention, and never nothing (SCHED_IDLE
// would starve it, retransmission and snapshots stopping whenever the
// machine is busy). Its work is bounded by the budgets below; the kernel's
// cost of receiving a flood is not the thread's
// (docs/BENCHMARKS-MARKETDATA.md measures a flood).
//
// Errors: Open() refuses an address it cannot bind (naming it). While
// running, a failed send is counted and the request forgotten (the
// subscriber asks again).
//
// Budgets are per source address (IPv6: per /64), any port; once
// kMaxRequestSources are known, new sources share one budget, so forged
// addresses cannot lock known subscribers out. Over all sources, replies
// carry at most `retransmit_messages_per_second` messages a second (the
// burst: one second's), snapshots included: a 24-byte request asks for up
// to 1,024 messages and a 28-byte one for the whole book, so without it
// forged sources would make the server an amplifier. Each RateLimited is
// sent at most once a second per source; beyond, the request is dropped.
//
// Memory: the ring (`ring_bytes`), the replica (a marketdata::Book of the
// live orders), one reply batch, each snapshot under way (about 40 bytes an
// order), per source address seen in the last minute a few words, at most
// kMaxRequestSources; with the journal, while regenerating and until idle,
// one StateMachine more (the engine's pools for max_live_orders) and the
// journal's segments mapped.
#ifndef ORDERWIRE_SERVICE_FEED_REQUEST_SERVER_H_
#define ORDERWIRE_SERVICE_FEED_REQUEST_SERVER_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "feed/types.h"
#include "net/udp.h"
#include "service/feed_regenerator.h"
#include "service/feed_replica.h"
#include "service/feed_ring.h"

namespace orderwire::service {

// Messages in one reply, at most (MARKETDATA.md: a larger N is served in
// part).
inline constexpr std::size_t kMaxRetransmitMessages = 1024;
// The request server thread's name and nice value (SCHED_OTHER).
inline constexpr char kRequestThreadName[] = "md-requests";
inline constexpr int kRequestThreadNice = 10;
// Source addresses with a budget, at most.
inline constexpr std::size_t kMaxRequestSources = 65536;
// Snapshots a source address may start in a minute (RateLimited beyond).
inline constexpr std::size_t kSnapshotsPerSourceMinute = 6;
// Snapshots under way in all, at most (Unavailable beyond).
inline constexpr std::size_t kMaxSnapshotsUnderWay = 4;
// Messages a second in all retransmission replies, by default: about
// 40 MB/s of packets.
inline constexpr double kDefaultRetransmitMessagesPerSecond = 1'000'000;
// Request datagrams a second the server reads in all, by default (the
// burst: one second's).
inline constexpr double kDefaultRequestDatagramsPerSecond = 20'000;
// The default pace of one snapshot: 32 MiB/s.
inline constexpr double kDefaultSnapshotBytesPerSecond = 32.0 * (1 << 20);
// The regenerator's machine is freed after this long without a request
// below the ring.
inline constexpr std::int64_t kRegeneratorIdleNs = 10'000'000'000;

struct FeedRequestServerOptions {
  net::Endpoint listen;                            // `--md-request-listen`
  std::size_t ring_bytes = kDefaultFeedRingBytes;  // `--md-ring-bytes`
  // Per source address (any port): requests a second, and the burst.
  double requests_per_second = 100;
  double burst = 100;
  // Each snapshot's packets go out at this rate.
  double snapshot_bytes_per_second = kDefaultSnapshotBytesPerSecond;
  // All sources together: messages a second in retransmission replies
  // (the burst: one second's). A request beyond it is refused
  // RateLimited: forged sources cannot make the server send more.
  double retransmit_messages_per_second = kDefaultRetransmitMessagesPerSecond;
  // All sources together: request datagrams read a second (the burst: one
  // second's). Beyond it the server leaves its socket unread until the
  // budget refills; what the socket's buffer cannot hold meanwhile the
  // kernel drops (its UDP receive-buffer errors). A flood costs the
  // thread at most this many datagrams' work a second.
  double datagrams_per_second = kDefaultRequestDatagramsPerSecond;
  // Lines for the operator (a regeneration that failed), from the server's
  // thread; null: standard error.
  std::function<void(std::string_view)> on_event{};
  // Tests: while it holds true, a regeneration under way does no work.
  const std::atomic<bool>* hold_regeneration_for_testing = nullptr;
};

// What the server did; read from any thread (relaxed).
struct FeedRequestCounters {
  std::uint64_t retransmit_requests = 0;  // answered with messages
  std::uint64_t retransmit_messages = 0;  // messages in those answers
  std::uint64_t snapshot_requests = 0;    // SnapshotRequests received, valid
  std::uint64_t snapshots_sent = 0;       // snapshots sent whole
  std::uint64_t replica_lost = 0;         // 1 once the replica is lost
  std::uint64_t dropped = 0;              // over budget beyond the Refused
  std::uint64_t throttled = 0;      // times the datagram budget stopped reading
  std::uint64_t send_failures = 0;  // reply datagrams not sent
  std::uint64_t sources = 0;        // addresses seen in the last minute
  std::uint64_t first_retained = 0;  // F, as the last Refused said
  // Retransmissions answered from the journal (also retransmit_requests),
  // those begun from a snapshot or the journal's start (the others went on
  // from the regenerator's position), the records applied, the messages
  // made, and the failures (journal unreadable, damaged, pruned under it).
  std::uint64_t regenerations = 0;
  std::uint64_t regeneration_starts = 0;
  std::uint64_t regeneration_records = 0;
  std::uint64_t regenerated_messages = 0;
  std::uint64_t regeneration_failures = 0;
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
  // Starts answering for the feed `session`, with the replica seeded from
  // `seed` (SeedFeedReplica(), made after the ring's Reset and before any
  // Append; the default is a feed with nothing sent, S = 0), and, given
  // `journal`, answering below the ring from the journal.
  void Start(std::uint64_t session, FeedReplicaSeed seed = {},
             std::optional<FeedRegeneratorOptions> journal = std::nullopt);
  // F now: the ring's first, or the journal's first regenerable if lower
  // (as of the last request below the ring or Refused). Any thread.
  [[nodiscard]] std::uint64_t first_retained() const noexcept;
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
  // Applies to the replica what the ring committed since.
  void Follow();
  // Datagrams the budget of all sources lets the thread read now (at most
  // a batch); 0 counts a throttled period.
  std::size_t ReadAllowance(std::int64_t now_ns);
  // A pass of the regeneration under way; its reply when done.
  template <typename Flush>
  void Regenerate(std::int64_t now_ns, Flush& flush);
  // Sends the snapshots' packets that are due.
  template <typename Flush>
  void SendSnapshots(std::int64_t now_ns, Flush& flush);

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
