// Cutting a journal's tail (journal/cut.h): after a cut, and after a crash
// at every step of one followed by a reopen, the journal holds exactly the
// records 1..K and its side journal the records K+1..L byte for byte, in
// format-1 and format-3 segments; the journal then opens, appends from K+1
// and reads back; readers refuse a journal whose cut is half-done.
#include "journal/cut.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/prune.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::FramesFor;
using ::orderwire::test_support::ScratchDir;
using ::testing::HasSubstr;

// A record as bytes: index, receive time, session, flags and frame.
struct Stored {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;
  std::vector<std::byte> frame;
  bool operator==(const Stored&) const = default;
};

// Every record of the journal in `dir` from `from` on; the read must end
// cleanly.
std::vector<Stored> ReadStored(const std::string& dir, std::uint64_t from = 0) {
  std::vector<Stored> out;
  auto reader = JournalReader::Open(dir, ReaderOptions{.from_index = from});
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  Record r;
  while ((*reader)->Next(r) == ReadResult::kRecord) {
    const auto frame = r.frame.bytes();
    out.push_back({r.index, r.receive_ns, r.session_id, r.flags,
                   std::vector<std::byte>(frame.begin(), frame.end())});
  }
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  return out;
}

// `records` records in groups of 3 (one flushed Append each: the cut
// splits groups), 64 KiB segments of format `version`; closed cleanly.
void BuildJournal(const std::string& dir, std::uint16_t version,
                  std::uint64_t records) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kNone,
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .format_version = version});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (std::uint64_t i = 1; i <= records; i += 3) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(3, records - i + 1));
    ASSERT_EQ((*writer)->Append(FramesFor(i, n), 7, 1000 + i, 0x5),
              AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

void MakeSnapshotFiles(const std::string& dir,
                       const std::vector<std::uint64_t>& indexes) {
  std::filesystem::create_directories(dir + "/snapshots");
  for (const std::uint64_t i : indexes) {
    test_support::WriteFile(dir + "/snapshots/" + SnapshotFileName(i),
                            std::vector<std::byte>(16, std::byte{1}));
  }
}

std::vector<Stored> Slice(const std::vector<Stored>& all, std::uint64_t first,
                          std::uint64_t last) {
  std::vector<Stored> out;
  for (const Stored& s : all) {
    if (s.index >= first && s.index <= last) out.push_back(s);
  }
  return out;
}

// Checks the outcome of a finished cut of `before` (records 1..L) at K.
void ExpectCut(const std::string& dir, const std::vector<Stored>& before,
               std::uint64_t keep) {
  const std::uint64_t last = before.back().index;
  EXPECT_EQ(ReadStored(dir), Slice(before, 1, keep));
  const std::string side = SideJournalPath(dir, keep + 1, last);
  EXPECT_EQ(ReadStored(side, keep + 1), Slice(before, keep + 1, last));
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + std::string(kCutFileName)));
  // The journal opens without a loss (its checkpoint agrees) and goes on
  // from K + 1.
  auto writer = JournalWriter::Open({.directory = dir});
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->last_index(), keep);
  EXPECT_FALSE((*writer)->recovery().torn_tail)
      << (*writer)->recovery().message;
  ASSERT_EQ((*writer)->Append(FramesFor(keep + 1, 2), 9, 1, 0),
            AppendStatus::kOk);
  ASSERT_TRUE((*writer)->Close().ok());
  const std::vector<Stored> after = ReadStored(dir);
  ASSERT_EQ(after.size(), keep + 2);
  EXPECT_EQ(after[keep].session_id, 9u);
  auto again = JournalWriter::Open({.directory = dir});
  ASSERT_TRUE(again.ok()) << again.status();
}

class CutTest : public ::testing::TestWithParam<std::uint16_t> {
 protected:
  // Enough records for three segments or more.
  [[nodiscard]] std::uint64_t Records() const {
    return GetParam() == 1 ? 130 : 1900;
  }
};

