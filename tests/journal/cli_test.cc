// `orderwire journal write`, `journal inspect` and `replay` as a user runs
// them: the real binary, bytes in, bytes, text and exit status out. The
// central check is the exactness rule: gen | journal write, then
// replay --reports, gives the very bytes of gen | match.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire::journal {
namespace {

using test_support::ReadText;
using test_support::ScratchDir;
using ::testing::HasSubstr;
using ::testing::Not;
using Outcome = test_support::ShellOutcome;

// Runs `sh -c "<command line>"` in `dir` with ORDERWIRE set to the binary.
Outcome Shell(const ScratchDir& dir, const std::string& line) {
  return test_support::RunShell(
      dir.path(), "ORDERWIRE='" + std::string(ORDERWIRE_BINARY) + "'; " + line);
}

TEST(JournalCliTest, ReplayGivesTheReportBytesOfMatch) {
  for (const std::string workload : {"mixed", "wl1"}) {
    ScratchDir dir;
    const std::string gen =
        "\"$ORDERWIRE\" gen --workload " + workload + " --count 30000 --seed 5";
    ASSERT_EQ(Shell(dir, gen + " | \"$ORDERWIRE\" match > match.bin").status,
              0);
    const Outcome write =
        Shell(dir, gen +
                       " | \"$ORDERWIRE\" journal write --journal j "
                       "--segment-size 262144");
    ASSERT_EQ(write.status, 0) << write.err;
    EXPECT_THAT(write.out, HasSubstr("30000 records"));
    EXPECT_THAT(write.out, HasSubstr("durable up to index 30000 (batch)"));
    EXPECT_THAT(write.err, HasSubstr(", I/O: "));  // announces its I/O path
    const Outcome replay =
        Shell(dir, "\"$ORDERWIRE\" replay --journal j --reports replay.bin");
    ASSERT_EQ(replay.status, 0) << replay.err;
    EXPECT_THAT(replay.out, HasSubstr("30000 records in"));
    EXPECT_THAT(replay.out, HasSubstr("final index 30000"));
    const std::string match = ReadText(dir.Sub("match.bin"));
    ASSERT_FALSE(match.empty());
    EXPECT_TRUE(match == ReadText(dir.Sub("replay.bin"))) << workload;
    // The same as JSON Lines.
    ASSERT_EQ(
        Shell(dir, gen + " | \"$ORDERWIRE\" match --json > m.jsonl").status, 0);
    ASSERT_EQ(Shell(dir,
                    "\"$ORDERWIRE\" replay --journal j --json "
                    "--reports r.jsonl")
                  .status,
              0);
    EXPECT_TRUE(ReadText(dir.Sub("m.jsonl")) == ReadText(dir.Sub("r.jsonl")));
    // And the same books at the end.
    const Outcome match_book =
        Shell(dir, gen + " | \"$ORDERWIRE\" match --book 4 > /dev/null");
    const Outcome replay_book =
        Shell(dir, "\"$ORDERWIRE\" replay --journal j --book 4");
    ASSERT_EQ(replay_book.status, 0) << replay_book.err;
    EXPECT_THAT(replay_book.err, HasSubstr("bid price"));
    EXPECT_EQ(replay_book.err, match_book.err);
  }
}

TEST(JournalCliTest, VerifyCountsRecordsByKindAcrossSegments) {
  ScratchDir dir;
  ASSERT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" gen --count 20000 | \"$ORDERWIRE\" "
                  "journal write --journal j --durability none "
                  "--segment-size 65536 --session 9")
                .status,
            0);
  const Outcome verify =
      Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify");
  ASSERT_EQ(verify.status, 0) << verify.err;
  EXPECT_THAT(verify.out, HasSubstr("replay --verify: 20000 records in"));
  EXPECT_THAT(verify.out, HasSubstr("NewLimit"));
  EXPECT_THAT(verify.out, HasSubstr("final index 20000"));
  EXPECT_THAT(verify.out, HasSubstr("records/s"));
  EXPECT_GT(testing::SegmentPaths(dir.Sub("j")).size(), 10u);
}

