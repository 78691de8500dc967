// Bounded recovery: JournalWriter::Open reads the segment headers and the
// groups from the checkpoint's group on, not the whole journal, so its cost
// does not grow with the journal's length; the full verification stays the
// reader's (journal verify, replay --verify).
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/checkpoint.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"
#include "journal/reader.h"
#include "journal/verify.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::FlipBits;
using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ScratchDir;
using ::testing::HasSubstr;

constexpr std::uint64_t kSmallSegment = std::uint64_t{64} * 1024;

// 60 one-record groups in 64 KiB segments (15 per segment, group k of a
// segment at offset 4096 * (k + 1)), closed cleanly: the checkpoint names
// the group of index 60, in the fourth segment.
// Format 1 (a group per 4096-byte block: the offsets below count blocks).
void Build(const std::string& dir, std::uint64_t first, std::uint64_t last) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kNone,
                                     .segment_size = kSmallSegment,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_EQ((*writer)->last_index(), first - 1);
  for (std::uint64_t i = first; i <= last; ++i) {
    ASSERT_EQ((*writer)->Append(FramesFor(i, 1), 1, i), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

absl::Status ReadAll(const std::string& dir) {
  auto reader = JournalReader::Open(dir);
  if (!reader.ok()) return reader.status();
  Record r;
  while ((*reader)->Next(r) == ReadResult::kRecord) {
  }
  return (*reader)->status();
}

// Corruption in a middle group of the first segment (written in full, so
// data loss, not a torn tail) is not read by Open: the journal opens for
// appending and reads only the last segment's groups. The full read still
// reports the damage, before and after the appends.
TEST(BoundedRecoveryTest, OpenDoesNotReadWhatTheCheckpointWitnesses) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("bounded");
  Build(dir.path(), 1, 60);
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 4u);
  FlipBits(paths[0], 8 * kBlockSize + kGroupHeaderSize + 30, std::byte{0x10});
  const absl::Status before = ReadAll(dir.path());
  EXPECT_EQ(before.code(), absl::StatusCode::kDataLoss) << before;
  EXPECT_THAT(before.message(), HasSubstr(paths[0]));

  auto writer = JournalWriter::Open(
      {.directory = dir.path(), .segment_size = kSmallSegment});
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->recovery().last_index, 60u);
  EXPECT_EQ((*writer)->recovery().read_from_index, 60u);
  EXPECT_EQ((*writer)->recovery().segments_read, 1u);
  AppendStatus st;
  while ((st = (*writer)->Append(FramesFor(61, 1), 1, 61)) ==
         AppendStatus::kFull) {
    ASSERT_TRUE((*writer)->Wait().ok()) << (*writer)->status();
  }
  ASSERT_EQ(st, AppendStatus::kOk) << (*writer)->status();
  ASSERT_TRUE((*writer)->Close().ok());

  const absl::Status after = ReadAll(dir.path());
  EXPECT_EQ(after.code(), absl::StatusCode::kDataLoss) << after;
  EXPECT_THAT(after.message(), HasSubstr(paths[0]));
  // The tail is read: from the checkpoint's group on everything is there.
  auto reader = JournalReader::Open(dir.path(), {.from_index = 40});
  ASSERT_TRUE(reader.ok());
  Record r;
  std::uint64_t n = 0;
  while ((*reader)->Next(r) == ReadResult::kRecord) ++n;
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_EQ(n, 22u);
}

// What recovery must still find: a torn tail after the checkpoint's group
// is cut, and damage to the checkpoint's own group is data loss.
// What Open does not read, VerifyPrefix does (the service's start runs it
// below where recovery and the replay begin): every record before
// end_index, damage there named with the records lost; damage at or after
// end_index is not its to read.
TEST(BoundedRecoveryTest, VerifyPrefixReadsWhatOpenSkipsAndStopsAtItsEnd) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("verify-prefix");
  Build(dir.path(), 1, 60);
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 4u);

  absl::StatusOr<VerifiedPrefix> whole = VerifyPrefix(dir.path(), 61);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->first_index, 1u);
  EXPECT_EQ(whole->last_index, 60u);
  EXPECT_EQ(whole->records, 60u);
  EXPECT_EQ(whole->segments, 4u);
  absl::StatusOr<VerifiedPrefix> none = VerifyPrefix(dir.path(), 1);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->records, 0u);

  // The group in block 8 of the first segment holds index 8.
  FlipBits(paths[0], 8 * kBlockSize + kGroupHeaderSize + 30, std::byte{0x10});
  absl::StatusOr<VerifiedPrefix> before = VerifyPrefix(dir.path(), 8);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->last_index, 7u);
  absl::StatusOr<VerifiedPrefix> damaged = VerifyPrefix(dir.path(), 40);
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr(paths[0]));
  EXPECT_THAT(damaged.status().message(), HasSubstr("records 8..39"));

  // A journal shorter than end_index is missing the records up to it.
  ScratchDir other("verify-prefix-short");
  Build(other.path(), 1, 20);
  absl::StatusOr<VerifiedPrefix> short_one = VerifyPrefix(other.path(), 30);
  ASSERT_FALSE(short_one.ok());
  EXPECT_THAT(short_one.status().message(), HasSubstr("records 21..29"));
}

TEST(BoundedRecoveryTest, TheTailFromTheCheckpointsGroupIsStillChecked) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("bounded");
  Build(dir.path(), 1, 60);
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  // Index 60 is the 15th group of the 4th segment (offset 4096 * 15).
  FlipBits(paths[3], 15 * kBlockSize + kGroupHeaderSize + 30, std::byte{0x10});
  auto writer = JournalWriter::Open(
      {.directory = dir.path(), .segment_size = kSmallSegment});
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(writer.status().message(), HasSubstr(paths[3]));
}

// A journal without a checkpoint (written before checkpoints existed) is
// read in full once.
TEST(BoundedRecoveryTest, AJournalWithoutCheckpointIsReadInFull) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("bounded");
  Build(dir.path(), 1, 60);
  ASSERT_EQ(
      ::unlink((dir.path() + "/" + std::string(kCheckpointFileName)).c_str()),
      0);
  auto writer = JournalWriter::Open(
      {.directory = dir.path(), .segment_size = kSmallSegment});
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().checkpoint_missing);
  EXPECT_EQ((*writer)->recovery().read_from_index, 1u);
  EXPECT_EQ((*writer)->recovery().segments_read, 4u);
  ASSERT_TRUE((*writer)->Close().ok());
  // Now it has one, and the next Open reads only from its group.
  auto again = JournalWriter::Open(
      {.directory = dir.path(), .segment_size = kSmallSegment});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->recovery().read_from_index, 60u);
  EXPECT_EQ((*again)->recovery().segments_read, 1u);
}

}  // namespace
}  // namespace orderwire::journal
