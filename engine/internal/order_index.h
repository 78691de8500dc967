// Internal to orderwire::engine; do not depend on it.
//
// The two lookups of live orders (OrderIndex, at the end): order_id -> pool
// index, a direct-mapped window (DirectIdMap) with an IndexTable for the ids
// it cannot place, and (account_id, owner, client_order_id) -> pool index
// (client order ids are per owner: per session in the service), an
// IndexTable.
//
// IndexTable is an open-addressing table of our own: linear probing over a
// power-of-two array of 8-byte slots. The memory for the largest table (2
// slots per order of capacity, so load <= 1/2 at full capacity) is reserved
// at construction, untouched; the table in use starts at 4,096 slots and
// doubles in place (through a reserved scratch area) whenever more than 1/4
// of its slots are used, i.e. each time the live orders pass a new
// high-water mark. So nothing is ever allocated after construction, and a
// lookup touches a table sized to the live orders, not to the capacity (a
// table sized to a capacity of 1M orders, 16 MiB, makes every lookup of a
// fresh key a cache and TLB miss); the low load factor keeps probe runs
// short for the many lookups that miss (every new order's duplicate check).
// Figures: docs/BENCHMARKS.md "Alternatives".
//
// A slot holds the pool index (plus one; 0 marks an empty slot, so the
// table can start as untouched zero pages) and a 32-bit tag: the top 32 bits
// of the key's 64-bit hash. The home slot is the top `bits` bits of the hash,
// hence derivable from the tag alone. The key itself is not stored: a
// lookup whose tag matches confirms the key in the order record (which the
// caller is about to read anyway). Deletion shifts the following entries of
// the cluster back (no tombstones), so the table never degrades and never
// needs an O(capacity) clean-up pass, as a tombstone-based table does under
// constant insert/erase churn.
#ifndef ORDERWIRE_ENGINE_INTERNAL_ORDER_INDEX_H_
#define ORDERWIRE_ENGINE_INTERNAL_ORDER_INDEX_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "codec/strong.h"
#include "engine/internal/pool.h"

namespace orderwire::engine::internal {

class IndexTable {
 public:
  // The number of slots a new table starts with (32 KiB).
  static constexpr std::uint64_t kInitialSlots = 4096;
  // The table doubles when more than 1/kGrowDivisor of its slots are used.
  static constexpr std::uint64_t kGrowDivisor = 4;

  // A table for up to `max_entries` entries. Reserves (but does not touch)
  // the slots of the largest table it may grow to, plus a scratch area for
  // growing, so it never allocates after construction. Cold.
  // `initial_slots` exists for engine_bench (a table sized to capacity up
  // front); it is rounded to a power of two within [16, largest size].
  explicit IndexTable(std::uint32_t max_entries,
                      std::uint64_t initial_slots = kInitialSlots) {
    max_slots_ = std::max<std::uint64_t>(
        16, std::bit_ceil(std::uint64_t{max_entries} * 2));
    // calloc: the zero pages (all slots empty) are not touched until used.
    slots_.reset(static_cast<Slot*>(std::calloc(max_slots_, sizeof(Slot))));
    scratch_.reset(
        static_cast<Slot*>(std::calloc(max_slots_ / 2, sizeof(Slot))));
    if (slots_ == nullptr || scratch_ == nullptr) throw std::bad_alloc();
    Resize(std::bit_ceil(
        std::clamp<std::uint64_t>(initial_slots, 16, max_slots_)));
  }

  // The index of the entry with hash `hash` for which `is_key(index)` holds,
  // or kNil. Hot path: one or two slots read on average.
  template <typename IsKey>
  [[nodiscard]] std::uint32_t Find(std::uint64_t hash,
                                   IsKey&& is_key) const noexcept {
    const auto tag = static_cast<std::uint32_t>(hash >> 32);
    for (std::uint64_t i = Home(tag);; i = (i + 1) & mask_) {
      const Slot slot = slots_[i];
      if (slot.value == 0) return kNil;
      if (slot.tag == tag && is_key(slot.value - 1)) return slot.value - 1;
    }
  }

  // Starts loading the slot a Find of `hash` reads first. No effect on
  // contents. Hot path.
  void Prefetch(std::uint64_t hash) const noexcept {
    __builtin_prefetch(&slots_[Home(static_cast<std::uint32_t>(hash >> 32))]);
  }

