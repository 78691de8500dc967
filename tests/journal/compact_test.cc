// Compact group writes (format versions 2 and 3): groups packed at 8-byte
// alignment (version 3 with compact framing), read back, found past
// damage, appended to version-1 and version-2 journals; damaged version-3
// header fields refused; and the two guarantees of the O_DIRECT writer that
// rewrites the block a group starts in: a torn rewrite of that block loses no
// group that was acknowledged, and no two writes covering the same block are
// ever in flight together (docs/JOURNAL.md "Compact groups").
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
#include "codec/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/crc32c.h"
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

using ::orderwire::journal::testing::GroupAt;
using ::orderwire::journal::testing::WalkGroups;

std::uint16_t VersionOf(const std::string& segment) {
  return testing::SegmentVersion(ReadFile(segment));
}

// The packed versions: every test below runs for both.
class PackedTest : public ::testing::TestWithParam<std::uint16_t> {};

std::string VersionName(const ::testing::TestParamInfo<std::uint16_t>& info) {
  return absl::StrFormat("Version%d", info.param);
}

// ---------------------------------------------------------------------------
// Layout.

TEST_P(PackedTest, GroupsArePackedAtEightByteAlignmentUnderEveryMethod) {
  SKIP_WITHOUT_URING();
  const std::uint16_t version = GetParam();
  const GroupFormat format = GroupFormatOf(version);
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
                                       .sync_method = mode.method,
                                       .format_version = version});
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
    EXPECT_EQ(VersionOf(segment), version);
    const std::vector<std::byte> bytes = ReadFile(segment);
    const std::vector<GroupAt> groups = WalkGroups(bytes);
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
    const std::uint64_t overhead = format.header_size + kGroupTrailerSize;
    EXPECT_LE(stats.journal_bytes,
              records_bytes + 80 * (overhead + kGroupAlign - 1));
    if (version == 3) {
      // A one-record group: 24 + 16 + frame + 8, padded to 8. The frames
      // here are the five kinds in turn (47, 38, 25, 25, 49 bytes).
      EXPECT_EQ(groups[0].header.records_bytes,
                kCompactRecordHeaderSize + 38);  // index 1: NewMarket
      EXPECT_EQ(groups[1].offset - groups[0].offset, AlignUpTo(24 + 54 + 8, 8));
    }
    const auto back = ReadAndCheck(dir.path(), 1);
    EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
    EXPECT_EQ(back.records, 80u);
  }
}

TEST(CompactTest, AVersion1JournalIsAppendedInVersion1ThenNewSegmentsAreV3) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 5);
  {
    // Today's writer: continues the version-1 segment in version 1 (its
    // groups on 4096-byte boundaries), then starts version-3 segments.
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
  const std::vector<GroupAt> old_groups = WalkGroups(ReadFile(segments[0]));
  ASSERT_GT(old_groups.size(), 5u);  // the first writer's and the second's
  for (const GroupAt& g : old_groups) {
    EXPECT_EQ(g.offset % kBlockSize, 0u) << g.offset;
  }
  for (std::size_t s = 1; s < segments.size(); ++s) {
    EXPECT_EQ(VersionOf(segments[s]), kFormatVersion) << segments[s];
  }
  const std::vector<GroupAt> new_groups = WalkGroups(ReadFile(segments[1]));
  ASSERT_GT(new_groups.size(), 2u);
  EXPECT_EQ(new_groups[1].offset, AlignUpTo(new_groups[0].end, kGroupAlign));
  EXPECT_NE(new_groups[1].offset % kBlockSize, 0u);
  const auto back = ReadAndCheck(dir.path(), 0);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 305u);
}

