// LatencyHistogram: log-linear buckets of nanosecond values, fixed memory.
//
// The writer records, for every group, the time from its submission to the
// moment it became durable; the CLI and journal_bench print percentiles of
// it. Each power of two is split into 16 linear buckets, so a percentile is
// exact to within 1/16 (6.25%) of its value; values from 0 to 2^63 fit.
// Record() is a few instructions and never allocates.
#ifndef ORDERWIRE_JOURNAL_HISTOGRAM_H_
#define ORDERWIRE_JOURNAL_HISTOGRAM_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace orderwire::journal {

class LatencyHistogram {
 public:
  // Counts one value. Hot path: O(1), no allocation.
  void Record(std::uint64_t ns) noexcept {
    ++counts_[BucketOf(ns)];
    ++count_;
    if (ns > max_) max_ = ns;
  }

  // The value at quantile q in [0, 1]: the upper bound of the bucket that
  // holds it (or max() for q == 1). 0 when empty. O(buckets).
  [[nodiscard]] std::uint64_t Percentile(double q) const noexcept {
    if (count_ == 0) return 0;
    if (q >= 1.0) return max_;
    const auto rank =
        static_cast<std::uint64_t>(q * static_cast<double>(count_));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen > rank) {
        const std::uint64_t upper = UpperBound(b);
        return upper < max_ ? upper : max_;
      }
    }
    return max_;
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] std::uint64_t max() const noexcept { return max_; }
  void Reset() noexcept {
    counts_.fill(0);
    count_ = 0;
    max_ = 0;
  }

 private:
  static constexpr std::size_t kSubBits = 4;
  static constexpr std::size_t kSub = std::size_t{1} << kSubBits;
  static constexpr std::size_t kBuckets = 64 * kSub;

  static std::size_t BucketOf(std::uint64_t v) noexcept {
    if (v < kSub) return static_cast<std::size_t>(v);
    const auto exponent = static_cast<std::size_t>(63 - std::countl_zero(v));
    const auto sub =
        static_cast<std::size_t>((v >> (exponent - kSubBits)) & (kSub - 1));
    return (exponent - kSubBits + 1) * kSub + sub;
  }
  static std::uint64_t UpperBound(std::size_t bucket) noexcept {
    if (bucket < kSub) return bucket;
    const std::size_t exponent = bucket / kSub + kSubBits - 1;
    const std::uint64_t sub = bucket % kSub;
    const std::uint64_t low =
        (std::uint64_t{1} << exponent) | (sub << (exponent - kSubBits));
    return low + (std::uint64_t{1} << (exponent - kSubBits)) - 1;
  }

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_HISTOGRAM_H_