  // Adds `index` under `hash`. Precondition: fewer than max_entries entries.
  // Hot path; when the table passes load 1/4 below its largest size it
  // doubles in place (O(entries), once per new high-water mark: warm-up).
  void Insert(std::uint64_t hash, std::uint32_t index) noexcept {
    if (++size_ > (mask_ + 1) / kGrowDivisor && mask_ + 1 < max_slots_)
        [[unlikely]] {
      Grow();
    }
    Place(Slot{static_cast<std::uint32_t>(hash >> 32), index + 1});
  }

  // Removes the entry of `index` that was inserted under `hash`.
  // Precondition: it is present. Hot path.
  void Erase(std::uint64_t hash, std::uint32_t index) noexcept {
    const auto tag = static_cast<std::uint32_t>(hash >> 32);
    std::uint64_t hole = Home(tag);
    while (slots_[hole].value != index + 1) hole = (hole + 1) & mask_;
    // Backward shift: move later members of the cluster into the hole when
    // their home is not in (hole, j].
    for (std::uint64_t j = (hole + 1) & mask_; slots_[j].value != 0;
         j = (j + 1) & mask_) {
      const std::uint64_t home = Home(slots_[j].tag);
      const bool stays =
          hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{0, 0};
    --size_;
  }

  // Raises the most entries to `max_entries` (no change if that needs no
  // larger table): reserves the larger arrays and copies the table in use,
  // which keeps its size, so every entry stays where it is. Cold: the one
  // allocation after construction (an engine reconfiguration).
  void Reserve(std::uint32_t max_entries) {
    const std::uint64_t max_slots = std::max<std::uint64_t>(
        16, std::bit_ceil(std::uint64_t{max_entries} * 2));
    if (max_slots <= max_slots_) return;
    std::unique_ptr<Slot[], FreeDeleter> slots(
        static_cast<Slot*>(std::calloc(max_slots, sizeof(Slot))));
    std::unique_ptr<Slot[], FreeDeleter> scratch(
        static_cast<Slot*>(std::calloc(max_slots / 2, sizeof(Slot))));
    if (slots == nullptr || scratch == nullptr) throw std::bad_alloc();
    std::memcpy(slots.get(), slots_.get(), (mask_ + 1) * sizeof(Slot));
    slots_ = std::move(slots);
    scratch_ = std::move(scratch);
    max_slots_ = max_slots;
  }

  // Precondition: the table is empty. Gives it the size it would have
  // grown to by inserting `entries` entries (no more than its largest), so
  // that a bulk load does not grow it step by step. Cold.
  void Presize(std::uint64_t entries) noexcept {
    std::uint64_t slots = mask_ + 1;
    while (entries > slots / kGrowDivisor && slots < max_slots_) slots *= 2;
    // Slots past the current size were never used (the table only grows),
    // so they are still zero from calloc.
    Resize(slots);
  }

  // Removes every entry, keeping the current size. O(slots in use).
  void Clear() noexcept {
    std::memset(slots_.get(), 0, (mask_ + 1) * sizeof(Slot));
    size_ = 0;
  }

  [[nodiscard]] std::uint64_t slot_count() const noexcept { return mask_ + 1; }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

 private:
  struct Slot {
    std::uint32_t tag;
    std::uint32_t value;  // pool index + 1; 0 = empty
  };
  struct FreeDeleter {
    void operator()(Slot* p) const noexcept { std::free(p); }
  };

  [[nodiscard]] std::uint64_t Home(std::uint32_t tag) const noexcept {
    return std::uint64_t{tag} >> (32 - bits_);
  }
  void Place(Slot slot) noexcept {
    std::uint64_t i = Home(slot.tag);
    while (slots_[i].value != 0) i = (i + 1) & mask_;
    slots_[i] = slot;
  }
  void Resize(std::uint64_t slots) noexcept {
    bits_ = static_cast<unsigned>(std::countr_zero(slots));
    mask_ = slots - 1;
  }
  // Doubles the table in place, through the scratch area. Cold.
  void Grow() noexcept {
    const std::uint64_t old_slots = mask_ + 1;
    std::memcpy(scratch_.get(), slots_.get(), old_slots * sizeof(Slot));
    Resize(old_slots * 2);
    std::memset(slots_.get(), 0, (mask_ + 1) * sizeof(Slot));
    for (std::uint64_t i = 0; i < old_slots; ++i) {
      if (scratch_[i].value != 0) Place(scratch_[i]);
    }
  }

  std::unique_ptr<Slot[], FreeDeleter> slots_;
  std::unique_ptr<Slot[], FreeDeleter> scratch_;
  std::uint64_t max_slots_ = 0;
  std::uint64_t mask_ = 0;
  std::uint64_t size_ = 0;
  unsigned bits_ = 0;
};

// Hashes; the tables use their top bits. Fibonacci hashing spreads
// sequential order ids over the top bits; the client key puts the owner in
// the high half of the account (an xor: accounts are small in practice, and
// a collision only costs a probe, the key is confirmed in the record), folds
// that in with one multiply, its high half into its low half, and multiplies
// again, so every input bit reaches the top bits (two multiplies, cheaper
// than the full splitmix64 finaliser: docs/BENCHMARKS.md "Alternatives").
[[nodiscard]] inline std::uint64_t HashOrderId(codec::OrderId id) noexcept {
  return id.value() * 0x9E37'79B9'7F4A'7C15ull;
}
[[nodiscard]] inline std::uint64_t HashClientKey(
    codec::AccountId account_id, std::uint32_t owner,
    codec::ClientOrderId client_order_id) noexcept {
  const std::uint64_t z = (account_id.value() ^ (std::uint64_t{owner} << 32)) *
                              0x9E37'79B9'7F4A'7C15ull ^
                          client_order_id.value();
  return (z ^ (z >> 32)) * 0xBF58'476D'1CE4'E5B9ull;
}

// order_id -> pool index for ids the engine hands out in sequence: a
// direct-mapped window. Slot `order_id mod slot_count` holds the index (plus
// one; 0 = empty) of the live order with that id, confirmed in the order
// record. The engine numbers orders 1, 2, 3, ..., so consecutive orders take
// consecutive slots: an insert writes next to the previous one (no cache miss,
// where a hashed slot would cost one per new order) and an erase or lookup is
// one load, no probing. With at least 2 slots per order of capacity, an id
// finds its slot taken only when the order there is older than the last
// `slot_count` ids and still live; it then goes to the overflow, a hashed
// IndexTable, which a lookup consults only while it holds anything. So any id
// works (a restored or reconfigured engine too); the window only decides what
// is fast. The slots are calloc'ed and touched as ids advance.
class DirectIdMap {
 public:
  explicit DirectIdMap(std::uint32_t max_entries,
                       std::uint64_t overflow_initial_slots)
      : overflow_(max_entries, overflow_initial_slots) {
    slot_count_ = std::max<std::uint64_t>(
        64, std::bit_ceil(std::uint64_t{max_entries} * 2));
    slots_.reset(static_cast<std::uint32_t*>(
        std::calloc(slot_count_, sizeof(std::uint32_t))));
    if (slots_ == nullptr) throw std::bad_alloc();
  }

