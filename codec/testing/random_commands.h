// Deterministic random command frames, for tests, benchmarks and the codec
// demo. Not for production paths (it allocates freely).
//
// The generator is splitmix64, so a seed gives the same frames on every
// machine and compiler. Field values are drawn from the whole range of each
// field (extremes included) unless `valid_values` asks for values an engine
// would accept.
#ifndef ORDERWIRE_CODEC_TESTING_RANDOM_COMMANDS_H_
#define ORDERWIRE_CODEC_TESTING_RANDOM_COMMANDS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/command.h"
#include "codec/types.h"

namespace orderwire::codec::testing {

// splitmix64: a tiny, well-mixed, portable 64-bit generator.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n). n > 0.
  std::uint64_t Below(std::uint64_t n) { return Next() % n; }

 private:
  std::uint64_t state_;
};

// Percentages of each command kind in a mix (NewLimit, NewMarket,
// CancelByOrder, CancelByClient, Replace); they add up to 100.
struct CommandMix {
  std::array<unsigned, 5> percent;
};

// The mix of the codec benchmark and demo: 50/5/25/5/15.
inline constexpr CommandMix kDecodeBenchMix{{50, 5, 25, 5, 15}};

// A command of `kind` with random fields. With `extreme_values`, each integer
// field is drawn from {0, 1, max-1, max, random} and enums from any byte;
// otherwise values are plausible (valid side and time in force, positive
// price and quantity).
Command RandomCommand(SplitMix64& rng, Kind kind, bool extreme_values);

// A kind drawn from `mix`.
Kind RandomKind(SplitMix64& rng, const CommandMix& mix);

// `count` command frames drawn from `mix` with sequences 1..count, encoded
// back to back. If `kinds` is not null it receives the kind of each frame.
std::vector<std::byte> EncodeRandomStream(std::size_t count, std::uint64_t seed,
                                          const CommandMix& mix,
                                          std::vector<Kind>* kinds = nullptr);

}  // namespace orderwire::codec::testing

#endif  // ORDERWIRE_CODEC_TESTING_RANDOM_COMMANDS_H_
