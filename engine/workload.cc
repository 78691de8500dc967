#include "engine/workload.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
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
  }
  return "";
}

absl::StatusOr<Workload> ParseWorkload(std::string_view name) {
  if (name == "mixed") return Workload::kMixed;
  if (name == "wl1") return Workload::kWl1;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown workload '%s' (workloads: mixed, wl1)", std::string(name)));
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

MixedGenerator::LiveOrder MixedGenerator::Target(std::uint64_t& account_id) {
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

void MixedGenerator::Remove(std::uint64_t order_id) {
  const auto it = live_position_.find(order_id);
  if (it == live_position_.end()) return;
  const std::size_t position = it->second;
  finished_[finished_count_++ % finished_.size()] = live_[position];
  live_position_.erase(it);
  if (position != live_.size() - 1) {
    live_[position] = live_.back();
    live_position_[live_[position].order_id] = position;
  }
  live_.pop_back();
}

void MixedGenerator::Track(const engine::ReportBuffer& reports) {
  for (const engine::Report& report : reports.reports()) {
    switch (report.kind) {
      case codec::Kind::kAccepted: {
        const codec::Accepted& a = report.accepted;
        if (a.time_in_force == TimeInForce::kGoodTillCancel ||
            a.time_in_force == TimeInForce::kPostOnly) {
          live_position_[a.order_id] = live_.size();
          live_.push_back(LiveOrder{.order_id = a.order_id,
                                    .account_id = a.account_id,
                                    .client_order_id = a.client_order_id,
                                    .price = a.price,
                                    .leaves = a.quantity});
        }
        break;
      }
      case codec::Kind::kFilled: {
        const codec::Filled& f = report.filled;
        const auto it = live_position_.find(f.order_id);
        if (it == live_position_.end()) break;
        live_[it->second].leaves = f.leaves_quantity;
        if (f.leaves_quantity == 0) Remove(f.order_id);
        break;
      }
      case codec::Kind::kCancelled:
        Remove(report.cancelled.order_id);
        break;
      case codec::Kind::kReplaced: {
        const codec::Replaced& r = report.replaced;
        const auto it = live_position_.find(r.order_id);
        if (it == live_position_.end()) break;
        LiveOrder& order = live_[it->second];
        order.client_order_id = r.client_order_id;
        order.price = r.price;
        order.leaves = r.quantity;
        break;
      }
      default:
        break;
    }
  }
}

// ---------------------------------------------------------------------------

std::vector<Command> Generate(Workload workload, std::size_t count,
                              std::uint64_t seed) {
  std::vector<Command> commands;
  commands.reserve(count);
  if (workload == Workload::kWl1) {
    Wl1Generator generator(seed);
    for (std::size_t i = 0; i < count; ++i)
      commands.push_back(generator.Next());
  } else {
    MixedGenerator generator(seed);
    for (std::size_t i = 0; i < count; ++i)
      commands.push_back(generator.Next());
  }
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