  // Hot path: one load (plus the overflow while it holds entries).
  [[nodiscard]] std::uint32_t Find(codec::OrderId order_id,
                                   const Order* orders) const noexcept {
    const std::uint32_t value = slots_[SlotOf(order_id)];
    if (value != 0 && orders[value - 1].order_id == order_id) return value - 1;
    if (overflow_.size() == 0) [[likely]] {
      return kNil;
    }
    return overflow_.Find(HashOrderId(order_id), [&](std::uint32_t i) {
      return orders[i].order_id == order_id;
    });
  }
  // Starts loading the slot of `order_id`. No effect on contents. Hot path.
  void Prefetch(codec::OrderId order_id) const noexcept {
    __builtin_prefetch(&slots_[SlotOf(order_id)]);
  }
  // Precondition: `order_id` is not present. Hot path.
  void Insert(codec::OrderId order_id, std::uint32_t index) noexcept {
    const std::uint64_t slot = SlotOf(order_id);
    touched_ = std::max(touched_, slot + 1);
    if (slots_[slot] == 0) [[likely]] {
      slots_[slot] = index + 1;
      return;
    }
    overflow_.Insert(HashOrderId(order_id), index);
  }
  // Precondition: present under `index`. Hot path.
  void Erase(codec::OrderId order_id, std::uint32_t index) noexcept {
    std::uint32_t& slot = slots_[SlotOf(order_id)];
    if (slot == index + 1) [[likely]] {
      slot = 0;
      return;
    }
    overflow_.Erase(HashOrderId(order_id), index);
  }
  // O(slots touched so far).
  void Clear() noexcept {
    std::memset(slots_.get(), 0, touched_ * sizeof(std::uint32_t));
    touched_ = 0;
    overflow_.Clear();
  }
  // The window keeps its size (it is correct at any size); the overflow
  // gets room for every entry. Cold.
  void Reserve(std::uint32_t max_entries) { overflow_.Reserve(max_entries); }