// A version-2 journal (what the previous release wrote) appended to by
// today's writer: its last segment goes on in version 2, the segments after
// it are version 3, and the whole journal reads back record by record.
TEST(CompactTest, AVersion2JournalIsAppendedInVersion2ThenNewSegmentsAreV3) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kSync,
                                       .segment_size = std::uint64_t{64} * 1024,
                                       .format_version = 2});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 40, 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  {
    auto writer =
        JournalWriter::Open({.directory = dir.path(),
                             .durability = Durability::kBatch,
                             .segment_size = std::uint64_t{64} * 1024});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 41, 3000, 3);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::vector<std::string> segments = SegmentPaths(dir.path());
  ASSERT_GE(segments.size(), 3u);
  EXPECT_EQ(VersionOf(segments[0]), 2);
  const std::vector<GroupAt> old_groups = WalkGroups(ReadFile(segments[0]));
  ASSERT_GT(old_groups.size(), 40u);  // the first writer's and the second's
  EXPECT_EQ(old_groups.back().header.magic, kGroupMagic);
  for (std::size_t s = 1; s < segments.size(); ++s) {
    EXPECT_EQ(VersionOf(segments[s]), 3) << segments[s];
    const std::vector<GroupAt> groups = WalkGroups(ReadFile(segments[s]));
    ASSERT_FALSE(groups.empty()) << segments[s];
    EXPECT_EQ(groups.front().header.magic, kCompactGroupMagic);
  }
  const auto back = ReadAndCheck(dir.path(), 0);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 3040u);
  // And from the middle: a seek into a version-3 segment and into the
  // version-2 one.
  for (const std::uint64_t from : {std::uint64_t{17}, std::uint64_t{2500}}) {
    auto reader = JournalReader::Open(dir.path(), {.from_index = from});
    ASSERT_TRUE(reader.ok()) << reader.status();
    Record r;
    std::uint64_t expected = from;
    while ((*reader)->Next(r) == ReadResult::kRecord) {
      ASSERT_EQ(r.index, expected);
      const std::vector<std::byte> want = testing::FrameFor(expected);
      const auto got = r.frame.bytes();
      ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
          << "frame of record " << expected;
      ++expected;
    }
    EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
    EXPECT_EQ(expected, 3041u);
  }
}

// ---------------------------------------------------------------------------
// Damage in a packed segment: the later groups that prove it durable sit
// at 8-byte boundaries, not on blocks, and must be found there.

TEST_P(PackedTest, DamageFollowedByADurableGroupIsDataLoss) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kSync,
                                       .format_version = GetParam()});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 12, 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  // No checkpoint: only the later groups can tell damage from a torn tail.
  std::filesystem::remove(dir.path() + "/" + std::string(kCheckpointFileName));
  const std::string segment = SegmentPaths(dir.path()).at(0);
  std::vector<std::byte> bytes = ReadFile(segment);
  const std::vector<GroupAt> groups = WalkGroups(bytes);
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
// Damaged version-3 header fields: each is refused, naming the file and the
// group's offset. With the checksum left as it was the CRC32C catches the
// change; with the checksum recomputed (what no crash does, but a writer
// bug could) the field's own check must.

struct FieldDamage {
  const char* name;
  std::size_t offset;  // in the group
  std::uint32_t value;
  bool recompute_crc;
  const char* problem;  // what the reader must say
};

