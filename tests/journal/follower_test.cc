// JournalFollower beside a writer appending in the same process: every
// record once, in order, never past the durable index the writer published
// in its DURABLE file, across segment rollovers; damage is an error.
#include "journal/follower.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/checkpoint.h"
#include "journal/durable_mark.h"
#include "journal/internal/io_queue.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendFlushedRecords;
using ::orderwire::journal::testing::FaultRule;
using ::orderwire::journal::testing::FlipBits;
using ::orderwire::journal::testing::FrameFor;
using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::journal::testing::TestSeed;
using ::orderwire::test_support::ScratchDir;

constexpr std::uint64_t kFollowerSegment = std::uint64_t{64} * 1024;

// What the follower handed out, checked as it comes: consecutive indexes
// from 1, the frames the writer appended.
struct Collected {
  std::uint64_t last = 0;
  bool ok = true;
  void Add(const Record& r) {
    if (r.index != last + 1) ok = false;
    const std::vector<std::byte> want = FrameFor(r.index);
    const auto got = r.frame.bytes();
    if (!std::equal(got.begin(), got.end(), want.begin(), want.end())) {
      ok = false;
    }
    last = r.index;
  }
};

// The writer's syncs are held (answered -EAGAIN, so retried) while `hold`
// is set: its writes land in the segment, its durable index does not move.
// A follower that read what verifies on disk would see those records; this
// one must not.
TEST(FollowerTest, YieldsEveryDurableRecordOnceInOrderAndNothingPastIt) {
  SKIP_WITHOUT_URING();
  const std::uint64_t seed = TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir("follow");
  std::atomic<bool> hold{false};
  FaultRule faults([&](const internal::IoOp& op, std::int32_t result) {
    if (op.code == internal::OpCode::kFdatasync && hold.load()) return -EAGAIN;
    return result;
  });
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kBatch,
                                     .segment_size = kFollowerSegment,
                                     .sync_method = SyncMethod::kFdatasync,
                                     .faults = &faults,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto follower = JournalFollower::Open(dir.path());
  ASSERT_TRUE(follower.ok()) << follower.status();
  Collected seen;
  std::uint64_t next = 1;
  std::uint64_t past_durable_on_disk = 0;  // times the test could catch it
  // 600 rounds, and more until the follower has crossed 3 rollovers: how
  // many segments the records fill depends on how many groups they make
  // (format 1 pads each to 4 KiB), and a loaded machine, whose syncs land
  // late, packs more records in a group (the one being filled is sealed
  // only when the pipeline has room). The bound is far past what it takes.
  for (int round = 0;
       round < 600 || ((*follower)->reader_opens() < 4 && round < 20'000);
       ++round) {
    hold = rng() % 3 == 0;
    const std::uint64_t n = 1 + rng() % 5;
    AppendStatus st;
    while ((st = (*writer)->Append(FramesFor(next, n), 1, next)) ==
           AppendStatus::kFull) {
      // No buffer is free: only a sync that lands makes room, and a held
      // sync is retried (EAGAIN) for as long as `hold` is set, so waiting
      // with it set spins for ever. Syncs in flight from an earlier round
      // complete (and are held) here too, so how full the pipeline is when
      // a round holds is the machine's timing, not the seed's.
      hold = false;
      ASSERT_TRUE((*writer)->Wait().ok()) << (*writer)->status();
    }
    ASSERT_EQ(st, AppendStatus::kOk) << (*writer)->status();
    next += n;
    for (int i = 0; i < 20; ++i) (*writer)->Poll();
    const std::uint64_t durable = (*writer)->durable_index();
    // Records past the durable index that are on disk already: what a
    // follower reading the segments alone would hand out.
    if (auto reader =
            JournalReader::Open(dir.path(), {.from_index = durable + 1});
        reader.ok()) {
      Record r;
      if ((*reader)->Next(r) == ReadResult::kRecord) ++past_durable_on_disk;
    }
    absl::StatusOr<std::size_t> got =
        (*follower)->Poll([&](const Record& r) { seen.Add(r); });
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(seen.ok) << "at index " << seen.last;
    ASSERT_LE(seen.last, durable) << "the follower read past the durable index";
    ASSERT_EQ(seen.last, durable) << "a durable record was not handed out";
  }
  hold = false;
  ASSERT_TRUE((*writer)->Flush().ok());
  ASSERT_TRUE((*follower)->Poll([&](const Record& r) { seen.Add(r); }).ok());
  EXPECT_TRUE(seen.ok);
  EXPECT_EQ(seen.last, next - 1);
  EXPECT_GE(SegmentPaths(dir.path()).size(), 4u);  // >= 3 rollovers
  EXPECT_GE((*follower)->reader_opens(), 4u);
  EXPECT_GT(past_durable_on_disk, 0u) << "the test never had records on disk "
                                         "past the durable index";
  ASSERT_TRUE((*writer)->Close().ok());
}

// The follower in a thread of its own while the writer appends: the release
// store / acquire load pairing of the DURABLE file (run under TSan/ASan in
// CI's sanitizer build).
TEST(FollowerTest, AConcurrentFollowerSeesEveryRecordOnce) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("follow");
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kBatch,
                                     .segment_size = kFollowerSegment,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::uint64_t kRecords = 3000;
  std::atomic<bool> done{false};
  Collected seen;
  absl::Status follow_status;
  std::thread follow([&] {
    auto follower = JournalFollower::Open(dir.path(), {.from_index = 1});
    if (!follower.ok()) {
      follow_status = follower.status();
      return;
    }
    while (seen.last < kRecords) {
      absl::StatusOr<std::size_t> got =
          (*follower)->Poll([&](const Record& r) { seen.Add(r); });
      if (!got.ok()) {
        follow_status = got.status();
        return;
      }
      if (*got == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  for (std::uint64_t i = 1; i <= kRecords; i += 3) {
    AppendStatus st;
    while ((st = (*writer)->Append(FramesFor(i, 3), 1, i)) ==
           AppendStatus::kFull) {
      ASSERT_TRUE((*writer)->Wait().ok());
    }
    ASSERT_EQ(st, AppendStatus::kOk);
    (*writer)->Poll();
  }
  ASSERT_TRUE((*writer)->Flush().ok());
  done = true;
  follow.join();
  EXPECT_TRUE(follow_status.ok()) << follow_status;
  EXPECT_TRUE(seen.ok);
  EXPECT_EQ(seen.last, kRecords);
  EXPECT_GE(SegmentPaths(dir.path()).size(), 4u);
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST(FollowerTest, DamageIsAnErrorAndStaysOne) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("follow");
  AppendFlushedRecords(dir.path(), 1, 40);
  // The DURABLE file the writer left says 40.
  auto mark = DurableMarkView::Open(dir.path());
  ASSERT_TRUE(mark.ok() && mark->has_value());
  EXPECT_EQ((*mark)->durable_index(), 40u);
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  FlipBits(paths[1], 3 * kBlockSize + 60, std::byte{0x01});  // index 18
  auto follower = JournalFollower::Open(dir.path());
  ASSERT_TRUE(follower.ok());
  Collected seen;
  absl::StatusOr<std::size_t> got =
      (*follower)->Poll([&](const Record& r) { seen.Add(r); });
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(seen.last, 17u);
  EXPECT_FALSE((*follower)->Poll([&](const Record& r) { seen.Add(r); }).ok());
  // From past the damage it reads on (seek).
  auto after = JournalFollower::Open(dir.path(), {.from_index = 19});
  ASSERT_TRUE(after.ok());
  std::uint64_t count = 0;
  ASSERT_TRUE((*after)->Poll([&](const Record&) { ++count; }).ok());
  EXPECT_EQ(count, 22u);
}

// Without a DURABLE file (a journal no writer of this version opened) the
// checkpoint is the limit: a record past it is not handed out.
TEST(FollowerTest, WithoutDurableFileTheCheckpointIsTheLimit) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("follow");
  AppendFlushedRecords(dir.path(), 1, 20);
  const std::string checkpoint =
      dir.path() + "/" + std::string(kCheckpointFileName);
  const std::vector<std::byte> at20 = test_support::ReadFile(checkpoint);
  AppendFlushedRecords(dir.path(), 21, 30);
  // As if 21..30 were written but not yet witnessed, by a writer that
  // publishes no DURABLE file.
  test_support::WriteFile(checkpoint, at20);
  ASSERT_EQ(
      ::unlink((dir.path() + "/" + std::string(kDurableFileName)).c_str()), 0);
  auto follower = JournalFollower::Open(dir.path());
  ASSERT_TRUE(follower.ok());
  Collected seen;
  ASSERT_TRUE((*follower)->Poll([&](const Record& r) { seen.Add(r); }).ok());
  EXPECT_TRUE(seen.ok);
  EXPECT_EQ(seen.last, 20u);
  EXPECT_EQ((*follower)->durable_limit(), 20u);
}

// Neither DURABLE nor CHECKPOINT, and a writer holds the journal's lock: a
// writer of this version opening the journal, before its DURABLE file
// exists (it creates it before its first append). What is on disk may not
// be durable yet: nothing is handed out until the lock is gone (or the mark
// is there). (The follower that read up to the clean end handed out all
// 20.)
TEST(FollowerTest, AWriterOpeningTheJournalIsWaitedFor) {
  SKIP_WITHOUT_URING();
  ScratchDir dir("follow");
  AppendFlushedRecords(dir.path(), 1, 20);
  {
    // A writer open on the journal holds its lock, as /proc/locks shows.
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kNone,
                                       .segment_size = kFollowerSegment,
                                       .format_version = 1});
    ASSERT_TRUE(writer.ok());
    EXPECT_TRUE(WriterHoldsLock(dir.path()));
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_FALSE(WriterHoldsLock(dir.path()));
  for (const std::string_view name : {kDurableFileName, kCheckpointFileName}) {
    ASSERT_EQ(::unlink((dir.path() + "/" + std::string(name)).c_str()), 0);
  }
  // The lock a writer takes first (JournalWriter::Lock: the directory).
  base::UniqueFd lock(
      ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(lock);
  ASSERT_EQ(::flock(lock.get(), LOCK_EX | LOCK_NB), 0);
  ASSERT_TRUE(WriterHoldsLock(dir.path()));

  auto follower = JournalFollower::Open(dir.path());
  ASSERT_TRUE(follower.ok());
  Collected seen;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::size_t> got =
        (*follower)->Poll([&](const Record& r) { seen.Add(r); });
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, 0u);
    EXPECT_EQ(seen.last, 0u) << "handed out while a writer was opening";
    EXPECT_EQ((*follower)->durable_limit(), 0u);
  }
  // The writer went away without publishing anything: the journal is at
  // rest, read to its clean end.
  lock.reset();
  absl::StatusOr<std::size_t> got =
      (*follower)->Poll([&](const Record& r) { seen.Add(r); });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 20u);
  EXPECT_TRUE(seen.ok);
  EXPECT_EQ(seen.last, 20u);
  EXPECT_EQ((*follower)->durable_limit(), 20u);
}

}  // namespace
}  // namespace orderwire::journal
