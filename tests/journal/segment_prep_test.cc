// The next segment's preparation is paced: its zero writes follow the fill
// of the active segment, one at a time, instead of flooding the device cache
// that every group's sync flushes (journal/writer_segments.cc, "Paced
// zeroing"), and the prepared segment is still ready before the active one
// is full, so no rotation waits for it.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "journal/internal/io_queue.h"
#include "journal/internal/writer_support.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SessionFor;
using ::orderwire::journal::testing::TimeFor;
using ::orderwire::test_support::ScratchDir;

constexpr std::uint64_t kSegmentSize = std::uint64_t{4} << 20;

// Watches the writer's ops (it rewrites nothing): the end of the last group
// write pushed into the active segment (the writer's write position), and
// for the preparation under way the zero bytes pushed and the zero writes
// in flight. Records the first moment the pace was broken: more zero bytes
// pushed than the share of the way from an eighth of the active segment to
// half of it allows (plus one write), or a second zero write in flight,
// before the active segment was half full.
class PaceWatcher : public internal::IoFaults {
 public:
  void Pushed(const internal::IoOp& op) override {
    if (op.code != internal::OpCode::kWrite) return;
    const auto tag = static_cast<std::uint32_t>(op.user_data & 0xff);
    if (tag == internal::kTagWrite) {
      if (op.offset == 0) {
        // A rotation's header write: a new active segment, a new
        // preparation to come.
        ++rotations_;
        write_pos_ = kBlockSize;
        zero_bytes_ = 0;
      } else {
        write_pos_ = op.offset + op.length;
      }
      return;
    }
    if (tag != internal::kTagZero) return;
    zero_bytes_ += op.length;
    ++zero_in_flight_;
    ++zero_writes_;
    const std::uint64_t start = kSegmentSize / 8;
    const std::uint64_t ready_by = kSegmentSize / 2;
    if (write_pos_ >= ready_by || !problem_.empty()) return;
    const std::uint64_t way = write_pos_ > start ? write_pos_ - start : 0;
    const std::uint64_t allowed =
        kSegmentSize * way / (ready_by - start) + internal::kPrepZeroChunk;
    if (zero_bytes_ > allowed) {
      problem_ = absl::StrFormat(
          "after rotation %d, with the active segment filled to %d of %d "
          "bytes, %d zero bytes of the next segment were pushed; the pace "
          "allows %d",
          rotations_, write_pos_, kSegmentSize, zero_bytes_, allowed);
    } else if (zero_in_flight_ > 1) {
      problem_ = absl::StrFormat(
          "after rotation %d, with the active segment filled to %d of %d "
          "bytes, %d zero writes were in flight at once",
          rotations_, write_pos_, kSegmentSize, zero_in_flight_);
    }
  }

  void Completed(const internal::IoOp& op, std::int32_t /*result*/) override {
    if (op.code == internal::OpCode::kWrite &&
        (op.user_data & 0xff) == internal::kTagZero) {
      --zero_in_flight_;
    }
  }

  [[nodiscard]] const std::string& problem() const { return problem_; }
  [[nodiscard]] int rotations() const { return rotations_; }
  [[nodiscard]] std::uint64_t zero_writes() const { return zero_writes_; }

 private:
  std::uint64_t write_pos_ = kBlockSize;
  std::uint64_t zero_bytes_ = 0;
  int zero_in_flight_ = 0;
  std::uint64_t zero_writes_ = 0;
  int rotations_ = 0;
  std::string problem_;
};

// Appends the records [first, first + count), `per_append` at a time, each
// append made durable before the next (small groups, like a service at a
// moderate rate).
void AppendDurably(JournalWriter& writer, std::uint64_t first,
                   std::uint64_t count, std::size_t per_append) {
  for (std::uint64_t i = first; i < first + count; i += per_append) {
    const std::vector<std::byte> frames = FramesFor(i, per_append);
    while (true) {
      const AppendStatus st = writer.Append(frames, SessionFor(i), TimeFor(i));
      if (st == AppendStatus::kOk) break;
      ASSERT_EQ(st, AppendStatus::kFull) << writer.status();
      ASSERT_TRUE(writer.Wait().ok()) << writer.status();
    }
    ASSERT_TRUE(writer.Flush().ok()) << writer.status();
  }
}

class SegmentPrepTest : public ::testing::TestWithParam<SyncMethod> {};

