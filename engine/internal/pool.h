// Internal to orderwire::engine; do not depend on it.
//
// The engine's records (a resting order, a price level) and the fixed pools
// that hold them. A record is addressed by its 32-bit index in its pool; the
// pools are allocated once, at their full capacity, when the engine is made,
// and never move, so indices (and references, within one command) stay valid.
// Free records form an intrusive LIFO list, so the record freed last - still
// in cache - is the one reused first. Memory a pool has never handed out is
// never touched (no initialisation pass), so a large capacity costs address
// space, not resident memory, until it is used. The records live in
// base::HugePageArray: transparent huge pages where the kernel offers them,
// so a fork() of the serving loop (a snapshot) copies few page-table
// entries however many orders are live.
#ifndef ORDERWIRE_ENGINE_INTERNAL_POOL_H_
#define ORDERWIRE_ENGINE_INTERNAL_POOL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/huge_page_array.h"
#include "codec/strong.h"
#include "codec/types.h"

namespace orderwire::engine::internal {

// "No record": the end of a FIFO, an empty free list, a missing lookup.
inline constexpr std::uint32_t kNil = 0xFFFF'FFFFu;

// A live (resting) order: one cache line. `prev`/`next` link it into its
// level's FIFO; `next` links a free record into the free list.
struct alignas(64) Order {
  codec::OrderId order_id;
  codec::AccountId account_id;
  codec::ClientOrderId client_order_id;
  codec::Price price;
  codec::Quantity leaves;
  codec::InstrumentId instrument_id;
  std::uint32_t level;  // index in the level pool
  std::uint32_t prev;
  std::uint32_t next;
  codec::Side side;
  codec::TimeInForce time_in_force;  // GoodTillCancel or PostOnly
  std::uint32_t owner;               // OwnerTag of the command that entered it
};
static_assert(sizeof(Order) == 64);

// A price level: the FIFO of its orders (oldest at `head`), their count and
// their total leaves quantity. Never empty while it is in a book.
struct Level {
  codec::Price price;
  codec::Quantity quantity;
  std::uint32_t count;
  std::uint32_t head;  // free list link when the level is free
  std::uint32_t tail;
};
static_assert(sizeof(Level) == 32);

// A fixed-capacity pool of T records addressed by index. T must have a
// `std::uint32_t next` (Order) or `head` (Level) field for the free list;
// `Link` selects it.
template <typename T, std::uint32_t T::*Link>
class Pool {
 public:
  explicit Pool(std::uint32_t capacity)
      : records_(capacity), capacity_(capacity) {}

  // A free record's index, or kNil when all `capacity` are in use. Hot path,
  // O(1). The record's fields are unspecified: the caller sets them all.
  [[nodiscard]] std::uint32_t Allocate() noexcept {
    if (free_ != kNil) {
      const std::uint32_t index = free_;
      free_ = records_[index].*Link;
      ++in_use_;
      return index;
    }
    if (high_water_ == capacity_) return kNil;
    ++in_use_;
    return high_water_++;
  }

  // Returns record `index` to the pool. Hot path, O(1).
  void Free(std::uint32_t index) noexcept {
    records_[index].*Link = free_;
    free_ = index;
    --in_use_;
  }

  // Raises the capacity to `capacity` (no change if it is not larger):
  // allocates the larger array and copies the records handed out so far,
  // so every index, link and free-list entry stays valid. Cold: the one
  // allocation after construction (an engine reconfiguration).
  void Reserve(std::uint32_t capacity) {
    if (capacity <= capacity_) return;
    base::HugePageArray<T> records(capacity);
    std::copy(records_.data(), records_.data() + high_water_, records.data());
    records_ = std::move(records);
    capacity_ = capacity;
  }

  // Frees every record. O(1).
  void Clear() noexcept {
    free_ = kNil;
    high_water_ = 0;
    in_use_ = 0;
  }

  [[nodiscard]] T& operator[](std::uint32_t index) noexcept {
    return records_[index];
  }
  [[nodiscard]] const T& operator[](std::uint32_t index) const noexcept {
    return records_[index];
  }
  [[nodiscard]] const T* data() const noexcept { return records_.data(); }
  [[nodiscard]] std::uint32_t in_use() const noexcept { return in_use_; }
  // Records ever handed out: every index below it has been used.
  [[nodiscard]] std::uint32_t high_water() const noexcept {
    return high_water_;
  }
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  base::HugePageArray<T> records_;  // zeroed on first touch, never pre-touched
  std::uint32_t capacity_;
  std::uint32_t free_ = kNil;
  std::uint32_t high_water_ = 0;
  std::uint32_t in_use_ = 0;
};

using OrderPool = Pool<Order, &Order::next>;
using LevelPool = Pool<Level, &Level::head>;

}  // namespace orderwire::engine::internal

#endif  // ORDERWIRE_ENGINE_INTERNAL_POOL_H_
