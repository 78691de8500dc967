// Tests of the log-bucketed latency histogram.
#include "net/latency_histogram.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace orderwire::net {
namespace {

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 20; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 20u);
  EXPECT_EQ(h.Percentile(50), 10u);
  EXPECT_EQ(h.Percentile(100), 20u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 20u);
}

TEST(LatencyHistogramTest, PercentilesAreUpperBoundsWithinThreePercent) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(10.0, 1.5);
  std::vector<std::uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const std::uint64_t exact =
        values[static_cast<std::size_t>(p / 100.0 *
                                        static_cast<double>(values.size())) -
               1];
    const std::uint64_t got = h.Percentile(p);
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * 1.035)
        << p;
  }
  EXPECT_EQ(h.Percentile(100), values.back());
}

TEST(LatencyHistogramTest, BucketsAreMonotonicAndBoundsContainTheirValues) {
  std::uint64_t previous = 0;
  for (std::uint64_t v : {0ull, 1ull, 31ull, 32ull, 33ull, 63ull, 64ull,
                          1000ull, 123456789ull, 1ull << 40}) {
    const std::size_t b = LatencyHistogram::BucketOf(v);
    EXPECT_GE(b, previous);
    EXPECT_GE(LatencyHistogram::UpperBound(b), v);
    if (b > 0) {
      EXPECT_LT(LatencyHistogram::UpperBound(b - 1), v);
    }
    previous = b;
  }
}

TEST(LatencyHistogramTest, MergeAddsCounts) {
  LatencyHistogram a;
  LatencyHistogram b;
  a.Record(10);
  b.Record(1000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.max(), 1000u);
  EXPECT_EQ(a.min(), 10u);
  EXPECT_EQ(LatencyHistogram().Percentile(50), 0u);
}

}  // namespace
}  // namespace orderwire::net
