#include "service/feed_replica.h"

#include <algorithm>
#include <array>
#include <utility>

#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/packet.h"

namespace orderwire::service {
namespace {

// Messages copied from the ring at a time.
constexpr std::size_t kFollowBatch = 4096;

// The engine's live orders under `d`, every instrument of its range
// Trading, into seed.book.
void ListBooks(const engine::Engine& engine, const state::FeedDirectory& d,
               FeedReplicaSeed& seed) {
  seed.book.Reserve(engine.live_orders(), engine.live_orders());
  for (std::uint64_t id = d.min_instrument; id <= d.max_instrument; ++id) {
    const auto instrument = static_cast<std::uint32_t>(id);
    (void)seed.book.Apply(
        feed::InstrumentDirectory{.timestamp = 0,
                                  .instrument_id = instrument,
                                  .min_price = d.min_price,
                                  .max_price = d.max_price,
                                  .min_quantity = d.min_quantity,
                                  .max_quantity = d.max_quantity});
    (void)seed.book.Apply(
        feed::TradingStatus{.timestamp = 0,
                            .instrument_id = instrument,
                            .state = feed::TradingState::kTrading});
  }
  engine.ForEachLiveOrder([&](const engine::OrderInfo& order) {
    const marketdata::BookError error = seed.book.Apply(
        feed::OrderAdded{.timestamp = 0,
                         .order_id = order.order_id.value(),
                         .instrument_id = order.instrument_id.value(),
                         .side = order.side,
                         .price = order.price.value(),
                         .quantity = order.leaves_quantity.value()});
    if (error != marketdata::BookError::kOk) seed.exact = false;
  });
}

}  // namespace

FeedReplicaSeed SeedFeedReplica(const engine::Engine& engine,
                                const state::FeedProducer& producer) {
  FeedReplicaSeed seed;
  seed.sequence = producer.next_sequence() - 1;
  seed.timestamp = producer.last_timestamp();
  if (seed.sequence == 0) return seed;  // nothing announced yet
  ListBooks(engine, producer.announced(), seed);
  return seed;
}

FeedReplicaSeed SeedNewFeedSession(const engine::Engine& engine,
                                   const state::FeedProducer& producer) {
  FeedReplicaSeed seed;  // S = 0, its timestamp 0
  // A feed that never started has no directory and no order.
  if (producer.next_sequence() > 1) {
    ListBooks(engine, producer.announced(), seed);
  }
  return seed;
}

void FeedReplica::Follow(const FeedRing& ring,
                         std::vector<std::byte>& scratch) {
  while (!lost_) {
    const std::uint64_t first = seed_.sequence + 1;
    const std::uint64_t committed = ring.Committed();
    if (committed <= first) return;
    const std::uint64_t from = ring.Copy(
        first, std::min<std::uint64_t>(committed - first, kFollowBatch),
        scratch);
    if (from == 0) {  // overwritten before it was applied
      lost_ = true;
      return;
    }
    std::uint64_t sequence = from;
    std::size_t at = 0;
    while (!lost_ && at + feed::kBlockLengthSize <= scratch.size() &&
           sequence < committed) {
      const auto length = codec::LoadLE<std::uint16_t>(scratch.data() + at);
      const std::span<const std::byte> message(
          scratch.data() + at + feed::kBlockLengthSize, length);
      at += feed::kBlockLengthSize + length;
      if (sequence++ < first) continue;
      Apply(message);
    }
  }
}

void FeedReplica::Apply(std::span<const std::byte> message) {
  const marketdata::BookError error = seed_.book.ApplyMessage(message);
  if (marketdata::IsContradiction(error) ||
      error == marketdata::BookError::kBadLength) {
    lost_ = true;
    return;
  }
  // An unknown kind changes no book; its number is used all the same.
  ++seed_.sequence;
  seed_.timestamp = codec::LoadLE<std::uint64_t>(message.data() + 1);
}

bool FeedReplica::Listed(std::uint32_t instrument_id) const {
  const std::optional<marketdata::InstrumentInfo> info =
      seed_.book.FindInstrument(codec::InstrumentId(instrument_id));
  return info.has_value() && info->state.has_value() && info->listed();
}

namespace {

// Packs a snapshot's messages into Snapshot packets, appended to `out`.
class SnapshotWriter {
 public:
  SnapshotWriter(std::uint64_t session, std::uint16_t token,
                 SnapshotPackets& out)
      : session_(session), token_(token), out_(out), builder_(buffer_) {
    builder_.BeginSnapshot(session_, 1, token_);
  }
  template <typename Model>
  void Add(const Model& model) {
    if (builder_.Append(model) == codec::CodecError::kOk) return;
    Close();
    builder_.BeginSnapshot(session_, builder_.next_sequence(), token_);
    (void)builder_.Append(model);
  }
  void Close() {
    const std::span<const std::byte> packet = builder_.Finish();
    out_.bytes.insert(out_.bytes.end(), packet.begin(), packet.end());
    out_.ends.push_back(out_.bytes.size());
  }

