// LatencyHistogram: the latency histogram for percentiles (the journal
// writer's sync times, the client's round trips, the benchmarks). Log-linear
// buckets, fixed memory, O(1) Record(), no allocation.
//
// The service's exported metrics use a second one, service::LatencyBuckets
// (service/latency_buckets.h): 18 fixed Prometheus `le` bounds that every
// service shares, so dashboards can sum them across services; this one's
// 1,920 buckets would be as many series.
//
// Values are unsigned 64-bit (nanoseconds by convention; any unit works),
// the whole range. Values below 2^kSubBits are counted exactly; above, each
// power of two is split into 2^kSubBits equal buckets, so a percentile is an
// upper bound of the true value and within 1/2^kSubBits (3.1%) of it.
// count(), min() and max() are exact.
//
// Percentile() takes a FRACTION in [0, 1]: Percentile(0.99) is the 99th
// percentile, Percentile(0.5) the median. (Not a percent: Percentile(99)
// is max().)
#ifndef ORDERWIRE_BASE_LATENCY_HISTOGRAM_H_
#define ORDERWIRE_BASE_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace orderwire {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 5;
  // One group of 2^kSubBits exact buckets below 2^kSubBits, then one group
  // per power of two from 2^kSubBits to 2^63.
  static constexpr std::size_t kBuckets = std::size_t{64 - kSubBits + 1}
                                          << kSubBits;

  // Counts one value. Hot path: a few ALU ops and an increment.
  void Record(std::uint64_t value) noexcept {
    ++counts_[BucketOf(value)];
    ++count_;
    max_ = std::max(max_, value);
    min_ = std::min(min_, value);
  }

  // The value at `fraction` (in [0, 1]) of the recorded values, by nearest
  // rank: the upper bound of the bucket holding the ceil(fraction * count())
  // -th smallest value, capped at max(). fraction <= 0 gives min(),
  // fraction >= 1 gives max(); 0 when nothing was recorded. O(kBuckets).
  [[nodiscard]] std::uint64_t Percentile(double fraction) const noexcept {
    if (count_ == 0) return 0;
    if (!(fraction > 0.0)) return min_;  // also NaN
    if (fraction >= 1.0) return max_;
    const double rank = fraction * static_cast<double>(count_);
    auto target = static_cast<std::uint64_t>(rank);
    if (static_cast<double>(target) < rank || target == 0) ++target;
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen >= target) return std::min(UpperBound(b), max_);
    }
    return max_;
  }

  // Adds `other`'s values to this one's.
  void Merge(const LatencyHistogram& other) noexcept {
    for (std::size_t b = 0; b < kBuckets; ++b) counts_[b] += other.counts_[b];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
    min_ = std::min(min_, other.min_);
  }

  // Forgets every value.
  void Reset() noexcept {
    counts_.fill(0);
    count_ = 0;
    max_ = 0;
    min_ = kNoMin;
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  // 0 when nothing was recorded.
  [[nodiscard]] std::uint64_t max() const noexcept { return max_; }
  [[nodiscard]] std::uint64_t min() const noexcept {
    return count_ == 0 ? 0 : min_;
  }

  // The bucket of `value` (public for tests).
  [[nodiscard]] static constexpr std::size_t BucketOf(
      std::uint64_t value) noexcept {
    if (value < (std::uint64_t{1} << kSubBits)) {
      return static_cast<std::size_t>(value);
    }
    const int top = static_cast<int>(std::bit_width(value)) - 1;  // >= kSubBits
    const int shift = top - kSubBits;
    const std::uint64_t sub = (value >> shift) & ((1u << kSubBits) - 1);
    return (static_cast<std::size_t>(shift + 1) << kSubBits) +
           static_cast<std::size_t>(sub);
  }
  // The largest value in bucket `b` (public for tests).
  [[nodiscard]] static constexpr std::uint64_t UpperBound(
      std::size_t b) noexcept {
    if (b < (std::size_t{1} << kSubBits)) return b;
    const int shift = static_cast<int>(b >> kSubBits) - 1;
    const std::uint64_t sub = b & ((1u << kSubBits) - 1);
    const std::uint64_t low = (std::uint64_t{1} << kSubBits | sub) << shift;
    return low + ((std::uint64_t{1} << shift) - 1);
  }

 private:
  static constexpr std::uint64_t kNoMin =
      std::numeric_limits<std::uint64_t>::max();

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = kNoMin;
};

static_assert(LatencyHistogram::BucketOf(~std::uint64_t{0}) ==
              LatencyHistogram::kBuckets - 1);
static_assert(LatencyHistogram::UpperBound(LatencyHistogram::kBuckets - 1) ==
              ~std::uint64_t{0});

}  // namespace orderwire

#endif  // ORDERWIRE_BASE_LATENCY_HISTOGRAM_H_