TEST_P(CutTest, KeepsExactlyThePrefixAndMovesTheTailByteForByte) {
  const std::uint64_t records = Records();
  // In a group's middle, at a group's start, at the first and last record.
  for (const std::uint64_t keep :
       {records / 2 + 1, records / 3 - 1, std::uint64_t{1}, records - 1}) {
    SCOPED_TRACE(keep);
    ScratchDir scratch("cut");
    const std::string dir = scratch.Sub("j");
    BuildJournal(dir, GetParam(), records);
    const std::vector<Stored> before = ReadStored(dir);
    ASSERT_EQ(before.size(), records);
    MakeSnapshotFiles(dir,
                      {keep - 1 == 0 ? 1 : keep - 1, keep, keep + 1, records});
    absl::StatusOr<CutReport> report =
        CutJournalTail({.directory = dir, .keep_through_index = keep});
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->cut);
    EXPECT_EQ(report->last_index, records);
    EXPECT_THAT(report->message, HasSubstr("cut records"));
    absl::StatusOr<std::vector<std::uint64_t>> snapshots =
        ListSnapshotIndexes(dir);
    ASSERT_TRUE(snapshots.ok());
    for (const std::uint64_t i : *snapshots) EXPECT_LE(i, keep);
    EXPECT_FALSE(snapshots->empty());
    ExpectCut(dir, before, keep);
  }
}

