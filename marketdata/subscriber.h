// orderwire::marketdata::Subscriber: the subscriber side of the market-data
// feed (docs/MARKETDATA.md "A subscriber", steps 1 to 7, and "Errors and
// counters"): it follows one feed session in sequence, fills gaps by
// retransmission, recovers (and joins late) by snapshot, and keeps a Book
// of every instrument.
//
// DESIGN NOTE
//
// I/O-free core. The caller owns the sockets and the clock: it hands every
// datagram received (live feed and request-server replies alike) to
// OnPacket(bytes, now_ns) and calls Poll(now_ns) for the timers, now_ns
// being a monotonic clock in nanoseconds. The requests the subscriber wants
// sent (RetransmitRequest, SnapshotRequest) come out, encoded, through
// SubscriberListener::SendRequest, for the caller to send to the request
// server. The same listener gets the applied messages, the best bid and
// offer changes, the trades and the state changes. So a test drives it
// packet by packet and instant by instant, and a program plugs it into its
// own event loop.
//
// Sequencing. `next` is the sequence expected. A Data packet's messages
// below `next` are skipped (Duplicate); one that starts above `next` is a
// gap: the packet is held (its bytes copied into preallocated storage) and
// RetransmitRequest(next, min(missing, 1024)) goes out with a new token;
// replies and held packets are applied as they fill the gap. A Heartbeat
// or EndOfSession above `next` is a gap too. No progress for
// `retransmit_timeout_ns`: ask again; after `retransmit_tries` requests
// without progress or answer, snapshot recovery. A reply that covers its
// request while a gap remains (a reply is at most 1024 messages) is followed at
// once by the next request.
//
// Refusals, matched by token: to a RetransmitRequest, NotRetained and
// BeyondEnd (also counted as a Contradiction) -> snapshot recovery;
// WrongSession, to either request -> Stopped for good (the feed is another
// journal's); anything else (RateLimited, Unavailable, UnknownInstrument,
// reserved reasons, and NotRetained or BeyondEnd to a SnapshotRequest) ->
// the same request again after `refused_retry_ns`, with a new token. A reply or
// refusal whose token is not the current request's is counted
// (`stale_replies`); a stale reply's Data is still applied (it carries the live
// feed's bytes).
//
// Snapshot recovery (step 5), also how the subscriber joins when
// `first_sequence` is 0 (the default): live packets are held; a
// SnapshotRequest for all instruments goes out with a new token; Snapshot
// packets of that token are applied in position order (one that comes
// early is held), the books concerned being cleared at SnapshotStart; at
// SnapshotEnd, `next` = S + 1, held messages up to S are dropped, the rest
// applied, and a gap left is filled by retransmission. No Snapshot packet
// for `snapshot_timeout_ns` while incomplete: the whole snapshot is asked
// for again with a new token. A snapshot that breaks its own shape
// (position 1 not SnapshotStart, SnapshotEnd not at `message_count` or
// with another S) or that the book contradicts counts a Contradiction and
// is asked for again. Until SnapshotEnd the book is being rebuilt: the
// listener gets no message or best-price calls for it, only OnSnapshot and
// the best prices that changed, once, at the end.
//
// Hold storage: at most `hold_packets` packets and `hold_bytes` bytes,
// allocated at construction. When a packet does not fit, the held Data
// packet of lowest sequence is evicted until it does (counted in
// `hold_overflows`): while following, that starts snapshot recovery (the
// gap is too long to wait for); while recovering, the lowest packets are
// the ones the snapshot most likely covers.
//
// Contradictions (step 6): a message the Book refuses (book.h) is counted,
// its packet is held from that message on, and snapshot recovery starts.
//
// The last sequence: `next` is at most 2^64 - 1. A Data packet with a
// message at 2^64 - 1 or beyond is dropped as malformed (BadSequence), and a
// snapshot at S = 2^64 - 1 is one that breaks its own shape.
//
// Session (step 1): `session` from the options, else the first valid
// packet's. A packet of another session is dropped and counted
// (`malformed[OtherSession]`): following a new session (an accepted loss)
// is the caller's choice: a new Subscriber, whose snapshot starts it.
//
// Stale (step 7): no valid packet for 3 `heartbeat_interval_ns`: state
// Stale (counted once per period; no request is sent); the next valid
// packet ends it.
//
// Errors. Malformed packets are dropped and counted by the cause of
// feed::PacketView::Parse ("Checks"); nothing here fails or throws (but
// std::bad_alloc, as the Book grows): the counters and the state tell what
// happened.
//
// Costs. The constructor allocates the hold storage (and reserves the
// book); after it, OnPacket and Poll allocate nothing except as the Book
// grows past that (book.h "Allocation") and the first time an instrument
// is listed (its best-price record). OnPacket: O(messages of
// the packet) to parse and apply (an applied message after which
// Book::best_changes() moved compares its instrument's best bid and offer
// with those last told; the others, most of them, cannot have changed
// either), plus O(held packets) for each held
// packet applied or evicted while a gap or a recovery is under way. Poll:
// O(1), or O(held packets) when it sends a request.
//
// Threading: none. One thread at a time calls a Subscriber; the listener
// is called on that thread, from inside OnPacket or Poll, and must not
// call OnPacket or Poll itself. Views passed to it are valid during the
// call only.
//
// Usage, with the transport of feed_socket.h:
//
//   class Feed : public marketdata::SubscriberListener {
//    public:
//     void SendRequest(std::span<const std::byte> r) override {
//       (void)socket->Send(r);  // lost: asked again on the timer
//     }
//     void OnBestPrices(codec::InstrumentId id,
//                       const marketdata::BestPrices& best) override { ... }
//     marketdata::FeedSocket* socket = nullptr;
//   };
//   Feed feed;
//   feed.socket = &socket;  // FeedSocket::Open(...)
//   marketdata::Subscriber subscriber(options, feed);
//   for (;;) {
//     poll(socket.fd(), 10 ms);
//     const std::int64_t now = base::MonotonicNs();
//     (void)socket.Receive(subscriber, now);
//     subscriber.Poll(now);
//   }
#ifndef ORDERWIRE_MARKETDATA_SUBSCRIBER_H_
#define ORDERWIRE_MARKETDATA_SUBSCRIBER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codec/strong.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "marketdata/book.h"

