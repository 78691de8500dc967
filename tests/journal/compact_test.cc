// Compact group writes (format version 2): groups packed at 8-byte
// alignment, read back, found past damage, appended to version-1 journals;
// and the two guarantees of the O_DIRECT writer that rewrites the block a
// group starts in: a torn rewrite of that block loses no group that was
// acknowledged, and no two writes covering the same block are ever in
// flight together (docs/JOURNAL.md "Compact groups").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/io_recorder.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendRange;
using ::orderwire::journal::testing::BuildFormat1Journal;
using ::orderwire::journal::testing::DurabilityRecorder;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ReadFile;
using ::orderwire::test_support::ScratchDir;
using ::orderwire::test_support::WriteFile;
using ::testing::HasSubstr;

// The groups of a segment file, walked by the format's rule for `version`.
struct GroupAt {
  std::uint64_t offset;
  std::uint64_t end;  // after the trailer
  GroupHeader header;
};
std::vector<GroupAt> WalkGroups(const std::vector<std::byte>& bytes,
                                std::uint64_t alignment) {
  std::vector<GroupAt> out;
  for (std::uint64_t off = kFirstGroupOffset;
       off + kGroupHeaderSize <= bytes.size();) {
    const auto h = LoadStruct<kGroupHeaderLayout, GroupHeader>(&bytes[off]);
    if (h.magic != kGroupMagic) break;
    const std::uint64_t end = off + kGroupOverhead + h.records_bytes;
    out.push_back({off, end, h});
    off = AlignUpTo(end, alignment);
  }
  return out;
}

std::uint16_t VersionOf(const std::string& segment) {
  const std::vector<std::byte> bytes = ReadFile(segment);
  return LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data()).version;
}

// ---------------------------------------------------------------------------
// Layout.

TEST(CompactTest, GroupsArePackedAtEightByteAlignmentUnderEveryMethod) {
  SKIP_WITHOUT_URING();
  struct Mode {
    Durability durability;
    SyncMethod method;
  };
  for (const Mode mode : {Mode{Durability::kSync, SyncMethod::kDirectDsync},
                          Mode{Durability::kSync, SyncMethod::kFdatasync},
                          Mode{Durability::kNone, SyncMethod::kAuto}}) {
    ScratchDir dir;
    if (mode.method == SyncMethod::kDirectDsync &&
        !testing::DirectIoSupported(dir.path())) {
      continue;
    }
    SCOPED_TRACE(absl::StrFormat("%s, method %d", Name(mode.durability),
                                 static_cast<int>(mode.method)));
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = mode.durability,
                                       .sync_method = mode.method});
    ASSERT_TRUE(writer.ok()) << writer.status();
    // One record per Append; under kNone Flush() after each, so that every
    // record is a group of its own there too.
    for (std::uint64_t i = 1; i <= 80; ++i) {
      AppendRange(**writer, i, 1, 1);
      ASSERT_TRUE((*writer)->Flush().ok());
    }
    const WriterStats stats = (*writer)->stats();
    ASSERT_TRUE((*writer)->Close().ok());
    ASSERT_EQ(stats.groups, 80u);

    const std::string segment = SegmentPaths(dir.path()).at(0);
    EXPECT_EQ(VersionOf(segment), 2);
    const std::vector<std::byte> bytes = ReadFile(segment);
    const std::vector<GroupAt> groups = WalkGroups(bytes, kGroupAlign);
    ASSERT_EQ(groups.size(), 80u);
    std::uint64_t records_bytes = 0;
    for (std::size_t k = 0; k < groups.size(); ++k) {
      EXPECT_EQ(groups[k].header.first_index, k + 1);
      records_bytes += groups[k].header.records_bytes;
      if (k > 0) {
        EXPECT_EQ(groups[k].offset, AlignUpTo(groups[k - 1].end, kGroupAlign))
            << "group " << k;
      }
    }
    // After the last group only zeros.
    EXPECT_EQ(internal::FirstNonZero(bytes, groups.back().end), bytes.size());
    // The journal's cost: each group's bytes, padding to 8 included.
    EXPECT_EQ(stats.journal_bytes,
              AlignUpTo(groups.back().end, kGroupAlign) - kFirstGroupOffset);
    EXPECT_LE(stats.journal_bytes,
              records_bytes + 80 * (kGroupOverhead + kGroupAlign - 1));
    const auto back = ReadAndCheck(dir.path(), 1);
    EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
    EXPECT_EQ(back.records, 80u);
  }
}

