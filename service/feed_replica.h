// FeedReplica: the displayed books the feed's request server serves
// snapshots from (docs/MARKETDATA.md "Snapshots"), kept on the request
// server's thread, never the loop's.
//
// DESIGN NOTE
//
// A snapshot at S is the books after feed messages 1 to S. The replica is a
// marketdata::Book (which also keeps each instrument's last
// InstrumentDirectory, bands included, and its TradingStatus) and S, the
// last message applied, with that message's timestamp:
// - Seeded once, on the loop's thread when the publisher starts (a restart,
//   a takeover, a fresh journal, or the first record after an accepted
//   loss: SeedNewFeedSession()), before the request server's thread
//   does: SeedFeedReplica() lists the engine's live orders (the engine's
//   canonical order: each queue in time priority) under the directory the
//   feed announced last (state::FeedProducer::announced()), every
//   instrument of its range Trading. That is exactly the books after
//   message next - 1: the engine's book is the feed's at a record boundary
//   (MARKETDATA.md "From the journal to the feed"), and an instrument that
//   left the range has no order and is in no snapshot. O(live orders),
//   once, before the loop runs.
// - Then it follows the FeedRing the publisher appends to: Follow() applies,
//   in order, the messages after S up to the ring's Committed() sequence
//   (the end of the last loop pass, so a record boundary, and sent live).
//   So S only stops at record boundaries, and a snapshot's messages up to S
//   were sent live before its SnapshotStart.
// - Lost: if the ring overwrote messages before the replica applied them
//   (it fell behind by more than --md-ring-bytes), or a message contradicts
//   the book (a bug), the replica is lost for good: lost() stays true and
//   the server answers every SnapshotRequest Unavailable until the service
//   restarts (a new seed needs the loop's state; making one while serving
//   would stall matching). Counted (`md_snapshot_replica_lost`).
// - S's timestamp: known when the seed knows it (FeedProducer::
//   last_timestamp(): 0 at S = 0; unknown after a restart from a snapshot
//   file whose replayed tail made no message), else from the first message
//   applied; until then snapshots are Unavailable.
//
// Snapshot() encodes the snapshot of one instrument or all (0) at S as
// Snapshot packets: SnapshotStart(S, instrument, count), per listed
// instrument ascending InstrumentDirectory, TradingStatus, OrderAdded bids
// then asks, best price first, oldest first, SnapshotEnd(S), all at S's
// timestamp; packed greedily up to feed::kMaxPacketBytes. It copies the
// books, so later messages change nothing of a snapshot under way.
//
// Cost: Follow() is a ring copy and one Book::Apply per message; Snapshot()
// O(orders + levels of what it lists) and about 40 bytes an order (it
// allocates). Threading: none; the request server's thread only (the seed
// is made on the loop's).
#ifndef ORDERWIRE_SERVICE_FEED_REPLICA_H_
#define ORDERWIRE_SERVICE_FEED_REPLICA_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "marketdata/book.h"
#include "service/feed_ring.h"
#include "state/feed_producer.h"

namespace orderwire::service {

// The displayed books at the publisher's start.
struct FeedReplicaSeed {
  marketdata::Book book;
  std::uint64_t sequence = 0;  // S: the last feed message they include
  std::optional<std::uint64_t> timestamp = 0;  // message S's, if known
  bool exact = true;  // false: an order the directory did not list
};

// The books after message producer.next_sequence() - 1, from the engine's
// live orders and the directory announced. Loop thread; O(live orders).
[[nodiscard]] FeedReplicaSeed SeedFeedReplica(
    const engine::Engine& engine, const state::FeedProducer& producer);

// The books at S = 0 of a feed session that the next record begins (an
// accepted loss: MARKETDATA.md "Sequence numbers and sessions"): the
// engine's live orders under the directory announced last, as in
// SeedFeedReplica, S's timestamp 0. The session's StartOfFeed and directory,
// first in the ring, keep them. Loop thread; O(live orders).
[[nodiscard]] FeedReplicaSeed SeedNewFeedSession(
    const engine::Engine& engine, const state::FeedProducer& producer);

// A snapshot's packets, back to back; ends[i] is where packet i ends.
struct SnapshotPackets {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> ends;
  std::uint32_t message_count = 0;

  [[nodiscard]] std::span<const std::byte> packet(std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::span(bytes).subspan(begin, ends[i] - begin);
  }
};

class FeedReplica {
 public:
  explicit FeedReplica(FeedReplicaSeed seed)
      : seed_(std::move(seed)), lost_(!seed_.exact) {}

  // Applies the messages the ring committed after sequence(); the replica
  // is lost if some are no longer retained or one contradicts the book.
  // `scratch` holds copied blocks (grows as needed).
  void Follow(const FeedRing& ring, std::vector<std::byte>& scratch);

  [[nodiscard]] bool lost() const noexcept { return lost_; }
  // Whether a snapshot can be served: not lost, S's timestamp known.
  [[nodiscard]] bool ready() const noexcept {
    return !lost_ && seed_.timestamp.has_value();
  }
  // S: the last feed message applied.
  [[nodiscard]] std::uint64_t sequence() const noexcept {
    return seed_.sequence;
  }
  // Whether `instrument_id` is listed (in the directory's range).
  [[nodiscard]] bool Listed(std::uint32_t instrument_id) const;
  [[nodiscard]] const marketdata::Book& book() const noexcept {
    return seed_.book;
  }

  // The snapshot of `instrument_id` (0: every listed instrument) at
  // sequence(), in Snapshot packets of `session` carrying `token`, into
  // `out` (cleared first). Precondition: ready(), and instrument_id 0 or
  // Listed().
  void Snapshot(std::uint64_t session, std::uint16_t token,
                std::uint32_t instrument_id, SnapshotPackets& out) const;

 private:
  void Apply(std::span<const std::byte> message);

  FeedReplicaSeed seed_;
  bool lost_ = false;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_FEED_REPLICA_H_