TEST(JournalCliTest, InspectShowsSegmentsAndRecordsAsJsonLines) {
  ScratchDir dir;
  ASSERT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" gen --count 500 | \"$ORDERWIRE\" "
                  "journal write --journal j --session 42")
                .status,
            0);
  const Outcome inspect = Shell(dir, "\"$ORDERWIRE\" journal inspect j");
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_THAT(inspect.out, HasSubstr("00000000000000000001.owj"));
  EXPECT_THAT(inspect.out, HasSubstr("500 records, indexes 1..500"));
  EXPECT_THAT(inspect.out, HasSubstr("ends cleanly"));
  const Outcome records =
      Shell(dir, "\"$ORDERWIRE\" journal inspect j --records");
  ASSERT_EQ(records.status, 0) << records.err;
  EXPECT_EQ(std::count(records.out.begin(), records.out.end(), '\n'), 500);
  EXPECT_THAT(records.out, HasSubstr("{\"index\":1,\"receive_ns\":"));
  EXPECT_THAT(records.out,
              HasSubstr("\"session_id\":42,\"flags\":0,\"frame\":{\"kind\":"));
  // The frames decode as `orderwire decode` prints them.
  ASSERT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" gen --count 500 | \"$ORDERWIRE\" "
                  "decode > decoded.jsonl")
                .status,
            0);
  const std::string decoded = ReadText(dir.Sub("decoded.jsonl"));
  const std::string first_line = decoded.substr(0, decoded.find('\n'));
  EXPECT_THAT(records.out, HasSubstr("\"frame\":" + first_line + "}"));
}

TEST(JournalCliTest, WriteRefusesAPartialFrameAndAppendsNothing) {
  ScratchDir dir;
  const Outcome write =
      Shell(dir,
            "\"$ORDERWIRE\" gen --count 10 | head -c 300 | \"$ORDERWIRE\" "
            "journal write --journal j");
  EXPECT_EQ(write.status, 1);
  EXPECT_THAT(write.err, HasSubstr("byte offset"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("j")));
}

TEST(JournalCliTest, ATornJournalIsReportedNotReadInFull) {
  ScratchDir dir;
  ASSERT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" gen --count 5000 | \"$ORDERWIRE\" "
                  "journal write --journal j")
                .status,
            0);
  const std::string segment = testing::SegmentPaths(dir.Sub("j")).at(0);
  // What a crash leaves: the end of the data never reached the disk (zeros
  // in the preallocated file) and the checkpoint had not caught up.
  {
    std::vector<std::byte> bytes = test_support::ReadFile(segment);
    std::fill(bytes.begin() + 4096 + 100000, bytes.end(), std::byte{0});
    test_support::WriteFile(segment, bytes);
    std::filesystem::remove(dir.Sub("j/CHECKPOINT"));
  }
  const Outcome verify =
      Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify");
  EXPECT_EQ(verify.status, 1);
  EXPECT_THAT(verify.out, HasSubstr("UP TO THE DAMAGE"));
  EXPECT_THAT(verify.err, HasSubstr("torn tail in segment"));
  const Outcome replay = Shell(dir, "\"$ORDERWIRE\" replay --journal j");
  EXPECT_EQ(replay.status, 1);
  // Appending recovers it, and says so.
  const Outcome write = Shell(dir,
                              "\"$ORDERWIRE\" gen --count 1 | "
                              "\"$ORDERWIRE\" journal write --journal j");
  EXPECT_EQ(write.status, 0) << write.err;
  EXPECT_THAT(write.err, HasSubstr("torn tail cut off"));
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify").status, 0);
}

