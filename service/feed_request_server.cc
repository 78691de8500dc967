#include "service/feed_request_server.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "base/background_thread.h"
#include "base/clock.h"
#include "feed/builder.h"
#include "feed/packet.h"

namespace orderwire::service {
namespace {

constexpr std::int64_t kSecondNs = 1'000'000'000;
// A source not heard from for this long loses its budget's state.
constexpr std::int64_t kSourceIdleNs = 60 * kSecondNs;
constexpr std::size_t kBatch = 64;

// A source address without its port: IPv4 in the low word, IPv6's first
// 64 bits in the high one.
struct SourceKey {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  friend bool operator==(const SourceKey&, const SourceKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const SourceKey& k) {
    return H::combine(std::move(h), k.high, k.low);
  }
};

SourceKey KeyOf(const net::Endpoint& source) {
  SourceKey key;
  if (source.family() == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(source.addr());
    key.low = in->sin_addr.s_addr;
  } else {
    // IPv6 by its /64: one host holds a whole /64, so that is a source.
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(source.addr());
    std::memcpy(&key.high, in6->sin6_addr.s6_addr, 8);
  }
  return key;
}

// A token bucket per source, when it was last told RateLimited, and when
// it started its last snapshots (a ring of kSnapshotsPerSourceMinute).
struct Budget {
  double tokens = 0;
  std::int64_t refilled_ns = 0;
  std::int64_t refused_ns = 0;
  std::array<std::int64_t, kSnapshotsPerSourceMinute> snapshot_ns{};
  std::size_t snapshots = 0;  // started, ever
};

// A snapshot being sent: to whom, its packets, the next one and when.
struct SnapshotUnderWay {
  SourceKey key;
  net::Endpoint peer;
  SnapshotPackets packets;
  std::size_t next = 0;
  std::int64_t due_ns = 0;
};

// A line for the operator: to `on_event`, else standard error.
void Say(const FeedRequestServerOptions& options, const std::string& line) {
  if (options.on_event) {
    options.on_event(line);
  } else {
    std::fprintf(stderr, "orderwire serve: %s\n", line.c_str());
  }
}

// A snapshot's pace may catch up on at most this much lateness.
constexpr std::int64_t kPaceSlackNs = 1'000'000;

// A retransmission being made again from the journal: for whom, and what.
struct RegenerationJob {
  net::Endpoint peer;
  std::uint64_t first = 0;
  std::size_t count = 0;
  std::uint16_t token = 0;
};

}  // namespace

// The server thread's own state, and the counters others read.
struct FeedRequestServer::State {
  explicit State(std::size_t batch) : rx(batch), tx(batch) {}

  std::uint64_t session = 0;
  net::DatagramBatch rx;
  net::DatagramBatch tx;
  std::size_t tx_used = 0;
  std::vector<std::byte> copied;    // blocks from the ring
  std::vector<std::byte> followed;  // blocks the replica applies
  std::optional<FeedReplica> replica;
  std::vector<SnapshotUnderWay> snapshots;  // at most kMaxSnapshotsUnderWay
  absl::flat_hash_map<SourceKey, Budget> budgets;
  Budget overflow;          // shared by new sources when `budgets` is full
  Budget replies;           // messages in retransmission replies, all sources
  Budget reads;             // request datagrams read, all sources
  bool throttling = false;  // `reads` ran out and has not refilled yet
  std::int64_t next_sweep_ns = 0;
  std::optional<FeedRegenerator> regenerator;  // with the journal
  std::optional<RegenerationJob> job;          // the one under way
  std::int64_t regenerator_used_ns = 0;        // its last request's time

