// Internal to orderwire::engine; do not depend on it.
//
// One side of a book as a node-based ordered map (std::map<key, level>), as
// Liquibook and many books keep it. Not used by the engine: it is the
// reference the level structure is tested against (tests/engine/
// deep_book_test.cc runs the engine with each on the same stream and wants
// the same bytes) and an alternative engine_bench measures. It allocates a
// node per level.
#ifndef ORDERWIRE_ENGINE_INTERNAL_MAP_LEVELS_H_
#define ORDERWIRE_ENGINE_INTERNAL_MAP_LEVELS_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

#include "engine/internal/pool.h"
#include "engine/internal/sorted_levels.h"

namespace orderwire::engine::internal {

class MapLevels {
 public:
  [[nodiscard]] bool empty() const noexcept { return levels_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return levels_.size(); }
  [[nodiscard]] LevelRef Best() const noexcept {
    const auto it = levels_.rbegin();
    return {it->first, it->second};
  }
  [[nodiscard]] std::uint32_t Find(std::int64_t key) const noexcept {
    const auto it = levels_.find(key);
    return it == levels_.end() ? kNil : it->second;
  }
  template <typename MakeLevel>
  std::uint32_t FindOrInsert(std::int64_t key, MakeLevel&& make_level) {
    const auto it = levels_.lower_bound(key);
    if (it != levels_.end() && it->first == key) return it->second;
    const std::uint32_t level = make_level();
    levels_.emplace_hint(it, key, level);
    return level;
  }
  void Erase(std::int64_t key) noexcept { levels_.erase(key); }
  void PopBest() noexcept { levels_.erase(std::prev(levels_.end())); }
  template <typename Fn>
  void ForEachFromBest(Fn&& fn) const {
    // Best first: from the back (std::views::reverse of a std::map does not
    // compile with clang 14 and libstdc++ 12, which clang-tidy uses).
    for (auto it = levels_.end(); it != levels_.begin();) {
      --it;
      if (!fn(LevelRef{it->first, it->second})) return;
    }
  }
  void Clear() noexcept { levels_.clear(); }

 private:
  std::map<std::int64_t, std::uint32_t> levels_;
};

}  // namespace orderwire::engine::internal

#endif  // ORDERWIRE_ENGINE_INTERNAL_MAP_LEVELS_H_