TEST(JournalCliTest, BadFlagCombinationsAreUsageErrors) {
  ScratchDir dir;
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" replay").status, 2);
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify --reports x")
                .status,
            2);
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" replay --journal j --json").status, 2);
  EXPECT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" journal write --journal j "
                  "--durability fast < /dev/null")
                .status,
            2);
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" journal frobnicate").status, 2);
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" journal inspect").status, 2);
  const Outcome help = Shell(dir, "\"$ORDERWIRE\" journal write --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: orderwire journal write"));
  const Outcome missing = Shell(dir, "\"$ORDERWIRE\" replay --journal nope");
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
}

// ---------------------------------------------------------------------------
// journal prune, a pruned journal, progress.

// No progress display when standard error is not a terminal: no carriage
// return, no escape sequence.
void ExpectNoProgress(const Outcome& outcome) {
  EXPECT_EQ(outcome.err.find('\r'), std::string::npos) << outcome.err;
  EXPECT_EQ(outcome.err.find('\033'), std::string::npos) << outcome.err;
}

// 200,000 records in 64 KiB segments.
void WriteManySegments(const ScratchDir& dir) {
  const Outcome write = Shell(dir,
                              "\"$ORDERWIRE\" gen --count 200000 | "
                              "\"$ORDERWIRE\" journal write --journal j "
                              "--durability none --segment-size 65536");
  ASSERT_EQ(write.status, 0) << write.err;
  ExpectNoProgress(write);
}

TEST(JournalCliTest, APrunedJournalIsInspectedVerifiedAndRefusedByReplay) {
  ScratchDir dir;
  WriteManySegments(dir);
  const Outcome prune = Shell(
      dir, "\"$ORDERWIRE\" journal prune --journal j --before-index 100000");
  ASSERT_EQ(prune.status, 0) << prune.err;
  ExpectNoProgress(prune);
  EXPECT_THAT(prune.out, HasSubstr("journal prune: removed j/" +
                                   SegmentFileName(1) + " (indexes 1.."));
  EXPECT_THAT(prune.out, HasSubstr("the journal now starts at index "));
  EXPECT_THAT(prune.out, HasSubstr("not all below 100000"));

  const Outcome inspect = Shell(dir, "\"$ORDERWIRE\" journal inspect j");
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_THAT(inspect.out, HasSubstr("first available index "));
  EXPECT_THAT(inspect.out, HasSubstr(" were pruned (start record written "));
  EXPECT_THAT(inspect.out, HasSubstr("..200000, ends cleanly"));

  const Outcome verify =
      Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify");
  ASSERT_EQ(verify.status, 0) << verify.err;
  ExpectNoProgress(verify);
  EXPECT_THAT(verify.out, HasSubstr("were pruned)"));
  EXPECT_THAT(verify.out, HasSubstr("final index 200000"));

  const Outcome replay = Shell(dir, "\"$ORDERWIRE\" replay --journal j");
  EXPECT_EQ(replay.status, 1);
  EXPECT_THAT(replay.err, HasSubstr(" were pruned, and replay cannot rebuild"));
  EXPECT_THAT(replay.err, HasSubstr("snapshot"));

  // Appending goes on after the pruned journal's end.
  const Outcome more = Shell(dir,
                             "\"$ORDERWIRE\" gen --count 100 | \"$ORDERWIRE\" "
                             "journal write --journal j --segment-size 65536");
  ASSERT_EQ(more.status, 0) << more.err;
  EXPECT_THAT(more.out, HasSubstr("(indexes 200001..200100)"));
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify").status, 0);
}