TEST(CompactTest, AVersion3GroupWithADamagedFieldIsRefusedNamingFileAndOffset) {
  SKIP_WITHOUT_URING();
  ScratchDir source;
  {
    auto writer = JournalWriter::Open({.directory = source.path(),
                                       .durability = Durability::kSync,
                                       .format_version = 3});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 12, 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::string name = SegmentFileName(1);
  const std::vector<std::byte> clean = ReadFile(source.path() + "/" + name);
  const std::vector<GroupAt> groups = WalkGroups(clean);
  ASSERT_EQ(groups.size(), 12u);
  const GroupAt& g = groups[6];  // index 7, a CancelByOrder (25 bytes)
  ASSERT_EQ(g.header.first_index, 7u);
  ASSERT_EQ(g.header.records_bytes, 16u + 25u);
  // Written under kSync: each group saw every earlier one durable.
  ASSERT_EQ(g.header.stable_index, 6u);
  const std::uint64_t trailer = g.offset + 24 + g.header.records_bytes;
  const std::vector<FieldDamage> cases = {
      {"crc", trailer - g.offset, 0x12345678u, false,
       "group checksum mismatch"},
      {"records_bytes", 4, 16u + 25u + 8u, false,
       "the group trailer is missing"},
      {"records_bytes", 4, 16u + 24u, false, "implausible group size fields"},
      {"record_count", 16, 2, false, "implausible group size fields"},
      {"record_count", 16, 0, true, "implausible group size fields"},
      {"stable_lag", 20, 2, false, "group checksum mismatch"},
      {"stable_lag", 20, 8, true, "inconsistent group indexes"},
      {"first_index", 8, 8, true, "does not start with the expected index"},
  };
  for (const FieldDamage& c : cases) {
    SCOPED_TRACE(
        absl::StrFormat("%s = %d%s", c.name, c.value,
                        c.recompute_crc ? ", checksum recomputed" : ""));
    ScratchDir dir;
    std::vector<std::byte> bytes = clean;
    codec::StoreLE(&bytes[g.offset + c.offset], c.value);
    if (c.recompute_crc) {
      codec::StoreLE(&bytes[trailer],
                     Crc32c({&bytes[g.offset], trailer - g.offset}));
    }
    const std::string path = dir.path() + "/" + name;
    WriteFile(path, bytes);
    auto reader = JournalReader::Open(dir.path());
    ASSERT_TRUE(reader.ok()) << reader.status();
    Record r;
    std::uint64_t records = 0;
    ReadResult result;
    while ((result = (*reader)->Next(r)) == ReadResult::kRecord) ++records;
    ASSERT_EQ(result, ReadResult::kError);
    EXPECT_EQ(records, 6u);
    EXPECT_EQ((*reader)->status().code(), absl::StatusCode::kDataLoss);
    const std::string message((*reader)->status().message());
    EXPECT_THAT(message, HasSubstr(absl::StrFormat("segment %s at offset %d",
                                                   path, g.offset)));
    EXPECT_THAT(message, HasSubstr(c.problem));
  }
}

// stable_lag 0 claims nothing: the group reads as stable_index 0 (weaker
// than what the writer knew, never stronger) and the journal reads whole.
TEST(CompactTest, AVersion3StableLagOfZeroClaimsNothingAndStillReads) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kSync,
                                       .format_version = 3});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 12, 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::string path = SegmentPaths(dir.path()).at(0);
  std::vector<std::byte> bytes = ReadFile(path);
  const GroupAt g = WalkGroups(bytes).at(6);
  const std::uint64_t trailer = g.offset + 24 + g.header.records_bytes;
  codec::StoreLE(&bytes[g.offset + 20], std::uint32_t{0});
  codec::StoreLE(&bytes[trailer],
                 Crc32c({&bytes[g.offset], trailer - g.offset}));
  WriteFile(path, bytes);
  EXPECT_EQ(WalkGroups(ReadFile(path)).at(6).header.stable_index, 0u);
  const auto back = ReadAndCheck(dir.path(), 1);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 12u);
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

TEST_P(PackedTest, ATornRewriteOfTheSharedBlockLosesNoAcknowledgedGroup) {
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
                                       .faults = &capture,
                                       .format_version = GetParam()});
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
  EXPECT_EQ(VersionOf(SegmentPaths(dir.path()).at(0)), GetParam());
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

TEST_P(PackedTest, NoTwoWritesCoveringTheSameBlockAreInFlightTogether) {
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
                             .faults = &recorder,
                             .format_version = GetParam()});
    ASSERT_TRUE(opened.ok()) << opened.status();
    JournalWriter& w = **opened;
    recorder.SkipTo(w.durable_index());
    // Small appends, each followed by a Poll that seals a group while
    // others are in flight: groups share blocks all the time.
    std::uint64_t next = 1;
    std::string violation;
    while (next <= 4500 && violation.empty()) {
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

INSTANTIATE_TEST_SUITE_P(Versions, PackedTest,
                         ::testing::Values(std::uint16_t{2}, std::uint16_t{3}),
                         VersionName);

}  // namespace
}  // namespace orderwire::journal
