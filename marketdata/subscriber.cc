// The subscriber: subscriber.h has the design note and the contract.
#include "marketdata/subscriber.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "codec/strong.h"
#include "codec/types.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "marketdata/book.h"

namespace orderwire::marketdata {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
constexpr std::uint64_t kLastSequence =
    std::numeric_limits<std::uint64_t>::max();

template <typename Model>
std::optional<codec::InstrumentId> InstrumentField(feed::MessageBlock block) {
  const auto view = feed::MessageView<Model>::FromBlock(block);
  return codec::InstrumentId(view->template Get<&Model::instrument_id>());
}

// The instrument whose book a message changes, if any.
std::optional<codec::InstrumentId> InstrumentOf(feed::MessageBlock block) {
  switch (block.kind()) {
    case feed::MessageKind::kInstrumentDirectory:
      return InstrumentField<feed::InstrumentDirectory>(block);
    case feed::MessageKind::kTradingStatus:
      return InstrumentField<feed::TradingStatus>(block);
    case feed::MessageKind::kOrderAdded:
      return InstrumentField<feed::OrderAdded>(block);
    case feed::MessageKind::kOrderExecuted:
      return InstrumentField<feed::OrderExecuted>(block);
    case feed::MessageKind::kOrderReduced:
      return InstrumentField<feed::OrderReduced>(block);
    case feed::MessageKind::kOrderDeleted:
      return InstrumentField<feed::OrderDeleted>(block);
    case feed::MessageKind::kOrderReplaced:
      return InstrumentField<feed::OrderReplaced>(block);
    default:
      return std::nullopt;
  }
}

bool SameLevel(const std::optional<LevelInfo>& a,
               const std::optional<LevelInfo>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->price == b->price && a->quantity == b->quantity);
}

// The counters' index of a refusal reason (reserved ones: Unavailable).
std::size_t ReasonIndex(feed::RefusedReason reason) {
  return static_cast<std::size_t>(feed::EffectiveReason(reason));
}

}  // namespace

std::string_view Name(SubscriberState state) noexcept {
  switch (state) {
    case SubscriberState::kFollowing:
      return "Following";
    case SubscriberState::kRecovering:
      return "Recovering";
    case SubscriberState::kStale:
      return "Stale";
    case SubscriberState::kStopped:
      return "Stopped";
  }
  return "";
}

Subscriber::Subscriber(const SubscriberOptions& options,
                       SubscriberListener& listener)
    : options_(options),
      listener_(listener),
      token_(options.first_token == 0 ? 1 : options.first_token) {
  options_.hold_bytes = std::max(options_.hold_bytes, feed::kMaxPacketBytes);
  options_.hold_packets = std::max<std::size_t>(options_.hold_packets, 1);
  options_.retransmit_tries = std::max(options_.retransmit_tries, 1);
  arena_.resize(options_.hold_bytes);
  book_.Reserve(options_.reserve_orders, options_.reserve_levels);
  held_.reserve(options_.hold_packets);
  if (options_.session) {
    session_ = *options_.session;
    session_known_ = true;
  }
  if (options_.first_sequence == 0) {
    mode_ = Mode::kRecovering;
    state_ = SubscriberState::kRecovering;
  } else {
    next_ = options_.first_sequence;
    seen_end_ = next_;
  }
}

void Subscriber::Start(std::int64_t now_ns) {
  started_ = true;
  last_packet_ns_ = now_ns;
  if (mode_ == Mode::kRecovering) SendSnapshotRequest(now_ns);
}

void Subscriber::OnPacket(std::span<const std::byte> bytes,
                          std::int64_t now_ns) {
  if (!started_) Start(now_ns);
  if (mode_ == Mode::kStopped) return;
  const auto parsed = feed::PacketView::Parse(
      bytes, session_known_ ? feed::SessionFilter::Only(session_)
                            : feed::SessionFilter::Any());
  if (!parsed.ok()) {
    ++counters_.malformed[static_cast<std::size_t>(parsed.error())];
    return;
  }
  // A message numbered 2^64 - 1 or beyond: the sequence after it would
  // wrap to 0.
  if (parsed->type() == feed::PacketType::kData &&
      parsed->count() > kLastSequence - parsed->sequence()) {
    constexpr auto kBadSequence =
        static_cast<std::size_t>(feed::CheckCause::kBadSequence);
    ++counters_.malformed[kBadSequence];
    return;
  }
  OnValid(*parsed, now_ns);
  UpdateState();
}

