// Pruning (journal/prune.h) and the start record (journal/start.h): a
// journal that starts after index 1 on purpose is read, recovered and
// appended to; one whose first segment went missing without a prune is
// still data loss; every crash point of a prune leaves a journal that
// opens.
#include "journal/prune.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/checkpoint.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/start.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"
#include "tests/support/small_filesystem.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendRange;
using ::orderwire::journal::testing::FrameFor;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ReadFile;
using ::orderwire::test_support::ScratchDir;
using ::orderwire::test_support::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 64 KiB segments: 15 one-record groups each.
constexpr std::uint64_t kSegmentSize = std::uint64_t{64} * 1024;

// `groups` one-record groups under kSync in 64 KiB segments: 15 groups per
// segment (segments from 1, 16, 31, ...). Closed cleanly.
void BuildJournal(const std::string& dir, std::uint64_t first, int groups) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kSync,
                                     .segment_size = kSegmentSize,
                                     .group_size = 8192,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendRange(**writer, first, static_cast<std::size_t>(groups), 1);
  ASSERT_TRUE((*writer)->Close().ok());
}

// Reads the whole journal, checking each record against the model: the
// indexes read and the final status.
struct Pruned {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t records = 0;
  absl::Status status;
  std::uint64_t journal_first = 0;
  std::vector<std::string> leftovers;
};
Pruned ReadPruned(const std::string& dir) {
  Pruned out;
  auto reader = JournalReader::Open(dir);
  if (!reader.ok()) {
    out.status = reader.status();
    return out;
  }
  Record r;
  while ((*reader)->Next(r) == ReadResult::kRecord) {
    if (out.records == 0) out.first = r.index;
    EXPECT_EQ(r.index, out.first + out.records);
    const std::vector<std::byte> want = FrameFor(r.index);
    const auto got = r.frame.bytes();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
        << r.index;
    out.last = r.index;
    ++out.records;
  }
  out.status = (*reader)->status();
  out.journal_first = (*reader)->first_index();
  out.leftovers = (*reader)->pruned_leftovers();
  return out;
}

std::uint64_t JournalIdOf(const std::string& segment) {
  const std::vector<std::byte> bytes = ReadFile(segment);
  return LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data())
      .journal_id;
}

// What a prune does before it removes anything: the new start, durable.
void WriteStart(const std::string& dir, std::uint64_t first_index,
                std::uint64_t journal_id) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  const absl::Status s = WriteJournalStart(
      dir, fd,
      JournalStart{.journal_id = journal_id, .first_index = first_index});
  ::close(fd);
  ASSERT_TRUE(s.ok()) << s;
}

TEST(JournalStartTest, EncodesDecodesAndRefusesDamage) {
  JournalStart start{.journal_id = 0x0123456789ABCDEF,
                     .first_index = 1'000'001,
                     .written_ns = 1'700'000'000'000'000'000};
  std::byte bytes[kJournalStartSize];
  EncodeJournalStart(start, bytes);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes), kJournalStartMagic);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes + kJournalStartCrcOffset),
            Crc32c({bytes, kJournalStartCrcOffset}));
  // The layout of docs/JOURNAL.md "Start record and pruning".
  EXPECT_EQ(codec::LoadLE<std::uint16_t>(bytes + 8), 1);    // version
  EXPECT_EQ(codec::LoadLE<std::uint16_t>(bytes + 10), 48);  // size
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes + 12), 0u);  // flags
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 16), 0x0123456789ABCDEFu);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 24), 1'000'001u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 32),
            1'700'000'000'000'000'000u);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes + 40), 0u);  // reserved
  const char magic[] = "OWJSTART";
  EXPECT_EQ(std::memcmp(bytes, magic, 8), 0);
  absl::StatusOr<JournalStart> decoded = DecodeJournalStart(bytes, "START");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->first_index, 1'000'001u);
  EXPECT_EQ(decoded->journal_id, 0x0123456789ABCDEFu);
  // Every single-bit flip and every truncation is refused.
  for (std::size_t i = 0; i < kJournalStartSize; ++i) {
    std::byte damaged[kJournalStartSize];
    std::copy(bytes, bytes + kJournalStartSize, damaged);
    damaged[i] ^= std::byte{0x10};
    const absl::StatusOr<JournalStart> d = DecodeJournalStart(damaged, "S");
    EXPECT_FALSE(d.ok()) << "flip at byte " << i;
  }
  for (std::size_t n = 0; n < kJournalStartSize; ++n) {
    EXPECT_EQ(DecodeJournalStart({bytes, n}, "S").status().code(),
              absl::StatusCode::kDataLoss)
        << n;
  }
  codec::StoreLE<std::uint16_t>(bytes + 8, 2);
  EXPECT_EQ(DecodeJournalStart(bytes, "S").status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(JournalStartTest, AnIndexBelowTheStartFailsLoudly) {
  ScratchDir dir;
  EXPECT_TRUE(CheckIndexAvailable(dir.path(), 5).ok());  // no START: 1
  WriteStart(dir.path(), 1'000'001, 7);
  const absl::Status s = CheckIndexAvailable(dir.path(), 5);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("index 5 was pruned; the journal starts at 1,000,001"));
  EXPECT_TRUE(CheckIndexAvailable(dir.path(), 1'000'001).ok());
  EXPECT_EQ(*FirstAvailableIndex(dir.path()), 1'000'001u);
}

