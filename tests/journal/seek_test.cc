// Seek: a JournalReader opened at an index (ReaderOptions::from_index) or a
// receive time (from_time_ns) yields exactly what a full scan yields from
// there, positions itself in O(log segments + log groups) without reading
// what comes before, and reports damage only where it reads.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"
#include "tests/support/sanitizers.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::FlipBits;
using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::journal::testing::TestSeed;
using ::orderwire::test_support::ScratchDir;
using ::testing::HasSubstr;

constexpr std::uint64_t kSeekSegment = std::uint64_t{64} * 1024;

// A record as a full scan sees it (the frame copied out).
struct Seen {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::vector<std::byte> frame;
  bool operator==(const Seen&) const = default;
};

struct Scan {
  std::vector<Seen> records;
  ReadResult end = ReadResult::kEnd;
  absl::Status status;
  internal::SeekCounters counters;
};

// Reads from `options`' position to the end, or only the first `limit`
// records (then `end` is kRecord if the reader had more).
Scan ReadFrom(const std::string& dir, const ReaderOptions& options,
              std::size_t limit = SIZE_MAX) {
  Scan out;
  auto reader = JournalReader::Open(dir, options);
  if (!reader.ok()) {
    out.end = ReadResult::kError;
    out.status = reader.status();
    return out;
  }
  Record r;
  while (out.records.size() < limit &&
         (out.end = (*reader)->Next(r)) == ReadResult::kRecord) {
    const auto bytes = r.frame.bytes();
    out.records.push_back(
        {r.index, r.receive_ns, r.session_id, {bytes.begin(), bytes.end()}});
  }
  out.status = (*reader)->status();
  out.counters = (*reader)->seek_counters();
  return out;
}

