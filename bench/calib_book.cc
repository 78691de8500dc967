#include "bench/calib_book.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/types.h"

namespace orderwire::bench {

std::vector<CalibCommand> PackWl1(std::span<const codec::Command> commands) {
  std::vector<CalibCommand> packed;
  packed.reserve(commands.size());
  std::uint32_t next_id = 1;
  for (const codec::Command& c : commands) {
    CalibCommand p{};
    if (c.kind == codec::Kind::kCancelByOrder) {
      p.type = CalibCommand::kCancel;
      p.id = static_cast<std::uint32_t>(c.order_id.value());
    } else {
      p.type = c.time_in_force == codec::TimeInForce::kImmediateOrCancel
                   ? CalibCommand::kImmediateOrCancel
                   : CalibCommand::kGoodTillCancel;
      p.id = next_id++;
      p.side = c.side == codec::Side::kBuy ? 0 : 1;
      p.price = static_cast<std::int32_t>(c.price.value());
      p.quantity = static_cast<std::uint32_t>(c.quantity.value());
    }
    packed.push_back(p);
  }
  return packed;
}

CalibBook::CalibBook(std::uint32_t max_order_id) : orders_(max_order_id + 1) {
  for (Side& side : sides_) {
    side.levels.resize(kLadderSize);
    side.occupied.resize(kLadderSize / 64);
    side.summary.resize(kLadderSize / 64 / 64);
  }
  Reset();
}

void CalibBook::Reset() {
  std::fill(orders_.begin(), orders_.end(), Order{});
  for (Side& side : sides_) {
    std::fill(side.levels.begin(), side.levels.end(), Level{kNone, kNone});
    std::fill(side.occupied.begin(), side.occupied.end(), 0);
    std::fill(side.summary.begin(), side.summary.end(), 0);
  }
  best_bid_ = -1;
  best_ask_ = kLadderSize;
  report_count_ = 0;
}

void CalibBook::MarkOccupied(Side& side, std::int32_t slot) noexcept {
  const auto s = static_cast<std::uint32_t>(slot);
  side.occupied[s >> 6] |= std::uint64_t{1} << (s & 63);
  side.summary[s >> 12] |= std::uint64_t{1} << ((s >> 6) & 63);
}

void CalibBook::MarkEmpty(Side& side, std::int32_t slot) noexcept {
  const auto s = static_cast<std::uint32_t>(slot);
  std::uint64_t& word = side.occupied[s >> 6];
  word &= ~(std::uint64_t{1} << (s & 63));
  if (word == 0)
    side.summary[s >> 12] &= ~(std::uint64_t{1} << ((s >> 6) & 63));
}

std::int32_t CalibBook::OccupiedBelow(const Side& side,
                                      std::int32_t slot) const noexcept {
  if (slot <= 0) return -1;
  auto s = static_cast<std::uint32_t>(slot - 1);
  // Within s's word first.
  std::uint64_t bits =
      side.occupied[s >> 6] & (~std::uint64_t{0} >> (63 - (s & 63)));
  if (bits != 0) {
    return static_cast<std::int32_t>(
        (s & ~63u) + 63u - static_cast<std::uint32_t>(std::countl_zero(bits)));
  }
  // Then the summary: occupied words below s's word.
  std::uint32_t word = s >> 6;
  while (true) {
    if (word == 0) return -1;
    --word;
    std::uint64_t group =
        side.summary[word >> 6] & (~std::uint64_t{0} >> (63 - (word & 63)));
    if (group != 0) {
      word = (word & ~63u) + 63u -
             static_cast<std::uint32_t>(std::countl_zero(group));
      bits = side.occupied[word];
      return static_cast<std::int32_t>(
          word * 64 + 63 - static_cast<std::uint32_t>(std::countl_zero(bits)));
    }
    word &= ~63u;  // the whole group was empty: go below it
  }
}

std::int32_t CalibBook::OccupiedAbove(const Side& side,
                                      std::int32_t slot) const noexcept {
  if (slot + 1 >= kLadderSize) return kLadderSize;
  auto s = static_cast<std::uint32_t>(slot + 1);
  std::uint64_t bits = side.occupied[s >> 6] & (~std::uint64_t{0} << (s & 63));
  if (bits != 0) {
    return static_cast<std::int32_t>(
        (s & ~63u) + static_cast<std::uint32_t>(std::countr_zero(bits)));
  }
  std::uint32_t word = (s >> 6) + 1;
  constexpr std::uint32_t kWords = kLadderSize / 64;
  while (word < kWords) {
    const std::uint64_t group =
        side.summary[word >> 6] & (~std::uint64_t{0} << (word & 63));
    if (group != 0) {
      word =
          (word & ~63u) + static_cast<std::uint32_t>(std::countr_zero(group));
      return static_cast<std::int32_t>(
          word * 64 +
          static_cast<std::uint32_t>(std::countr_zero(side.occupied[word])));
    }
    word = (word & ~63u) + 64;
  }
  return kLadderSize;
}

void CalibBook::Rest(std::uint32_t id, std::uint8_t side_index,
                     std::int32_t price, std::uint32_t quantity) noexcept {
  Side& side = sides_[side_index];
  const std::int32_t slot = price - kLadderBase;
  Level& level = side.levels[static_cast<std::size_t>(slot)];
  Order& order = orders_[id];
  order = Order{kNone, level.tail, price, quantity, side_index};
  if (level.tail == kNone) {
    level.head = id;
    MarkOccupied(side, slot);
    if (side_index == 0) {
      best_bid_ = std::max(best_bid_, slot);
    } else {
      best_ask_ = std::min(best_ask_, slot);
    }
  } else {
    orders_[level.tail].next = id;
  }
  level.tail = id;
}

template <int kTakerSide>
std::uint32_t CalibBook::Match(std::uint32_t taker_id, std::int32_t limit,
                               std::uint32_t quantity) noexcept {
  constexpr int kMakerSide = 1 - kTakerSide;
  Side& side = sides_[kMakerSide];
  const std::int32_t limit_slot = limit - kLadderBase;
  while (quantity != 0) {
    const std::int32_t slot = kTakerSide == 0 ? best_ask_ : best_bid_;
    if (kTakerSide == 0 ? slot > limit_slot : slot < limit_slot) break;
    Level& level = side.levels[static_cast<std::size_t>(slot)];
    std::uint32_t id = level.head;
    const std::int64_t price = slot + kLadderBase;
    while (quantity != 0 && id != kNone) {
      Order& maker = orders_[id];
      const std::uint32_t traded = std::min(maker.quantity, quantity);
      maker.quantity -= traded;
      quantity -= traded;
      Emit(CalibReport::kFilledMaker, id, price, traded, maker.quantity);
      Emit(CalibReport::kFilledTaker, taker_id, price, traded, quantity);
      if (maker.quantity != 0) break;
      id = maker.next;
    }
    level.head = id;
    if (id != kNone) {
      orders_[id].prev = kNone;
      break;
    }
    level.tail = kNone;
    MarkEmpty(side, slot);
    if constexpr (kTakerSide == 0) {
      best_ask_ = OccupiedAbove(side, slot);
    } else {
      best_bid_ = OccupiedBelow(side, slot);
    }
  }
  return quantity;
}

void CalibBook::NewOrder(const CalibCommand& c) noexcept {
  Emit(CalibReport::kAccepted, c.id, c.price, c.quantity, c.quantity);
  const std::uint32_t left = c.side == 0 ? Match<0>(c.id, c.price, c.quantity)
                                         : Match<1>(c.id, c.price, c.quantity);
  if (left == 0) return;
  if (c.type == CalibCommand::kImmediateOrCancel) {
    Emit(CalibReport::kRemainderCancelled, c.id, c.price, left, 0);
  } else {
    Rest(c.id, c.side, c.price, left);
  }
}

void CalibBook::Cancel(std::uint32_t id) noexcept {
  if (id >= orders_.size() || orders_[id].quantity == 0) [[unlikely]] {
    Emit(CalibReport::kCancelRejected, id, 0, 0, 0);
    return;
  }
  Order& order = orders_[id];
  Side& side = sides_[order.side];
  const std::int32_t slot = order.price - kLadderBase;
  Level& level = side.levels[static_cast<std::size_t>(slot)];
  if (order.prev == kNone) {
    level.head = order.next;
  } else {
    orders_[order.prev].next = order.next;
  }
  if (order.next == kNone) {
    level.tail = order.prev;
  } else {
    orders_[order.next].prev = order.prev;
  }
  if (level.head == kNone) {
    MarkEmpty(side, slot);
    if (order.side == 0 && slot == best_bid_) {
      best_bid_ = OccupiedBelow(side, slot);
    } else if (order.side == 1 && slot == best_ask_) {
      best_ask_ = OccupiedAbove(side, slot);
    }
  }
  Emit(CalibReport::kCancelled, id, order.price, order.quantity, 0);
  order.quantity = 0;
}

void CalibBook::Execute(const CalibCommand& command) noexcept {
  report_count_ = 0;
  if (command.type == CalibCommand::kCancel) {
    Cancel(command.id);
  } else {
    NewOrder(command);
  }
}

CalibOutcome RunAndCount(CalibBook& book,
                         std::span<const CalibCommand> commands) {
  CalibOutcome outcome;
  book.Reset();
  for (const CalibCommand& c : commands) {
    book.Execute(c);
    for (const CalibReport& r : book.reports()) {
      outcome.fills += r.type == CalibReport::kFilledMaker;
      outcome.remainders_cancelled +=
          r.type == CalibReport::kRemainderCancelled;
      outcome.cancels += r.type == CalibReport::kCancelled;
      outcome.cancel_rejects += r.type == CalibReport::kCancelRejected;
    }
  }
  return outcome;
}

}  // namespace orderwire::bench
