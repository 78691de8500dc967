// JournalWriter on a full disk (docs/JOURNAL.md "Disk full"): on a small
// tmpfs of its own, preparing the next segment fails with ENOSPC; the
// partial file is removed, the preparation is retried at a bounded rate,
// appends go on into the current segment until it has no room, Append()
// then answers kJournalFull (the writer keeps running), and the writer
// resumes by itself when space is freed. A restart on a full disk works
// while the current segment has room. Skips where mounting is not
// permitted.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"
#include "tests/support/small_filesystem.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::FrameFor;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::journal::testing::SessionFor;
using ::orderwire::journal::testing::TimeFor;
using ::orderwire::test_support::SmallFilesystem;

constexpr std::uint64_t kSegment = 256 << 10;
constexpr std::uint32_t kRetryMs = 20;

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

WriterOptions Options(const std::string& dir) {
  WriterOptions o;
  o.directory = dir;
  o.durability = Durability::kBatch;
  o.segment_size = kSegment;
  o.group_size = 16 << 10;
  o.no_space_retry_ms = kRetryMs;
  return o;
}

// Appends record i alone, waiting on kFull; returns what the writer said
// otherwise.
AppendStatus AppendOne(JournalWriter& writer, std::uint64_t i) {
  const std::vector<std::byte> frame = FrameFor(i);
  const std::size_t size =
      codec::kCommandFrameSize[static_cast<std::uint8_t>(frame[8])];
  while (true) {
    const AppendStatus st =
        writer.Append(std::span(frame).first(size), SessionFor(i), TimeFor(i));
    if (st != AppendStatus::kFull) return st;
    if (!writer.Wait().ok()) return AppendStatus::kFailed;
  }
}

std::unique_ptr<SmallFilesystem> MountOrSkip(std::string* why) {
  return SmallFilesystem::Mount(SmallFilesystem::Type::kTmpfs, 2 << 20, why);
}

