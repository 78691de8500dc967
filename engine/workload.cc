#include "engine/workload.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/config.h"

namespace orderwire::workload {

using codec::Command;
using codec::Side;
using codec::TimeInForce;

std::string_view Name(Workload workload) {
  switch (workload) {
    case Workload::kMixed:
      return "mixed";
    case Workload::kWl1:
      return "wl1";
    case Workload::kDeep:
      return "deep";
    case Workload::kSwings:
      return "swings";
    case Workload::kCrash:
      return "crash";
    case Workload::kChurn:
      return "churn";
  }
  return "";
}

absl::StatusOr<Workload> ParseWorkload(std::string_view name) {
  for (const Workload workload : kAllWorkloads) {
    if (name == Name(workload)) return workload;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown workload '%s' (workloads: mixed, wl1, deep, swings, crash, "
      "churn)",
      std::string(name)));
}

// ---------------------------------------------------------------------------
// wl1

Wl1Generator::Wl1Generator(std::uint64_t seed) : rng_(seed) {}

Command Wl1Generator::Next() {
  const std::uint64_t r1 = rng_.Next();
  if (r1 % 4 == 0) {
    mid_ -= 1;
  } else if (r1 % 4 == 1) {
    mid_ += 1;
  }
  mid_ = std::clamp<std::int64_t>(mid_, 50'000, 150'000);
  const std::uint64_t k = rng_.Next() % 100;
  const std::uint64_t r3 = rng_.Next();
  ++sequence_;
  if (k < 60 || (k < 90 && live_.empty())) {
    const Side side = (r3 & 1) == 0 ? Side::kBuy : Side::kSell;
    const auto off = static_cast<std::int64_t>(1 + (r3 >> 1) % 20);
    const std::uint64_t id = next_id_++;
    live_.push_back(id);
    return Command::From(
        sequence_,
        codec::NewLimit{.account_id = id,
                        .client_order_id = id,
                        .instrument_id = 1,
                        .side = side,
                        .time_in_force = TimeInForce::kGoodTillCancel,
                        .price = side == Side::kBuy ? mid_ - off : mid_ + off,
                        .quantity = 10 * (1 + (r3 >> 8) % 10)});
  }
  if (k < 90) {
    const std::size_t i = static_cast<std::size_t>(r3 % live_.size());
    const std::uint64_t id = live_[i];
    live_[i] = live_.back();
    live_.pop_back();
    return Command::From(
        sequence_, codec::CancelByOrder{.account_id = id, .order_id = id});
  }
  const Side side = (r3 & 1) == 0 ? Side::kBuy : Side::kSell;
  const std::uint64_t id = next_id_++;
  return Command::From(
      sequence_,
      codec::NewLimit{.account_id = id,
                      .client_order_id = id,
                      .instrument_id = 1,
                      .side = side,
                      .time_in_force = TimeInForce::kImmediateOrCancel,
                      .price = side == Side::kBuy ? mid_ + 10 : mid_ - 10,
                      .quantity = 10 * (1 + (r3 >> 8) % 20)});
}

// ---------------------------------------------------------------------------
// mixed

MixedGenerator::MixedGenerator(std::uint64_t seed)
    : rng_(seed),
      engine_(std::make_unique<engine::Engine>(engine::EngineConfig{})),
      reports_(256) {
  mid_.fill(kStartMid);
}

Command MixedGenerator::Next() {
  Command command = Draw();
  command.sequence = ++sequence_;
  reports_.Clear();
  (void)engine_->Execute(command, reports_);
  Track(reports_);
  return command;
}

Command MixedGenerator::Draw() {
  const std::uint64_t u = rng_.Below(1000);
  if (u < 500) {
    const std::uint64_t t = rng_.Below(1000);
    return NewLimit(t < 800   ? TimeInForce::kGoodTillCancel
                    : t < 950 ? TimeInForce::kImmediateOrCancel
                    : t < 975 ? TimeInForce::kFillOrKill
                              : TimeInForce::kPostOnly);
  }
  if (u < 520) return NewMarket();
  if (live_.empty()) return NewLimit(TimeInForce::kGoodTillCancel);
  std::uint64_t account_id = 0;
  const LiveOrder target = Target(account_id);
  if (u < 800) {
    return Command::From(0, codec::CancelByOrder{.account_id = account_id,
                                                 .order_id = target.order_id});
  }
  if (u < 850) {
    return Command::From(
        0, codec::CancelByClient{.account_id = account_id,
                                 .client_order_id = target.client_order_id});
  }
  codec::Replace replace{
      .account_id = account_id,
      .order_id = target.order_id,
      .new_client_order_id =
          ++next_client_order_id_[(account_id - 1) % kAccounts],
      .price = target.price,
      .quantity = target.leaves};
  if (rng_.Below(2) == 0 && target.leaves >= 2) {
    replace.quantity = 1 + rng_.Below(target.leaves - 1);  // size down
  } else {
    const auto step = static_cast<std::int64_t>(1 + rng_.Below(5));
    replace.price = std::max<std::int64_t>(
        1, rng_.Below(2) == 0 ? target.price - step : target.price + step);
  }
  return Command::From(0, replace);
}

Command MixedGenerator::NewLimit(TimeInForce tif) {
  const auto instrument =
      static_cast<std::uint32_t>(1 + rng_.Below(kInstruments));
  const std::uint64_t account = 1 + rng_.Below(kAccounts);
  const Side side = rng_.Below(2) == 0 ? Side::kBuy : Side::kSell;
  std::int64_t& mid = mid_[instrument - 1];
  mid = std::clamp<std::int64_t>(
      mid + static_cast<std::int64_t>(rng_.Below(3)) - 1, 1'000,
      1'000'000'000 - 1'000);
  // d > 0 is passive (away from the other side), d < 0 aggressive.
  std::int64_t d = 0;
  if (tif == TimeInForce::kGoodTillCancel || tif == TimeInForce::kPostOnly) {
    d = rng_.Below(10) < 9 ? static_cast<std::int64_t>(rng_.Below(56)) - 5
                           : 51 + static_cast<std::int64_t>(rng_.Below(450));
  } else {
    d = -static_cast<std::int64_t>(rng_.Below(11));
  }
  return Command::From(
      0,
      codec::NewLimit{.account_id = account,
                      .client_order_id = ++next_client_order_id_[account - 1],
                      .instrument_id = instrument,
                      .side = side,
                      .time_in_force = tif,
                      .price = side == Side::kBuy ? mid - d : mid + d,
                      .quantity = 1 + rng_.Below(100)});
}

Command MixedGenerator::NewMarket() {
  const auto instrument =
      static_cast<std::uint32_t>(1 + rng_.Below(kInstruments));
  const std::uint64_t account = 1 + rng_.Below(kAccounts);
  const Side side = rng_.Below(2) == 0 ? Side::kBuy : Side::kSell;
  std::int64_t& mid = mid_[instrument - 1];
  mid = std::clamp<std::int64_t>(
      mid + static_cast<std::int64_t>(rng_.Below(3)) - 1, 1'000,
      1'000'000'000 - 1'000);
  return Command::From(
      0,
      codec::NewMarket{.account_id = account,
                       .client_order_id = ++next_client_order_id_[account - 1],
                       .instrument_id = instrument,
                       .side = side,
                       .quantity = 1 + rng_.Below(100)});
}

LiveOrder MixedGenerator::Target(std::uint64_t& account_id) {
  const std::uint64_t aim = rng_.Below(100);
  if (aim < 3 && finished_count_ > 0) {
    const std::size_t n = std::min(finished_count_, finished_.size());
    const LiveOrder& finished = finished_[rng_.Below(n)];
    account_id = finished.account_id;
    return finished;
  }
  const LiveOrder& live = live_[rng_.Below(live_.size())];
  account_id = live.account_id;
  if (aim >= 3 && aim < 5) account_id = live.account_id % kAccounts + 1;
  return live;
}

void MixedGenerator::Track(const engine::ReportBuffer& reports) {
  for (const engine::Report& report : reports.reports()) {
    if (const std::optional<LiveOrder> removed = live_.Apply(reports, report)) {
      finished_[finished_count_++ % finished_.size()] = *removed;
    }
  }
}

// ---------------------------------------------------------------------------
// The book shapes

BookShapeGenerator::BookShapeGenerator(Workload shape, std::uint64_t seed)
    : shape_(shape),
      rng_(seed),
      engine_(std::make_unique<engine::Engine>(engine::EngineConfig{})),
      reports_(1 << 12) {}

BookShapeGenerator::BookShapeGenerator(BookShapeGenerator&&) noexcept = default;
BookShapeGenerator& BookShapeGenerator::operator=(
    BookShapeGenerator&&) noexcept = default;
BookShapeGenerator::~BookShapeGenerator() = default;

Command BookShapeGenerator::Next() {
  Command command = Draw();
  command.sequence = ++sequence_;
  reports_.Clear();
  (void)engine_->Execute(command, reports_);
  Track(reports_);
  if (crashing_ && !engine_->Book(codec::InstrumentId(1)).Best(Side::kBuy)) {
    // The bid side is empty: the crash is over; trading resumes at its low.
    crashing_ = false;
    mid_ = crash_low_;
  }
  return command;
}

Command BookShapeGenerator::Draw() {
  switch (shape_) {
    case Workload::kDeep:
      return DrawDeep();
    case Workload::kSwings:
      return DrawSwings();
    case Workload::kCrash:
      return DrawCrash();
    case Workload::kChurn:
    default:
      return DrawChurn();
  }
}

Command BookShapeGenerator::Limit(Side side, TimeInForce tif,
                                  std::int64_t price, std::uint64_t quantity) {
  const std::uint64_t account = next_account_++;
  return Command::From(
      0, codec::NewLimit{.account_id = account,
                         .client_order_id = next_client_order_id_++,
                         .instrument_id = 1,
                         .side = side,
                         .time_in_force = tif,
                         .price = price,
                         .quantity = quantity});
}

Command BookShapeGenerator::Maker(std::int64_t off) {
  const Side side = rng_.Below(2) == 0 ? Side::kBuy : Side::kSell;
  const std::uint64_t quantity = 1 + rng_.Below(100);
  return Limit(side, TimeInForce::kGoodTillCancel,
               side == Side::kBuy ? mid_ - off : mid_ + off, quantity);
}

Command BookShapeGenerator::CancelByOrder(const LiveOrder& order) {
  return Command::From(0, codec::CancelByOrder{.account_id = order.account_id,
                                               .order_id = order.order_id});
}

const LiveOrder* BookShapeGenerator::RandomLive() {
  if (live_.empty()) return nullptr;
  return &live_[rng_.Below(live_.size())];
}

const LiveOrder* BookShapeGenerator::OldestLive() {
  while (!arrivals_.empty()) {
    if (const LiveOrder* order = live_.Find(arrivals_.front())) return order;
    arrivals_.pop_front();  // finished: filled or cancelled
  }
  return nullptr;
}

const LiveOrder* BookShapeGenerator::RecentLive() {
  const std::size_t n = std::min(recent_count_, kChurnRecent);
  if (n > 0) {
    const std::size_t start = rng_.Below(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (const LiveOrder* order = live_.Find(recent_[(start + i) % n])) {
        return order;
      }
    }
  }
  return RandomLive();
}

void BookShapeGenerator::WalkMid() {
  const std::uint64_t r = rng_.Below(4);
  if (r == 0) {
    mid_ -= 1;
  } else if (r == 1) {
    mid_ += 1;
  }
}

// deep ----------------------------------------------------------------------

Command BookShapeGenerator::DrawDeep() {
  if (sequence_ < kDeepBuildOrders) {
    return Maker(1 + static_cast<std::int64_t>(rng_.Below(kDeepLevelsPerSide)));
  }
  const std::uint64_t u = rng_.Below(100);
  if (u < 50 || live_.empty()) {
    const std::int64_t off =
        rng_.Below(5) < 4
            ? 1 + static_cast<std::int64_t>(rng_.Below(kDeepLevelsPerSide))
            : 1 + static_cast<std::int64_t>(rng_.Below(kDeepTouchBand));
    return Maker(off);
  }
  if (u < 90) return CancelByOrder(*RandomLive());
  const Side side = rng_.Below(2) == 0 ? Side::kBuy : Side::kSell;
  return Limit(
      side, TimeInForce::kImmediateOrCancel,
      side == Side::kBuy ? mid_ + kDeepTouchBand : mid_ - kDeepTouchBand,
      1 + rng_.Below(100));
}

// swings --------------------------------------------------------------------

void BookShapeGenerator::NextLeg() {
  leg_ = (leg_ + 1) % 4;
  if (leg_ == 0 || leg_ == 2) {
    amplitude_ =
        kStartMid *
        (kSwingMinPercent + static_cast<std::int64_t>(rng_.Below(
                                kSwingMaxPercent - kSwingMinPercent + 1))) /
        100;
  }
  switch (leg_) {
    case 0:
      leg_end_ = kStartMid + amplitude_;
      break;
    case 2:
      leg_end_ = kStartMid - amplitude_;
      break;
    default:
      leg_end_ = kStartMid;
      break;
  }
}

Command BookShapeGenerator::DrawSwings() {
  if (leg_ < 0) NextLeg();
  const std::uint64_t u = rng_.Below(100);
  if (u < 8) {
    if (mid_ == leg_end_) NextLeg();
    const std::int64_t direction = leg_end_ > mid_ ? 1 : -1;
    const std::int64_t step =
        std::min(1 + static_cast<std::int64_t>(rng_.Below(kSweepMaxTicks)),
                 direction * (leg_end_ - mid_));
    mid_ += direction * step;
    return Limit(direction > 0 ? Side::kBuy : Side::kSell,
                 TimeInForce::kImmediateOrCancel, mid_ + direction * 4,
                 static_cast<std::uint64_t>(200 * (step + 4)));
  }
  if (u < 75 || live_.empty()) {
    return Maker(1 + static_cast<std::int64_t>(rng_.Below(24)));
  }
  const LiveOrder* target = rng_.Below(4) < 3 ? OldestLive() : RandomLive();
  return CancelByOrder(*target);
}

// crash ---------------------------------------------------------------------

Command BookShapeGenerator::DrawCrash() {
  const std::optional<engine::LevelInfo> best_bid =
      engine_->Book(codec::InstrumentId(1)).Best(Side::kBuy);
  if (!crashing_ && sequence_ % kCrashCycle == kCrashFirst && best_bid) {
    crashing_ = true;
    market_next_ = true;
    crash_low_ = best_bid->price.value();
    recover_to_ = mid_;
  }
  if (crashing_) {
    const bool market = market_next_;
    market_next_ = !market_next_;
    if (market) {
      const std::uint64_t account = next_account_++;
      return Command::From(
          0, codec::NewMarket{.account_id = account,
                              .client_order_id = next_client_order_id_++,
                              .instrument_id = 1,
                              .side = Side::kSell,
                              .quantity = 500 + rng_.Below(1501)});
    }
    return Limit(Side::kSell, TimeInForce::kImmediateOrCancel,
                 best_bid->price.value() - 20, 2000);
  }
  if (recover_to_ != 0 && mid_ < recover_to_) {
    const std::uint64_t r = rng_.Below(8);
    if (r < 4) {
      mid_ += 1;
    } else if (r == 4) {
      mid_ -= 1;
    }
  } else {
    recover_to_ = 0;
    WalkMid();
  }
  const std::uint64_t u = rng_.Below(100);
  if (u < 55 || live_.empty()) {
    const std::int64_t off =
        rng_.Below(10) < 7 ? 1 + static_cast<std::int64_t>(rng_.Below(50))
                           : 51 + static_cast<std::int64_t>(rng_.Below(1950));
    return Maker(off);
  }
  if (u < 90) {
    return CancelByOrder(rng_.Below(2) == 0 ? *OldestLive() : *RandomLive());
  }
  const Side side = rng_.Below(2) == 0 ? Side::kBuy : Side::kSell;
  const auto cross = 1 + static_cast<std::int64_t>(rng_.Below(5));
  return Limit(side, TimeInForce::kImmediateOrCancel,
               side == Side::kBuy ? mid_ + cross : mid_ - cross,
               1 + rng_.Below(100));
}

// churn ---------------------------------------------------------------------

Command BookShapeGenerator::DrawChurn() {
  WalkMid();
  const std::uint64_t u = rng_.Below(100);
  if (u < 30) return Maker(1 + static_cast<std::int64_t>(rng_.Below(10)));
  if (u < 33) {
    const Side side = rng_.Below(2) == 0 ? Side::kBuy : Side::kSell;
    const auto cross = static_cast<std::int64_t>(rng_.Below(4));
    return Limit(side, TimeInForce::kImmediateOrCancel,
                 side == Side::kBuy ? mid_ + cross : mid_ - cross,
                 1 + rng_.Below(100));
  }
  const LiveOrder* target = RecentLive();
  if (target == nullptr)
    return Maker(1 + static_cast<std::int64_t>(rng_.Below(10)));
  if (u < 63) {
    if (rng_.Below(100) < 85) return CancelByOrder(*target);
    return Command::From(
        0, codec::CancelByClient{.account_id = target->account_id,
                                 .client_order_id = target->client_order_id});
  }
  codec::Replace replace{.account_id = target->account_id,
                         .order_id = target->order_id,
                         .new_client_order_id = next_client_order_id_++,
                         .price = target->price,
                         .quantity = target->leaves};
  if (rng_.Below(2) == 0 && target->leaves >= 2) {
    replace.quantity = 1 + rng_.Below(target->leaves - 1);  // size down
  } else {
    const auto step = static_cast<std::int64_t>(1 + rng_.Below(3));
    replace.price =
        rng_.Below(2) == 0 ? target->price - step : target->price + step;
  }
  return Command::From(0, replace);
}

// tracking ------------------------------------------------------------------

void BookShapeGenerator::Track(const engine::ReportBuffer& reports) {
  for (const engine::Report& report : reports.reports()) {
    if (report.kind == codec::Kind::kAccepted) {
      const codec::Accepted accepted = reports.Get<codec::Accepted>(report);
      if (accepted.time_in_force == TimeInForce::kGoodTillCancel) {
        if (shape_ == Workload::kSwings || shape_ == Workload::kCrash) {
          arrivals_.push_back(accepted.order_id);
        }
        recent_[recent_count_++ % kChurnRecent] = accepted.order_id;
      }
    }
    if (report.kind == codec::Kind::kFilled && shape_ == Workload::kCrash &&
        crashing_) {
      crash_low_ = std::min(
          crash_low_,
          reports.View<codec::Filled>(report).Get<&codec::Filled::price>());
    }
    (void)live_.Apply(reports, report);
  }
}

// ---------------------------------------------------------------------------
// The live orders

std::optional<LiveOrder> LiveOrders::Apply(const engine::ReportBuffer& reports,
                                           const engine::Report& report) {
  switch (report.kind) {
    case codec::Kind::kAccepted: {
      const codec::Accepted a = reports.Get<codec::Accepted>(report);
      if (a.time_in_force == TimeInForce::kGoodTillCancel ||
          a.time_in_force == TimeInForce::kPostOnly) {
        position_[a.order_id] = orders_.size();
        orders_.push_back(LiveOrder{.order_id = a.order_id,
                                    .account_id = a.account_id,
                                    .client_order_id = a.client_order_id,
                                    .side = a.side,
                                    .price = a.price,
                                    .leaves = a.quantity});
      }
      return std::nullopt;
    }
    case codec::Kind::kFilled: {
      const codec::Filled f = reports.Get<codec::Filled>(report);
      const auto it = position_.find(f.order_id);
      if (it == position_.end()) return std::nullopt;
      orders_[it->second].leaves = f.leaves_quantity;
      if (f.leaves_quantity == 0) return Remove(f.order_id);
      return std::nullopt;
    }
    case codec::Kind::kCancelled:
      return Remove(reports.View<codec::Cancelled>(report)
                        .Get<&codec::Cancelled::order_id>());
    case codec::Kind::kReplaced: {
      const codec::Replaced r = reports.Get<codec::Replaced>(report);
      const auto it = position_.find(r.order_id);
      if (it == position_.end()) return std::nullopt;
      LiveOrder& order = orders_[it->second];
      order.client_order_id = r.client_order_id;
      order.price = r.price;
      order.leaves = r.quantity;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

const LiveOrder* LiveOrders::Find(std::uint64_t order_id) const {
  const auto it = position_.find(order_id);
  return it == position_.end() ? nullptr : &orders_[it->second];
}

std::optional<LiveOrder> LiveOrders::Remove(std::uint64_t order_id) {
  const auto it = position_.find(order_id);
  if (it == position_.end()) return std::nullopt;
  const std::size_t position = it->second;
  const LiveOrder removed = orders_[position];
  position_.erase(it);
  if (position != orders_.size() - 1) {
    orders_[position] = orders_.back();
    position_[orders_[position].order_id] = position;
  }
  orders_.pop_back();
  return removed;
}

// ---------------------------------------------------------------------------
// Any workload

namespace {

std::variant<Wl1Generator, MixedGenerator, BookShapeGenerator> MakeGenerator(
    Workload workload, std::uint64_t seed) {
  switch (workload) {
    case Workload::kWl1:
      return Wl1Generator(seed);
    case Workload::kMixed:
      return MixedGenerator(seed);
    default:
      return BookShapeGenerator(workload, seed);
  }
}

}  // namespace

WorkloadGenerator::WorkloadGenerator(Workload workload, std::uint64_t seed)
    : generator_(MakeGenerator(workload, seed)) {}

Command WorkloadGenerator::Next() {
  return std::visit([](auto& generator) { return generator.Next(); },
                    generator_);
}

// ---------------------------------------------------------------------------

std::vector<Command> Generate(Workload workload, std::size_t count,
                              std::uint64_t seed) {
  std::vector<Command> commands;
  commands.reserve(count);
  WorkloadGenerator generator(workload, seed);
  for (std::size_t i = 0; i < count; ++i) commands.push_back(generator.Next());
  return commands;
}

std::vector<std::byte> EncodeCommands(std::span<const Command> commands) {
  std::vector<std::byte> bytes(commands.size() * codec::kMaxFrameSize);
  std::size_t used = 0;
  for (const Command& command : commands) {
    const auto size = codec::EncodeCommand(
        command, std::span<std::byte>(bytes).subspan(used));
    if (size.ok()) used += *size;
  }
  bytes.resize(used);
  return bytes;
}

}  // namespace orderwire::workload
