// The project's two clocks, in nanoseconds: one source for every component.
//
// MonotonicNs: CLOCK_MONOTONIC, for durations and timeouts (never jumps).
// RealtimeNs: CLOCK_REALTIME, for timestamps recorded in the journal and
// shown to people (a record's receive time). Each is one vDSO call, no
// system call, no allocation.
#ifndef ORDERWIRE_BASE_CLOCK_H_
#define ORDERWIRE_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace orderwire::base {

[[nodiscard]] inline std::int64_t MonotonicNs() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

[[nodiscard]] inline std::uint64_t RealtimeNs() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace orderwire::base

#endif  // ORDERWIRE_BASE_CLOCK_H_