  std::atomic<std::uint64_t> retransmit_requests{0};
  std::atomic<std::uint64_t> retransmit_messages{0};
  std::atomic<std::uint64_t> snapshot_requests{0};
  std::atomic<std::uint64_t> snapshots_sent{0};
  std::atomic<std::uint64_t> replica_lost{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> throttled{0};
  std::atomic<std::uint64_t> send_failures{0};
  std::atomic<std::uint64_t> sources{0};
  std::atomic<std::uint64_t> first_regenerable{0};  // 0: none (yet)
  std::atomic<std::uint64_t> regenerations{0};
  std::atomic<std::uint64_t> regeneration_starts{0};
  std::atomic<std::uint64_t> regeneration_records{0};
  std::atomic<std::uint64_t> regenerated_messages{0};
  std::atomic<std::uint64_t> regeneration_failures{0};
  std::array<std::atomic<std::uint64_t>, 8> refused{};
  std::array<std::atomic<std::uint64_t>, feed::kCheckCauseCount> malformed{};

  static void Bump(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + n,
                  std::memory_order_relaxed);
  }
};

absl::StatusOr<std::unique_ptr<FeedRequestServer>> FeedRequestServer::Open(
    const FeedRequestServerOptions& options) {
  absl::StatusOr<net::UdpSocket> socket = net::UdpSocket::Bind(
      options.listen, net::UdpSocket::Options{.receive_buffer_bytes = 1 << 20,
                                              .send_buffer_bytes = 4 << 20,
                                              .non_blocking = true});
  if (!socket.ok()) {
    return absl::Status(
        socket.status().code(),
        absl::StrFormat("--md-request-listen: %s", socket.status().message()));
  }
  absl::StatusOr<net::Endpoint> local = socket->LocalEndpoint();
  if (!local.ok()) return local.status();
  return std::unique_ptr<FeedRequestServer>(
      new FeedRequestServer(options, *std::move(socket), *local));
}

FeedRequestServer::FeedRequestServer(const FeedRequestServerOptions& options,
                                     net::UdpSocket socket, net::Endpoint local)
    : options_(options),
      socket_(std::move(socket)),
      local_(local),
      ring_(options.ring_bytes),
      state_(std::make_unique<State>(kBatch)) {
  state_->copied.reserve(kMaxRetransmitMessages * 2 * feed::kMaxPacketBytes /
                         8);
}

FeedRequestServer::~FeedRequestServer() { Stop(); }

void FeedRequestServer::Start(std::uint64_t session, FeedReplicaSeed seed,
                              std::optional<FeedRegeneratorOptions> journal) {
  state_->session = session;
  state_->replica.emplace(std::move(seed));
  if (journal.has_value()) state_->regenerator.emplace(*std::move(journal));
  thread_ = base::StartWithStopSignalsBlocked([this] { Run(); });
}

std::string FeedRequestServer::description() const {
  return absl::StrFormat(
      "market data requests on %s (ring %d MiB; %g requests/s per source, "
      "burst %g; replies at most %g messages/s in all; snapshots paced at %g "
      "MiB/s)",
      local_.ToString(), ring_.capacity_bytes() >> 20,
      options_.requests_per_second, options_.burst,
      options_.retransmit_messages_per_second,
      options_.snapshot_bytes_per_second / (1 << 20));
}

FeedRequestCounters FeedRequestServer::counters() const noexcept {
  const State& s = *state_;
  FeedRequestCounters c;
  c.retransmit_requests = s.retransmit_requests.load(std::memory_order_relaxed);
  c.retransmit_messages = s.retransmit_messages.load(std::memory_order_relaxed);
  c.snapshot_requests = s.snapshot_requests.load(std::memory_order_relaxed);
  c.snapshots_sent = s.snapshots_sent.load(std::memory_order_relaxed);
  c.replica_lost = s.replica_lost.load(std::memory_order_relaxed);
  c.dropped = s.dropped.load(std::memory_order_relaxed);
  c.throttled = s.throttled.load(std::memory_order_relaxed);
  c.send_failures = s.send_failures.load(std::memory_order_relaxed);
  c.sources = s.sources.load(std::memory_order_relaxed);
  c.first_retained = first_retained();
  c.regenerations = s.regenerations.load(std::memory_order_relaxed);
  c.regeneration_starts = s.regeneration_starts.load(std::memory_order_relaxed);
  c.regeneration_records =
      s.regeneration_records.load(std::memory_order_relaxed);
  c.regenerated_messages =
      s.regenerated_messages.load(std::memory_order_relaxed);
  c.regeneration_failures =
      s.regeneration_failures.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < c.refused.size(); ++i) {
    c.refused[i] = s.refused[i].load(std::memory_order_relaxed);
  }
  for (std::size_t i = 0; i < c.malformed.size(); ++i) {
    c.malformed[i] = s.malformed[i].load(std::memory_order_relaxed);
  }
  return c;
}