  [[nodiscard]] std::uint64_t overflow_size() const noexcept {
    return overflow_.size();
  }

 private:
  struct FreeDeleter {
    void operator()(std::uint32_t* p) const noexcept { std::free(p); }
  };
  [[nodiscard]] std::uint64_t SlotOf(codec::OrderId order_id) const noexcept {
    return order_id.value() & (slot_count_ - 1);
  }
  std::unique_ptr<std::uint32_t[], FreeDeleter> slots_;
  std::uint64_t slot_count_ = 0;  // a power of two
  std::uint64_t touched_ = 0;     // slots below this may be non-zero
  IndexTable overflow_;
};

// The engine's index policy: order ids in a DirectIdMap, client keys in an
// IndexTable.
class OrderIndex {
 public:
  explicit OrderIndex(std::uint32_t max_entries,
                      std::uint64_t initial_slots = IndexTable::kInitialSlots)
      : by_id_(max_entries, initial_slots),
        by_client_(max_entries, initial_slots) {}

  [[nodiscard]] std::uint32_t FindById(codec::OrderId order_id,
                                       const Order* orders) const noexcept {
    return by_id_.Find(order_id, orders);
  }
  void InsertId(codec::OrderId order_id, std::uint32_t index) noexcept {
    by_id_.Insert(order_id, index);
  }
  void EraseId(codec::OrderId order_id, std::uint32_t index) noexcept {
    by_id_.Erase(order_id, index);
  }
  // Start loading the slot a lookup of this key reads first. Hot path.
  void PrefetchId(codec::OrderId order_id) const noexcept {
    by_id_.Prefetch(order_id);
  }
  void PrefetchClient(codec::AccountId account_id, std::uint32_t owner,
                      codec::ClientOrderId client_order_id) const noexcept {
    by_client_.Prefetch(HashClientKey(account_id, owner, client_order_id));
  }
  // Entries of the id window that went to its overflow (tests).
  [[nodiscard]] std::uint64_t id_overflow_size() const noexcept {
    return by_id_.overflow_size();
  }

  // The client key is (account_id, owner, client_order_id): all three are
  // hashed and all three compared.
  [[nodiscard]] std::uint32_t FindByClient(codec::AccountId account_id,
                                           std::uint32_t owner,
                                           codec::ClientOrderId client_order_id,
                                           const Order* orders) const noexcept {
    return by_client_.Find(
        HashClientKey(account_id, owner, client_order_id),
        [&](std::uint32_t i) {
          return orders[i].client_order_id == client_order_id &&
                 orders[i].account_id == account_id && orders[i].owner == owner;
        });
  }
  void InsertClient(codec::AccountId account_id, std::uint32_t owner,
                    codec::ClientOrderId client_order_id,
                    std::uint32_t index) noexcept {
    by_client_.Insert(HashClientKey(account_id, owner, client_order_id), index);
  }
  void EraseClient(codec::AccountId account_id, std::uint32_t owner,
                   codec::ClientOrderId client_order_id,
                   std::uint32_t index) noexcept {
    by_client_.Erase(HashClientKey(account_id, owner, client_order_id), index);
  }

  void Clear() noexcept {
    by_id_.Clear();
    by_client_.Clear();
  }
  // Precondition: empty. Sizes the client table for `entries` entries at
  // once (IndexTable::Presize): a snapshot's bulk load. Cold.
  void PresizeClients(std::uint32_t entries) noexcept {
    by_client_.Presize(entries);
  }
  // Room for `max_entries` entries in both tables (see IndexTable). Cold.
  void Reserve(std::uint32_t max_entries) {
    by_id_.Reserve(max_entries);
    by_client_.Reserve(max_entries);
  }

 private:
  DirectIdMap by_id_;
  IndexTable by_client_;
};

}  // namespace orderwire::engine::internal

#endif  // ORDERWIRE_ENGINE_INTERNAL_ORDER_INDEX_H_
