// Internal to orderwire::engine; do not depend on it.
//
// One side of a book: its price levels as a sorted array of (key, level
// index) pairs, best at the back. A key is the price for bids and minus the
// price for asks, so on both sides a larger key is a better price and one
// type serves both.
//
// Why a sorted array with the best at the back: nearly all activity is at or
// near the top of the book. The best level is the last element (one load);
// a new level near the top is inserted by moving the few better levels up
// one slot; the level at the top is removed by a pop. A search (for the
// level of a price, or where a new one goes) first compares the key with the
// last kLinearSteps entries - the levels nearest the best - and counts the
// smaller ones, without a branch per entry (a scan that stops at the first
// hit mispredicts its exit); only a key deeper than that window goes on to a
// branch-free binary search of the rest (a conditional move per step), so an
// order resting deep in a book (e.g. left behind by a moving market) costs
// O(log n) compares rather than a walk. Before either, a search guesses the
// position from the distance to the best price (exact while the levels
// between are dense, as they are near the touch), which saves most of the
// search on wl1 and mixed. The array grows by doubling only when a side
// holds more entries (live levels and tombstones) than it ever did.
//
// Lazy removal: a level emptied more than kEagerEraseDepth entries below the
// best is not erased (which would shift every better level down one slot: the
// whole side when a moving market leaves thousands of levels behind and their
// oldest orders are cancelled). Its entry stays as a tombstone (level == kNil,
// key kept, so the array stays sorted and the searches unchanged). Find reports
// a tombstone as absent; FindOrInsert at its key revives it in place; the back
// entry is never a tombstone (removals near the best strip any tombstones they
// uncover), so Best, PopBest and empty() see live levels only; ForEachFromBest
// and size() skip or discount tombstones. When a lazy removal leaves tombstones
// outnumbering live levels they are all compacted away in one pass, O(n) once
// per n/2 lazy removals (removals at the best do not check, not to cost the hot
// path; the next lazy removal does).
//
// Gaps for deep inserts: a level inserted more than kShiftInsertDepth entries
// below the best does not shift every better level up one slot (the whole side
// when a deep book is built). Tombstones are gaps in the sorted array, so, as a
// packed-memory array does, it takes the slot of the nearest tombstone within
// kGapReach entries either way and shifts only the entries between (they all
// lie on the same side of the new key, and the tombstone's key lay between the
// same neighbours, so the array stays strictly ascending; the tombstone is
// gone, not revivable at its old key). With none that near, it first spreads
// gaps around its position: within kSpreadReach entries each way (never within
// kEagerEraseDepth of the best, so the top stays dense for the guess and the
// back stays live), a tombstone after every kGapEvery-th entry whose upper
// neighbour's key is at least 2 higher, keyed halfway between. So a gap is an
// ordinary tombstone: keys stay distinct and strictly ascending, Find,
// LowerBound and the dense guess are unchanged, and an insert at exactly its
// key revives it. Spreading moves the better levels up once by the number of
// gaps (the cost of one plain insert, paid for ~kSpreadReach/kGapEvery
// inserts); it keeps tombstones at most a third of the entries (compacting
// first when a quarter are). Where the keys are dense (every tick taken: no
// room for a gap, and none needed, since no insert can land there) a deep
// insert shifts every better level, as a plain insert does. Measured on
// engine_bench's `deep` and `crash`: docs/BENCHMARKS.md "Book shapes".
#ifndef ORDERWIRE_ENGINE_INTERNAL_SORTED_LEVELS_H_
#define ORDERWIRE_ENGINE_INTERNAL_SORTED_LEVELS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/internal/pool.h"

