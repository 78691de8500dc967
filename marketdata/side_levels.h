// orderwire::marketdata::SideLevels: the open price levels of one side of
// one book (marketdata::Book), each a sort key mapped to the index of its
// level record. Keys are larger for better prices (Book's SortKey: the
// price for bids, its complement for asks), so the best level has the
// largest key.
//
// DESIGN NOTE
//
// A subscriber's book is busiest at and near the best, and a side's open
// levels usually fill most ticks of a narrow range around it. So a side is
// kept in one of two forms, chosen by how densely its levels fill the range
// of their keys:
// - A ladder (the usual form): a window of 2^k consecutive keys that holds
//   every open level of the side. cells_[key - base_] is the level's index
//   (kNil where no level is open), a bitmap marks the taken cells, and the
//   best (largest) taken cell is remembered. Find, and Insert or Erase of a
//   key in the window, are an index and a bit; erasing the best scans the
//   bitmap down to the next taken cell, one 64-bit word per 64 keys (near
//   the best nearly always the first word). A key outside the window
//   rebuilds it around every open level and the new key: twice their span
//   (at least kMinWindow cells), the levels in the middle, so a book that
//   drifts rebuilds rarely: O(window / 64 + levels) each time.
// - A sorted vector (sparse sides): (key, level) pairs by ascending key, the
//   best at the back. Find and the place of an Insert or Erase are a search
//   that first tries the entry as far from the back as the key is from the
//   best (exact where every tick between is taken) and then binary-searches
//   at most that many entries; Insert and Erase shift the entries better
//   than the key (erasing the best is a pop).
// A ladder's window may have at most max(kMinWindow, kCellsPerLevel x
// levels) cells, so its memory stays O(levels) whatever the prices: a
// rebuild that would need more turns the side into a vector. A vector turns
// back into a ladder at an Insert when a window of half that bound would
// hold it (the margin keeps a side from switching at every Insert). An empty
// side is an empty ladder whose window moves to the next key for free.
//
// Costs: Find, best(), size() O(1) as a ladder, O(log min(levels, ticks
// from the best)) as a vector. Insert, Erase: O(1) as a ladder (Erase of the
// best plus the scan to the next), plus a rebuild when a key leaves the
// window; as a vector the search plus a shift of the better levels.
// ForEachBestFirst: O(levels) as a vector, O(levels + window / 64) as a
// ladder. Switching form: O(levels + window / 64).
//
// Memory and allocation: the window (4 bytes a cell and 1 bit) and the
// vector (16 bytes a level) each grow to their largest size so far and are
// never given back; clear() keeps them. Only growth past that allocates,
// and only running out of memory throws (std::bad_alloc, the side then
// unspecified until clear()).
//
// Threading: none; const members may run concurrently with each other.
#ifndef ORDERWIRE_MARKETDATA_SIDE_LEVELS_H_
#define ORDERWIRE_MARKETDATA_SIDE_LEVELS_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace orderwire::marketdata {

class SideLevels {
 public:
  static constexpr std::uint32_t kNil =
      std::numeric_limits<std::uint32_t>::max();
  // The smallest window a ladder has, and the cells a window may have for
  // each open level (the memory bound of the design note).
  static constexpr std::uint64_t kMinWindow = 64;
  static constexpr std::uint64_t kCellsPerLevel = 64;