// A journal of `groups` groups of 1..max_records records (now and then one
// of 40..120 records spanning several blocks), in segments of
// `segment_size` bytes. Every Append is one group (Flush after each); its
// records share one receive time, which grows by 0..3 ns per group (equal
// times across groups too).
// `version`: the format of the segments (1: groups on 4096-byte
// boundaries, 2: packed at 8 bytes, 3: packed, compact framing).
void BuildRandomJournal(const std::string& dir, std::mt19937_64& rng,
                        int groups, std::uint64_t segment_size,
                        std::uint32_t max_records, std::uint16_t version = 1) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kNone,
                                     .segment_size = segment_size,
                                     .format_version = version});
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::uint64_t next = 1;
  std::uint64_t time = 1'700'000'000'000'000'000ull;
  for (int g = 0; g < groups; ++g) {
    const std::uint64_t n =
        rng() % 50 == 0 ? 40 + rng() % 81 : 1 + rng() % max_records;
    time += rng() % 4;
    const std::vector<std::byte> frames = FramesFor(next, n);
    AppendStatus st;
    while ((st = (*writer)->Append(frames, static_cast<std::uint32_t>(g),
                                   time)) == AppendStatus::kFull) {
      ASSERT_TRUE((*writer)->Wait().ok()) << (*writer)->status();
    }
    ASSERT_EQ(st, AppendStatus::kOk) << (*writer)->status();
    ASSERT_TRUE((*writer)->Flush().ok()) << (*writer)->status();
    next += n;
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

// In journals of both formats, version 1 (groups on block boundaries, 90
// groups) and version 2 (packed groups, found at 8-byte alignment, 1500
// groups), each in at least 5 segments: a reader opened at each of
// `points(full)` yields exactly the full scan's records from the
// `first_yielded(full, point)`-th on: at every point the first
// kRecordsChecked of them (more than the longest group: the seek lands in
// the right group and at the right record in it, and reads on past the
// group after it), and, read to the end (which ends cleanly), at every
// kFullReadEvery-th point and the last ones. (Reading every point to the
// end is quadratic: 140 s of the suite for no other path.)
// The journals are random (TestSeed).
constexpr std::size_t kRecordsChecked = 250;  // groups hold up to 120
constexpr std::size_t kFullReadEvery = 61;
// The points sought: every one in the release suite, which proves the seek
// at each. Under AddressSanitizer, whose suite is there for memory errors
// (the two tests took 22 s and 10 s of it), every kSeekEvery-th point (the
// groups are random, of 1 to 6 records or 40 to 120, so these still fall
// at every place in a group), the first and the last kEdgePoints, and
// every point read to the end. (The same choice in a release build: 3.9 s
// and 2.5 s down to 1.6 s and 0.8 s.)
constexpr std::size_t kSeekEvery = ORDERWIRE_TEST_UNDER_ASAN ? 8 : 1;
constexpr std::size_t kEdgePoints = 8;
void ExpectEverySeekYieldsTheFullScanFromThere(
    const std::function<std::vector<ReaderOptions>(const Scan&)>& points,
    const std::function<std::size_t(const Scan&, const ReaderOptions&)>&
        first_yielded) {
  const std::uint64_t seed = TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  // Version 1 (groups on block boundaries), version 2 (packed groups,
  // found at 8-byte alignment) and version 3 (packed, compact framing: the
  // record indexes are not stored), each in at least 5 segments.
  for (const auto& [version, groups] :
       {std::pair<std::uint16_t, int>{1, 90}, {2, 1500}, {3, 1900}}) {
    SCOPED_TRACE(version);
    ScratchDir dir("seek");
    BuildRandomJournal(dir.path(), rng, groups, kSeekSegment, 6, version);
    ASSERT_GE(SegmentPaths(dir.path()).size(), 5u);
    const Scan full = ReadFrom(dir.path(), {});
    ASSERT_EQ(full.end, ReadResult::kEnd) << full.status;
    const std::vector<ReaderOptions> all = points(full);
    for (std::size_t p = 0; p < all.size(); ++p) {
      const bool to_end =
          p % kFullReadEvery == 0 || p + kEdgePoints >= all.size();
      if (!to_end && p % kSeekEvery != 0 && p >= kEdgePoints) continue;
      const ReaderOptions& point = all[p];
      SCOPED_TRACE(point.from_time_ns.has_value()
                       ? "time " + std::to_string(*point.from_time_ns)
                       : "index " + std::to_string(point.from_index));
      const Scan from =
          ReadFrom(dir.path(), point, to_end ? SIZE_MAX : kRecordsChecked);
      const auto first = full.records.begin() + static_cast<std::ptrdiff_t>(
                                                    first_yielded(full, point));
      const std::ptrdiff_t left = full.records.end() - first;
      const auto limit = static_cast<std::ptrdiff_t>(kRecordsChecked);
      const auto last =
          to_end ? full.records.end() : first + std::min(limit, left);
      if (to_end || left < limit) {
        ASSERT_EQ(from.end, ReadResult::kEnd) << from.status;
      } else {
        ASSERT_EQ(from.end, ReadResult::kRecord) << from.status;
      }
      ASSERT_EQ(from.records, std::vector<Seen>(first, last));
    }
  }
}

TEST(SeekTest, EveryIndexYieldsWhatAFullScanYieldsFromThere) {
  SKIP_WITHOUT_URING();
  ExpectEverySeekYieldsTheFullScanFromThere(
      [](const Scan& full) {
        std::vector<ReaderOptions> points;
        const std::uint64_t last = full.records.back().index;
        for (std::uint64_t k = 1; k <= last + 2; ++k) {
          points.push_back({.from_index = k});
        }
        return points;
      },
      [](const Scan& full, const ReaderOptions& point) {
        const std::uint64_t last = full.records.back().index;
        return static_cast<std::size_t>(
            std::min<std::uint64_t>(point.from_index, last + 1) - 1);
      });
}

TEST(SeekTest, EveryTimeYieldsTheFirstRecordReceivedAtOrAfterIt) {
  SKIP_WITHOUT_URING();
  ExpectEverySeekYieldsTheFullScanFromThere(
      [](const Scan& full) {
        std::vector<ReaderOptions> points;
        const std::uint64_t first_time = full.records.front().receive_ns;
        const std::uint64_t last_time = full.records.back().receive_ns;
        for (std::uint64_t t = first_time - 2; t <= last_time + 2; ++t) {
          points.push_back({.from_time_ns = t});
        }
        return points;
      },
      [](const Scan& full, const ReaderOptions& point) {
        const auto first = std::find_if(
            full.records.begin(), full.records.end(),
            [&](const Seen& s) { return s.receive_ns >= *point.from_time_ns; });
        return static_cast<std::size_t>(first - full.records.begin());
      });
}

// 16,384 one-to-three-record groups (64 MiB of format-1 blocks) in 4 MiB
// segments: positioning at any index or time verifies a number of groups
// logarithmic in the journal, and scans a bounded number of bytes.
// Progress after a seek (`replay --verify --from-index`, a snapshot's
// tail): total_bytes() and bytes_done() count from the seek point, so a
// read from there that ends leaves exactly what the full read leaves (at
// most the last segment's room), and the first record is at the start of
// the work.
// (Counted from the journal's start, the total held segments the reader
// never read, and the end showed well under 100%.)
TEST(SeekTest, ProgressCountsFromTheSeekPoint) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("seek");
  std::mt19937_64 rng(11);  // any journal of several segments will do
  BuildRandomJournal(dir.path(), rng, 90, kSeekSegment, 6);
  ASSERT_GE(SegmentPaths(dir.path()).size(), 5u);
  struct Read {
    std::uint64_t total = 0;
    std::uint64_t done_at_first = 0;
    std::uint64_t done_at_end = 0;
  };
  auto read = [&](const ReaderOptions& options) {
    Read out;
    auto reader = JournalReader::Open(dir.path(), options);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return out;
    Record r;
    bool first = true;
    while ((*reader)->Next(r) == ReadResult::kRecord) {
      if (first) out.done_at_first = (*reader)->bytes_done();
      first = false;
    }
    EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
    out.total = (*reader)->total_bytes();
    out.done_at_end = (*reader)->bytes_done();
    return out;
  };
  const Read full = read({});
  ASSERT_GE(full.total, full.done_at_end);
  const std::uint64_t unread_tail = full.total - full.done_at_end;
  ASSERT_LT(unread_tail, kSeekSegment);
  const Scan all = ReadFrom(dir.path(), {});
  const std::uint64_t last = all.records.back().index;
  for (std::uint64_t k = 2; k <= last; k += 7) {
    SCOPED_TRACE(k);
    const Read from = read({.from_index = k});
    EXPECT_EQ(from.total - from.done_at_end, unread_tail);
    EXPECT_LE(from.done_at_end, full.done_at_end);
    // The first record's group is all the work done at the first record
    // (a group here holds at most 120 records of at most 24 + 71 bytes,
    // padded to a block).
    EXPECT_LE(from.done_at_first, std::uint64_t{120} * 95 + kBlockSize);
  }
}