namespace orderwire::marketdata {

// Most messages a RetransmitRequest asks for (MARKETDATA.md
// "Retransmission": the server sends at most 1024 per request).
inline constexpr std::uint16_t kMaxRetransmitCount = 1024;

enum class SubscriberState : std::uint8_t {
  kFollowing = 1,  // applying the feed in sequence (gaps being filled)
  kRecovering,     // waiting for a snapshot (late join too)
  kStale,          // no packet for 3 heartbeat intervals
  kStopped,        // WrongSession: the feed is another journal's
};

[[nodiscard]] std::string_view Name(SubscriberState state) noexcept;

// The best bid and offer of one instrument: each side's best level, if any.
struct BestPrices {
  std::optional<LevelInfo> bid;
  std::optional<LevelInfo> ask;
};

// What the subscriber tells its owner. SendRequest must be implemented;
// the rest default to doing nothing. Called inside OnPacket and Poll.
class SubscriberListener {
 public:
  virtual ~SubscriberListener() = default;

  // Send `request` (a RetransmitRequest or SnapshotRequest, valid during
  // the call) to the request server. A request lost is asked again on its
  // timer.
  virtual void SendRequest(std::span<const std::byte> request) = 0;
  // A feed message applied to the book (live, retransmitted or held), in
  // sequence order, each once. Unknown kinds are skipped, not delivered.
  virtual void OnMessage(std::uint64_t /*sequence*/,
                         feed::MessageBlock /*message*/) {}
  // An OrderExecuted applied: a trade (the maker's side and price).
  virtual void OnTrade(std::uint64_t /*sequence*/,
                       const feed::OrderExecuted& /*trade*/) {}
  // The best bid or offer (price or quantity) of an instrument changed.
  virtual void OnBestPrices(codec::InstrumentId /*instrument_id*/,
                            const BestPrices& /*best*/) {}
  // A snapshot at feed sequence S was applied: the book is the feed's
  // after message S (best-price changes follow).
  virtual void OnSnapshot(std::uint64_t /*feed_sequence*/) {}
  virtual void OnStateChange(SubscriberState /*from*/, SubscriberState /*to*/) {
  }
};

struct SubscriberOptions {
  // The session to follow; none: the first valid packet's.
  std::optional<std::uint64_t> session;
  // The first sequence to apply from an empty book (1: the feed from its
  // start); 0: join by snapshot.
  std::uint64_t first_sequence = 0;
  std::int64_t retransmit_timeout_ns = 50'000'000;
  int retransmit_tries = 3;
  std::int64_t refused_retry_ns = 1'000'000'000;
  std::int64_t snapshot_timeout_ns = 1'000'000'000;
  // The publisher's (--md-heartbeat-ms); stale after three of them.
  std::int64_t heartbeat_interval_ns = 1'000'000'000;
  // Out-of-order packets held at most: count, and bytes (at least one
  // packet's, kMaxPacketBytes).
  std::size_t hold_packets = 256;
  std::size_t hold_bytes = 256 * feed::kMaxPacketBytes;
  // The token of the first request (then +1 for each, 0 skipped).
  std::uint16_t first_token = 1;
  // Book::Reserve at construction: live orders and open levels, in all.
  std::size_t reserve_orders = 0;
  std::size_t reserve_levels = 0;
};

struct SubscriberCounters {
  std::uint64_t packets = 0;           // valid packets of the session
  std::uint64_t messages_applied = 0;  // feed messages applied to the book
  std::uint64_t duplicates = 0;        // messages below `next`, skipped
  std::uint64_t gaps = 0;              // holes seen past the highest sequence
  std::uint64_t messages_missing = 0;  // messages in those holes
  std::uint64_t held_packets = 0;      // packets copied into hold storage
  std::uint64_t hold_overflows = 0;    // held packets evicted (or not kept)
  std::uint64_t heartbeats = 0;
  std::uint64_t end_of_session = 0;
  std::uint64_t retransmit_requests = 0;  // sent
  std::uint64_t retransmit_replies = 0;   // Data packets with a token
  // Refused packets matched to a request, by reason (index: the reason's
  // value after feed::EffectiveReason; 0 for a reason of 0).
  std::array<std::uint64_t, 7> refused{};
  std::uint64_t stale_replies = 0;  // Snapshot or Refused of an old token
  std::uint64_t snapshot_requests = 0;
  std::uint64_t snapshots_completed = 0;
  std::uint64_t contradictions = 0;
  std::uint64_t unknown_kinds = 0;
  std::uint64_t stale_periods = 0;
  // Packets dropped, by the first check they failed (feed::CheckCause;
  // index 0 unused). OtherSession is among them.
  std::array<std::uint64_t, feed::kCheckCauseCount> malformed{};