TEST(PruneTest, PrunedJournalReadsReopensAndAppends) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);  // segments from 1, 16 and 31
  ASSERT_EQ(SegmentPaths(dir.path()).size(), 3u);
  absl::StatusOr<PruneReport> report =
      PruneJournal({.directory = dir.path(), .before_index = 31});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->first_index_before, 1u);
  EXPECT_EQ(report->first_index_after, 31u);
  ASSERT_EQ(report->segments.size(), 2u);
  EXPECT_EQ(report->segments[0].first_index, 1u);
  EXPECT_EQ(report->segments[0].last_index, 15u);
  EXPECT_EQ(report->segments[1].last_index, 30u);
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
  EXPECT_EQ(*FirstAvailableIndex(dir.path()), 31u);

  Pruned read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.first, 31u);
  EXPECT_EQ(read.last, 40u);
  EXPECT_EQ(read.journal_first, 31u);

  // Reopened for appending: it goes on at 41.
  BuildJournal(dir.path(), 41, 20);
  read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.first, 31u);
  EXPECT_EQ(read.last, 60u);
  EXPECT_EQ(read.records, 30u);
}

// A journal created past index 1 (WriterOptions::new_journal_first_index,
// a new member seeded from a snapshot: cluster/seed.h): without its start
// record it does not open (the records before are missing); with it, it
// opens with no record and its last index the one before, twice, then
// appends from its first index on and recovers those.
TEST(PruneTest, AJournalCreatedPastIndexOneOpensWithItsStartRecord) {
  ScratchDir dir;
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kSync,
                                       .segment_size = kSegmentSize,
                                       .group_size = 8192,
                                       .new_journal_first_index = 501,
                                       .new_journal_id = 0x5eed});
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_TRUE((*writer)->recovery().created);
    EXPECT_EQ((*writer)->last_index(), 500u);
    EXPECT_EQ((*writer)->durable_index(), 500u);
    EXPECT_EQ((*writer)->journal_id(), 0x5eedu);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_THAT(SegmentPaths(dir.path()),
              ElementsAre(HasSubstr(SegmentFileName(501))));
  // Nothing witnessed yet: no group holds index 500.
  absl::StatusOr<std::optional<Checkpoint>> checkpoint =
      ReadCheckpoint(dir.path());
  ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value())
      << checkpoint.status();
  EXPECT_EQ((*checkpoint)->durable_index, 0u);
  // Without START: records 1..500 missing.
  {
    auto writer = JournalWriter::Open({.directory = dir.path()});
    ASSERT_FALSE(writer.ok());
    EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(writer.status().message()),
                HasSubstr("records 1..500 are missing"));
  }
  WriteStart(dir.path(), 501, 0x5eed);
  for (int open = 0; open < 2; ++open) {
    auto writer = JournalWriter::Open(
        {.directory = dir.path(), .durability = Durability::kSync});
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_FALSE((*writer)->recovery().created);
    EXPECT_EQ((*writer)->recovery().last_index, 500u);
    EXPECT_EQ((*writer)->last_index(), 500u);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  Pruned read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.records, 0u);
  EXPECT_EQ(read.journal_first, 501u);
  BuildJournal(dir.path(), 501, 20);
  read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.first, 501u);
  EXPECT_EQ(read.last, 520u);
  checkpoint = ReadCheckpoint(dir.path());
  ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
  EXPECT_EQ((*checkpoint)->durable_index, 520u);
  // Index 0 is no journal's first index.
  auto zero = JournalWriter::Open(
      {.directory = dir.Sub("zero"), .new_journal_first_index = 0});
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PruneTest, OnlyWholeSegmentsBelowTheIndexGo) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  absl::StatusOr<PruneReport> report =
      PruneJournal({.directory = dir.path(), .before_index = 20});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->first_index_after, 16u);  // 16..30 holds 20..30
  ASSERT_EQ(report->segments.size(), 1u);
  EXPECT_THAT(report->stopped_because, HasSubstr("not all below 20"));
  EXPECT_EQ(ReadPruned(dir.path()).first, 16u);
  // Pruning before an index already gone does nothing.
  report = PruneJournal({.directory = dir.path(), .before_index = 5});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->segments.empty());
  EXPECT_EQ(report->first_index_after, 16u);
}