std::uint64_t FeedRequestServer::first_retained() const noexcept {
  const std::uint64_t ring = ring_.Retained().first_retained;
  const std::uint64_t journal =
      state_->first_regenerable.load(std::memory_order_relaxed);
  return journal != 0 && (ring == 0 || journal < ring) ? journal : ring;
}

namespace {

// What one request is owed after the checks: nothing (dropped), a Refused,
// the messages, or their making again from the journal.
enum class Verdict { kDrop, kRefuse, kServe, kRegenerate };

}  // namespace

// The server's work on one datagram; a class so each step stays short.
class FeedRequestHandler {
 public:
  FeedRequestHandler(FeedRequestServer::State& state, const FeedRing& ring,
                     const FeedRequestServerOptions& options,
                     std::int64_t now_ns)
      : s_(state), ring_(ring), options_(options), now_ns_(now_ns) {}

  // Queues the answer to the datagram in rx slot `slot` (nothing for a
  // malformed or dropped one). `flush` sends the queued replies when full.
  template <typename Flush>
  void Handle(std::size_t slot, Flush&& flush) {
    const std::span<const std::byte> bytes = s_.rx.datagram(slot);
    const net::Endpoint& source = s_.rx.peer(slot);
    const auto request = feed::RequestView::Parse(bytes);
    if (!request.ok()) {
      FeedRequestServer::State::Bump(
          s_.malformed[static_cast<std::size_t>(request.error())]);
      return;
    }
    const bool snapshot = request->type() == feed::PacketType::kSnapshotRequest;
    if (snapshot) FeedRequestServer::State::Bump(s_.snapshot_requests);
    const Verdict verdict = Check(*request, source, snapshot);
    if (verdict == Verdict::kDrop) return;
    if (verdict == Verdict::kRefuse) {
      Refuse(*request, source, reason_, flush);
      return;
    }
    if (snapshot) {
      StartSnapshot(*request, source);
      return;
    }
    if (verdict == Verdict::kRegenerate) {
      StartRegeneration(*request, source);
      return;
    }
    Serve(*request, source, flush);
  }

  // The reply of the regeneration under way, once done, or its refusal.
  template <typename Flush>
  void EndRegeneration(FeedRegenerator::Progress progress, Flush& flush) {
    const RegenerationJob job = *s_.job;
    s_.job.reset();
    if (progress == FeedRegenerator::Progress::kFailed) {
      Refuse(job.first, job.token, job.peer, feed::RefusedReason::kUnavailable,
             flush);
      return;
    }
    const std::span<const std::byte> blocks = s_.regenerator->blocks();
    const std::size_t sent = Pack(blocks, job.first, job.first, job.count,
                                  job.peer, job.token, flush);
    FeedRequestServer::State::Bump(s_.retransmit_requests);
    FeedRequestServer::State::Bump(s_.retransmit_messages, sent);
  }