  [[nodiscard]] std::uint64_t refused_for(
      feed::RefusedReason reason) const noexcept {
    return refused[static_cast<std::size_t>(feed::EffectiveReason(reason))];
  }
  [[nodiscard]] std::uint64_t malformed_for(
      feed::CheckCause cause) const noexcept {
    return malformed[static_cast<std::size_t>(cause)];
  }
};

class Subscriber {
 public:
  // Allocates the hold storage. `listener` must outlive the subscriber.
  Subscriber(const SubscriberOptions& options, SubscriberListener& listener);
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // One datagram received (any source: the feed or the request server).
  // Checked (malformed: dropped and counted), then applied, held or
  // answered as the design note says. Hot path: no allocation (see Costs).
  void OnPacket(std::span<const std::byte> bytes, std::int64_t now_ns);
  // The timers: retransmission and snapshot timeouts, refusal back-off,
  // staleness; and, on the first call (or first OnPacket), the late join's
  // SnapshotRequest. Call it at least every retransmit_timeout_ns. Costs:
  // the design note's.
  void Poll(std::int64_t now_ns);

  [[nodiscard]] SubscriberState state() const noexcept { return state_; }
  // The sequence expected next; 0 until known (joining).
  [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_; }
  // The session followed; 0 until known.
  [[nodiscard]] std::uint64_t session() const noexcept { return session_; }
  [[nodiscard]] const Book& book() const noexcept { return book_; }
  [[nodiscard]] const SubscriberCounters& counters() const noexcept {
    return counters_;
  }
  // Packets held (out of order, or during recovery).
  [[nodiscard]] std::size_t held() const noexcept { return held_.size(); }
  // The sequence of the last EndOfSession of the session followed, if one
  // came: the publisher sent every message below it. With next_sequence()
  // at or past it, the subscriber holds all of that publisher's feed.
  [[nodiscard]] std::optional<std::uint64_t> end_of_session() const noexcept {
    return end_of_session_;
  }

 private:
  enum class Mode : std::uint8_t { kFollowing, kRecovering, kStopped };
  struct Held {
    std::uint64_t sequence;  // Data: feed sequence; Snapshot: position
    std::uint32_t offset;
    std::uint16_t size;
    std::uint16_t count;  // its messages
    bool snapshot;
  };
  struct Retransmit {
    bool active = false;
    bool backoff = false;  // refused: resend at the deadline
    std::uint16_t token = 0;
    std::uint64_t first = 0;
    std::uint64_t end = 0;  // one past the last asked for
    std::int64_t deadline = 0;
    int tries = 0;  // requests sent without progress or answer
  };
  struct Snapshot {
    std::uint16_t token = 0;
    std::int64_t deadline = 0;
    std::uint64_t position = 1;  // the next position to apply
    std::uint64_t feed_sequence = 0;
    std::uint64_t message_count = 0;
    bool done = false;  // SnapshotEnd applied
  };

