// Fuzz target: marketdata::Subscriber on whatever datagrams arrive.
//
// A subscriber takes datagrams from a socket anyone can send to (the feed,
// the request server's replies, or neither), so every decision it makes
// from them is fuzzed here: sequencing, gaps and held packets, retransmit
// replies and refusals, snapshot recovery, eviction, staleness. Each input
// is a script (fuzz/subscriber_script.h): the subscriber's options, then
// datagrams at advancing times, each optionally followed by Poll, and
// optionally stamped with the token of the last request the subscriber
// sent (so replies match). Every datagram is copied to a heap block of its
// own size, so ASan sees a read past its end.
//
// Invariants, checked inside the listener's calls and after every step:
//  * Every request sent passes the request server's checks
//    (feed::RequestView::Parse), carries a token unlike the previous
//    request's and the session followed (0 while none is known); a
//    RetransmitRequest asks from next_sequence(), at most 1024 messages; a
//    SnapshotRequest asks for every instrument. Nothing is sent once
//    Stopped, which lasts.
//  * OnMessage comes for the sequence next_sequence() (in order, each once,
//    no hole), a known kind; OnTrade follows each OrderExecuted's
//    OnMessage, and only those.
//    OnBestPrices tells the book's best levels at that moment.
//  * Counters: each datagram handed while not Stopped counts once, as a
//    packet or as malformed by a cause of "Checks"; requests, messages
//    applied, trades and snapshots completed equal the listener's calls;
//    held() stays within the hold storage.
//  * State changes are told from the state last told, never to the same.
//  * While Following: next_sequence() is a sequence (not 0), and the best
//    prices last told for each instrument are the book's.
//  * The book agrees with itself: levels ordered best first, a level's
//    quantity and order count those of its orders, each order found by id
//    as listed, counts per instrument and in all, Best the first level, and
//    orders only on listed instruments.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codec/strong.h"
#include "codec/types.h"
#include "codec/wire.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/subscriber_script.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "tests/feed/golden.h"

namespace orderwire::marketdata {
namespace {

namespace config = fuzz::subscriber_config;

SubscriberOptions OptionsOf(std::uint8_t bits) {
  SubscriberOptions options;
  if ((bits & config::kFromStart) != 0) options.first_sequence = 1;
  if ((bits & config::kGivenSession) != 0) {
    options.session = feed::golden::kSession;
  }
  // Hold storage a script can fill (the default's 370 KB also cost a
  // fuzz run 5 ms under ASan).
  options.hold_packets = (bits & config::kSmallHold) != 0 ? 2 : 16;
  options.hold_bytes =
      ((bits & config::kSmallHold) != 0 ? 1 : 4) * feed::kMaxPacketBytes;
  options.retransmit_tries = 1 + ((bits >> config::kTriesShift) & 3);
  if ((bits & config::kTokenWrap) != 0) options.first_token = 0xfffe;
  return options;
}

bool SameBest(const BestPrices& a, const BestPrices& b) {
  const auto same = [](const std::optional<LevelInfo>& x,
                       const std::optional<LevelInfo>& y) {
    return x.has_value() == y.has_value() &&
           (!x || (x->price == y->price && x->quantity == y->quantity));
  };
  return same(a.bid, b.bid) && same(a.ask, b.ask);
}

BestPrices BookBest(const Book& book, codec::InstrumentId id) {
  return {book.Best(id, codec::Side::kBuy), book.Best(id, codec::Side::kSell)};
}

// One level of a side: its orders as the level says, each found by id.
std::uint32_t CheckLevel(const Book& book, codec::InstrumentId id,
                         codec::Side side, const LevelInfo& level) {
  codec::Quantity total{0};
  std::uint32_t count = 0;
  book.ForEachOrderAt(id, side, level.price, [&](const BookOrder& order) {
    FUZZ_CHECK(order.instrument_id == id && order.side == side &&
               order.price == level.price);
    FUZZ_CHECK(order.quantity.value() >= 1);
    FUZZ_CHECK(book.FindOrder(order.order_id) == order);
    total += order.quantity;  // wraps as the book's total does
    ++count;
  });
  FUZZ_CHECK(count >= 1 && count == level.order_count);
  FUZZ_CHECK(total == level.quantity);
  return count;
}

// One side of an instrument: levels strictly best first; its order count.
std::size_t CheckSide(const Book& book, codec::InstrumentId id,
                      codec::Side side) {
  std::size_t levels = 0;
  std::size_t orders = 0;
  std::optional<LevelInfo> first;
  std::optional<codec::Price> previous;
  book.ForEachLevel(id, side, [&](const LevelInfo& level) {
    if (previous) {
      FUZZ_CHECK(side == codec::Side::kBuy ? level.price < *previous
                                           : *previous < level.price);
    }
    previous = level.price;
    if (!first) first = level;
    ++levels;
    orders += CheckLevel(book, id, side, level);
  });
  FUZZ_CHECK(book.level_count(id, side) == levels);
  FUZZ_CHECK(book.Best(id, side) == first);
  return orders;
}

void CheckBook(const Book& book) {
  std::size_t orders = 0;
  book.ForEachInstrument([&](const InstrumentInfo& info) {
    const codec::InstrumentId id = info.instrument_id;
    const std::size_t of_instrument = CheckSide(book, id, codec::Side::kBuy) +
                                      CheckSide(book, id, codec::Side::kSell);
    FUZZ_CHECK(book.order_count(id) == of_instrument);
    if (of_instrument != 0) FUZZ_CHECK(info.listed());
    orders += of_instrument;
  });
  FUZZ_CHECK(book.order_count() == orders);
  std::size_t canonical = 0;
  book.ForEachOrder([&](const BookOrder&) { ++canonical; });
  FUZZ_CHECK(canonical == orders);
}

// The listener: checks each call against the subscriber and counts them.
class Recorder : public SubscriberListener {
 public:
  void Watch(const Subscriber* subscriber) {
    subscriber_ = subscriber;
    state_ = subscriber->state();
  }