void Subscriber::OnValid(const feed::PacketView& packet, std::int64_t now_ns) {
  ++counters_.packets;
  last_packet_ns_ = now_ns;
  stale_ = false;
  if (packet.type() != feed::PacketType::kRefused && !session_known_) {
    session_ = packet.session();
    session_known_ = true;
  }
  switch (packet.type()) {
    case feed::PacketType::kData:
      OnData(packet, now_ns);
      return;
    case feed::PacketType::kHeartbeat:
    case feed::PacketType::kEndOfSession:
      if (packet.type() == feed::PacketType::kHeartbeat) {
        ++counters_.heartbeats;
      } else {
        ++counters_.end_of_session;
        end_of_session_ = packet.sequence();
      }
      SeeRange(packet.sequence(), packet.sequence());
      if (mode_ == Mode::kFollowing) AfterProgress(now_ns);
      return;
    case feed::PacketType::kSnapshot:
      OnSnapshotPacket(packet, now_ns);
      return;
    case feed::PacketType::kRefused:
      OnRefused(packet, now_ns);
      return;
    default:
      return;  // Parse lets no other type through
  }
}

void Subscriber::SeeRange(std::uint64_t first, std::uint64_t end) {
  const std::uint64_t base = std::max(seen_end_, next_);
  if (base != 0 && first > base) {
    ++counters_.gaps;
    counters_.messages_missing += first - base;
  }
  seen_end_ = std::max(seen_end_, end);
}

void Subscriber::OnData(const feed::PacketView& packet, std::int64_t now_ns) {
  if (packet.token() != 0) ++counters_.retransmit_replies;
  const std::uint64_t first = packet.sequence();
  const std::uint64_t end = first + packet.count();
  SeeRange(first, end);
  if (mode_ == Mode::kRecovering) {
    if (end > next_) Hold(packet, false, now_ns);
    return;
  }
  if (first < next_) counters_.duplicates += std::min(end, next_) - first;
  if (end <= next_) return;
  if (first > next_) {
    Hold(packet, false, now_ns);
  } else if (!ApplyData(packet)) {
    Hold(packet, false, now_ns);  // from the refused message on
    if (mode_ == Mode::kFollowing) StartRecovery(now_ns);
    return;
  } else {
    ApplyHeld(now_ns);
  }
  if (mode_ == Mode::kFollowing) AfterProgress(now_ns);
}

bool Subscriber::ApplyData(const feed::PacketView& packet) {
  std::uint64_t sequence = packet.sequence();
  for (const feed::MessageBlock block : packet) {
    if (sequence >= next_) {
      if (!ApplyOne(sequence, block)) return false;
      next_ = sequence + 1;
    }
    ++sequence;
  }
  return true;
}

bool Subscriber::ApplyOne(std::uint64_t sequence, feed::MessageBlock block) {
  if (!block.known()) {
    ++counters_.unknown_kinds;
    return true;
  }
  const std::uint64_t best_changes = book_.best_changes();
  if (IsContradiction(book_.Apply(block))) {
    ++counters_.contradictions;
    return false;
  }
  ++counters_.messages_applied;
  listener_.OnMessage(sequence, block);
  if (block.kind() == feed::MessageKind::kOrderExecuted) {
    listener_.OnTrade(
        sequence,
        feed::MessageView<feed::OrderExecuted>::FromBlock(block)->ToModel());
  }
  if (book_.best_changes() == best_changes) return true;  // no best moved
  if (const auto instrument = InstrumentOf(block)) CheckBest(*instrument);
  return true;
}

void Subscriber::ApplyHeld(std::int64_t now_ns) {
  while (mode_ == Mode::kFollowing) {
    const std::size_t i = LowestHeld(false);
    if (i == kNone || held_[i].sequence > next_) return;
    if (held_[i].sequence + held_[i].count > next_) {
      const auto parsed = feed::PacketView::Parse(HeldBytes(held_[i]),
                                                  feed::SessionFilter::Any());
      if (!ApplyData(*parsed)) {  // kept held: the snapshot may cover it
        StartRecovery(now_ns);
        return;
      }
    }
    Release(i);
  }
}

void Subscriber::AfterProgress(std::int64_t now_ns) {
  if (retransmit_.active && next_ >= retransmit_.end) {
    retransmit_.active = false;  // served; a gap left is asked at once
    retransmit_.tries = 0;
  }
  if (next_ >= seen_end_) {
    retransmit_ = {};
    return;
  }
  if (!retransmit_.active) SendRetransmit(now_ns);
}