  void Start(std::int64_t now_ns);
  void OnValid(const feed::PacketView& packet, std::int64_t now_ns);
  void OnData(const feed::PacketView& packet, std::int64_t now_ns);
  void OnRefused(const feed::PacketView& packet, std::int64_t now_ns);
  void OnSnapshotPacket(const feed::PacketView& packet, std::int64_t now_ns);
  // Notes packet range [first, end) as seen: a hole past the highest
  // sequence seen counts a gap.
  void SeeRange(std::uint64_t first, std::uint64_t end);
  // Applies the messages of a Data packet from `next_` on. False on a
  // contradiction (recovery started; `next_` is the refused message's).
  bool ApplyData(const feed::PacketView& packet);
  // Applies one feed message at `sequence` and tells the listener. False
  // on a contradiction (counted; nothing changed).
  bool ApplyOne(std::uint64_t sequence, feed::MessageBlock block);
  void ApplyHeld(std::int64_t now_ns);
  void AfterProgress(std::int64_t now_ns);
  // Asks for the gap from `next_` (a try).
  void SendRetransmit(std::int64_t now_ns);
  void StartRecovery(std::int64_t now_ns);
  void SendSnapshotRequest(std::int64_t now_ns);
  // Applies one Snapshot packet's messages at positions from
  // snapshot_.position. False when the snapshot is broken (re-asked).
  bool ApplySnapshot(const feed::PacketView& packet, std::int64_t now_ns);
  void DrainSnapshot(std::int64_t now_ns);
  bool ApplySnapshotMessage(feed::MessageBlock block);
  void FinishSnapshot(std::int64_t now_ns);
  void Hold(const feed::PacketView& packet, bool snapshot, std::int64_t now_ns);
  // Evicts held Data packets, lowest first, until `size` bytes and one
  // entry fit (compacting when that is enough). False when nothing is left
  // to evict or the new packet (at `sequence`) is the lowest.
  bool MakeRoom(std::size_t size, std::uint64_t sequence, bool snapshot,
                bool* evicted);
  void Compact();
  void Release(std::size_t index);
  void DropHeld(bool snapshot);
  [[nodiscard]] std::size_t LowestHeld(bool snapshot) const;
  [[nodiscard]] std::span<const std::byte> HeldBytes(const Held& h) const {
    return {arena_.data() + h.offset, h.size};
  }
  void CheckBest(codec::InstrumentId instrument_id);
  void CheckAllBest();
  [[nodiscard]] std::uint16_t NewToken() noexcept;
  void UpdateState();

  struct LastBest {
    BestPrices prices;
    bool seen = false;  // reported (or checked) at least once
  };
  static constexpr std::uint32_t kDirectBestIds = 4096;
  // The record of what was last reported for `instrument_id`, made (empty)
  // the first time.
  [[nodiscard]] BestPrices& LastBestOf(codec::InstrumentId instrument_id) {
    if (instrument_id.value() < direct_best_.size()) {
      LastBest& entry = direct_best_[instrument_id.value()];
      entry.seen = true;
      return entry.prices;
    }
    return NewLastBest(instrument_id);
  }
  // LastBestOf for an id past the direct array: grows it, or uses best_.
  [[nodiscard]] BestPrices& NewLastBest(codec::InstrumentId instrument_id);

  SubscriberOptions options_;
  SubscriberListener& listener_;
  Book book_;
  Mode mode_ = Mode::kFollowing;
  SubscriberState state_ = SubscriberState::kFollowing;
  bool started_ = false;
  bool session_known_ = false;
  bool stale_ = false;
  std::uint64_t session_ = 0;
  std::uint64_t next_ = 0;
  std::optional<std::uint64_t> end_of_session_;
  std::uint64_t seen_end_ = 0;  // one past the highest sequence seen
  std::int64_t last_packet_ns_ = 0;
  std::uint16_t token_;
  Retransmit retransmit_;
  Snapshot snapshot_;
  std::vector<std::byte> arena_;
  std::size_t arena_end_ = 0;
  std::size_t held_bytes_ = 0;
  std::vector<Held> held_;
  // The best prices last reported, by instrument: ids below kDirectBestIds
  // in direct_best_ (as far as the largest such id seen), others in best_.
  std::vector<LastBest> direct_best_;
  absl::flat_hash_map<codec::InstrumentId, BestPrices> best_;
  std::array<std::byte,
             feed::kPacketHeaderSize + feed::kSnapshotRequestBodySize>
      request_{};
  SubscriberCounters counters_;
};

}  // namespace orderwire::marketdata

#endif  // ORDERWIRE_MARKETDATA_SUBSCRIBER_H_