TEST(JournalDiskFull,
     NoSpaceForTheNextSegmentIsAStateThatEndsWhenSpaceIsFreed) {
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = MountOrSkip(&why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";
  auto writer = JournalWriter::Open(Options(dir));
  ASSERT_TRUE(writer.ok()) << writer.status();
  JournalWriter& w = **writer;
  fs->Fill();  // no room for a second segment
  const std::string prep = dir + "/" + std::string(kPreparedFileName);

  // Appends go on into the first segment until it has no room.
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t i = 1;
  std::uint64_t first_failure_at = 0;  // records appended then
  AppendStatus st = AppendStatus::kOk;
  while ((st = AppendOne(w, i)) == AppendStatus::kOk) {
    if (first_failure_at == 0 && w.stats().prepare_no_space > 0) {
      first_failure_at = i;
    }
    ++i;
    if (i % 8 == 0) w.Poll();
  }
  ASSERT_EQ(st, AppendStatus::kJournalFull) << w.status();
  const std::uint64_t appended = i - 1;
  EXPECT_FALSE(w.failed()) << w.status();
  EXPECT_EQ(w.space_needed(), kSegment);
  EXPECT_NE(w.space_reason().find("No space left"), std::string::npos)
      << w.space_reason();
  EXPECT_GE(w.stats().prepare_no_space, 1u);
  EXPECT_EQ(w.stats().rotations, 0u);
  // The preparation failed early (at an eighth of the segment); the records
  // went on into the segment after that (how far: checked below).
  EXPECT_GT(first_failure_at, 0u);
  EXPECT_GT(appended, first_failure_at);
  // The partial preparation file is gone.
  EXPECT_FALSE(Exists(prep));
  // Everything appended becomes durable.
  ASSERT_TRUE(w.Flush().ok()) << w.status();
  EXPECT_EQ(w.durable_index(), appended);

  // Still full: kJournalFull again, not an error, and no busy retry.
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(AppendOne(w, i), AppendStatus::kJournalFull);
    w.Poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(w.failed());
  EXPECT_GE(w.stats().journal_full, 21u);
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  EXPECT_LE(w.stats().prepare_no_space,
            static_cast<std::uint64_t>(elapsed_ms / kRetryMs + 2))
      << "retried faster than every " << kRetryMs << " ms over " << elapsed_ms
      << " ms";
  EXPECT_FALSE(Exists(prep));

  // Space appears: the writer resumes by itself.
  fs->Free();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((st = AppendOne(w, i)) == AppendStatus::kJournalFull &&
         std::chrono::steady_clock::now() < deadline) {
    w.Poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(st, AppendStatus::kOk) << w.status();
  EXPECT_EQ(w.space_needed(), 0u);
  EXPECT_EQ(w.stats().rotations, 1u);
  ++i;
  for (int k = 0; k < 100; ++k, ++i) {
    ASSERT_EQ(AppendOne(w, i), AppendStatus::kOk);
  }
  ASSERT_TRUE(w.Close().ok()) << w.status();
  EXPECT_EQ(SegmentPaths(dir).size(), 2u);
  const auto back = ReadAndCheck(dir, 1);
  EXPECT_EQ(back.records, i - 1);
  EXPECT_TRUE(back.status.ok()) << back.status;
  // The first segment was used to its end before kJournalFull: less than
  // one group (16 KiB) and a block short of it.
  ASSERT_EQ(back.segments.size(), 2u);
  EXPECT_EQ(back.segments[0].last_index, appended);
  EXPECT_GT(back.segments[0].data_end, kSegment - (16 << 10) - 4096);
}

TEST(JournalDiskFull, RestartOnAFullDiskWorksWhileTheCurrentSegmentHasRoom) {
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = MountOrSkip(&why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";
  std::uint64_t i = 1;
  {
    auto writer = JournalWriter::Open(Options(dir));
    ASSERT_TRUE(writer.ok()) << writer.status();
    // A quarter of the segment: past the point where preparation starts.
    for (; i <= 1000; ++i) ASSERT_EQ(AppendOne(**writer, i), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  fs->Fill();
  auto writer = JournalWriter::Open(Options(dir));
  ASSERT_TRUE(writer.ok()) << writer.status();
  JournalWriter& w = **writer;
  // Appends into the room left in the segment, with polls in between (the
  // preparation of the next segment fails meanwhile, and is not fatal).
  for (int k = 0; k < 500; ++k, ++i) {
    ASSERT_EQ(AppendOne(w, i), AppendStatus::kOk) << w.status();
    if (k % 50 == 0) w.Poll();
  }
  EXPECT_GE(w.stats().prepare_no_space, 1u);
  ASSERT_TRUE(w.Flush().ok()) << w.status();
  EXPECT_FALSE(w.failed());
  EXPECT_EQ(w.space_needed(), kSegment);
  ASSERT_TRUE(w.Close().ok());
  const auto back = ReadAndCheck(dir, 1);
  EXPECT_EQ(back.records, i - 1);
}

// A journal whose DURABLE file does not exist yet (written by older code)
// restarts on a full disk too: the file is optional for the writer (a
// follower then goes by the checkpoint), and it is never written through a
// mapping of unallocated blocks (which would raise SIGBUS on a full disk).
TEST(JournalDiskFull, RestartOnAFullDiskWithoutADurableFile) {
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = MountOrSkip(&why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";
  std::uint64_t i = 1;
  {
    auto writer = JournalWriter::Open(Options(dir));
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (; i <= 100; ++i) ASSERT_EQ(AppendOne(**writer, i), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ASSERT_EQ(::unlink((dir + "/" + std::string(kDurableFileName)).c_str()), 0);
  fs->Fill();
  auto writer = JournalWriter::Open(Options(dir));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_THAT((*writer)->recovery().durable_file_problem,
              ::testing::HasSubstr("DURABLE"));
  for (int k = 0; k < 10; ++k, ++i) {
    ASSERT_EQ(AppendOne(**writer, i), AppendStatus::kOk);
  }
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadAndCheck(dir, 1).records, i - 1);
}

// A disk with room for less than a whole segment: the writer makes the next
// segment smaller (halving, down to the smallest it makes) instead of
// waiting for a whole one, resumes once that much is free, and the journal
// of mixed capacities recovers and reads back record for record.
TEST(JournalDiskFull, WhenAWholeSegmentDoesNotFitTheNextOneIsSmaller) {
  constexpr std::uint64_t kLarge = std::uint64_t{4} << 20;
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = SmallFilesystem::Mount(
      SmallFilesystem::Type::kTmpfs, std::uint64_t{8} << 20, &why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";
  WriterOptions options = Options(dir);
  options.segment_size = kLarge;
  std::uint64_t i = 1;
  {
    auto writer = JournalWriter::Open(options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    JournalWriter& w = **writer;
    fs->Fill();  // not even the smallest segment fits
    AppendStatus st = AppendStatus::kOk;
    for (; (st = AppendOne(w, i)) == AppendStatus::kOk; ++i) {
      if (i % 8 == 0) w.Poll();
    }
    ASSERT_EQ(st, AppendStatus::kJournalFull) << w.status();
    EXPECT_EQ(w.smallest_segment(), kSmallestReducedSegment);
    EXPECT_EQ(w.space_needed(), kSmallestReducedSegment);
    EXPECT_EQ(w.stats().reduced_segments, 0u);

    // Room for less than a whole segment (1.5 MiB of 4): a smaller one.
    fs->FreeSome(std::uint64_t{3} << 19);
    ASSERT_LT(fs->FreeBytes(), kLarge);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((st = AppendOne(w, i)) == AppendStatus::kJournalFull &&
           std::chrono::steady_clock::now() < deadline) {
      w.Poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(st, AppendStatus::kOk)
        << "the writer did not resume with " << fs->FreeBytes()
        << " bytes free (" << w.space_reason() << ")";
    EXPECT_EQ(w.stats().rotations, 1u);
    EXPECT_EQ(w.stats().reduced_segments, 1u);
    EXPECT_EQ(w.last_prepared_size(), kSmallestReducedSegment);
    // It fills the smaller segment, then is full again.
    for (++i; (st = AppendOne(w, i)) == AppendStatus::kOk; ++i) {
      if (i % 8 == 0) w.Poll();
    }
    ASSERT_EQ(st, AppendStatus::kJournalFull) << w.status();
    EXPECT_EQ(w.space_needed(), kSmallestReducedSegment);
    ASSERT_TRUE(w.Close().ok()) << w.status();
  }
  const std::uint64_t appended = i - 1;
  auto back = ReadAndCheck(dir, 1);
  ASSERT_TRUE(back.status.ok()) << back.status;
  EXPECT_EQ(back.records, appended);
  ASSERT_EQ(back.segments.size(), 2u);
  EXPECT_EQ(back.segments[0].header.capacity, kLarge);
  EXPECT_EQ(back.segments[1].header.capacity, std::uint64_t{1} << 20);

  // Recovery over the two capacities, and appending after it.
  fs->Free();
  {
    auto writer = JournalWriter::Open(options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_FALSE((*writer)->recovery().torn_tail);
    EXPECT_EQ((*writer)->last_index(), appended);
    EXPECT_EQ((*writer)->segment_size(), kLarge);
    for (int k = 0; k < 100; ++k, ++i) {
      ASSERT_EQ(AppendOne(**writer, i), AppendStatus::kOk);
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  back = ReadAndCheck(dir, 1);
  ASSERT_TRUE(back.status.ok()) << back.status;
  EXPECT_EQ(back.records, i - 1);
}

}  // namespace
}  // namespace orderwire::journal