TEST_P(SegmentPrepTest, ZeroingFollowsTheFillAndIsReadyBeforeItIsNeeded) {
  if (!internal::ProbeIoUring().ok()) {
    GTEST_SKIP() << internal::ProbeIoUring().message();
  }
  ScratchDir dir;
  if (GetParam() == SyncMethod::kDirectDsync &&
      !testing::DirectIoSupported(dir.path())) {
    GTEST_SKIP() << "the file system of " << dir.path()
                 << " does not support O_DIRECT";
  }
  PaceWatcher watcher;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kBatch,
                                     .segment_size = kSegmentSize,
                                     .sync_method = GetParam(),
                                     .faults = &watcher});
  ASSERT_TRUE(writer.ok()) << writer.status();
  // 500 records of ~70 bytes a group: about 120 groups a segment, each a
  // seventh of a zero write; 500 groups cross at least three boundaries.
  constexpr std::size_t kPerAppend = 500;
  constexpr std::uint64_t kRecords = 500 * kPerAppend;
  AppendDurably(**writer, 1, kRecords, kPerAppend);
  const WriterStats stats = (*writer)->stats();
  ASSERT_TRUE((*writer)->Close().ok()) << (*writer)->status();

  ASSERT_GE(stats.rotations, 3u) << "the test must cross boundaries";
  EXPECT_EQ(watcher.rotations(), static_cast<int>(stats.rotations));
  EXPECT_GE(watcher.zero_writes(),
            stats.rotations * (kSegmentSize / internal::kPrepZeroChunk));
  EXPECT_EQ(watcher.problem(), "");
  // Paced, and still ready in time: no rotation waited for its segment.
  EXPECT_EQ(stats.prepare_waits, 0u);
  EXPECT_EQ(stats.full, 0u);

  const auto back = ReadAndCheck(dir.path(), kPerAppend);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, kRecords);
}

std::string MethodName(const ::testing::TestParamInfo<SyncMethod>& param) {
  return param.param == SyncMethod::kDirectDsync ? "DirectDsync" : "Fdatasync";
}

INSTANTIATE_TEST_SUITE_P(Methods, SegmentPrepTest,
                         ::testing::Values(SyncMethod::kDirectDsync,
                                           SyncMethod::kFdatasync),
                         MethodName);

// At full speed (appends as fast as the buffers free up, groups of up to
// 64 KiB) the paced zeroing keeps up too: every rotation finds its segment
// ready.
TEST_P(SegmentPrepTest, AtFullSpeedEveryRotationFindsItsSegmentReady) {
  if (!internal::ProbeIoUring().ok()) {
    GTEST_SKIP() << internal::ProbeIoUring().message();
  }
  ScratchDir dir;
  if (GetParam() == SyncMethod::kDirectDsync &&
      !testing::DirectIoSupported(dir.path())) {
    GTEST_SKIP() << "the file system of " << dir.path()
                 << " does not support O_DIRECT";
  }
  // 16 MiB: the second half of a segment, in which the prepared one's
  // fsync and its directory's run (a commit of the file system's journal,
  // milliseconds), takes longer to fill than they take; the last quarter of
  // a 4 MiB segment at full speed sometimes did not (64 MiB is the
  // default).
  constexpr std::uint64_t kBigSegment = std::uint64_t{16} << 20;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kBatch,
                                     .segment_size = kBigSegment,
                                     .sync_method = GetParam()});
  ASSERT_TRUE(writer.ok()) << writer.status();
  // ~70 bytes a record: 1,000,000 records are ~4.5 segments.
  constexpr std::uint64_t kRecords = 1'000'000;
  testing::AppendRange(**writer, 1, kRecords, 20);
  ASSERT_TRUE((*writer)->Flush().ok()) << (*writer)->status();
  const WriterStats stats = (*writer)->stats();
  ASSERT_TRUE((*writer)->Close().ok()) << (*writer)->status();
  ASSERT_GE(stats.rotations, 3u) << "the test must cross boundaries";
  EXPECT_EQ(stats.prepare_waits, 0u);
  const auto back = ReadAndCheck(dir.path(), 20);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, kRecords);
}

// StartSegment needs the next segment at once, wherever the pace is: the
// preparation drops it and runs at full speed, and the new segment gets its
// metadata.
TEST(SegmentPrepTest, StartSegmentEarlyInASegmentDoesNotWaitForThePace) {
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kBatch,
                                     .segment_size = kSegmentSize});
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendDurably(**writer, 1, 100, 50);  // far below an eighth of the segment
  ASSERT_TRUE((*writer)->StartSegment("next").ok()) << (*writer)->status();
  AppendDurably(**writer, 101, 100, 50);
  EXPECT_EQ((*writer)->stats().rotations, 1u);
  EXPECT_EQ((*writer)->metadata(), "next");
  ASSERT_TRUE((*writer)->Close().ok()) << (*writer)->status();
  const auto back = ReadAndCheck(dir.path(), 50);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 200u);
  ASSERT_EQ(back.segments.size(), 2u);
}

}  // namespace
}  // namespace orderwire::journal
