// A log-bucketed latency histogram: fixed memory, O(1) record, no
// allocation after construction. Values are nanoseconds (any unit works).
//
// Buckets: values below 2^kSubBits are exact; above, each power of two is
// split into 2^kSubBits equal buckets, so a reported percentile is within
// 1/2^kSubBits (~3%) of the true value, and always an upper bound of its
// bucket. Max and min are exact.
#ifndef ORDERWIRE_NET_LATENCY_HISTOGRAM_H_
#define ORDERWIRE_NET_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace orderwire::net {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr int kMaxBits = 48;  // values up to ~2.8e14 (78 hours, ns)
  static constexpr std::size_t kBuckets = (kMaxBits - kSubBits + 1) << kSubBits;

  // Records one value. Hot path: a few ALU ops and one increment.
  void Record(std::uint64_t value) noexcept {
    ++counts_[BucketOf(value)];
    ++count_;
    max_ = std::max(max_, value);
    min_ = std::min(min_, value);
  }

  // The smallest bucket bound at or above the `percentile` (0..100) of the
  // recorded values; 0 if nothing was recorded.
  [[nodiscard]] std::uint64_t Percentile(double percentile) const noexcept {
    if (count_ == 0) return 0;
    if (percentile >= 100.0) return max_;
    const double rank = percentile / 100.0 * static_cast<double>(count_);
    std::uint64_t target = static_cast<std::uint64_t>(rank);
    if (static_cast<double>(target) < rank || target == 0) ++target;
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen >= target) return std::min(UpperBound(b), max_);
    }
    return max_;
  }

  void Merge(const LatencyHistogram& other) noexcept {
    for (std::size_t b = 0; b < kBuckets; ++b) counts_[b] += other.counts_[b];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
    min_ = std::min(min_, other.min_);
  }

  void Reset() noexcept { *this = LatencyHistogram(); }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] std::uint64_t max() const noexcept { return max_; }
  [[nodiscard]] std::uint64_t min() const noexcept {
    return count_ == 0 ? 0 : min_;
  }

  // Bucket index of `value` (exposed for tests).
  [[nodiscard]] static std::size_t BucketOf(std::uint64_t value) noexcept {
    constexpr std::uint64_t kLimit = (std::uint64_t{1} << kMaxBits) - 1;
    if (value > kLimit) value = kLimit;
    if (value < (std::uint64_t{1} << kSubBits)) {
      return static_cast<std::size_t>(value);
    }
    const int top = static_cast<int>(std::bit_width(value)) - 1;  // >= kSubBits
    const int shift = top - kSubBits;
    const std::uint64_t sub = (value >> shift) & ((1u << kSubBits) - 1);
    return (static_cast<std::size_t>(shift + 1) << kSubBits) +
           static_cast<std::size_t>(sub);
  }
  // Largest value that falls in bucket `b`.
  [[nodiscard]] static std::uint64_t UpperBound(std::size_t b) noexcept {
    if (b < (std::size_t{1} << kSubBits)) return b;
    const int shift = static_cast<int>(b >> kSubBits) - 1;
    const std::uint64_t sub = b & ((1u << kSubBits) - 1);
    const std::uint64_t base = (std::uint64_t{1} << kSubBits | sub) << shift;
    return base + ((std::uint64_t{1} << shift) - 1);
  }

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = UINT64_MAX;
};

}  // namespace orderwire::net

#endif  // ORDERWIRE_NET_LATENCY_HISTOGRAM_H_