namespace orderwire::engine::internal {

struct LevelRef {
  std::int64_t key;  // price for bids, -price for asks: larger is better
  std::uint32_t level;
};

template <std::size_t kLinearSteps, bool kGuessDense = true>
class BasicSortedLevels {
 public:
  // The initial room of a side, in levels (16 bytes each); reserved when the
  // side first gets a level.
  static constexpr std::size_t kInitialCapacity = 256;
  // A level emptied within this many entries of the best is erased at once
  // (a short shift); deeper, it becomes a tombstone.
  static constexpr std::size_t kEagerEraseDepth = 32;
  // A level inserted within this many entries of the best shifts the better
  // levels up one slot (a short move); deeper, it takes the slot of a nearby
  // tombstone (InsertDeep).
  static constexpr std::size_t kShiftInsertDepth = 256;
  // How far from its position a deep insert looks for a tombstone, each way.
  static constexpr std::size_t kGapReach = 64;
  // When none is that near: the entries within this distance of the
  // position, each way, get a gap every kGapEvery entries.
  static constexpr std::size_t kSpreadReach = 256;
  static constexpr std::size_t kGapEvery = 4;

  // Live levels only: the back entry is never a tombstone.
  [[nodiscard]] bool empty() const noexcept { return refs_.empty(); }
  // Live levels (tombstones not counted).
  [[nodiscard]] std::size_t size() const noexcept {
    return refs_.size() - tombstones_;
  }
  // Tombstones awaiting revival or compaction (for tests).
  [[nodiscard]] std::size_t tombstones() const noexcept { return tombstones_; }
  // Whether every entry, tombstones included, has a key above the one before
  // it, the back entry is live and tombstones() counts the tombstones (for
  // tests: the searches rely on the first two).
  [[nodiscard]] bool WellFormed() const noexcept {
    std::size_t dead = 0;
    for (std::size_t i = 0; i < refs_.size(); ++i) {
      if (i > 0 && refs_[i - 1].key >= refs_[i].key) return false;
      if (refs_[i].level == kNil) ++dead;
    }
    return dead == tombstones_ && (refs_.empty() || refs_.back().level != kNil);
  }
  // Precondition: !empty(). Hot path, O(1).
  [[nodiscard]] LevelRef Best() const noexcept { return refs_.back(); }

  // The level of `key`, or kNil (also for a tombstone, whose level is
  // kNil). Hot path.
  [[nodiscard]] std::uint32_t Find(std::int64_t key) const noexcept {
    const std::size_t pos = LowerBound(key);
    return pos < refs_.size() && refs_[pos].key == key ? refs_[pos].level
                                                       : kNil;
  }

  // The level of `key`; if there is none, inserts `make_level()` (which
  // returns the new level's index) under `key`. Hot path.
  template <typename MakeLevel>
  std::uint32_t FindOrInsert(std::int64_t key, MakeLevel&& make_level) {
    const std::size_t pos = LowerBound(key);
    if (pos < refs_.size() && refs_[pos].key == key) {
      if (refs_[pos].level != kNil) return refs_[pos].level;
      // A tombstone at this price: revive it in place, no shift.
      const std::uint32_t revived = make_level();
      refs_[pos].level = revived;
      --tombstones_;
      return revived;
    }
    if (refs_.capacity() == 0) [[unlikely]] {
      refs_.reserve(kInitialCapacity);
    }
    const std::uint32_t level = make_level();
    if (refs_.size() - pos <= kShiftInsertDepth) [[likely]] {
      refs_.insert(refs_.begin() + static_cast<std::ptrdiff_t>(pos),
                   LevelRef{key, level});
    } else {
      InsertDeep(pos, LevelRef{key, level});
    }
    return level;
  }

  // Removes the level of `key`. Precondition: present and live. Hot path:
  // near the best a short shift, deeper a tombstone (amortised O(1) with
  // the compaction).
  void Erase(std::int64_t key) noexcept {
    const std::size_t pos = LowerBound(key);
    if (refs_.size() - pos > kEagerEraseDepth) {
      refs_[pos].level = kNil;
      ++tombstones_;
      if (tombstones_ * 2 > refs_.size()) Compact();
      return;
    }
    refs_.erase(refs_.begin() + static_cast<std::ptrdiff_t>(pos));
    DropTombstonesAtBest();
  }

  // Removes the best level. Precondition: !empty(). Hot path, O(1)
  // amortised.
  void PopBest() noexcept {
    refs_.pop_back();
    DropTombstonesAtBest();
  }

  // Calls `fn(LevelRef)` for each live level from the best down while it
  // returns true; tombstones are skipped.
  template <typename Fn>
  void ForEachFromBest(Fn&& fn) const {
    for (std::size_t i = refs_.size(); i-- > 0;) {
      if (refs_[i].level == kNil) continue;
      if (!fn(refs_[i])) return;
    }
  }