  void SendRequest(std::span<const std::byte> bytes) override {
    FUZZ_CHECK(subscriber_->state() != SubscriberState::kStopped);
    const auto request = feed::RequestView::Parse(bytes);
    FUZZ_CHECK(request.ok());
    FUZZ_CHECK(requests_ == 0 || request->token() != last_token_);
    FUZZ_CHECK(request->session() == subscriber_->session());
    if (request->type() == feed::PacketType::kRetransmitRequest) {
      FUZZ_CHECK(request->sequence() == subscriber_->next_sequence());
      FUZZ_CHECK(request->count() <= kMaxRetransmitCount);
    } else {
      FUZZ_CHECK(request->instrument_id() == 0);
    }
    last_token_ = request->token();
    ++requests_;
  }

  void OnMessage(std::uint64_t sequence, feed::MessageBlock message) override {
    FUZZ_CHECK(sequence == subscriber_->next_sequence());
    FUZZ_CHECK(message.known());
    last_kind_ = message.kind();
    last_sequence_ = sequence;
    ++messages_;
    if (last_kind_ == feed::MessageKind::kOrderExecuted) ++executed_;
  }

  void OnTrade(std::uint64_t sequence,
               const feed::OrderExecuted& /*trade*/) override {
    FUZZ_CHECK(messages_ != 0 && sequence == last_sequence_ &&
               last_kind_ == feed::MessageKind::kOrderExecuted);
    ++trades_;
  }

  void OnBestPrices(codec::InstrumentId id, const BestPrices& best) override {
    const BestPrices now = BookBest(subscriber_->book(), id);
    FUZZ_CHECK(best.bid == now.bid && best.ask == now.ask);
    FUZZ_CHECK(!SameBest(best, told_[id]));  // a change, not a repeat
    told_[id] = best;
  }

  void OnSnapshot(std::uint64_t feed_sequence) override {
    FUZZ_CHECK(subscriber_->next_sequence() == feed_sequence + 1);
    ++snapshots_;
  }

  void OnStateChange(SubscriberState from, SubscriberState to) override {
    FUZZ_CHECK(from == state_ && from != to);
    FUZZ_CHECK(from != SubscriberState::kStopped);
    state_ = to;
  }

  // The best prices told match the book's, for every instrument told of
  // or in the book (while Following: a snapshot under way tells nothing).
  void CheckBestTold() {
    const Book& book = subscriber_->book();
    for (const auto& [id, best] : told_) {
      FUZZ_CHECK(SameBest(best, BookBest(book, id)));
    }
    book.ForEachInstrument([&](const InstrumentInfo& info) {
      const auto it = told_.find(info.instrument_id);
      const BestPrices none;
      FUZZ_CHECK(SameBest(it == told_.end() ? none : it->second,
                          BookBest(book, info.instrument_id)));
    });
  }