 private:
  Verdict Check(const feed::RequestView& request, const net::Endpoint& source,
                bool snapshot) {
    range_ = {0, 0};  // read when a check needs it, else by Refuse
    if (OverBudget(source) != nullptr) return RateLimited(source);
    if (snapshot) {
      EndSnapshotOf(KeyOf(source));
      if (!SnapshotAllowed(BudgetOf(source))) return RateLimited(source);
    }
    const std::uint64_t session = request.session();
    if (session != s_.session && !(snapshot && session == 0)) {
      reason_ = feed::RefusedReason::kWrongSession;
      return Verdict::kRefuse;
    }
    if (snapshot) return CheckSnapshot(request, source);
    range_ = ring_.Retained();
    if (range_.next_sequence == 0) {  // the writer overtook every read
      reason_ = feed::RefusedReason::kUnavailable;
      return Verdict::kRefuse;
    }
    Verdict verdict = Verdict::kServe;
    if (request.sequence() < range_.first_retained) {
      verdict = CheckJournal(request);
      if (verdict != Verdict::kRegenerate) return verdict;
    } else if (request.sequence() >= range_.next_sequence) {
      reason_ = feed::RefusedReason::kBeyondEnd;
      return Verdict::kRefuse;
    }
    // The replies' budget is charged what the reply will hold: N' =
    // min(N, 1024, next - S); a request refused above costs it nothing.
    const std::uint64_t messages =
        std::min<std::uint64_t>({request.count(), kMaxRetransmitMessages,
                                 range_.next_sequence - request.sequence()});
    if (!TakeReplyMessages(static_cast<double>(messages))) {
      return RateLimited(source);
    }
    return verdict;
  }

  // Below the ring: NotRetained below the journal's F too; Unavailable when
  // the journal cannot be read or another regeneration is under way.
  Verdict CheckJournal(const feed::RequestView& request) {
    reason_ = feed::RefusedReason::kNotRetained;
    if (!s_.regenerator.has_value()) return Verdict::kRefuse;
    s_.regenerator_used_ns = now_ns_;
    const absl::StatusOr<std::uint64_t> first = FirstRegenerable();
    if (!first.ok()) {
      reason_ = feed::RefusedReason::kUnavailable;
      return Verdict::kRefuse;
    }
    if (*first == 0 || request.sequence() < *first) return Verdict::kRefuse;
    if (s_.job.has_value()) {
      // The one under way still answers its own request (its token): a
      // subscriber applies a Data reply of any token.
      reason_ = feed::RefusedReason::kUnavailable;
      return Verdict::kRefuse;
    }
    return Verdict::kRegenerate;
  }

  // The journal's F (cached by the regenerator for a second), published for
  // first_retained(); a failure to read it is counted and said.
  absl::StatusOr<std::uint64_t> FirstRegenerable() {
    FeedRegenerator& regenerator = *s_.regenerator;
    const std::uint64_t failures = regenerator.counters().failures;
    absl::StatusOr<std::uint64_t> first = regenerator.FirstRegenerable(now_ns_);
    s_.first_regenerable.store(first.ok() ? *first : 0,
                               std::memory_order_relaxed);
    if (regenerator.counters().failures != failures) {
      FeedRequestServer::State::Bump(s_.regeneration_failures);
      Say(options_,
          absl::StrFormat("market data: the journal cannot be read for "
                          "retransmissions below the ring: %s",
                          first.status().ToString()));
    }
    return first;
  }

  void StartRegeneration(const feed::RequestView& request,
                         const net::Endpoint& source) {
    const std::uint64_t first = request.sequence();
    const std::size_t count =
        std::min<std::uint64_t>({request.count(), kMaxRetransmitMessages,
                                 range_.next_sequence - first});
    s_.job = RegenerationJob{source, first, count, request.token()};
    s_.regenerator->Begin(first, count);
    FeedRequestServer::State::Bump(s_.regenerations);
  }

  // After RateLimited and WrongSession: UnknownInstrument, Unavailable.
  Verdict CheckSnapshot(const feed::RequestView& request,
                        const net::Endpoint& source) {
    const std::uint32_t instrument = request.instrument_id();
    if (instrument != 0 && !s_.replica->Listed(instrument)) {
      reason_ = feed::RefusedReason::kUnknownInstrument;
      return Verdict::kRefuse;
    }
    if (s_.snapshots.size() >= kMaxSnapshotsUnderWay || !s_.replica->ready()) {
      reason_ = feed::RefusedReason::kUnavailable;
      return Verdict::kRefuse;
    }
    // The replies' budget, for the whole book (at most one second's): a
    // 28-byte request must not make the server send a book to a forged
    // source beyond what it may send in all. StartSnapshot settles the
    // difference with the snapshot made.
    if (!TakeReplyMessages(SnapshotEstimate())) return RateLimited(source);
    Budget& b = BudgetOf(source);
    b.snapshot_ns[b.snapshots++ % kSnapshotsPerSourceMinute] = now_ns_;
    return Verdict::kServe;
  }