  void Clear() noexcept {
    refs_.clear();
    tombstones_ = 0;
  }

 private:
  // The first position whose key is >= `key` (ascending order).
  [[nodiscard]] std::size_t LowerBound(std::int64_t key) const noexcept {
    const std::size_t n = refs_.size();
    if (n == 0) return 0;
    const LevelRef* const first = refs_.data();
    // A guess first: keys are distinct integers, so the entry `d` places
    // below the best has a key <= best - d, with equality while the levels
    // are dense down to it (every tick occupied near the touch: the common
    // case). So for key = best - d the entry at n-1-d is either the key
    // itself or below it, and if the next entry up is >= key, that is the
    // answer. One subtraction and two compares; otherwise on to the search.
    if constexpr (kGuessDense) {
      const std::int64_t best = first[n - 1].key;
      if (key <= best) {
        // best - key as unsigned: exact for any two int64 keys.
        const std::uint64_t d =
            static_cast<std::uint64_t>(best) - static_cast<std::uint64_t>(key);
        if (d < n) {
          const std::size_t at = n - 1 - static_cast<std::size_t>(d);
          if (first[at].key == key) return at;
          if (first[at + 1].key >= key) return at + 1;
        }
      }
    }
    // The last kLinearSteps entries (near the best) are counted without a
    // branch per entry; deeper, a branch-free binary search.
    const std::size_t window_start = n > kLinearSteps ? n - kLinearSteps : 0;
    if (window_start < n &&
        (window_start == 0 || first[window_start].key < key)) {
      std::size_t below = 0;
      for (std::size_t i = window_start; i < n; ++i) {
        below += first[i].key < key ? 1 : 0;
      }
      return window_start + below;
    }
    // Here the answer is in [0, window_start].
    const LevelRef* base = first;
    std::size_t count = window_start;
    if (count == 0) return 0;
    while (count > 1) {
      const std::size_t half = count / 2;
      base = base[half].key < key ? base + half : base;
      count -= half;
    }
    return static_cast<std::size_t>(base - first) + (base->key < key ? 1 : 0);
  }

  // Keeps the back entry live: pops the tombstones a removal uncovered.
  void DropTombstonesAtBest() noexcept {
    while (!refs_.empty() && refs_.back().level == kNil) {
      refs_.pop_back();
      --tombstones_;
    }
  }

  // Inserts `ref` at `pos` (its LowerBound), more than kShiftInsertDepth
  // entries below the best: into the nearest tombstone within kGapReach
  // entries, shifting only the entries between; failing that, after
  // spreading gaps around `pos`; failing that (no key room for a gap: the
  // levels around are dense), by shifting every better level, as near the
  // top.
  [[gnu::noinline]] void InsertDeep(std::size_t pos, LevelRef ref) {
    if (TakeNearestTombstone(pos, ref)) return;
    if (tombstones_ * 4 > refs_.size()) {
      // Many tombstones, none near: compact first (one pass, as the shift
      // it replaces), so that the gaps spread below fit under a third.
      Compact();
      pos = LowerBound(ref.key);
      if (refs_.size() - pos <= kShiftInsertDepth) {
        refs_.insert(refs_.begin() + static_cast<std::ptrdiff_t>(pos), ref);
        return;
      }
    }
    if (SpreadGaps(pos) > 0) {
      pos = LowerBound(ref.key);
      if (TakeNearestTombstone(pos, ref)) return;
    }
    refs_.insert(refs_.begin() + static_cast<std::ptrdiff_t>(pos), ref);
  }

