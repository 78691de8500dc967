// The retention policy (journal/retention.h) against a direct statement of
// the rule, over every small journal: every segment count, record count,
// size, age and snapshot position up to a bound. The guarantee it checks
// first: nothing after the newest snapshot is ever pruned, and nothing at
// all without a snapshot.
#include "journal/retention.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::journal {
namespace {

using ::testing::HasSubstr;
using Kind = RetentionPolicy::Kind;

// The rule as docs/JOURNAL.md states it, segment by segment.
bool BeyondWindow(const std::vector<SegmentSummary>& s, std::size_t i,
                  const RetentionPolicy& policy, std::uint64_t now_ns) {
  const std::size_t n = s.size();
  if (i + 1 >= n) return false;  // the last segment is always kept
  switch (policy.kind) {
    case Kind::kSegments:
      return n - i > policy.value;
    case Kind::kBytes: {
      std::uint64_t total = 0;
      for (std::size_t k = i; k < n; ++k) total += s[k].bytes;
      return total > policy.value;
    }
    case Kind::kDuration:
      return s[i + 1].created_ns <= now_ns &&
             now_ns - s[i + 1].created_ns >= policy.value;
  }
  return false;
}

std::uint64_t Expected(const std::vector<SegmentSummary>& s,
                       const std::vector<std::uint64_t>& snapshots,
                       const RetentionPolicy& policy, std::uint64_t now_ns) {
  if (snapshots.empty()) return 0;
  std::uint64_t newest = 0;
  for (const std::uint64_t x : snapshots) newest = std::max(newest, x);
  std::uint64_t best = 0;
  for (std::size_t j = 1; j < s.size(); ++j) {
    bool ok = s[j].first_index <= newest + 1;
    for (std::size_t i = 0; i < j && ok; ++i) {
      ok = BeyondWindow(s, i, policy, now_ns);
    }
    if (ok) best = s[j].first_index;
  }
  return best;
}

// Checks one case against the rule and the guarantee; counts cases.
void Check(const std::vector<SegmentSummary>& s,
           const std::vector<std::uint64_t>& snapshots,
           const RetentionPolicy& policy, std::uint64_t now_ns,
           std::uint64_t* cases) {
  ++*cases;
  const std::uint64_t got = PruneBeforeIndex(s, snapshots, policy, now_ns);
  const std::uint64_t want = Expected(s, snapshots, policy, now_ns);
  if (got != want) {
    ADD_FAILURE() << "segments " << s.size() << " policy "
                  << DescribeRetention(policy) << " now " << now_ns
                  << " snapshots " << snapshots.size() << ": got " << got
                  << ", want " << want;
    return;
  }
  if (got == 0) return;
  // The guarantee, stated on its own: a segment boundary after the first,
  // never past the last segment's start, never past the newest snapshot.
  std::uint64_t newest = 0;
  for (const std::uint64_t x : snapshots) newest = std::max(newest, x);
  EXPECT_LE(got, newest + 1);
  EXPECT_GT(got, s.front().first_index);
  EXPECT_LE(got, s.back().first_index);
}

// Every snapshot set worth telling apart for a journal of `last` records:
// none, one at each index 0..last, and two (an older and a newer one).
std::vector<std::vector<std::uint64_t>> SnapshotSets(std::uint64_t last) {
  std::vector<std::vector<std::uint64_t>> sets = {{}};
  for (std::uint64_t a = 0; a <= last; ++a) {
    sets.push_back({a});
    if (a > 0) sets.push_back({a, a / 2});
  }
  return sets;
}

// Segments with `counts[i]` records each, starting at index 1.
std::vector<SegmentSummary> Segments(const std::vector<std::uint64_t>& counts,
                                     const std::vector<std::uint64_t>& bytes,
                                     const std::vector<std::uint64_t>& born) {
  std::vector<SegmentSummary> s;
  std::uint64_t first = 1;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    s.push_back(
        {.first_index = first, .bytes = bytes[i], .created_ns = born[i]});
    first += counts[i];
  }
  return s;
}

// All vectors of length n with values in [lo, hi].
std::vector<std::vector<std::uint64_t>> All(std::size_t n, std::uint64_t lo,
                                            std::uint64_t hi) {
  std::vector<std::vector<std::uint64_t>> out = {{}};
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<std::vector<std::uint64_t>> next;
    for (const auto& v : out) {
      for (std::uint64_t x = lo; x <= hi; ++x) {
        next.push_back(v);
        next.back().push_back(x);
      }
    }
    out = std::move(next);
  }
  return out;
}