TEST(SeekTest, PositioningCostIsLogarithmic) {
  SKIP_WITHOUT_URING();
  std::mt19937_64 rng(7);
  ScratchDir dir("seek");
  const int kGroups = 16384;
  const std::uint64_t kSegment = std::uint64_t{4} << 20;
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kNone,
                                       .segment_size = kSegment,
                                       .format_version = 1});
    ASSERT_TRUE(writer.ok()) << writer.status();
    std::uint64_t next = 1;
    for (int g = 0; g < kGroups; ++g) {
      const std::uint64_t n = 1 + rng() % 3;
      const std::vector<std::byte> frames = FramesFor(next, n);
      ASSERT_EQ((*writer)->Append(frames, 1, 1'000'000 + next),
                AppendStatus::kOk);
      ASSERT_TRUE((*writer)->Flush().ok()) << (*writer)->status();
      next += n;
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::size_t segments = SegmentPaths(dir.path()).size();
  ASSERT_GE(segments, 16u);
  const Scan full = ReadFrom(dir.path(), {});
  ASSERT_EQ(full.end, ReadResult::kEnd) << full.status;
  const std::uint64_t last = full.records.back().index;
  // Binary search over segments, then over the blocks of one segment, plus
  // the few steps after it converges.
  const auto log2 = [](std::uint64_t n) {
    return static_cast<std::uint64_t>(std::bit_width(n));
  };
  const std::uint64_t bound =
      2 * log2(segments) + log2(kSegment / kBlockSize) + 4;
  std::uint64_t worst = 0;
  for (std::uint64_t k = 1; k <= last; k += 997) {
    SCOPED_TRACE(k);
    auto reader = JournalReader::Open(dir.path(), {.from_index = k});
    ASSERT_TRUE(reader.ok()) << reader.status();
    Record r;
    ASSERT_EQ((*reader)->Next(r), ReadResult::kRecord);
    ASSERT_EQ(r.index, k);
    const internal::SeekCounters& c = (*reader)->seek_counters();
    worst = std::max(worst, c.groups_checked);
    EXPECT_LE(c.groups_checked, bound);
    EXPECT_LE(c.probes, bound);
    EXPECT_LE(c.segments_mapped, 1u);
    // Each probe passes at most the group it lands in (here one block).
    EXPECT_LE(c.bytes_scanned, c.probes * 2 * kBlockSize);
  }
  for (std::uint64_t t = 1'000'000; t <= 1'000'000 + last; t += 1009) {
    SCOPED_TRACE(t);
    auto reader = JournalReader::Open(dir.path(), {.from_time_ns = t});
    ASSERT_TRUE(reader.ok()) << reader.status();
    Record r;
    ASSERT_EQ((*reader)->Next(r), ReadResult::kRecord);
    ASSERT_GE(r.receive_ns, t);
    const internal::SeekCounters& c = (*reader)->seek_counters();
    EXPECT_LE(c.groups_checked, bound);
    EXPECT_LE(c.segments_mapped, log2(segments) + 1);
  }
  std::printf("groups verified to position: at most %llu (bound %llu)\n",
              static_cast<unsigned long long>(worst),
              static_cast<unsigned long long>(bound));
}

