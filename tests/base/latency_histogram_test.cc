// Tests of the log-bucketed latency histogram (formerly two: net's, whose
// Percentile took a percent, and journal's, which took a fraction; now one,
// taking a fraction).
#include "base/latency_histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace orderwire {
namespace {

TEST(LatencyHistogramTest, EmptyReportsZeros) {
  const LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.Percentile(0.0), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.Percentile(1.0), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 20; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 20u);
  EXPECT_EQ(h.Percentile(0.5), 10u);  // nearest rank: the 10th of 20
  EXPECT_EQ(h.Percentile(0.05), 1u);
  EXPECT_EQ(h.Percentile(0.9), 18u);
  EXPECT_EQ(h.Percentile(1.0), 20u);
  EXPECT_EQ(h.Percentile(0.0), 1u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 20u);
}

// The convention: Percentile takes a fraction in [0, 1]. Each expectation
// fails if the argument is read as a percent (0.5 would be the 0.5th
// percentile) or if a caller passes a percent (50 would be max()).
TEST(LatencyHistogramTest, PercentileTakesAFractionNotAPercent) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 1000; ++v) h.Record(v);
  const auto within = [](std::uint64_t got, std::uint64_t exact) {
    return got >= exact &&
           static_cast<double>(got) <= static_cast<double>(exact) * 1.035;
  };
  EXPECT_TRUE(within(h.Percentile(0.5), 500)) << h.Percentile(0.5);
  EXPECT_TRUE(within(h.Percentile(0.9), 900)) << h.Percentile(0.9);
  EXPECT_TRUE(within(h.Percentile(0.99), 990)) << h.Percentile(0.99);
  EXPECT_TRUE(within(h.Percentile(0.01), 10)) << h.Percentile(0.01);
  // Read as percents these would be the 0.5th and 0.99th percentiles.
  EXPECT_GT(h.Percentile(0.5), 100u);
  EXPECT_GT(h.Percentile(0.99), 100u);
  // A percent passed by mistake is past 1: it is the maximum, not p50/p99.
  EXPECT_EQ(h.Percentile(50), 1000u);
  EXPECT_EQ(h.Percentile(99), 1000u);
  EXPECT_NE(h.Percentile(50), h.Percentile(0.5));
}

TEST(LatencyHistogramTest, OutOfRangeFractionsClampToMinAndMax) {
  LatencyHistogram h;
  for (std::uint64_t v : {700u, 800u, 900u}) h.Record(v);
  EXPECT_EQ(h.Percentile(-1.0), 700u);
  EXPECT_EQ(h.Percentile(0.0), 700u);
  EXPECT_EQ(h.Percentile(std::numeric_limits<double>::quiet_NaN()), 700u);
  EXPECT_EQ(h.Percentile(1.0), 900u);
  EXPECT_EQ(h.Percentile(2.0), 900u);
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
  for (double q : {0.001, 0.25, 0.5, 0.9, 0.99, 0.999}) {
    // Nearest rank: the ceil(q * n)-th smallest value.
    const auto rank = static_cast<std::size_t>(
        std::ceil(q * static_cast<double>(values.size())));
    const std::uint64_t exact = values[rank - 1];
    const std::uint64_t got = h.Percentile(q);
    EXPECT_GE(got, exact) << q;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * 1.035)
        << q;
  }
  EXPECT_EQ(h.Percentile(1.0), values.back());
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.min(), values.front());
}

TEST(LatencyHistogramTest, MinAndMaxAreExact) {
  LatencyHistogram h;
  h.Record(123'456'789);
  h.Record(987'654'321);
  EXPECT_EQ(h.min(), 123'456'789u);
  EXPECT_EQ(h.max(), 987'654'321u);
  // A percentile never exceeds max(), even when its bucket's bound does.
  EXPECT_EQ(h.Percentile(0.99), 987'654'321u);
}

TEST(LatencyHistogramTest, TheWholeRangeFits) {
  LatencyHistogram h;
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  h.Record(0);
  h.Record(top);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), top);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.Percentile(0.75), top);
}

TEST(LatencyHistogramTest, BucketsAreMonotonicAndBoundsContainTheirValues) {
  std::uint64_t previous = 0;
  for (std::uint64_t v :
       {0ull, 1ull, 31ull, 32ull, 33ull, 63ull, 64ull, 65ull, 1000ull,
        123456789ull, 1ull << 40, (1ull << 48) + 12345, 1ull << 63, ~0ull}) {
    const std::size_t b = LatencyHistogram::BucketOf(v);
    EXPECT_GE(b, previous) << v;
    EXPECT_LT(b, LatencyHistogram::kBuckets) << v;
    EXPECT_GE(LatencyHistogram::UpperBound(b), v) << v;
    if (b > 0) {
      EXPECT_LT(LatencyHistogram::UpperBound(b - 1), v) << v;
    }
    previous = b;
  }
}

TEST(LatencyHistogramTest, MergeAddsCounts) {
  LatencyHistogram a;
  LatencyHistogram b;
  a.Record(10);
  b.Record(1000);
  b.Record(5);
  a.Merge(b);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(a.max(), 1000u);
  EXPECT_EQ(a.min(), 5u);
  EXPECT_EQ(a.Percentile(0.5), 10u);
  LatencyHistogram empty;
  a.Merge(empty);  // an empty histogram changes nothing
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(a.min(), 5u);
  empty.Merge(a);
  EXPECT_EQ(empty.min(), 5u);
  EXPECT_EQ(empty.max(), 1000u);
}

TEST(LatencyHistogramTest, ResetForgetsEverything) {
  LatencyHistogram h;
  h.Record(42);
  h.Record(4200);
  h.Reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  h.Record(7);
  EXPECT_EQ(h.min(), 7u);
  EXPECT_EQ(h.Percentile(0.5), 7u);
}

}  // namespace
}  // namespace orderwire
