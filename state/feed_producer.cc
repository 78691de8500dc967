// The feed's messages of each record; see feed_producer.h.
#include "state/feed_producer.h"

#include <algorithm>
#include <cassert>

#include "codec/messages.h"
#include "codec/types.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/types.h"

namespace orderwire::state {
namespace {

// Whether `instrument` is in the directory's range.
bool Listed(const FeedDirectory& directory, std::uint32_t instrument) {
  return instrument >= directory.min_instrument &&
         instrument <= directory.max_instrument;
}

}  // namespace

FeedDirectory FeedDirectory::Of(const engine::EngineConfig& config) {
  return FeedDirectory{.min_instrument = config.min_instrument,
                       .max_instrument = config.max_instrument,
                       .min_price = config.min_price,
                       .max_price = config.max_price,
                       .min_quantity = config.min_quantity,
                       .max_quantity = config.max_quantity};
}

FeedProducer::FeedProducer() {
  bytes_.resize(std::size_t{1} << 12);
  messages_.resize(64);
}

void FeedProducer::NewSession(std::uint64_t index) noexcept {
  assert(index >= 1);
  session_start_ = index;
  next_sequence_ = 1;
  last_timestamp_ = 0;
  // Begin() starts the feed again: StartOfFeed, the directory in force.
  check_directory_ = true;
}

void FeedProducer::Restore(std::uint64_t sequence,
                           const FeedDirectory& announced,
                           std::uint64_t session_start) {
  assert(sequence >= 1);
  next_sequence_ = sequence;
  announced_ = announced;
  session_start_ = session_start;
  check_directory_ = true;
  last_timestamp_ =
      sequence == 1 ? std::optional<std::uint64_t>(0) : std::nullopt;
}

void FeedProducer::Grow(std::size_t at_least) {
  std::vector<std::byte> bigger(std::max(2 * bytes_.size(), at_least));
  std::copy_n(bytes_.data(), used_, bigger.data());
  for (std::size_t i = 0; i < count_; ++i) {
    const auto offset =
        static_cast<std::size_t>(messages_[i].bytes.data() - bytes_.data());
    messages_[i].bytes = std::span<const std::byte>(bigger.data() + offset,
                                                    messages_[i].bytes.size());
  }
  bytes_.swap(bigger);
}

template <typename Model>
void FeedProducer::Emit(const Model& model) {
  constexpr std::size_t kSize = feed::kMessageSize<Model>;
  if (used_ + kSize > bytes_.size()) [[unlikely]] {
    Grow(used_ + kSize);
  }
  if (count_ == messages_.size()) [[unlikely]] {
    messages_.resize(2 * messages_.size());
  }
  std::byte* const at = bytes_.data() + used_;
  feed::EncodeMessage(model, at);
  messages_[count_] = FeedMessage{next_sequence_ + count_,
                                  std::span<const std::byte>(at, kSize)};
  used_ += kSize;
  ++count_;
  last_timestamp_ = model.timestamp;
}

void FeedProducer::Directory(std::uint32_t instrument,
                             const FeedDirectory& directory) {
  Emit(feed::InstrumentDirectory{.timestamp = timestamp_,
                                 .instrument_id = instrument,
                                 .min_price = directory.min_price,
                                 .max_price = directory.max_price,
                                 .min_quantity = directory.min_quantity,
                                 .max_quantity = directory.max_quantity});
}

void FeedProducer::StartOfFeed(const FeedDirectory& directory) {
  Emit(feed::SystemEvent{.timestamp = timestamp_,
                         .event = feed::SystemEventCode::kStartOfFeed});
  for (std::uint64_t i = directory.min_instrument;
       i <= directory.max_instrument; ++i) {
    const auto instrument = static_cast<std::uint32_t>(i);
    Directory(instrument, directory);
    Emit(feed::TradingStatus{.timestamp = timestamp_,
                             .instrument_id = instrument,
                             .state = feed::TradingState::kTrading});
  }
}

// MARKETDATA.md: Unlisted for each instrument that left the range, the
// directory of the new range, Trading for each that entered it; each
// ascending.
void FeedProducer::DirectoryChanges(const FeedDirectory& before,
                                    const FeedDirectory& after) {
  for (std::uint64_t i = before.min_instrument; i <= before.max_instrument;
       ++i) {
    const auto instrument = static_cast<std::uint32_t>(i);
    if (Listed(after, instrument)) continue;
    Emit(feed::TradingStatus{.timestamp = timestamp_,
                             .instrument_id = instrument,
                             .state = feed::TradingState::kUnlisted});
  }
  for (std::uint64_t i = after.min_instrument; i <= after.max_instrument; ++i) {
    Directory(static_cast<std::uint32_t>(i), after);
  }
  for (std::uint64_t i = after.min_instrument; i <= after.max_instrument; ++i) {
    const auto instrument = static_cast<std::uint32_t>(i);
    if (Listed(before, instrument)) continue;
    Emit(feed::TradingStatus{.timestamp = timestamp_,
                             .instrument_id = instrument,
                             .state = feed::TradingState::kTrading});
  }
}

void FeedProducer::Begin(std::uint64_t receive_ns,
                         const codec::Command& command,
                         const engine::Engine& engine) {
  timestamp_ = receive_ns;
  used_ = 0;
  count_ = 0;
  may_rest_ = feed::OrderAdded{};
  replaced_.reset();
  if (check_directory_) [[unlikely]] {
    check_directory_ = false;
    const FeedDirectory in_force = FeedDirectory::Of(engine.config());
    if (next_sequence_ == 1) {
      StartOfFeed(in_force);
      announced_ = in_force;
    } else if (!(in_force == announced_)) {
      DirectoryChanges(announced_, in_force);
      announced_ = in_force;
    }
  }
  if (command.kind == codec::Kind::kReplace) {
    replaced_ = engine.FindOrder(command.order_id);
  }
}

// A Replaced report (MARKETDATA.md's table): priority kept, a reduction
// (or nothing when only the client order id changed); priority lost, a
// move, or, when more reports of the command follow (it crossed and
// trades as a taker), a delete now and an add at the end if it rests.
void FeedProducer::OnReplaced(const engine::ReportBuffer& reports,
                              std::size_t i) {
  const auto replaced = reports.Get<codec::Replaced>(reports[i]);
  // A Replaced report names an order that was live before the command.
  assert(replaced_.has_value());
  if (!replaced_.has_value()) return;
  const engine::OrderInfo& before = *replaced_;
  const std::uint32_t instrument = before.instrument_id.value();
  if (replaced.priority_kept == codec::PriorityKept::kYes) {
    const std::uint64_t leaves = before.leaves_quantity.value();
    if (replaced.quantity < leaves) {
      Emit(
          feed::OrderReduced{.timestamp = timestamp_,
                             .order_id = replaced.order_id,
                             .instrument_id = instrument,
                             .cancelled_quantity = leaves - replaced.quantity});
    }
    return;
  }
  if (i + 1 < reports.size()) {
    Emit(feed::OrderDeleted{.timestamp = timestamp_,
                            .order_id = replaced.order_id,
                            .instrument_id = instrument});
    may_rest_ = feed::OrderAdded{.timestamp = timestamp_,
                                 .order_id = replaced.order_id,
                                 .instrument_id = instrument,
                                 .side = before.side,
                                 .price = replaced.price,
                                 .quantity = replaced.quantity};
    return;
  }
  Emit(feed::OrderReplaced{.timestamp = timestamp_,
                           .order_id = replaced.order_id,
                           .instrument_id = instrument,
                           .price = replaced.price,
                           .quantity = replaced.quantity});
}

void FeedProducer::OnAccepted(const codec::Accepted& accepted) {
  // Only these rest, and an accepted one always can (BookFull is a reject).
  if (accepted.time_in_force != codec::TimeInForce::kGoodTillCancel &&
      accepted.time_in_force != codec::TimeInForce::kPostOnly) {
    return;
  }
  may_rest_ = feed::OrderAdded{.timestamp = timestamp_,
                               .order_id = accepted.order_id,
                               .instrument_id = accepted.instrument_id,
                               .side = accepted.side,
                               .price = accepted.price,
                               .quantity = accepted.quantity};
}

void FeedProducer::Finish(const engine::ReportBuffer& reports) {
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const engine::Report& report = reports[i];
    switch (report.kind) {
      case codec::Kind::kAccepted:
        OnAccepted(reports.Get<codec::Accepted>(report));
        break;
      case codec::Kind::kFilled: {
        const auto fill = reports.Get<codec::Filled>(report);
        if (fill.liquidity != codec::Liquidity::kMaker) {
          // The order that may rest: what this taker fill left of it.
          if (fill.order_id == may_rest_.order_id) {
            may_rest_.quantity = fill.leaves_quantity;
          }
          break;
        }
        Emit(feed::OrderExecuted{.timestamp = timestamp_,
                                 .order_id = fill.order_id,
                                 .instrument_id = fill.instrument_id,
                                 .side = fill.side,
                                 .match_id = fill.match_id,
                                 .price = fill.price,
                                 .quantity = fill.quantity});
        break;
      }
      case codec::Kind::kCancelled: {
        const auto cancel = reports.Get<codec::Cancelled>(report);
        // Requested, SelfTrade, MassCancel and CancelOnDisconnect cancel a
        // resting order; the other reasons end an order that never rested.
        if (cancel.reason != codec::CancelReason::kRequested &&
            cancel.reason != codec::CancelReason::kSelfTrade &&
            cancel.reason != codec::CancelReason::kMassCancel &&
            cancel.reason != codec::CancelReason::kCancelOnDisconnect) {
          break;
        }
        Emit(feed::OrderDeleted{.timestamp = timestamp_,
                                .order_id = cancel.order_id,
                                .instrument_id = cancel.instrument_id});
        break;
      }
      case codec::Kind::kReplaced:
        OnReplaced(reports, i);
        break;
      default:  // Rejected, MassCancelDone, SessionClosed, OrderStatus: no
                // book changed
        break;
    }
  }
  if (may_rest_.quantity != 0) Emit(may_rest_);
  next_sequence_ += count_;
}

}  // namespace orderwire::state