// A journal of 60 one-record groups in 64 KiB segments (15 per segment,
// group k of a segment at offset 4096 * (k + 1)), closed cleanly.
void BuildSmallJournal(const std::string& dir) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kNone,
                                     .segment_size = kSeekSegment,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (std::uint64_t i = 1; i <= 60; ++i) {
    ASSERT_EQ((*writer)->Append(FramesFor(i, 1), 1, i), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST(SeekTest, DamageBeforeTheSeekPointIsNotReadDamageAfterItIsReported) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("seek");
  BuildSmallJournal(dir.path());
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 4u);
  // Corrupt the group of index 8 (segment 1, offset 4096 * 8): written in
  // full, so it is data loss, not a torn tail.
  FlipBits(paths[0], 8 * kBlockSize + kGroupHeaderSize + 30, std::byte{0x10});
  const Scan full = ReadFrom(dir.path(), {});
  ASSERT_EQ(full.end, ReadResult::kError);
  EXPECT_EQ(full.status.code(), absl::StatusCode::kDataLoss) << full.status;
  // From index 9 (the next group, same segment) and later: whole and clean.
  for (std::uint64_t k : {9u, 10u, 15u, 16u, 40u, 60u}) {
    SCOPED_TRACE(k);
    const Scan from = ReadFrom(dir.path(), {.from_index = k});
    EXPECT_EQ(from.end, ReadResult::kEnd) << from.status;
    ASSERT_FALSE(from.records.empty());
    EXPECT_EQ(from.records.front().index, k);
    EXPECT_EQ(from.records.back().index, 60u);
    EXPECT_EQ(from.records.size(), 61 - k);
  }
  // By time too (receive_ns == index here), from the first record after
  // the group that follows the damage. (From time 9 the damaged group's
  // receive times cannot be read, so whether it held a record received at
  // or after 9 is unknown: that is reported, as the next check shows.)
  const Scan by_time = ReadFrom(dir.path(), {.from_time_ns = 10});
  EXPECT_EQ(by_time.end, ReadResult::kEnd) << by_time.status;
  EXPECT_EQ(by_time.records.size(), 51u);
  const Scan at_damage = ReadFrom(dir.path(), {.from_time_ns = 9});
  EXPECT_EQ(at_damage.end, ReadResult::kError);
  EXPECT_EQ(at_damage.status.code(), absl::StatusCode::kDataLoss);
  // From the damaged group itself or before it: reported, with the records
  // before it yielded first.
  for (std::uint64_t k : {1u, 5u, 8u}) {
    SCOPED_TRACE(k);
    const Scan from = ReadFrom(dir.path(), {.from_index = k});
    EXPECT_EQ(from.end, ReadResult::kError);
    EXPECT_EQ(from.status.code(), absl::StatusCode::kDataLoss) << from.status;
    EXPECT_THAT(from.status.message(), HasSubstr(paths[0]));
    EXPECT_EQ(from.records.size(), 8 - k);
  }
  // Damage after the seek point, in a later segment: reported.
  FlipBits(paths[2], 3 * kBlockSize + kGroupHeaderSize + 30, std::byte{0x10});
  const Scan later = ReadFrom(dir.path(), {.from_index = 20});
  EXPECT_EQ(later.end, ReadResult::kError);
  EXPECT_THAT(later.status.message(), HasSubstr(paths[2]));
}