TEST(PruneTest, NeverTheLastSegmentNorTheOneHoldingTheLastRecord) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  absl::StatusOr<PruneReport> report =
      PruneJournal({.directory = dir.path(), .before_index = 1'000'000});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->first_index_after, 31u);
  EXPECT_THAT(report->stopped_because, HasSubstr("the last one"));

  // A new, empty last segment: the one before it holds the last record and
  // stays too.
  {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kSync,
                                       .segment_size = kSegmentSize,
                                       .format_version = 1});
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->StartSegment("metadata").ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ASSERT_EQ(SegmentPaths(dir.path()).size(), 2u);
  report = PruneJournal({.directory = dir.path(), .before_index = 1'000'000});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->segments.empty());
  EXPECT_THAT(report->stopped_because, HasSubstr("holds the journal's last"));
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .segment_size = kSegmentSize,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->last_index(), 40u);
}

TEST(PruneTest, ArchiveMovesTheSegmentsUnchanged) {
  ScratchDir dir;
  ScratchDir archive;
  BuildJournal(dir.path(), 1, 40);
  const std::vector<std::string> before = SegmentPaths(dir.path());
  const std::vector<std::byte> first_bytes = ReadFile(before[0]);
  const std::string to = archive.Sub("old");
  absl::StatusOr<PruneReport> report = PruneJournal(
      {.directory = dir.path(), .before_index = 31, .archive = to});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(SegmentPaths(to), ElementsAre(to + "/" + SegmentFileName(1),
                                            to + "/" + SegmentFileName(16)));
  EXPECT_EQ(ReadFile(to + "/" + SegmentFileName(1)), first_bytes);
  EXPECT_EQ(report->segments[0].archived_to, to + "/" + SegmentFileName(1));
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
  EXPECT_TRUE(ReadPruned(dir.path()).status.ok());
}

TEST(PruneTest, ArchiveOnAnotherFileSystemCopiesThenRemoves) {
  std::string why;
  auto other = test_support::SmallFilesystem::Mount(
      test_support::SmallFilesystem::Type::kTmpfs, 8u << 20, &why);
  if (other == nullptr) GTEST_SKIP() << why;
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  const std::vector<std::string> before = SegmentPaths(dir.path());
  const std::vector<std::byte> first_bytes = ReadFile(before[0]);
  const std::string to = other->path() + "/archive";
  absl::StatusOr<PruneReport> report = PruneJournal(
      {.directory = dir.path(), .before_index = 31, .archive = to});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(SegmentPaths(to), ElementsAre(to + "/" + SegmentFileName(1),
                                            to + "/" + SegmentFileName(16)));
  EXPECT_EQ(ReadFile(to + "/" + SegmentFileName(1)), first_bytes);
  EXPECT_FALSE(
      std::filesystem::exists(to + "/" + SegmentFileName(1) + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(before[0]));
  EXPECT_TRUE(ReadPruned(dir.path()).status.ok());
}

TEST(PruneTest, ACrashAfterTheStartWasWrittenLeavesAJournalThatOpens) {
  // The crash point between the two steps: START says 31, segments 1 and
  // 16 are still there.
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  WriteStart(dir.path(), 31, JournalIdOf(paths[0]));
  Pruned read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.first, 31u);
  EXPECT_EQ(read.leftovers.size(), 2u);
  // And the crash also tore the tail of the last segment (a group header
  // whose trailer never arrived, after group 40 at offset 4096 * 11):
  // recovery cuts it in the right file, not in a leftover.
  {
    std::vector<std::byte> last = ReadFile(paths[2]);
    const std::byte torn[] = {std::byte{'O'}, std::byte{'W'}, std::byte{'G'},
                              std::byte{'H'}, std::byte{0x47}};
    std::copy(std::begin(torn), std::end(torn),
              last.begin() + std::ptrdiff_t{4096} * 11);
    WriteFile(paths[2], last);
  }
  const std::vector<std::byte> leftover = ReadFile(paths[0]);
  // The writer opens and appends; the leftovers stay until a prune.
  BuildJournal(dir.path(), 41, 5);
  EXPECT_EQ(ReadFile(paths[0]), leftover);
  EXPECT_TRUE(std::filesystem::exists(paths[0]));
  read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.last, 45u);
  // The next prune finishes the job.
  absl::StatusOr<PruneReport> report =
      PruneJournal({.directory = dir.path(), .before_index = 31});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->segments.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(paths[0]));
  EXPECT_FALSE(std::filesystem::exists(paths[1]));
  EXPECT_TRUE(ReadPruned(dir.path()).leftovers.empty());
}