void Subscriber::SendRetransmit(std::int64_t now_ns) {
  const std::size_t lowest = LowestHeld(false);
  std::uint64_t end = lowest == kNone ? seen_end_ : held_[lowest].sequence;
  if (end <= next_) end = seen_end_;
  const auto count = static_cast<std::uint16_t>(
      std::min<std::uint64_t>(end - next_, kMaxRetransmitCount));
  const std::uint16_t token = NewToken();
  const auto size =
      feed::EncodeRetransmitRequest(request_, session_, next_, count, token);
  retransmit_.active = true;
  retransmit_.backoff = false;
  retransmit_.token = token;
  retransmit_.first = next_;
  retransmit_.end = next_ + count;
  retransmit_.deadline = now_ns + options_.retransmit_timeout_ns;
  ++retransmit_.tries;
  ++counters_.retransmit_requests;
  listener_.SendRequest(std::span(request_).first(*size));
}

void Subscriber::OnRefused(const feed::PacketView& packet,
                           std::int64_t now_ns) {
  const bool for_retransmit = mode_ == Mode::kFollowing && retransmit_.active &&
                              packet.token() == retransmit_.token;
  const bool for_snapshot =
      mode_ == Mode::kRecovering && packet.token() == snapshot_.token;
  if (!for_retransmit && !for_snapshot) {
    ++counters_.stale_replies;
    return;
  }
  const feed::RefusedReason reason =
      feed::EffectiveReason(packet.refused().reason);
  ++counters_.refused[ReasonIndex(reason)];
  if (reason == feed::RefusedReason::kWrongSession) {
    mode_ = Mode::kStopped;
    return;
  }
  if (for_retransmit && (reason == feed::RefusedReason::kNotRetained ||
                         reason == feed::RefusedReason::kBeyondEnd)) {
    // BeyondEnd: the server is behind what this subscriber saw.
    if (reason == feed::RefusedReason::kBeyondEnd) ++counters_.contradictions;
    StartRecovery(now_ns);
    return;
  }
  // RateLimited, Unavailable, and what a snapshot request should not get:
  // the same request again later.
  if (for_retransmit) {
    retransmit_.backoff = true;
    retransmit_.tries = 0;  // answered: only requests unanswered count
    retransmit_.deadline = now_ns + options_.refused_retry_ns;
  } else {
    snapshot_.deadline = now_ns + options_.refused_retry_ns;
  }
}

void Subscriber::StartRecovery(std::int64_t now_ns) {
  mode_ = Mode::kRecovering;
  retransmit_ = {};
  SendSnapshotRequest(now_ns);
}

void Subscriber::SendSnapshotRequest(std::int64_t now_ns) {
  DropHeld(true);
  snapshot_ = {};
  snapshot_.token = NewToken();
  snapshot_.deadline = now_ns + options_.snapshot_timeout_ns;
  const auto size = feed::EncodeSnapshotRequest(
      request_, session_known_ ? session_ : 0, snapshot_.token, 0);
  ++counters_.snapshot_requests;
  listener_.SendRequest(std::span(request_).first(*size));
}

void Subscriber::OnSnapshotPacket(const feed::PacketView& packet,
                                  std::int64_t now_ns) {
  if (mode_ != Mode::kRecovering || packet.token() != snapshot_.token) {
    ++counters_.stale_replies;
    return;
  }
  snapshot_.deadline = now_ns + options_.snapshot_timeout_ns;
  const std::uint64_t first = packet.sequence();
  if (first + packet.count() <= snapshot_.position) return;  // had it
  if (first > snapshot_.position) {
    Hold(packet, true, now_ns);
    return;
  }
  if (ApplySnapshot(packet, now_ns)) DrainSnapshot(now_ns);
}

void Subscriber::DrainSnapshot(std::int64_t now_ns) {
  while (mode_ == Mode::kRecovering) {
    const std::size_t i = LowestHeld(true);
    if (i == kNone || held_[i].sequence > snapshot_.position) return;
    const Held held = held_[i];
    // Released first: applying may finish the snapshot, which drops held
    // snapshot packets. The bytes stay put: nothing is held meanwhile.
    Release(i);
    const auto parsed =
        feed::PacketView::Parse(HeldBytes(held), feed::SessionFilter::Any());
    if (!ApplySnapshot(*parsed, now_ns)) return;
  }
}