  // What a snapshot is charged before it is made: every order's message
  // and SnapshotStart and SnapshotEnd, at most one second's budget.
  [[nodiscard]] double SnapshotEstimate() const {
    return std::min(options_.retransmit_messages_per_second,
                    static_cast<double>(s_.replica->book().order_count() + 2));
  }

  // Over a budget: Refused RateLimited, at most once a second per source,
  // else dropped.
  Verdict RateLimited(const net::Endpoint& source) {
    Budget& b = BudgetOf(source);
    if (now_ns_ - b.refused_ns < kSecondNs) {
      FeedRequestServer::State::Bump(s_.dropped);
      return Verdict::kDrop;
    }
    b.refused_ns = now_ns_;
    reason_ = feed::RefusedReason::kRateLimited;
    return Verdict::kRefuse;
  }

  // The source's budget (OverBudget made it, or the shared one when the
  // table is full).
  Budget& BudgetOf(const net::Endpoint& source) {
    const auto it = s_.budgets.find(KeyOf(source));
    return it != s_.budgets.end() ? it->second : s_.overflow;
  }

  // Whether the source started fewer than kSnapshotsPerSourceMinute
  // snapshots in the last minute.
  [[nodiscard]] bool SnapshotAllowed(const Budget& b) const {
    if (b.snapshots < kSnapshotsPerSourceMinute) return true;
    const std::int64_t oldest =
        b.snapshot_ns[b.snapshots % kSnapshotsPerSourceMinute];
    return now_ns_ - oldest >= kSourceIdleNs;
  }

  void EndSnapshotOf(const SourceKey& key) {
    std::erase_if(s_.snapshots, [&](const SnapshotUnderWay& under_way) {
      return under_way.key == key;
    });
  }

  void StartSnapshot(const feed::RequestView& request,
                     const net::Endpoint& source) {
    SnapshotUnderWay& under_way = s_.snapshots.emplace_back();
    under_way.key = KeyOf(source);
    under_way.peer = source;
    under_way.due_ns = now_ns_;
    const double charged = SnapshotEstimate();
    s_.replica->Snapshot(s_.session, request.token(), request.instrument_id(),
                         under_way.packets);
    // Its real size: what the estimate missed is owed (the bucket may go
    // below zero), what it overcharged is given back.
    s_.replies.tokens +=
        charged - static_cast<double>(under_way.packets.message_count);
  }

  // Takes `messages` from the bucket of all replies (refilled at
  // retransmit_messages_per_second, one second's at most); false, taking
  // nothing, when it holds fewer. A request answered with fewer (the end,
  // or a refusal) gives back nothing: the budget bounds what may be sent.
  bool TakeReplyMessages(double messages) {
    Budget& b = s_.replies;
    const double rate = options_.retransmit_messages_per_second;
    const double elapsed_s = static_cast<double>(now_ns_ - b.refilled_ns) / 1e9;
    b.tokens = std::min(rate, b.tokens + elapsed_s * rate);
    b.refilled_ns = now_ns_;
    if (b.tokens < messages) return false;
    b.tokens -= messages;
    return true;
  }