TEST(CompactTest, AVersion1JournalIsAppendedInVersion1ThenNewSegmentsAreV2) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 5);
  {
    // Today's writer: continues the version-1 segment in version 1 (its
    // groups on 4096-byte boundaries), then starts version-2 segments.
    auto writer =
        JournalWriter::Open({.directory = dir.path(),
                             .durability = Durability::kSync,
                             .segment_size = std::uint64_t{64} * 1024});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 6, 300, 3);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::vector<std::string> segments = SegmentPaths(dir.path());
  ASSERT_GE(segments.size(), 2u);
  EXPECT_EQ(VersionOf(segments[0]), 1);
  const std::vector<GroupAt> old_groups =
      WalkGroups(ReadFile(segments[0]), kBlockSize);
  ASSERT_GT(old_groups.size(), 5u);  // the first writer's and the second's
  for (const GroupAt& g : old_groups) {
    EXPECT_EQ(g.offset % kBlockSize, 0u) << g.offset;
  }
  for (std::size_t s = 1; s < segments.size(); ++s) {
    EXPECT_EQ(VersionOf(segments[s]), 2) << segments[s];
  }
  const std::vector<GroupAt> new_groups =
      WalkGroups(ReadFile(segments[1]), kGroupAlign);
  ASSERT_GT(new_groups.size(), 2u);
  EXPECT_EQ(new_groups[1].offset, AlignUpTo(new_groups[0].end, kGroupAlign));
  EXPECT_NE(new_groups[1].offset % kBlockSize, 0u);
  const auto back = ReadAndCheck(dir.path(), 0);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 305u);
}

// ---------------------------------------------------------------------------
// Damage in a version-2 segment: the later groups that prove it durable sit
// at 8-byte boundaries, not on blocks, and must be found there.

TEST(CompactTest, DamageFollowedByADurableGroupIsDataLossInVersion2) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  {
    auto writer = JournalWriter::Open(
        {.directory = dir.path(), .durability = Durability::kSync});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 12, 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  // No checkpoint: only the later groups can tell damage from a torn tail.
  std::filesystem::remove(dir.path() + "/" + std::string(kCheckpointFileName));
  const std::string segment = SegmentPaths(dir.path()).at(0);
  std::vector<std::byte> bytes = ReadFile(segment);
  const std::vector<GroupAt> groups = WalkGroups(bytes, kGroupAlign);
  ASSERT_EQ(groups.size(), 12u);
  // Group 4 (index 4) zeroed, header to trailer: what a lost write leaves.
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(groups[3].offset),
            bytes.begin() + static_cast<std::ptrdiff_t>(groups[3].end),
            std::byte{0});
  WriteFile(segment, bytes);
  auto reader = JournalReader::Open(dir.path());
  ASSERT_TRUE(reader.ok());
  Record r;
  ReadResult result;
  while ((result = (*reader)->Next(r)) == ReadResult::kRecord) {
  }
  ASSERT_EQ(result, ReadResult::kError);
  EXPECT_EQ((*reader)->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      std::string((*reader)->status().message()),
      HasSubstr(absl::StrFormat("offset %d, indexes 5..5", groups[4].offset)));
  auto writer = JournalWriter::Open({.directory = dir.path()});
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss)
      << writer.status();
}

// ---------------------------------------------------------------------------
// A torn rewrite of the shared block.

// Under kSync every group is written and durable before the next one is
// pushed; at the push of each write that rewrites a block already holding
// data, this keeps the segment as it is on disk then, the write's bytes,
// and how far the writer had acknowledged.
class RewriteCapture : public internal::IoFaults {
 public:
  struct Crash {
    std::uint64_t acknowledged = 0;
    std::vector<std::byte> before;  // the segment file at the push
    std::uint64_t offset = 0;       // of the write
    std::vector<std::byte> write;   // its bytes
  };

  void Pushed(const internal::IoOp& op) override {
    if (writer == nullptr || op.code != internal::OpCode::kWrite ||
        op.offset < kFirstGroupOffset || crashes.size() >= 10) {
      return;
    }
    ++group_writes;
    // The writer's descriptor is O_DIRECT: read through one of our own.
    const base::UniqueFd fd(
        ::open(absl::StrFormat("/proc/self/fd/%d", op.fd).c_str(), O_RDONLY));
    ASSERT_TRUE(fd) << "reopening the segment";
    // The block the write starts in already holds a group's bytes: the
    // write starts with them (the lead) and then the new group.
    std::vector<std::byte> block(kBlockSize);
    if (::pread(fd.get(), block.data(), block.size(),
                static_cast<off_t>(op.offset)) != kBlockSize ||
        internal::FirstNonZero(block, 0) == block.size()) {
      return;
    }
    if (group_writes % 7 != 3) return;  // a spread of crash points
    Crash crash;
    crash.acknowledged = writer->durable_index();
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    crash.before.resize(static_cast<std::size_t>(st.st_size));
    ASSERT_EQ(::pread(fd.get(), crash.before.data(), crash.before.size(), 0),
              static_cast<ssize_t>(crash.before.size()));
    crash.offset = op.offset;
    crash.write.assign(op.data, op.data + op.length);
    crashes.push_back(std::move(crash));
  }

  const JournalWriter* writer = nullptr;
  std::uint64_t group_writes = 0;
  std::vector<Crash> crashes;
};