  [[nodiscard]] std::uint64_t requests() const { return requests_; }
  [[nodiscard]] std::uint64_t messages() const { return messages_; }
  [[nodiscard]] std::uint64_t trades() const { return trades_; }
  [[nodiscard]] std::uint64_t executed() const { return executed_; }
  [[nodiscard]] std::uint64_t snapshots() const { return snapshots_; }
  [[nodiscard]] SubscriberState state() const { return state_; }
  [[nodiscard]] std::uint16_t last_token() const { return last_token_; }

 private:
  const Subscriber* subscriber_ = nullptr;
  SubscriberState state_ = SubscriberState::kFollowing;
  std::uint64_t requests_ = 0;
  std::uint16_t last_token_ = 0;
  std::uint64_t messages_ = 0;
  std::uint64_t trades_ = 0;
  std::uint64_t executed_ = 0;  // OnMessage of an OrderExecuted
  std::uint64_t snapshots_ = 0;
  std::uint64_t last_sequence_ = 0;
  feed::MessageKind last_kind_{};
  absl::flat_hash_map<codec::InstrumentId, BestPrices> told_;
};

// Runs one script against a subscriber and checks after every step.
class Run {
 public:
  explicit Run(std::uint8_t config)
      : options_(OptionsOf(config)), subscriber_(options_, recorder_) {
    recorder_.Watch(&subscriber_);
  }

  void Step(const fuzz::SubscriberStep& step) {
    now_ns_ += fuzz::AdvanceNs(step.when);
    if (!step.datagram.empty()) {
      // A block of its own: ASan catches a read past the datagram.
      std::vector<std::byte> datagram(step.datagram.begin(),
                                      step.datagram.end());
      constexpr std::size_t kTokenAt =
          feed::PacketOffsetOf<&feed::PacketHeader::token>();
      if ((step.when & fuzz::subscriber_step::kStampToken) != 0 &&
          datagram.size() >= feed::kPacketHeaderSize) {
        codec::StoreLE(datagram.data() + kTokenAt, recorder_.last_token());
      }
      const bool stopped = subscriber_.state() == SubscriberState::kStopped;
      const std::uint64_t before = Handled();
      subscriber_.OnPacket(datagram, now_ns_);
      FUZZ_CHECK(Handled() == before + (stopped ? 0 : 1));
      Check(stopped);
    }
    if ((step.when & fuzz::subscriber_step::kPoll) != 0) {
      const bool stopped = subscriber_.state() == SubscriberState::kStopped;
      subscriber_.Poll(now_ns_);
      Check(stopped);
    }
  }

 private:
  // Datagrams counted: valid packets and malformed ones.
  [[nodiscard]] std::uint64_t Handled() const {
    const SubscriberCounters& c = subscriber_.counters();
    std::uint64_t handled = c.packets;
    for (const std::uint64_t n : c.malformed) handled += n;
    return handled;
  }

  void Check(bool was_stopped) {
    const SubscriberCounters& c = subscriber_.counters();
    const SubscriberState state = subscriber_.state();
    FUZZ_CHECK(c.malformed[0] == 0);
    FUZZ_CHECK(c.retransmit_requests + c.snapshot_requests ==
               recorder_.requests());
    FUZZ_CHECK(c.messages_applied == recorder_.messages());
    FUZZ_CHECK(c.snapshots_completed == recorder_.snapshots());
    FUZZ_CHECK(recorder_.trades() == recorder_.executed());
    FUZZ_CHECK(subscriber_.held() <=
               std::max<std::size_t>(options_.hold_packets, 1));
    FUZZ_CHECK(recorder_.state() == state);
    if (was_stopped) FUZZ_CHECK(state == SubscriberState::kStopped);
    if (state == SubscriberState::kFollowing) {
      FUZZ_CHECK(subscriber_.next_sequence() != 0);
      recorder_.CheckBestTold();
    }
    CheckBook(subscriber_.book());
  }

  SubscriberOptions options_;
  Recorder recorder_;
  Subscriber subscriber_;
  std::int64_t now_ns_ = 1'000'000'000;
};

}  // namespace
}  // namespace orderwire::marketdata

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::byte> bytes(
      reinterpret_cast<const std::byte*>(data), size);
  orderwire::marketdata::Run run(data[0]);
  orderwire::fuzz::SubscriberScriptReader reader(bytes.subspan(1));
  orderwire::fuzz::SubscriberStep step;
  for (std::size_t i = 0;
       i < orderwire::fuzz::kMaxSubscriberSteps && reader.Next(&step); ++i) {
    run.Step(step);
  }
  return 0;
}
