// Helpers shared by the subscriber tests: a listener that records what the
// subscriber says and asks, a feed script (encoded messages by sequence)
// that packs Data packets with feed::PacketBuilder, a snapshot server
// model (a Book's state as Snapshot packets) and the request decoder.
#ifndef ORDERWIRE_TESTS_MARKETDATA_SUBSCRIBER_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_MARKETDATA_SUBSCRIBER_TEST_SUPPORT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "gtest/gtest.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"

namespace orderwire::marketdata::subscriber_test {

using Bytes = std::vector<std::byte>;

// A request the subscriber sent, decoded (RequestView must accept it).
struct SentRequest {
  feed::PacketType type{};
  std::uint64_t session = 0;
  std::uint64_t sequence = 0;
  std::uint16_t count = 0;
  std::uint16_t token = 0;
  std::uint32_t instrument_id = 0;
};

inline SentRequest DecodeRequest(std::span<const std::byte> bytes) {
  const auto parsed = feed::RequestView::Parse(bytes);
  EXPECT_TRUE(parsed.ok()) << feed::Name(parsed.error());
  if (!parsed.ok()) return {};
  const feed::RequestView& r = *parsed;
  SentRequest out{r.type(), r.session(), r.sequence(), r.count(), r.token(), 0};
  if (r.type() == feed::PacketType::kSnapshotRequest) {
    out.instrument_id = r.instrument_id();
  }
  return out;
}

// Records every call; requests are kept as bytes and decoded.
class Recorder : public SubscriberListener {
 public:
  void SendRequest(std::span<const std::byte> request) override {
    raw.emplace_back(request.begin(), request.end());
    requests.push_back(DecodeRequest(request));
  }
  void OnMessage(std::uint64_t sequence, feed::MessageBlock) override {
    sequences.push_back(sequence);
  }
  void OnTrade(std::uint64_t sequence, const feed::OrderExecuted&) override {
    trades.push_back(sequence);
  }
  void OnBestPrices(codec::InstrumentId id, const BestPrices& b) override {
    best.emplace_back(id.value(), b);
  }
  void OnSnapshot(std::uint64_t feed_sequence) override {
    snapshots.push_back(feed_sequence);
  }
  void OnStateChange(SubscriberState, SubscriberState to) override {
    states.push_back(to);
  }

  std::vector<Bytes> raw;
  std::vector<SentRequest> requests;
  std::vector<std::uint64_t> sequences;
  std::vector<std::uint64_t> trades;
  std::vector<std::pair<std::uint32_t, BestPrices>> best;
  std::vector<std::uint64_t> snapshots;
  std::vector<SubscriberState> states;
};

template <typename Model>
Bytes EncodeModel(const Model& model) {
  Bytes bytes(feed::kMessageSize<Model>);
  feed::EncodeMessage(model, bytes.data());
  return bytes;
}

// The feed's messages, message 1 first, and the packets that carry them.
class FeedScript {
 public:
  explicit FeedScript(std::uint64_t session) : session_(session) {}

  template <typename Model>
  std::uint64_t Add(const Model& model) {
    messages_.push_back(EncodeModel(model));
    return messages_.size();
  }
  void AddBytes(Bytes message) { messages_.push_back(std::move(message)); }
  [[nodiscard]] std::uint64_t next() const { return messages_.size() + 1; }
  [[nodiscard]] const Bytes& message(std::uint64_t sequence) const {
    return messages_[sequence - 1];
  }