TEST(JournalCliTest, PruneArchivesAndRemovesOldSnapshots) {
  ScratchDir dir;
  WriteManySegments(dir);
  std::filesystem::create_directories(dir.Sub("j/snapshots"));
  for (const char* name :
       {"00000000000000000010.ows", "00000000000000199999.ows"}) {
    test_support::WriteFile(dir.Sub(std::string("j/snapshots/") + name),
                            std::vector<std::byte>(4));
  }
  const Outcome prune = Shell(dir,
                              "\"$ORDERWIRE\" journal prune --journal j "
                              "--before-index 50000 --archive old");
  ASSERT_EQ(prune.status, 0) << prune.err;
  EXPECT_THAT(prune.out,
              HasSubstr("journal prune: archived j/" + SegmentFileName(1)));
  EXPECT_THAT(prune.out, HasSubstr("to old/" + SegmentFileName(1)));
  EXPECT_THAT(prune.out, HasSubstr("removed snapshot j/snapshots/"
                                   "00000000000000000010.ows"));
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("old/" + SegmentFileName(1))));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("j/" + SegmentFileName(1))));
  EXPECT_TRUE(
      std::filesystem::exists(dir.Sub("j/snapshots/00000000000000199999.ows")));
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" replay --journal j --verify").status, 0);
}

TEST(JournalCliTest, PruneIsRefusedWhileAWriterHoldsTheJournal) {
  ScratchDir dir;
  WriteManySegments(dir);
  auto writer = JournalWriter::Open({.directory = dir.Sub("j"),
                                     .durability = Durability::kNone,
                                     .segment_size = 65536});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const Outcome prune = Shell(
      dir, "\"$ORDERWIRE\" journal prune --journal j --before-index 100000");
  EXPECT_EQ(prune.status, 1);
  EXPECT_THAT(prune.err,
              HasSubstr("cannot prune while another process appends"));
  EXPECT_THAT(prune.err, HasSubstr("another writer"));
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("j/" + SegmentFileName(1))));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("j/START")));
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" journal prune --journal j "
                  "--before-index 100000")
                .status,
            0);
}

TEST(JournalCliTest, PruneFlagsAreChecked) {
  ScratchDir dir;
  EXPECT_EQ(Shell(dir, "\"$ORDERWIRE\" journal prune --journal j").status, 2);
  EXPECT_EQ(Shell(dir,
                  "\"$ORDERWIRE\" journal prune --journal j "
                  "--before-index x")
                .status,
            2);
  const Outcome missing = Shell(
      dir, "\"$ORDERWIRE\" journal prune --journal nope --before-index 5");
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("nope")));
}

TEST(JournalCliTest, ProgressIsSilentWhenNotATerminal) {
  // The write of ProgressIsDrawnOnATerminal, which draws there: nothing of
  // it on standard error when that is a file.
  ScratchDir dir;
  const Outcome write = Shell(dir,
                              "\"$ORDERWIRE\" gen --count 1000000 | "
                              "\"$ORDERWIRE\" journal write --journal j "
                              "--durability batch");
  ASSERT_EQ(write.status, 0) << write.err;
  ExpectNoProgress(write);
  EXPECT_THAT(write.err, Not(HasSubstr("records/s")));
}

TEST(JournalCliTest, ProgressIsDrawnOnATerminal) {
  // script(1) gives the command a terminal. Where it is missing, skip. A
  // million records under batch take about a second here: several
  // refreshes.
  if (std::system("command -v script > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "script(1) is not installed";
  }
  ScratchDir dir;
  ASSERT_EQ(Shell(dir, "\"$ORDERWIRE\" gen --count 1000000 > in.bin").status,
            0);
  const Outcome write =
      Shell(dir,
            "script -qec '\"'\"$ORDERWIRE\"'\" journal write --journal j "
            "--durability batch < in.bin' /dev/null");
  ASSERT_EQ(write.status, 0) << write.err;
  EXPECT_THAT(write.out, HasSubstr("\rjournal write: "));
  EXPECT_THAT(write.out, HasSubstr(" records/s, "));
  EXPECT_THAT(write.out, HasSubstr("%, ETA "));
  EXPECT_THAT(write.out, HasSubstr("\r\033[K"));
}

}  // namespace
}  // namespace orderwire::journal