  // The level of `key`, or kNil.
  [[nodiscard]] std::uint32_t Find(std::int64_t key) const noexcept {
    if (!ladder_) return FindSorted(key);
    const std::uint64_t cell = Cell(key);
    return cell < window_ ? cells_[cell] : kNil;
  }
  // Opens `key` (not open) as level `level` (not kNil).
  void Insert(std::int64_t key, std::uint32_t level) {
    const std::uint64_t cell = Cell(key);
    if (ladder_ && cell < window_) {
      Take(cell, level);
    } else {
      InsertSlow(key, level);
    }
  }
  // Closes `key` (open).
  void Erase(std::int64_t key) noexcept {
    if (!ladder_) {
      EraseSorted(key);
      return;
    }
    const std::uint64_t cell = Cell(key);
    cells_[cell] = kNil;
    bits_[cell / 64] &= ~(std::uint64_t{1} << (cell % 64));
    if (--size_ == 0) {
      best_level_ = kNil;
    } else if (cell == best_) {
      best_ = TakenBelow(cell);
      best_level_ = cells_[best_];
    }
  }
  // The best (largest key) level, or kNil when the side is empty.
  [[nodiscard]] std::uint32_t best() const noexcept { return best_level_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  // Whether the side is a ladder now (else a sorted vector): for tests.
  [[nodiscard]] bool ladder() const noexcept { return ladder_; }
  // Closes every level; keeps the memory. O(levels) as a ladder.
  void clear() noexcept;
  // Calls `fn(std::int64_t key, std::uint32_t level)` for every open level,
  // best first, until it returns false.
  template <typename Fn>
  void ForEachBestFirst(Fn&& fn) const;

 private:
  struct Entry {
    std::int64_t key;
    std::uint32_t level;
  };

  // The cell of `key` in the window: a value >= window_ when outside.
  [[nodiscard]] std::uint64_t Cell(std::int64_t key) const noexcept {
    return static_cast<std::uint64_t>(key) - static_cast<std::uint64_t>(base_);
  }
  [[nodiscard]] std::int64_t KeyOf(std::uint64_t cell) const noexcept {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(base_) + cell);
  }
  void Take(std::uint64_t cell, std::uint32_t level) noexcept {
    cells_[cell] = level;
    bits_[cell / 64] |= std::uint64_t{1} << (cell % 64);
    if (size_++ == 0 || cell > best_) {
      best_ = cell;
      best_level_ = level;
    }
  }
  // The largest taken cell below `cell` (one exists).
  [[nodiscard]] std::uint64_t TakenBelow(std::uint64_t cell) const noexcept {
    std::uint64_t word = cell / 64;
    std::uint64_t bits = bits_[word] & ((std::uint64_t{1} << (cell % 64)) - 1);
    while (bits == 0) bits = bits_[--word];
    return word * 64 + 63 - static_cast<std::uint64_t>(std::countl_zero(bits));
  }
  // Insert of a key outside the window, or into the vector.
  void InsertSlow(std::int64_t key, std::uint32_t level);
  // Replaces the window by an empty one of `window` cells.
  void Allocate(std::uint64_t window);
  // Moves every level of the ladder into sorted_ (ascending) and empties
  // the window; ladder_ stays as it was.
  void LadderToSorted() noexcept;
  // Makes the side a ladder over the levels in sorted_ (ascending) in a
  // window of `window` cells around [sorted_.front(), sorted_.back()].
  void SortedToLadder(std::uint64_t window);
  // The window a ladder needs for keys lo..hi, or 0 if its levels
  // (`levels` of them) may not have one that large (the memory bound,
  // divided by `margin`).
  [[nodiscard]] static std::uint64_t WindowFor(std::int64_t lo, std::int64_t hi,
                                               std::size_t levels,
                                               std::uint64_t margin) noexcept;
  [[nodiscard]] std::size_t LowerBound(std::int64_t key) const noexcept;
  [[nodiscard]] std::uint32_t FindSorted(std::int64_t key) const noexcept;
  void EraseSorted(std::int64_t key) noexcept;

  bool ladder_ = true;
  std::size_t size_ = 0;
  std::uint32_t best_level_ = kNil;  // best()
  // The ladder: window [base_, base_ + window_), window_ == cells_.size(),
  // a power of two (or 0 before the first key), never wrapping past the
  // int64 range; best_ is the largest taken cell while size_ != 0.
  std::int64_t base_ = 0;
  std::uint64_t window_ = 0;
  std::uint64_t best_ = 0;
  std::vector<std::uint32_t> cells_;
  std::vector<std::uint64_t> bits_;
  // The vector form (ascending keys); a ladder's scratch while rebuilding.
  std::vector<Entry> sorted_;
};

template <typename Fn>
void SideLevels::ForEachBestFirst(Fn&& fn) const {
  if (size_ == 0) return;
  if (!ladder_) {
    for (std::size_t i = sorted_.size(); i-- > 0;) {
      if (!fn(sorted_[i].key, sorted_[i].level)) return;
    }
    return;
  }
  std::uint64_t cell = best_;
  for (std::size_t left = size_;;) {
    if (!fn(KeyOf(cell), cells_[cell]) || --left == 0) return;
    cell = TakenBelow(cell);
  }
}

}  // namespace orderwire::marketdata

#endif  // ORDERWIRE_MARKETDATA_SIDE_LEVELS_H_