TEST(PruneTest, ADeletedFirstSegmentWithoutAPruneIsStillDataLoss) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  std::filesystem::remove(SegmentPaths(dir.path())[0]);
  const Pruned read = ReadPruned(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("not 1"));
  const auto writer = JournalWriter::Open({.directory = dir.path(),
                                           .segment_size = kSegmentSize,
                                           .format_version = 1});
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
  // And a prune refuses to make it look intended.
  const absl::StatusOr<PruneReport> report =
      PruneJournal({.directory = dir.path(), .before_index = 31});
  EXPECT_EQ(report.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("START")));
}

TEST(PruneTest, ASegmentDeletedAfterAPruneIsDataLoss) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  ASSERT_TRUE(PruneJournal({.directory = dir.path(), .before_index = 16}).ok());
  std::filesystem::remove(dir.Sub(SegmentFileName(16)));
  const Pruned read = ReadPruned(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("the journal starts at index 16"));
  EXPECT_EQ(JournalWriter::Open({.directory = dir.path(),
                                 .segment_size = kSegmentSize,
                                 .format_version = 1})
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
}

TEST(PruneTest, ACheckpointNamingAPrunedGroupStillOpens) {
  // The writer publishes its checkpoint at most every second: a prune can
  // remove the group the last one names.
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 25);  // the checkpoint names group 25 (in 16)
  const std::vector<std::byte> old_checkpoint =
      ReadFile(dir.Sub(std::string(kCheckpointFileName)));
  BuildJournal(dir.path(), 26, 15);
  WriteFile(dir.Sub(std::string(kCheckpointFileName)), old_checkpoint);
  ASSERT_TRUE(PruneJournal({.directory = dir.path(), .before_index = 31}).ok());
  const Pruned read = ReadPruned(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.first, 31u);
  EXPECT_EQ(read.last, 40u);
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .segment_size = kSegmentSize,
                                     .format_version = 1});
  EXPECT_TRUE(writer.ok()) << writer.status();
}

TEST(PruneTest, SnapshotsOlderThanWhatRemainsAreRemoved) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  std::filesystem::create_directories(dir.Sub("snapshots"));
  for (const std::uint64_t index : {10u, 29u, 30u, 35u}) {
    WriteFile(dir.Sub("snapshots/" + SnapshotFileName(index)),
              std::vector<std::byte>(8));
  }
  absl::StatusOr<std::vector<std::uint64_t>> listed =
      ListSnapshotIndexes(dir.path());
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(*listed, ElementsAre(10, 29, 30, 35));
  absl::StatusOr<PruneReport> report =
      PruneJournal({.directory = dir.path(), .before_index = 31});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->snapshots_removed.size(), 2u);
  // 30 + 1 == 31: the journal continues it; 35 too.
  EXPECT_THAT(*ListSnapshotIndexes(dir.path()), ElementsAre(30, 35));
}

TEST(PruneTest, SegmentSummariesComeFromTheHeaders) {
  ScratchDir dir;
  BuildJournal(dir.path(), 1, 40);
  ASSERT_TRUE(PruneJournal({.directory = dir.path(), .before_index = 16}).ok());
  absl::StatusOr<std::vector<SegmentSummary>> summaries =
      ListSegmentSummaries(dir.path());
  ASSERT_TRUE(summaries.ok()) << summaries.status();
  ASSERT_EQ(summaries->size(), 2u);
  EXPECT_EQ((*summaries)[0].first_index, 16u);
  EXPECT_EQ((*summaries)[1].first_index, 31u);
  EXPECT_EQ((*summaries)[0].bytes, 64u * 1024);
  EXPECT_GT((*summaries)[1].created_ns, 0u);
  EXPECT_LE((*summaries)[0].created_ns, (*summaries)[1].created_ns);
}

}  // namespace
}  // namespace orderwire::journal