  // A Data packet of messages [first, last].
  [[nodiscard]] Bytes Data(std::uint64_t first, std::uint64_t last,
                           std::uint16_t token = 0) const {
    std::array<std::byte, feed::kMaxPacketBytes> buffer{};
    feed::PacketBuilder builder(buffer);
    builder.BeginData(session_, first, token);
    for (std::uint64_t s = first; s <= last; ++s) {
      EXPECT_EQ(builder.AppendMessage(message(s)), codec::CodecError::kOk);
    }
    const auto packet = builder.Finish();
    return {packet.begin(), packet.end()};
  }
  // Messages [first, last] packed greedily into Data packets.
  [[nodiscard]] std::vector<Bytes> Packets(std::uint64_t first,
                                           std::uint64_t last,
                                           std::uint16_t token = 0) const {
    std::vector<Bytes> out;
    std::uint64_t start = first;
    std::size_t size = feed::kPacketHeaderSize;
    for (std::uint64_t s = first; s <= last; ++s) {
      const std::size_t block = feed::kBlockLengthSize + message(s).size();
      if (size + block > feed::kMaxPacketBytes || s - start == 1024) {
        out.push_back(Data(start, s - 1, token));
        start = s;
        size = feed::kPacketHeaderSize;
      }
      size += block;
    }
    if (start <= last) out.push_back(Data(start, last, token));
    return out;
  }
  [[nodiscard]] Bytes Heartbeat(std::uint64_t next_sequence) const {
    return Fixed(feed::EncodeHeartbeat, next_sequence);
  }
  [[nodiscard]] Bytes EndOfSession(std::uint64_t next_sequence) const {
    return Fixed(feed::EncodeEndOfSession, next_sequence);
  }
  [[nodiscard]] Bytes Refused(std::uint64_t sequence, std::uint16_t token,
                              feed::RefusedReason reason) const {
    Bytes out(feed::kPacketHeaderSize + feed::kRefusedBodySize);
    const auto size = feed::EncodeRefused(out, session_, sequence, token,
                                          {reason, 1, next()});
    EXPECT_TRUE(size.ok());
    return out;
  }
  [[nodiscard]] std::uint64_t session() const { return session_; }

 private:
  template <typename Encode>
  Bytes Fixed(Encode encode, std::uint64_t next_sequence) const {
    Bytes out(feed::kPacketHeaderSize);
    EXPECT_TRUE(encode(out, session_, next_sequence).ok());
    return out;
  }

  std::uint64_t session_;
  std::vector<Bytes> messages_;
};

// The snapshot a server sends of `book` at feed sequence `s` (all
// instruments), `per_packet` messages to a Snapshot packet.
inline std::vector<Bytes> SnapshotOf(const Book& book, std::uint64_t session,
                                     std::uint16_t token, std::uint64_t s,
                                     std::size_t per_packet = 30) {
  constexpr std::uint64_t kTs = 7;
  std::vector<Bytes> messages;
  messages.emplace_back();  // SnapshotStart, once the count is known
  book.ForEachInstrument([&](const InstrumentInfo& info) {
    const std::uint32_t id = info.instrument_id.value();
    messages.push_back(EncodeModel(feed::InstrumentDirectory{
        kTs, id, info.min_price.value(), info.max_price.value(),
        info.min_quantity.value(), info.max_quantity.value()}));
    if (info.state) {
      messages.push_back(
          EncodeModel(feed::TradingStatus{kTs, id, *info.state}));
    }
    for (const codec::Side side : {codec::Side::kBuy, codec::Side::kSell}) {
      book.ForEachLevel(info.instrument_id, side, [&](const LevelInfo& l) {
        book.ForEachOrderAt(
            info.instrument_id, side, l.price, [&](const BookOrder& o) {
              messages.push_back(EncodeModel(
                  feed::OrderAdded{kTs, o.order_id.value(), id, o.side,
                                   o.price.value(), o.quantity.value()}));
            });
      });
    }
  });
  messages.push_back(EncodeModel(feed::SnapshotEnd{kTs, s}));
  messages[0] = EncodeModel(feed::SnapshotStart{
      kTs, s, 0, static_cast<std::uint32_t>(messages.size())});
  std::vector<Bytes> packets;
  for (std::size_t i = 0; i < messages.size(); i += per_packet) {
    std::array<std::byte, feed::kMaxPacketBytes> buffer{};
    feed::PacketBuilder builder(buffer);
    builder.BeginSnapshot(session, i + 1, token);
    for (std::size_t j = i; j < messages.size() && j < i + per_packet; ++j) {
      EXPECT_EQ(builder.AppendMessage(messages[j]), codec::CodecError::kOk);
    }
    const auto packet = builder.Finish();
    packets.emplace_back(packet.begin(), packet.end());
  }
  return packets;
}

}  // namespace orderwire::marketdata::subscriber_test

#endif  // ORDERWIRE_TESTS_MARKETDATA_SUBSCRIBER_TEST_SUPPORT_H_