  // Takes a token from the source's bucket (refilled at the configured
  // rate up to the burst; new sources beyond kMaxRequestSources share one):
  // null when it had one, else the bucket.
  Budget* OverBudget(const net::Endpoint& source) {
    const SourceKey key = KeyOf(source);
    auto it = s_.budgets.find(key);
    Budget* budget = nullptr;
    if (it != s_.budgets.end()) {
      budget = &it->second;
    } else if (s_.budgets.size() < kMaxRequestSources) {
      budget = &s_.budgets.emplace(key, Budget{options_.burst, now_ns_, 0})
                    .first->second;
    } else {
      // The table is full: new sources share one budget, so a flood of
      // forged addresses costs this bucket, not the known subscribers'.
      budget = &s_.overflow;
    }
    Budget& b = *budget;
    const double elapsed_s = static_cast<double>(now_ns_ - b.refilled_ns) / 1e9;
    b.tokens = std::min(options_.burst,
                        b.tokens + elapsed_s * options_.requests_per_second);
    b.refilled_ns = now_ns_;
    if (b.tokens < 1) return &b;
    b.tokens -= 1;
    return nullptr;
  }

  template <typename Flush>
  std::span<std::byte> NextSlot(const net::Endpoint& source, Flush& flush) {
    if (s_.tx_used == s_.tx.capacity()) flush();
    const std::size_t slot = s_.tx_used++;
    s_.tx.set_peer(slot, source);
    return s_.tx.buffer(slot);
  }

  template <typename Flush>
  void Refuse(const feed::RequestView& request, const net::Endpoint& source,
              feed::RefusedReason reason, Flush& flush) {
    Refuse(request.sequence(), request.token(), source, reason, flush);
  }

  template <typename Flush>
  void Refuse(std::uint64_t sequence, std::uint16_t token,
              const net::Endpoint& source, feed::RefusedReason reason,
              Flush& flush) {
    FeedRequestServer::State::Bump(
        s_.refused[static_cast<std::size_t>(reason)]);
    // The body says what the checks saw; a refusal before they read the
    // ring reads it now. F is the journal's when it reaches lower.
    const FeedRing::Range range =
        range_.next_sequence != 0 ? range_ : ring_.Retained();
    std::uint64_t first = range.first_retained;
    if (s_.regenerator.has_value()) {
      const absl::StatusOr<std::uint64_t> journal = FirstRegenerable();
      if (journal.ok() && *journal != 0 && *journal < first) first = *journal;
    }
    const std::span<std::byte> out = NextSlot(source, flush);
    const codec::Result<std::size_t> size = feed::EncodeRefused(
        out, s_.session, sequence, token,
        feed::RefusedBody{reason, first, range.next_sequence});
    s_.tx.set_length(s_.tx_used - 1, *size);
  }

  template <typename Flush>
  void Serve(const feed::RequestView& request, const net::Endpoint& source,
             Flush& flush) {
    const std::uint64_t first = request.sequence();
    const std::size_t want =
        std::min<std::uint64_t>({request.count(), kMaxRetransmitMessages,
                                 range_.next_sequence - first});
    const std::uint64_t copied_from = ring_.Copy(first, want, s_.copied);
    if (copied_from == 0) {
      // Overwritten between the check and the copy.
      Refuse(request, source, feed::RefusedReason::kNotRetained, flush);
      return;
    }
    const std::size_t sent = Pack(s_.copied, copied_from, first, want, source,
                                  request.token(), flush);
    FeedRequestServer::State::Bump(s_.retransmit_requests);
    FeedRequestServer::State::Bump(s_.retransmit_messages, sent);
  }

  // Queues Data packets to `peer` holding messages [first, first + want)
  // of `blocks` (whose first message is `blocks_first`), packed greedily;
  // returns how many it sent.
  template <typename Flush>
  std::size_t Pack(std::span<const std::byte> blocks,
                   std::uint64_t blocks_first, std::uint64_t first,
                   std::size_t want, const net::Endpoint& peer,
                   std::uint16_t token, Flush& flush) {
    std::uint64_t sequence = blocks_first;
    std::size_t sent = 0;
    std::optional<feed::PacketBuilder> builder;
    std::size_t at = 0;
    while (at + feed::kBlockLengthSize <= blocks.size() && sent < want) {
      const auto length = codec::LoadLE<std::uint16_t>(blocks.data() + at);
      const std::span<const std::byte> message(
          blocks.data() + at + feed::kBlockLengthSize, length);
      at += feed::kBlockLengthSize + length;
      if (sequence++ < first) continue;
      if (!builder.has_value() || !builder->FitsLength(length)) {
        if (builder.has_value()) Close(*builder);
        builder.emplace(NextSlot(peer, flush));
        builder->BeginData(s_.session, sequence - 1, token);
      }
      (void)builder->AppendMessage(message);
      ++sent;
    }
    if (builder.has_value()) Close(*builder);
    return sent;
  }