TEST(CompactTest, ATornRewriteOfTheSharedBlockLosesNoAcknowledgedGroup) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  if (!testing::DirectIoSupported(dir.path())) {
    GTEST_SKIP() << "no O_DIRECT on " << dir.path()
                 << ": the writer rewrites no block there";
  }
  RewriteCapture capture;
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kSync,
                                       .segment_size = 1 << 20,
                                       .sync_method = SyncMethod::kDirectDsync,
                                       .faults = &capture});
    ASSERT_TRUE(writer.ok()) << writer.status();
    capture.writer = writer->get();
    // Appends of 1 to 9 records: groups of 73 to 700 bytes, so that
    // groups start at every place in a block and some cross blocks.
    std::uint64_t next = 1;
    for (int k = 0; next < 1500; ++k) {
      const std::size_t n = 1 + static_cast<std::size_t>(k * 5 % 9);
      AppendRange(**writer, next, n, n);
      next += n;
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ASSERT_GE(capture.crashes.size(), 10u);
  const std::string name = SegmentFileName(1);
  int cases = 0;
  for (const RewriteCapture::Crash& crash : capture.crashes) {
    const std::size_t sectors = crash.write.size() / 512;
    // Only the first n sectors reach the file, or only the last n.
    for (const bool from_start : {true, false}) {
      for (std::size_t n = 0; n <= sectors; ++n) {
        SCOPED_TRACE(absl::StrFormat(
            "write [%d, %d), acknowledged up to index %d, %s %d of %d "
            "sectors landed",
            crash.offset, crash.offset + crash.write.size(), crash.acknowledged,
            from_start ? "first" : "last", n, sectors));
        std::vector<std::byte> image = crash.before;
        const std::size_t skip = from_start ? 0 : (sectors - n) * 512;
        std::copy_n(
            crash.write.begin() + static_cast<std::ptrdiff_t>(skip), n * 512,
            image.begin() + static_cast<std::ptrdiff_t>(crash.offset + skip));
        ScratchDir crashed;
        WriteFile(crashed.path() + "/" + name, image);
        // "Crash", reopen: recovery must keep every acknowledged group.
        auto writer = JournalWriter::Open(
            {.directory = crashed.path(), .segment_size = 1 << 20});
        ASSERT_TRUE(writer.ok()) << writer.status();
        EXPECT_GE((*writer)->last_index(), crash.acknowledged);
        ASSERT_TRUE((*writer)->Close().ok());
        const auto back = ReadAndCheck(crashed.path(), 0);
        EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
        EXPECT_GE(back.records, crash.acknowledged);
        ++cases;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  EXPECT_GT(cases, 40);
}

// ---------------------------------------------------------------------------
// Never two writes on one block at once.

TEST(CompactTest, NoTwoWritesCoveringTheSameBlockAreInFlightTogether) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  if (!testing::DirectIoSupported(dir.path())) {
    GTEST_SKIP() << "no O_DIRECT on " << dir.path();
  }
  for (const IoBackend backend : {IoBackend::kIoUring, IoBackend::kBlocking}) {
    ScratchDir journal;
    DurabilityRecorder recorder;
    auto opened =
        JournalWriter::Open({.directory = journal.path(),
                             .durability = Durability::kBatch,
                             .segment_size = std::uint64_t{256} * 1024,
                             .group_size = 8192,
                             .slots = 8,
                             .max_partial_in_flight = 6,
                             .sync_method = SyncMethod::kDirectDsync,
                             .backend = backend,
                             .faults = &recorder});
    ASSERT_TRUE(opened.ok()) << opened.status();
    JournalWriter& w = **opened;
    recorder.SkipTo(w.durable_index());
    // Small appends, each followed by a Poll that seals a group while
    // others are in flight: groups share blocks all the time.
    std::uint64_t next = 1;
    std::string violation;
    while (next <= 3000 && violation.empty()) {
      const std::size_t n = 1 + next % 3;
      const std::vector<std::byte> frames = testing::FramesFor(next, n);
      const AppendStatus st =
          w.Append(frames, testing::SessionFor(next), testing::TimeFor(next));
      if (st == AppendStatus::kOk) {
        next += n;
      } else {
        ASSERT_EQ(st, AppendStatus::kFull) << w.status();
        ASSERT_TRUE(w.Wait().ok()) << w.status();
      }
      violation = recorder.Check(w.Poll());
    }
    ASSERT_TRUE(w.Flush().ok()) << w.status();
    if (violation.empty()) violation = recorder.Check(w.durable_index());
    EXPECT_EQ(violation, "");
    EXPECT_EQ(recorder.overlapping_writes(), 0u);
    // It did rewrite shared blocks, many groups at a time.
    EXPECT_GT(recorder.rewrites(), 20u);
    EXPECT_LT(w.stats().groups, w.last_index());
    ASSERT_TRUE(w.Close().ok()) << w.status();
    const auto back = ReadAndCheck(journal.path(), 0);
    EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  }
}

}  // namespace
}  // namespace orderwire::journal