TEST(SeekTest, TheCheckpointStillHoldsTheEndOfWhatIsRead) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("seek");
  BuildSmallJournal(dir.path());
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  // The last segment (indexes 46..60) deleted: the checkpoint says 60 was
  // durable, so a reader from index 20 must not end cleanly at 45.
  ASSERT_EQ(::unlink(paths.back().c_str()), 0);
  const Scan from = ReadFrom(dir.path(), {.from_index = 20});
  EXPECT_EQ(from.end, ReadResult::kError);
  EXPECT_EQ(from.status.code(), absl::StatusCode::kDataLoss) << from.status;
  EXPECT_THAT(from.status.message(), HasSubstr("46..60"));
  EXPECT_EQ(from.records.size(), 26u);
}

TEST(SeekTest, PastTheEndReadsNothingAndEndsCleanly) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("seek");
  BuildSmallJournal(dir.path());
  auto reader = JournalReader::Open(dir.path(), {.from_index = 61});
  ASSERT_TRUE(reader.ok()) << reader.status();
  Record r;
  EXPECT_EQ((*reader)->Next(r), ReadResult::kEnd) << (*reader)->status();
  EXPECT_EQ((*reader)->last_index(), 60u);
  const Scan far = ReadFrom(dir.path(), {.from_index = 1000});
  EXPECT_EQ(far.end, ReadResult::kEnd) << far.status;
  EXPECT_TRUE(far.records.empty());
}

TEST(SeekTest, AnIndexBeforeTheJournalsFirstIsAnErrorNamingBoth) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("seek");
  BuildSmallJournal(dir.path());
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  // The first segment gone (as retention would remove it): the journal
  // now starts at index 16.
  ASSERT_EQ(::unlink(paths.front().c_str()), 0);
  auto reader = JournalReader::Open(dir.path(), {.from_index = 5});
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(reader.status().message(), HasSubstr("index 5 "));
  EXPECT_THAT(reader.status().message(), HasSubstr("starts at index 16"));
  // From its first index on it reads.
  const Scan from = ReadFrom(dir.path(), {.from_index = 16});
  EXPECT_EQ(from.end, ReadResult::kEnd) << from.status;
  EXPECT_EQ(from.records.size(), 45u);
}

TEST(SeekTest, IndexAndTimeTogetherAreRefused) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("seek");
  BuildSmallJournal(dir.path());
  auto reader =
      JournalReader::Open(dir.path(), {.from_index = 3, .from_time_ns = 4});
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace orderwire::journal