  // If a tombstone lies within kGapReach entries of `pos` (the nearest
  // first, above on a tie), moves the entries between it and `pos` one slot
  // towards it and writes `ref` into the freed slot next to `pos`: the
  // tombstone, whose key lay between the same neighbours, is gone, and the
  // array stays strictly ascending. Returns whether it did.
  [[gnu::noinline]] bool TakeNearestTombstone(std::size_t pos,
                                              LevelRef ref) noexcept {
    LevelRef* const a = refs_.data();
    const std::size_t n = refs_.size();
    for (std::size_t d = 0; d < kGapReach; ++d) {
      const std::size_t up = pos + d;
      if (up < n && a[up].level == kNil) {
        // Entries [pos, up) are all > ref.key: up one slot.
        std::copy_backward(a + pos, a + up, a + up + 1);
        a[pos] = ref;
        --tombstones_;
        return true;
      }
      if (d < pos) {
        const std::size_t down = pos - 1 - d;
        if (a[down].level == kNil) {
          // Entries (down, pos) are all < ref.key: down one slot.
          std::copy(a + down + 1, a + pos, a + down);
          a[pos - 1] = ref;
          --tombstones_;
          return true;
        }
      }
    }
    return false;
  }

  // Opens gaps (tombstones) around `pos` for the deep inserts to come: in
  // the entries within kSpreadReach of `pos` (never within kEagerEraseDepth
  // of the best, so the top stays dense and the back live), a tombstone goes
  // after every kGapEvery-th entry whose upper neighbour's key is at least 2
  // above its own, keyed halfway between them: keys stay distinct and
  // strictly ascending, so every search and the dense guess are unchanged,
  // and a later insert at exactly that key revives it like any tombstone.
  // The better levels above the region move up once by the number of gaps
  // (one shift, as one plain insert would cost, paid for many inserts).
  // Returns the number of gaps opened (0: no key room, or too many
  // tombstones already).
  [[gnu::noinline]] std::size_t SpreadGaps(std::size_t pos) {
    const std::size_t n = refs_.size();
    const std::size_t lo = pos > kSpreadReach ? pos - kSpreadReach : 0;
    const std::size_t hi = std::min(pos + kSpreadReach, n - kEagerEraseDepth);
    const auto has_room = [](std::int64_t below, std::int64_t above) {
      return static_cast<std::uint64_t>(above) -
                 static_cast<std::uint64_t>(below) >=
             2;
    };
    const auto gap_after = [&](std::size_t i) {
      return (i - lo) % kGapEvery == kGapEvery - 1;
    };
    std::size_t gaps = 0;
    for (std::size_t i = lo + kGapEvery - 1; i + 1 < hi; i += kGapEvery) {
      if (has_room(refs_[i].key, refs_[i + 1].key)) ++gaps;
    }
    // At most a third of the entries tombstones after it (so at most half
    // as many as live levels; InsertDeep compacts first when a quarter
    // are); otherwise no gaps.
    if (gaps == 0 || (tombstones_ + gaps) * 3 > n + gaps) return 0;
    refs_.resize(n + gaps);  // grows only past the largest size so far
    LevelRef* const a = refs_.data();
    std::copy_backward(a + hi, a + n, a + n + gaps);
    // From the top of the region down, each entry moves up by the gaps
    // still to be written below it (every destination is at or above its
    // source, and a source is read before anything is written over it).
    std::size_t dst = hi + gaps;
    std::int64_t above_key = a[hi - 1].key;
    for (std::size_t i = hi; i-- > lo;) {
      const LevelRef entry = a[i];
      if (i + 1 < hi && gap_after(i) && has_room(entry.key, above_key)) {
        const std::uint64_t room = static_cast<std::uint64_t>(above_key) -
                                   static_cast<std::uint64_t>(entry.key);
        a[--dst] =
            LevelRef{static_cast<std::int64_t>(
                         static_cast<std::uint64_t>(entry.key) + room / 2),
                     kNil};
      }
      a[--dst] = entry;
      above_key = entry.key;
    }
    tombstones_ += gaps;
    return gaps;
  }

  // Removes every tombstone in one pass (order kept; no allocation).
  void Compact() noexcept {
    std::erase_if(refs_, [](const LevelRef& ref) { return ref.level == kNil; });
    tombstones_ = 0;
  }

  std::vector<LevelRef> refs_;  // ascending key; best at the back
  std::size_t tombstones_ = 0;  // entries with level == kNil
};

using SortedLevels = BasicSortedLevels<8>;

}  // namespace orderwire::engine::internal

#endif  // ORDERWIRE_ENGINE_INTERNAL_SORTED_LEVELS_H_