  void Close(feed::PacketBuilder& builder) {
    s_.tx.set_length(s_.tx_used - 1, builder.Finish().size());
  }

  FeedRequestServer::State& s_;
  const FeedRing& ring_;
  const FeedRequestServerOptions& options_;
  std::int64_t now_ns_;
  feed::RefusedReason reason_{};
  FeedRing::Range range_{};
};

void FeedRequestServer::SendReplies() {
  State& s = *state_;
  std::size_t done = 0;
  while (done < s.tx_used) {
    const int n = socket_.SendRange(s.tx, done, s.tx_used - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == -EINTR) continue;
    // Lost (the subscriber asks again): with the socket buffer full all
    // that is left, else the one reply the kernel refused (a source it
    // cannot send to), and the others go on.
    const std::size_t lost =
        n == -EAGAIN || n == -ENOBUFS ? s.tx_used - done : 1;
    State::Bump(s.send_failures, lost);
    done += lost;
  }
  s.tx_used = 0;
}

void FeedRequestServer::Sweep(std::int64_t now_ns) {
  State& s = *state_;
  absl::erase_if(s.budgets, [&](const auto& entry) {
    return now_ns - entry.second.refilled_ns > kSourceIdleNs;
  });
  s.sources.store(s.budgets.size(), std::memory_order_relaxed);
  s.next_sweep_ns = now_ns + kSecondNs;
}

void FeedRequestServer::Run() {
  // Named for top -H and ps; niced, so that on a CPU shared with the loop
  // it takes a small share (raising one's own nice value is allowed
  // unprivileged; a refusal leaves the thread as it was). Not SCHED_IDLE:
  // that policy never runs while any other thread of the machine can, so
  // a busy machine would starve retransmission and snapshots (and this
  // thread's Stop) for as long as it stays busy.
  ::pthread_setname_np(::pthread_self(), kRequestThreadName);
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()),
                      kRequestThreadNice);
  State& s = *state_;
  const auto flush = [this] { SendReplies(); };
  while (!stop_.load(std::memory_order_relaxed)) {
    // The pass's time, read once, for all of the pass: the datagram budget,
    // the requests read, the snapshots' pace, the regenerator's idleness,
    // the sweep. It is behind by at most the pass's wait (10 ms; 1 ms while
    // a snapshot is under way) and work: budgets refill and paces send that
    // much later, never sooner, and the next pass catches up.
    const std::int64_t now_ns = base::MonotonicNs();
    Follow();
    // While a snapshot is under way, wake each millisecond to pace it;
    // while a regeneration is, do not wait.
    const bool held = options_.hold_regeneration_for_testing != nullptr &&
                      options_.hold_regeneration_for_testing->load();
    const int wait_ms =
        s.job.has_value() && !held ? 0 : (s.snapshots.empty() ? 10 : 1);
    const std::size_t allowed = ReadAllowance(now_ns);
    if (allowed == 0) {
      // Over the datagram budget: the socket waits (a token comes within
      // 1 ms at the default rate), snapshots and regeneration go on.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else if (socket_.WaitReadable(wait_ms)) {
      const int n = socket_.Receive(s.rx, allowed);
      if (n > 0) s.reads.tokens -= static_cast<double>(n);
      if (n > 0) Follow();
      FeedRequestHandler handler(s, ring_, options_, now_ns);
      for (int i = 0; i < n; ++i) {
        if (s.rx.truncated(static_cast<std::size_t>(i))) {
          State::Bump(s.malformed[static_cast<std::size_t>(
              feed::CheckCause::kOversize)]);
          continue;
        }
        handler.Handle(static_cast<std::size_t>(i), flush);
      }
      flush();
    }
    SendSnapshots(now_ns, flush);
    if (!held) Regenerate(now_ns, flush);
    flush();
    if (now_ns >= s.next_sweep_ns) Sweep(now_ns);
  }
}