 private:
  std::uint64_t session_;
  std::uint16_t token_;
  SnapshotPackets& out_;
  std::array<std::byte, feed::kMaxPacketBytes> buffer_{};
  feed::PacketBuilder builder_;
};

}  // namespace

void FeedReplica::Snapshot(std::uint64_t session, std::uint16_t token,
                           std::uint32_t instrument_id,
                           SnapshotPackets& out) const {
  const marketdata::Book& book = seed_.book;
  const std::uint64_t ts = seed_.timestamp.value_or(0);
  const auto wanted = [&](const marketdata::InstrumentInfo& info) {
    return info.state.has_value() && info.listed() &&
           (instrument_id == 0 || info.instrument_id.value() == instrument_id);
  };
  std::uint32_t count = 2;
  book.ForEachInstrument([&](const marketdata::InstrumentInfo& info) {
    if (wanted(info)) {
      count +=
          2 + static_cast<std::uint32_t>(book.order_count(info.instrument_id));
    }
  });
  out.bytes.clear();
  out.ends.clear();
  out.message_count = count;
  SnapshotWriter writer(session, token, out);
  writer.Add(feed::SnapshotStart{.timestamp = ts,
                                 .feed_sequence = seed_.sequence,
                                 .instrument_id = instrument_id,
                                 .message_count = count});
  book.ForEachInstrument([&](const marketdata::InstrumentInfo& info) {
    if (!wanted(info)) return;
    const std::uint32_t id = info.instrument_id.value();
    writer.Add(
        feed::InstrumentDirectory{.timestamp = ts,
                                  .instrument_id = id,
                                  .min_price = info.min_price.value(),
                                  .max_price = info.max_price.value(),
                                  .min_quantity = info.min_quantity.value(),
                                  .max_quantity = info.max_quantity.value()});
    writer.Add(feed::TradingStatus{
        .timestamp = ts, .instrument_id = id, .state = *info.state});
    for (const codec::Side side : {codec::Side::kBuy, codec::Side::kSell}) {
      book.ForEachLevel(
          info.instrument_id, side, [&](const marketdata::LevelInfo& level) {
            book.ForEachOrderAt(info.instrument_id, side, level.price,
                                [&](const marketdata::BookOrder& order) {
                                  writer.Add(feed::OrderAdded{
                                      .timestamp = ts,
                                      .order_id = order.order_id.value(),
                                      .instrument_id = id,
                                      .side = order.side,
                                      .price = order.price.value(),
                                      .quantity = order.quantity.value()});
                                });
          });
    }
  });
  writer.Add(
      feed::SnapshotEnd{.timestamp = ts, .feed_sequence = seed_.sequence});
  writer.Close();
}

}  // namespace orderwire::service
