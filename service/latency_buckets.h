// A fixed-bucket latency histogram that the service's thread records into
// without allocating, locking or calling anything: a fixed five-step
// search over 18 bounds and two additions. Its counts are part of
// ServiceStats, so the stderr report, --stats-json and the Prometheus
// endpoint (service/metrics/metrics.h, which exposes it as a Prometheus
// histogram: cumulative `_bucket{le=...}`, `_sum`, `_count`) all read the
// same numbers.
//
// The bounds are fixed (not configurable) so that every service exposes the
// same `le` values and dashboards can sum them across services: 5 us to
// 2.5 s, roughly 1-2.5-5 per decade, which covers a loopback round trip
// (tens of microseconds), an O_DIRECT group commit (100-250 us) and a
// stalled disk (seconds).
#ifndef ORDERWIRE_SERVICE_LATENCY_BUCKETS_H_
#define ORDERWIRE_SERVICE_LATENCY_BUCKETS_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace orderwire::service {

// Upper bounds of the buckets, in nanoseconds, ascending; a last bucket
// (+Inf) takes what is above them all.
inline constexpr std::array<std::uint64_t, 18> kLatencyBoundsNs = {
    5'000,       10'000,        25'000,       50'000,      100'000,
    250'000,     500'000,       1'000'000,    2'500'000,   5'000'000,
    10'000'000,  25'000'000,    50'000'000,   100'000'000, 250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000};

// kLatencyBoundsNs padded to 2^5 - 1 entries with UINT64_MAX, for the
// fixed-step search of Record.
inline constexpr std::array<std::uint64_t, 31> kPaddedBounds = [] {
  std::array<std::uint64_t, 31> padded{};
  for (std::size_t i = 0; i < padded.size(); ++i) {
    padded[i] = i < kLatencyBoundsNs.size() ? kLatencyBoundsNs[i] : UINT64_MAX;
  }
  return padded;
}();
static_assert(kLatencyBoundsNs.size() < kPaddedBounds.size());

// Single writer (the service's thread); read by copying (ServiceStats).
struct LatencyBuckets {
  // buckets[i]: observations in (bounds[i-1], bounds[i]] (not cumulative);
  // buckets[kLatencyBoundsNs.size()]: above the last bound.
  std::array<std::uint64_t, kLatencyBoundsNs.size() + 1> buckets{};
  std::uint64_t sum_ns = 0;

  // Hot path: no allocation, no data-dependent branch: a binary search
  // in five fixed steps, written out, over the bounds padded to 31. 20
  // instructions per call under callgrind whatever the latency (the same
  // steps as a loop, which GCC keeps: 42; std::lower_bound: 41; a linear
  // walk: 65 at millisecond latencies).
  void Record(std::uint64_t ns) noexcept {
    // i = how many bounds are below `ns`: the bucket whose bound is the
    // first at or above it (Prometheus's le is "<="); 18: +Inf.
    std::size_t i = 0;
    i += kPaddedBounds[i + 15] < ns ? std::size_t{16} : 0;
    i += kPaddedBounds[i + 7] < ns ? std::size_t{8} : 0;
    i += kPaddedBounds[i + 3] < ns ? std::size_t{4} : 0;
    i += kPaddedBounds[i + 1] < ns ? std::size_t{2} : 0;
    i += kPaddedBounds[i] < ns ? std::size_t{1} : 0;
    ++buckets[i];
    sum_ns += ns;
  }

  // Observations recorded (the sum of the buckets).
  [[nodiscard]] std::uint64_t count() const noexcept {
    std::uint64_t n = 0;
    for (const std::uint64_t b : buckets) n += b;
    return n;
  }
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_LATENCY_BUCKETS_H_