bool Subscriber::ApplySnapshot(const feed::PacketView& packet,
                               std::int64_t now_ns) {
  std::uint64_t position = packet.sequence();
  for (const feed::MessageBlock block : packet) {
    if (position++ < snapshot_.position) continue;
    if (snapshot_.done || !ApplySnapshotMessage(block)) {
      ++counters_.contradictions;
      SendSnapshotRequest(now_ns);
      return false;
    }
    ++snapshot_.position;
  }
  if (snapshot_.done) FinishSnapshot(now_ns);
  return true;
}

bool Subscriber::ApplySnapshotMessage(feed::MessageBlock block) {
  const std::uint64_t position = snapshot_.position;
  if (position == 1) {
    const auto start = feed::MessageView<feed::SnapshotStart>::FromBlock(block);
    if (!start.ok()) return false;
    snapshot_.feed_sequence = start->Get<&feed::SnapshotStart::feed_sequence>();
    snapshot_.message_count = start->Get<&feed::SnapshotStart::message_count>();
    const std::uint32_t instrument =
        start->Get<&feed::SnapshotStart::instrument_id>();
    // S + 1 becomes `next`: a snapshot at 2^64 - 1 has none.
    if (snapshot_.message_count < 2 ||
        snapshot_.feed_sequence == kLastSequence) {
      return false;
    }
    if (instrument == 0) {
      book_.Clear();
    } else {
      book_.Clear(codec::InstrumentId(instrument));
    }
    return true;
  }
  if (position == snapshot_.message_count) {
    const auto end = feed::MessageView<feed::SnapshotEnd>::FromBlock(block);
    if (!end.ok() || end->Get<&feed::SnapshotEnd::feed_sequence>() !=
                         snapshot_.feed_sequence) {
      return false;
    }
    snapshot_.done = true;
    return true;
  }
  if (!block.known()) {
    ++counters_.unknown_kinds;
    return true;
  }
  if (block.kind() == feed::MessageKind::kSnapshotStart ||
      block.kind() == feed::MessageKind::kSnapshotEnd) {
    return false;
  }
  return !IsContradiction(book_.Apply(block));
}

void Subscriber::FinishSnapshot(std::int64_t now_ns) {
  ++counters_.snapshots_completed;
  next_ = snapshot_.feed_sequence + 1;
  seen_end_ = std::max(seen_end_, next_);
  mode_ = Mode::kFollowing;
  retransmit_ = {};
  DropHeld(true);
  listener_.OnSnapshot(snapshot_.feed_sequence);
  CheckAllBest();
  ApplyHeld(now_ns);
  if (mode_ == Mode::kFollowing) AfterProgress(now_ns);
}

void Subscriber::Poll(std::int64_t now_ns) {
  if (!started_) Start(now_ns);
  if (mode_ == Mode::kStopped) return;
  if (!stale_ &&
      now_ns - last_packet_ns_ >= 3 * options_.heartbeat_interval_ns) {
    stale_ = true;
    ++counters_.stale_periods;
  }
  if (mode_ == Mode::kFollowing && retransmit_.active &&
      now_ns >= retransmit_.deadline) {
    if (retransmit_.backoff) {
      SendRetransmit(now_ns);
    } else {
      if (next_ > retransmit_.first) retransmit_.tries = 0;  // progress
      if (retransmit_.tries >= options_.retransmit_tries) {
        StartRecovery(now_ns);
      } else {
        SendRetransmit(now_ns);
      }
    }
  }
  if (mode_ == Mode::kRecovering && now_ns >= snapshot_.deadline) {
    SendSnapshotRequest(now_ns);
  }
  UpdateState();
}

void Subscriber::Hold(const feed::PacketView& packet, bool snapshot,
                      std::int64_t now_ns) {
  const std::span<const std::byte> bytes = packet.bytes();
  bool evicted = false;
  if (MakeRoom(bytes.size(), packet.sequence(), snapshot, &evicted)) {
    std::memcpy(arena_.data() + arena_end_, bytes.data(), bytes.size());
    held_.push_back(Held{
        packet.sequence(), static_cast<std::uint32_t>(arena_end_),
        static_cast<std::uint16_t>(bytes.size()), packet.count(), snapshot});
    arena_end_ += bytes.size();
    held_bytes_ += bytes.size();
    ++counters_.held_packets;
  } else {
    ++counters_.hold_overflows;
    evicted = true;
  }
  // Following: a gap too long to wait for.
  if (evicted && mode_ == Mode::kFollowing) StartRecovery(now_ns);
}