TEST_P(CutTest, EveryCrashPointLeavesAJournalThatFinishesTheCutOnOpen) {
  const std::uint64_t records = Records();
  const std::uint64_t keep = records / 2 + 1;
  for (int step = static_cast<int>(CutStep::kIntentWritten);
       step <= static_cast<int>(CutStep::kDirectorySynced); ++step) {
    for (const bool by_writer : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << "step " << step << " by_writer " << by_writer);
      ScratchDir scratch("cut-crash");
      const std::string dir = scratch.Sub("j");
      BuildJournal(dir, GetParam(), records);
      const std::vector<Stored> before = ReadStored(dir);
      absl::StatusOr<CutReport> stopped =
          CutJournalTail({.directory = dir,
                          .keep_through_index = keep,
                          .stop_after = static_cast<CutStep>(step)});
      ASSERT_TRUE(absl::IsAborted(stopped.status())) << stopped.status();
      // A reader refuses the half-cut journal, naming the CUT file.
      absl::StatusOr<std::unique_ptr<JournalReader>> reader =
          JournalReader::Open(dir);
      ASSERT_FALSE(reader.ok());
      EXPECT_TRUE(absl::IsFailedPrecondition(reader.status()));
      EXPECT_THAT(reader.status().message(), HasSubstr(dir + "/CUT"));
      if (by_writer) {
        auto writer = JournalWriter::Open({.directory = dir});
        ASSERT_TRUE(writer.ok()) << writer.status();
        EXPECT_THAT((*writer)->recovery().cut_message,
                    HasSubstr("cut records"));
        EXPECT_EQ((*writer)->last_index(), keep);
        ASSERT_TRUE((*writer)->Close().ok());
      } else {
        // Asked again (here for a no-op), the cut is finished first.
        absl::StatusOr<CutReport> again =
            CutJournalTail({.directory = dir, .keep_through_index = records});
        ASSERT_TRUE(again.ok()) << again.status();
        EXPECT_TRUE(again->finished_pending);
        EXPECT_FALSE(again->cut);
      }
      ExpectCut(dir, before, keep);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FormatVersions, CutTest, ::testing::Values(1, 3));

TEST(CutJournalTailTest, CutToZeroKeepsAnEmptyJournal) {
  ScratchDir scratch("cut-zero");
  const std::string dir = scratch.Sub("j");
  BuildJournal(dir, kFormatVersion, 40);
  const std::vector<Stored> before = ReadStored(dir);
  absl::StatusOr<CutReport> report =
      CutJournalTail({.directory = dir, .keep_through_index = 0});
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectCut(dir, before, 0);
}

TEST(CutJournalTailTest, KeepingThroughTheLastIndexOrMoreIsANoOp) {
  ScratchDir scratch("cut-noop");
  const std::string dir = scratch.Sub("j");
  BuildJournal(dir, kFormatVersion, 40);
  const std::vector<Stored> before = ReadStored(dir);
  for (const std::uint64_t keep : {40u, 41u, 1000u}) {
    absl::StatusOr<CutReport> report = CutJournalTail(
        {.directory = dir,
         .keep_through_index = static_cast<std::uint64_t>(keep)});
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_FALSE(report->cut);
    EXPECT_EQ(report->last_index, 40u);
  }
  EXPECT_EQ(ReadStored(dir), before);
  EXPECT_FALSE(std::filesystem::exists(dir + "/cut"));
}

TEST(CutJournalTailTest, ASecondCutOfTheSameRangeKeepsTheFirstsRecordsAside) {
  ScratchDir scratch("cut-twice");
  const std::string dir = scratch.Sub("j");
  BuildJournal(dir, kFormatVersion, 40);
  const std::vector<Stored> first = ReadStored(dir);
  ASSERT_TRUE(
      CutJournalTail({.directory = dir, .keep_through_index = 20}).ok());
  {
    // Other records 21..40, then the same cut again.
    auto writer = JournalWriter::Open({.directory = dir});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (std::uint64_t i = 21; i <= 40; ++i) {
      ASSERT_EQ((*writer)->Append(FramesFor(i, 1), 8, 5000 + i),
                AppendStatus::kOk);
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::vector<Stored> second = ReadStored(dir);
  ASSERT_EQ(second.size(), 40u);
  ASSERT_TRUE(
      CutJournalTail({.directory = dir, .keep_through_index = 20}).ok());
  const std::string side = SideJournalPath(dir, 21, 40);
  EXPECT_EQ(ReadStored(side, 21), Slice(second, 21, 40));
  EXPECT_EQ(ReadStored(side + ".earlier-1", 21), Slice(first, 21, 40));
  EXPECT_EQ(ReadStored(dir), Slice(first, 1, 20));
}

TEST(CutJournalTailTest, RefusesWhatItCannotCut) {
  ScratchDir scratch("cut-bad");
  // No journal.
  EXPECT_TRUE(absl::IsNotFound(CutJournalTail({.directory = scratch.Sub("none"),
                                               .keep_through_index = 1})
                                   .status()));
  const std::string dir = scratch.Sub("j");
  BuildJournal(dir, kFormatVersion, 40);
  // A writer holds it.
  {
    auto writer = JournalWriter::Open({.directory = dir});
    ASSERT_TRUE(writer.ok()) << writer.status();
    const absl::Status locked =
        CutJournalTail({.directory = dir, .keep_through_index = 5}).status();
    EXPECT_TRUE(absl::IsUnavailable(locked)) << locked;
  }
  // Below the start of a pruned journal.
  ScratchDir pruned_scratch("cut-pruned");
  const std::string pruned = pruned_scratch.Sub("j");
  auto writer = JournalWriter::Open({.directory = pruned,
                                     .durability = Durability::kNone,
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok());
  for (std::uint64_t i = 1; i <= 40; ++i) {
    ASSERT_EQ((*writer)->Append(FramesFor(i, 1), 1, i), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  absl::StatusOr<PruneReport> prune =
      PruneJournal({.directory = pruned, .before_index = 20});
  ASSERT_TRUE(prune.ok()) << prune.status();
  ASSERT_TRUE((*writer)->Close().ok());
  const std::uint64_t first = prune->first_index_after;
  ASSERT_GT(first, 1u);
  for (const std::uint64_t below_start : {first - 2, first - 1}) {
    const absl::Status below =
        CutJournalTail({.directory = pruned, .keep_through_index = below_start})
            .status();
    EXPECT_TRUE(absl::IsInvalidArgument(below)) << below;
    EXPECT_THAT(below.message(), HasSubstr("pruned"));
  }
  // Down to its first record is allowed.
  absl::StatusOr<CutReport> to_start =
      CutJournalTail({.directory = pruned, .keep_through_index = first});
  ASSERT_TRUE(to_start.ok()) << to_start.status();
  EXPECT_TRUE(to_start->cut);
  auto reopened = JournalWriter::Open({.directory = pruned});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->last_index(), first);
}

}  // namespace
}  // namespace orderwire::journal
