// The open levels of one side of a book: design note in side_levels.h.
#include "marketdata/side_levels.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace orderwire::marketdata {
namespace {

// The first key of a window of `window` cells holding lo .. lo + span in
// its middle, moved as little as needed to stay inside the int64 range (so
// that cells are in the order of their keys). Precondition: span < window.
[[nodiscard]] std::int64_t WindowBase(std::int64_t lo, std::uint64_t span,
                                      std::uint64_t window) noexcept {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto pad = static_cast<std::int64_t>((window - 1 - span) / 2);
  std::int64_t base = lo < kMin + pad ? kMin : lo - pad;
  const std::int64_t last_base = kMax - static_cast<std::int64_t>(window - 1);
  if (base > last_base) base = last_base;
  return base;
}

}  // namespace

void SideLevels::clear() noexcept {
  if (ladder_) {
    for (std::size_t word = 0; word < bits_.size() && size_ != 0; ++word) {
      for (std::uint64_t bits = bits_[word]; bits != 0; bits &= bits - 1) {
        cells_[word * 64 + static_cast<std::size_t>(std::countr_zero(bits))] =
            kNil;
        --size_;
      }
      bits_[word] = 0;
    }
  }
  sorted_.clear();
  size_ = 0;
  best_level_ = kNil;
  ladder_ = true;
}

void SideLevels::InsertSlow(std::int64_t key, std::uint32_t level) {
  if (ladder_ && size_ == 0) {  // an empty ladder: the window moves to key
    if (window_ == 0) Allocate(kMinWindow);
    base_ = WindowBase(key, 0, window_);
    Take(Cell(key), level);
    return;
  }
  if (ladder_) LadderToSorted();  // a key outside the window: rebuild
  const std::size_t at = LowerBound(key);
  sorted_.insert(sorted_.begin() + static_cast<std::ptrdiff_t>(at),
                 Entry{key, level});
  size_ = sorted_.size();
  // A ladder that outgrew its window gets a new one if its levels may have
  // it; a vector becomes a ladder if they may have twice that.
  const std::uint64_t window = WindowFor(
      sorted_.front().key, sorted_.back().key, size_, ladder_ ? 1 : 2);
  if (window != 0) {
    SortedToLadder(window);
  } else {
    ladder_ = false;
    best_level_ = sorted_.back().level;
  }
}

void SideLevels::Allocate(std::uint64_t window) {
  cells_.assign(window, kNil);
  bits_.assign(window / 64, 0);
  window_ = window;
}

void SideLevels::LadderToSorted() noexcept {
  sorted_.clear();
  for (std::size_t word = 0; word < bits_.size(); ++word) {
    for (std::uint64_t bits = bits_[word]; bits != 0; bits &= bits - 1) {
      const std::uint64_t cell =
          word * 64 + static_cast<std::uint64_t>(std::countr_zero(bits));
      sorted_.push_back(Entry{KeyOf(cell), cells_[cell]});
      cells_[cell] = kNil;
    }
    bits_[word] = 0;
  }
}

void SideLevels::SortedToLadder(std::uint64_t window) {
  if (window_ < window) Allocate(window);
  const std::int64_t lo = sorted_.front().key;
  const std::uint64_t span = static_cast<std::uint64_t>(sorted_.back().key) -
                             static_cast<std::uint64_t>(lo);
  base_ = WindowBase(lo, span, window_);
  size_ = 0;
  for (const Entry& entry : sorted_) Take(Cell(entry.key), entry.level);
  sorted_.clear();
  ladder_ = true;
}

std::uint64_t SideLevels::WindowFor(std::int64_t lo, std::int64_t hi,
                                    std::size_t levels,
                                    std::uint64_t margin) noexcept {
  const std::uint64_t limit =
      std::max<std::uint64_t>(kMinWindow, kCellsPerLevel * levels / margin);
  const std::uint64_t span =
      static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  if (span >= limit / 2) return 0;  // twice its keys would not fit
  const std::uint64_t window =
      std::bit_ceil(std::max<std::uint64_t>(kMinWindow, 2 * (span + 1)));
  return window <= limit ? window : 0;
}

std::size_t SideLevels::LowerBound(std::int64_t key) const noexcept {
  const std::size_t size = sorted_.size();
  if (size == 0 || sorted_.back().key < key) return size;  // a new best
  // Keys are distinct integers, so at most `distance` keys lie in
  // [key, best): the answer is at or after size - 1 - distance, exactly
  // there when the levels between are dense.
  const auto distance = static_cast<std::uint64_t>(sorted_.back().key) -
                        static_cast<std::uint64_t>(key);
  std::size_t low = 0;
  if (distance < size) {
    low = size - 1 - static_cast<std::size_t>(distance);
    if (sorted_[low].key >= key) return low;
    ++low;
  }
  std::size_t count = size - 1 - low;  // sorted_[size - 1].key >= key
  while (count > 0) {  // the first of [low, size - 1] whose key is >= key
    const std::size_t half = count / 2;
    if (sorted_[low + half].key < key) {
      low += half + 1;
      count -= half + 1;
    } else {
      count = half;
    }
  }
  return low;
}

std::uint32_t SideLevels::FindSorted(std::int64_t key) const noexcept {
  const std::size_t at = LowerBound(key);
  if (at == sorted_.size() || sorted_[at].key != key) return kNil;
  return sorted_[at].level;
}

void SideLevels::EraseSorted(std::int64_t key) noexcept {
  if (sorted_.back().key == key) {
    sorted_.pop_back();  // the best: most closes are
  } else {
    sorted_.erase(sorted_.begin() +
                  static_cast<std::ptrdiff_t>(LowerBound(key)));
  }
  size_ = sorted_.size();
  if (size_ == 0) {
    ladder_ = true;  // an empty ladder (its window is empty)
    best_level_ = kNil;
  } else {
    best_level_ = sorted_.back().level;
  }
}

}  // namespace orderwire::marketdata