bool Subscriber::MakeRoom(std::size_t size, std::uint64_t sequence,
                          bool snapshot, bool* evicted) {
  while (held_.size() >= options_.hold_packets ||
         arena_end_ + size > arena_.size()) {
    if (held_.size() < options_.hold_packets &&
        held_bytes_ + size <= arena_.size()) {
      Compact();
      continue;
    }
    const std::size_t lowest = LowestHeld(false);
    if (lowest == kNone || (!snapshot && sequence < held_[lowest].sequence)) {
      return false;
    }
    Release(lowest);
    ++counters_.hold_overflows;
    *evicted = true;
  }
  return true;
}

void Subscriber::Compact() {
  std::sort(held_.begin(), held_.end(),
            [](const Held& a, const Held& b) { return a.offset < b.offset; });
  std::size_t end = 0;
  for (Held& h : held_) {
    if (h.offset != end) {
      std::memmove(arena_.data() + end, arena_.data() + h.offset, h.size);
      h.offset = static_cast<std::uint32_t>(end);
    }
    end += h.size;
  }
  arena_end_ = end;
}

void Subscriber::Release(std::size_t index) {
  held_bytes_ -= held_[index].size;
  held_[index] = held_.back();
  held_.pop_back();
  if (held_.empty()) arena_end_ = 0;
}

void Subscriber::DropHeld(bool snapshot) {
  for (std::size_t i = held_.size(); i-- > 0;) {
    if (held_[i].snapshot == snapshot) Release(i);
  }
}

std::size_t Subscriber::LowestHeld(bool snapshot) const {
  std::size_t lowest = kNone;
  for (std::size_t i = 0; i < held_.size(); ++i) {
    if (held_[i].snapshot == snapshot &&
        (lowest == kNone || held_[i].sequence < held_[lowest].sequence)) {
      lowest = i;
    }
  }
  return lowest;
}

void Subscriber::CheckBest(codec::InstrumentId instrument_id) {
  BestPrices& last = LastBestOf(instrument_id);
  const BestPrices now{book_.Best(instrument_id, codec::Side::kBuy),
                       book_.Best(instrument_id, codec::Side::kSell)};
  if (SameLevel(now.bid, last.bid) && SameLevel(now.ask, last.ask)) return;
  last = now;
  listener_.OnBestPrices(instrument_id, now);
}

BestPrices& Subscriber::NewLastBest(codec::InstrumentId instrument_id) {
  if (instrument_id.value() >= kDirectBestIds) return best_[instrument_id];
  direct_best_.resize(instrument_id.value() + 1);
  LastBest& entry = direct_best_[instrument_id.value()];
  entry.seen = true;
  return entry.prices;
}

void Subscriber::CheckAllBest() {
  const auto check = [&](codec::InstrumentId instrument_id, BestPrices& last) {
    const BestPrices now{book_.Best(instrument_id, codec::Side::kBuy),
                         book_.Best(instrument_id, codec::Side::kSell)};
    if (SameLevel(now.bid, last.bid) && SameLevel(now.ask, last.ask)) return;
    last = now;
    listener_.OnBestPrices(instrument_id, now);
  };
  for (std::size_t id = 0; id < direct_best_.size(); ++id) {
    if (direct_best_[id].seen) {
      check(codec::InstrumentId(static_cast<std::uint32_t>(id)),
            direct_best_[id].prices);
    }
  }
  for (auto& [instrument_id, last] : best_) check(instrument_id, last);
  book_.ForEachInstrument(
      [&](const InstrumentInfo& info) { CheckBest(info.instrument_id); });
}

std::uint16_t Subscriber::NewToken() noexcept {
  const std::uint16_t token = token_;
  token_ = static_cast<std::uint16_t>(token_ + 1);
  if (token_ == 0) token_ = 1;
  return token;
}

void Subscriber::UpdateState() {
  SubscriberState now = SubscriberState::kFollowing;
  if (mode_ == Mode::kStopped) {
    now = SubscriberState::kStopped;
  } else if (stale_) {
    now = SubscriberState::kStale;
  } else if (mode_ == Mode::kRecovering) {
    now = SubscriberState::kRecovering;
  }
  if (now == state_) return;
  const SubscriberState from = state_;
  state_ = now;
  listener_.OnStateChange(from, now);
}

}  // namespace orderwire::marketdata