std::size_t FeedRequestServer::ReadAllowance(std::int64_t now_ns) {
  State& s = *state_;
  Budget& b = s.reads;
  const double rate = options_.datagrams_per_second;
  const double elapsed_s = static_cast<double>(now_ns - b.refilled_ns) / 1e9;
  b.tokens = std::min(rate, b.tokens + elapsed_s * rate);
  b.refilled_ns = now_ns;
  if (b.tokens < 1) {
    if (!s.throttling) State::Bump(s.throttled);  // once a period
    s.throttling = true;
    return 0;
  }
  s.throttling = false;
  return std::min(s.rx.capacity(), static_cast<std::size_t>(b.tokens));
}

void FeedRequestServer::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void FeedRequestServer::Follow() {
  State& s = *state_;
  if (s.replica->lost()) return;
  s.replica->Follow(ring_, s.followed);
  if (s.replica->lost()) s.replica_lost.store(1, std::memory_order_relaxed);
}

template <typename Flush>
void FeedRequestServer::Regenerate(std::int64_t now_ns, Flush& flush) {
  State& s = *state_;
  if (!s.regenerator.has_value()) return;
  FeedRegenerator& regenerator = *s.regenerator;
  if (!s.job.has_value()) {
    if (regenerator.positioned() &&
        now_ns - s.regenerator_used_ns > kRegeneratorIdleNs) {
      regenerator.Release();
    }
    return;
  }
  const FeedRegenerator::Progress progress = regenerator.Work();
  const FeedRegenerationCounters& c = regenerator.counters();
  s.regeneration_starts.store(c.starts, std::memory_order_relaxed);
  s.regeneration_records.store(c.records_applied, std::memory_order_relaxed);
  s.regenerated_messages.store(c.messages, std::memory_order_relaxed);
  if (progress == FeedRegenerator::Progress::kWorking) return;
  if (progress == FeedRegenerator::Progress::kFailed) {
    State::Bump(s.regeneration_failures);
    Say(options_,
        absl::StrFormat("market data: retransmission from sequence %d not "
                        "made again from the journal: %s",
                        s.job->first, regenerator.status().ToString()));
  }
  s.regenerator_used_ns = now_ns;
  FeedRequestHandler handler(s, ring_, options_, now_ns);
  handler.EndRegeneration(progress, flush);
}

template <typename Flush>
void FeedRequestServer::SendSnapshots(std::int64_t now_ns, Flush& flush) {
  State& s = *state_;
  const double ns_per_byte = 1e9 / options_.snapshot_bytes_per_second;
  for (SnapshotUnderWay& under_way : s.snapshots) {
    under_way.due_ns = std::max(under_way.due_ns, now_ns - kPaceSlackNs);
    const std::size_t packets = under_way.packets.ends.size();
    while (under_way.next < packets && under_way.due_ns <= now_ns) {
      const std::span<const std::byte> packet =
          under_way.packets.packet(under_way.next++);
      if (s.tx_used == s.tx.capacity()) flush();
      const std::size_t slot = s.tx_used++;
      s.tx.set_peer(slot, under_way.peer);
      std::copy(packet.begin(), packet.end(), s.tx.buffer(slot).begin());
      s.tx.set_length(slot, packet.size());
      under_way.due_ns += static_cast<std::int64_t>(
          static_cast<double>(packet.size()) * ns_per_byte);
    }
    if (under_way.next == packets) State::Bump(s.snapshots_sent);
  }
  std::erase_if(s.snapshots, [](const SnapshotUnderWay& under_way) {
    return under_way.next == under_way.packets.ends.size();
  });
}

}  // namespace orderwire::service