TEST(RetentionPolicyTest, SegmentsEveryCase) {
  std::uint64_t cases = 0;
  for (std::size_t n = 1; n <= 6; ++n) {
    for (const auto& counts : All(n, 1, 3)) {
      const auto s = Segments(counts, std::vector<std::uint64_t>(n, 1),
                              std::vector<std::uint64_t>(n, 0));
      std::uint64_t last = 0;
      for (const std::uint64_t c : counts) last += c;
      for (const auto& snaps : SnapshotSets(last)) {
        for (std::uint64_t k = 1; k <= 7; ++k) {
          Check(s, snaps, {.kind = Kind::kSegments, .value = k}, 0, &cases);
        }
      }
    }
  }
  EXPECT_GT(cases, 100'000u);
}

TEST(RetentionPolicyTest, BytesEveryCase) {
  std::uint64_t cases = 0;
  for (std::size_t n = 1; n <= 5; ++n) {
    for (const auto& counts : All(n, 1, 2)) {
      std::uint64_t last = 0;
      for (const std::uint64_t c : counts) last += c;
      for (const auto& bytes : All(n, 1, 3)) {
        const auto s =
            Segments(counts, bytes, std::vector<std::uint64_t>(n, 0));
        for (const auto& snaps : SnapshotSets(last)) {
          for (std::uint64_t b = 1; b <= 16; ++b) {
            Check(s, snaps, {.kind = Kind::kBytes, .value = b}, 0, &cases);
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 100'000u);
}

TEST(RetentionPolicyTest, DurationEveryCase) {
  std::uint64_t cases = 0;
  for (std::size_t n = 1; n <= 5; ++n) {
    for (const auto& counts : All(n, 1, 2)) {
      std::uint64_t last = 0;
      for (const std::uint64_t c : counts) last += c;
      // Creation times: each segment 0..2 after the one before (clocks
      // that stand still included), starting at 5.
      for (const auto& gaps : All(n, 0, 2)) {
        std::vector<std::uint64_t> born;
        born.reserve(n);
        std::uint64_t t = 5;
        for (const std::uint64_t g : gaps) born.push_back(t += g);
        const auto s = Segments(counts, std::vector<std::uint64_t>(n, 1), born);
        for (const auto& snaps : SnapshotSets(last)) {
          for (std::uint64_t d = 1; d <= 6; ++d) {
            // `now` before, among and after the creation times.
            for (std::uint64_t now = 3; now <= 20; now += 1) {
              Check(s, snaps, {.kind = Kind::kDuration, .value = d}, now,
                    &cases);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 100'000u);
}

TEST(RetentionPolicyTest, NothingWithoutASnapshot) {
  const std::vector<SegmentSummary> s = {
      {1, 100, 0}, {10, 100, 0}, {20, 100, 0}, {30, 100, 0}};
  EXPECT_EQ(PruneBeforeIndex(s, {}, {.kind = Kind::kSegments, .value = 1}, 0),
            0u);
  const std::vector<std::uint64_t> snapshot = {25};
  EXPECT_EQ(
      PruneBeforeIndex(s, snapshot, {.kind = Kind::kSegments, .value = 1}, 0),
      20u);
}

TEST(RetentionPolicyTest, ParsesSegmentsSizesAndDurations) {
  auto parse = [](std::string_view text) { return *ParseRetention(text); };
  EXPECT_EQ(parse("8").kind, Kind::kSegments);
  EXPECT_EQ(parse("8").value, 8u);
  EXPECT_EQ(parse("10GiB").kind, Kind::kBytes);
  EXPECT_EQ(parse("10GiB").value, 10ull << 30);
  EXPECT_EQ(parse("500MB").value, 500'000'000u);
  EXPECT_EQ(parse("65536B").value, 65536u);
  EXPECT_EQ(parse("7d").kind, Kind::kDuration);
  EXPECT_EQ(parse("7d").value, 7ull * 86400 * 1'000'000'000);
  EXPECT_EQ(parse("30m").value, 1800ull * 1'000'000'000);
  EXPECT_EQ(parse("2w").value, 14ull * 86400 * 1'000'000'000);
  for (const char* bad : {"", "x", "0", "0d", "10XB", "-1", "7 d", "d7",
                          "99999999999999999999", "18446744073709551615TiB"}) {
    const absl::StatusOr<RetentionPolicy> p = ParseRetention(bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_THAT(std::string(p.status().message()),
                HasSubstr("expected a number of segments"))
        << bad;
  }
}

}  // namespace
}  // namespace orderwire::journal
