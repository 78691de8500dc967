// A journal whose end is witnessed: the checkpoint (journal/checkpoint.h),
// segments truncated, deleted or missing, --accept-loss, and the writer
// lock that deleting a file cannot defeat. Every test here passed silently
// on the code before the checkpoint: the journal "ended cleanly".
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/checkpoint.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendRange;
using ::orderwire::journal::testing::BuildFormat1Journal;
using ::orderwire::journal::testing::OpenASecondWriter;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ReadFile;
using ::orderwire::test_support::ScratchDir;
using ::orderwire::test_support::WriteFile;
using ::testing::HasSubstr;

WriterOptions ReopenOptions(const std::string& dir, bool accept_loss = false) {
  return WriterOptions{.directory = dir,
                       .segment_size = std::uint64_t{64} * 1024,
                       .accept_loss = accept_loss,
                       .format_version = 1};
}

// Reads the whole journal: the records read and the final status.
struct Verdict {
  std::uint64_t records = 0;
  absl::Status status;
  std::vector<std::string> accepted;
};
Verdict ReadVerdict(const std::string& dir, bool accept_loss = false) {
  Verdict out;
  auto reader =
      JournalReader::Open(dir, ReaderOptions{.accept_loss = accept_loss});
  if (!reader.ok()) {
    out.status = reader.status();
    return out;
  }
  Record r;
  while ((*reader)->Next(r) == ReadResult::kRecord) ++out.records;
  out.status = (*reader)->status();
  out.accepted = (*reader)->accepted_losses();
  return out;
}

std::string CheckpointPath(const ScratchDir& dir) {
  return dir.Sub(std::string(kCheckpointFileName));
}

Checkpoint LoadCheckpoint(const ScratchDir& dir) {
  absl::StatusOr<std::optional<Checkpoint>> c = ReadCheckpoint(dir.path());
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c.ok() && c->has_value());
  return c.ok() && c->has_value() ? **c : Checkpoint{};
}

// Zeroes [from, end of file) keeping the file's size: a truncation the
// file's preallocated size does not show (truncate, then fallocate).
void ZeroFrom(const std::string& path, std::uint64_t from) {
  std::vector<std::byte> bytes = ReadFile(path);
  for (std::uint64_t i = from; i < bytes.size(); ++i) bytes[i] = std::byte{0};
  WriteFile(path, bytes);
}

// ---------------------------------------------------------------------------
// The checkpoint file.

TEST(CheckpointTest, EncodesAndDecodesByteForByte) {
  Checkpoint c{.journal_id = 0x0123456789ABCDEF,
               .written_ns = 1700000000000000000,
               .durable_index = 15,
               .group_first_index = 13,
               .segment_first_index = 1,
               .group_offset = 16384,
               .group_crc = 0xBD906360};
  std::byte bytes[kCheckpointSize];
  EncodeCheckpoint(c, bytes);
  // The layout docs/JOURNAL.md gives: magic, version 1, size 72, then the
  // fields in order, and the CRC32C of bytes 0..67 at 68.
  EXPECT_EQ(std::memcmp(bytes, "OWCHKPNT", 8), 0);
  EXPECT_EQ(codec::LoadLE<std::uint16_t>(bytes + 8), 1);
  EXPECT_EQ(codec::LoadLE<std::uint16_t>(bytes + 10), 72);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 16), c.journal_id);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 32), 15u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 40), 13u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 48), 1u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(bytes + 56), 16384u);
  EXPECT_EQ(codec::LoadLE<std::uint32_t>(bytes + 64), 0xBD906360u);
  absl::StatusOr<Checkpoint> back = DecodeCheckpoint(bytes, "x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->durable_index, 15u);
  EXPECT_EQ(back->group_crc, 0xBD906360u);
  // Every single bit flipped is refused, never crashes.
  for (std::size_t i = 0; i < kCheckpointSize * 8; ++i) {
    bytes[i / 8] ^= std::byte(1u << (i % 8));
    EXPECT_FALSE(DecodeCheckpoint(bytes, "x").ok()) << "bit " << i;
    bytes[i / 8] ^= std::byte(1u << (i % 8));
  }
  for (std::size_t n = 0; n < kCheckpointSize; ++n) {
    EXPECT_FALSE(DecodeCheckpoint({bytes, n}, "x").ok()) << n;
  }
}

TEST(CheckpointTest, ACleanCloseWitnessesTheLastGroup) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 20);
  const Checkpoint c = LoadCheckpoint(dir);
  EXPECT_EQ(c.durable_index, 20u);
  EXPECT_EQ(c.group_first_index, 20u);
  EXPECT_EQ(c.segment_first_index, 16u);  // the second segment
  EXPECT_EQ(c.group_offset, 4096u * 5);
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.records, 20u);
}

TEST(CheckpointTest, IsPublishedWhileAppendingAtABoundedRate) {
  SKIP_WITHOUT_URING();
  for (const std::uint32_t interval_ms : {1u, 3'600'000u}) {
    ScratchDir dir;
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .segment_size = std::uint64_t{64} * 1024,
                                       .checkpoint_interval_ms = interval_ms});
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ(LoadCheckpoint(dir).durable_index, 0u);  // written at Open
    AppendRange(**writer, 1, 100, 10);
    ASSERT_TRUE((*writer)->Flush().ok());
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
      (*writer)->Poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (interval_ms == 1) {
      // Published through the queue without Close.
      EXPECT_EQ(LoadCheckpoint(dir).durable_index, 100u);
      EXPECT_GE((*writer)->stats().checkpoints, 2u);
    } else {
      // Not yet: the first one after Open waits for the interval.
      EXPECT_EQ(LoadCheckpoint(dir).durable_index, 0u);
      EXPECT_EQ((*writer)->stats().checkpoints, 1u);
    }
    EXPECT_EQ((*writer)->stats().checkpoint_failures, 0u);
    ASSERT_TRUE((*writer)->Close().ok());
    EXPECT_EQ(LoadCheckpoint(dir).durable_index, 100u);
    EXPECT_FALSE(
        std::filesystem::exists(dir.Sub(std::string(kCheckpointTempFileName))));
  }
}

TEST(CheckpointTest, AJournalWithoutOneIsAcceptedAndGetsOne) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 5);
  std::filesystem::remove(CheckpointPath(dir));  // as older code left it
  EXPECT_TRUE(ReadVerdict(dir.path()).status.ok());
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().checkpoint_missing);
  EXPECT_EQ(LoadCheckpoint(dir).durable_index, 5u);
}

TEST(CheckpointTest, ADamagedOneIsRefusedUnlessTheLossIsAccepted) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 5);
  std::vector<std::byte> bytes = ReadFile(CheckpointPath(dir));
  bytes[33] ^= std::byte{0x01};  // durable_index
  WriteFile(CheckpointPath(dir), bytes);
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("checkpoint " + CheckpointPath(dir) +
                        " is damaged: checksum mismatch"));
  EXPECT_FALSE(JournalWriter::Open(ReopenOptions(dir.path())).ok());
  auto writer = JournalWriter::Open(ReopenOptions(dir.path(), true));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().loss_accepted);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(LoadCheckpoint(dir).durable_index, 5u);  // re-based
  EXPECT_TRUE(ReadVerdict(dir.path()).status.ok());
}

TEST(CheckpointTest, OneOfAnotherJournalIsRefused) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 5);
  Checkpoint c = LoadCheckpoint(dir);
  c.journal_id ^= 1;
  std::byte bytes[kCheckpointSize];
  EncodeCheckpoint(c, bytes);
  WriteFile(CheckpointPath(dir), {bytes, kCheckpointSize});
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("checkpoint belongs to another journal"));
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr("another journal"));
}

// ---------------------------------------------------------------------------
// Records that were durable and are gone.

TEST(IntegrityTest, TheLastSegmentCutAtAGroupBoundaryIsDataLoss) {
  // Groups 13..15 of the only segment zeroed: to the segment format alone
  // that is a clean end after index 12.
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 15);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  ZeroFrom(segment, std::uint64_t{4096} * 13);
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_EQ(read.records, 12u);
  ASSERT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("the journal ends at index 12, but its checkpoint"));
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("records 13..15 are missing; segment " + segment +
                        " was cut short"));
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(writer.status().message()), HasSubstr("13..15"));

  // Accepted: proceeds from index 12, says what was lost, and the next
  // start is clean (the checkpoint was re-based).
  const Verdict accepted = ReadVerdict(dir.path(), true);
  EXPECT_TRUE(accepted.status.ok());
  ASSERT_EQ(accepted.accepted.size(), 1u);
  auto accepting = JournalWriter::Open(ReopenOptions(dir.path(), true));
  ASSERT_TRUE(accepting.ok()) << accepting.status();
  EXPECT_TRUE((*accepting)->recovery().loss_accepted);
  EXPECT_THAT((*accepting)->recovery().loss_message, HasSubstr("13..15"));
  EXPECT_EQ((*accepting)->last_index(), 12u);
  ASSERT_TRUE((*accepting)->Close().ok());
  EXPECT_TRUE(JournalWriter::Open(ReopenOptions(dir.path())).ok());
}

TEST(IntegrityTest, TheLastSegmentDeletedIsDataLossNamingTheFile) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 40);  // segments from 1, 16 and 31
  const auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 3u);
  std::filesystem::remove(paths[2]);
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_EQ(read.records, 30u);
  ASSERT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("records 31..40 are missing; segment file " +
                        SegmentFileName(31)));
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr(SegmentFileName(31)));

  auto accepting = JournalWriter::Open(ReopenOptions(dir.path(), true));
  ASSERT_TRUE(accepting.ok()) << accepting.status();
  EXPECT_EQ((*accepting)->last_index(), 30u);
  EXPECT_THAT((*accepting)->recovery().loss_message, HasSubstr("31..40"));
  ASSERT_TRUE((*accepting)->Close().ok());
  EXPECT_TRUE(ReadVerdict(dir.path()).status.ok());
}

TEST(IntegrityTest, EverySegmentDeletedIsDataLoss) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 20);
  for (const std::string& path : SegmentPaths(dir.path())) {
    std::filesystem::remove(path);
  }
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr("records 1..20 are missing"));
  auto accepting = JournalWriter::Open(ReopenOptions(dir.path(), true));
  ASSERT_TRUE(accepting.ok()) << accepting.status();
  EXPECT_TRUE((*accepting)->recovery().loss_accepted);
  EXPECT_EQ((*accepting)->last_index(), 0u);
}

TEST(IntegrityTest, AMiddleSegmentDeletedIsRefusedByTheWriter) {
  // Five segments: the one deleted is not among the last two, which is all
  // recovery used to read.
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 70);
  const auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 5u);
  std::filesystem::remove(paths[1]);
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr("records 16..30 (segment file " + SegmentFileName(16) +
                        ") are missing"));
  // Accepted: the journal keeps 1..15; the later segments are set aside.
  auto accepting = JournalWriter::Open(ReopenOptions(dir.path(), true));
  ASSERT_TRUE(accepting.ok()) << accepting.status();
  EXPECT_EQ((*accepting)->last_index(), 15u);
  EXPECT_TRUE(std::filesystem::exists(paths[4] + ".lost"));
  ASSERT_TRUE((*accepting)->Close().ok());
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.records, 15u);
}

TEST(IntegrityTest, AMiddleSegmentTruncatedBelowItsCapacityIsRefused) {
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 70);
  const auto paths = SegmentPaths(dir.path());
  // Its last group whole, only its padding cut.
  std::filesystem::resize_file(paths[1], 4096 * 15 + 200);
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr(paths[1] + ": the file is 61640 bytes"));
  // The same file cut at its last group boundary.
  std::filesystem::resize_file(paths[1], std::uintmax_t{4096} * 15);
  EXPECT_THAT(std::string(ReadVerdict(dir.path()).status.message()),
              HasSubstr(paths[1] + ": the file is 61440 bytes, shorter than "
                                   "the 65536 bytes its header promises"));
  auto writer = JournalWriter::Open(ReopenOptions(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()), HasSubstr(paths[1]));
}

TEST(IntegrityTest, AJournalRewrittenUnderTheCheckpointIsDataLoss) {
  // What two writers at once leave: the group the checkpoint names holds
  // other records (the same indexes, another checksum).
  ScratchDir dir;
  BuildFormat1Journal(dir.path(), 10);
  const Checkpoint witnessed = LoadCheckpoint(dir);
  ScratchDir other;
  {
    auto writer = JournalWriter::Open({.directory = other.path(),
                                       .durability = Durability::kSync,
                                       .segment_size = std::uint64_t{64} * 1024,
                                       .group_size = 8192,
                                       .format_version = 1});
    ASSERT_TRUE(writer.ok());
    AppendRange(**writer, 1, 10, 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  // The other journal's segment, with this journal's id, in its place.
  std::vector<std::byte> mine = ReadFile(SegmentPaths(dir.path()).at(0));
  std::vector<std::byte> theirs = ReadFile(SegmentPaths(other.path()).at(0));
  std::copy(mine.begin(), mine.begin() + 4096, theirs.begin());
  // Rewrite group 10's session id and checksum as another writer would.
  const std::uint64_t at = std::uint64_t{4096} * 10;
  codec::StoreLE(&theirs[at + kGroupHeaderSize + kRecordSessionIdOffset],
                 std::uint32_t{99});
  const auto h = LoadStruct<kGroupHeaderLayout, GroupHeader>(&theirs[at]);
  const std::size_t covered = kGroupHeaderSize + h.records_bytes;
  codec::StoreLE(&theirs[at + covered], Crc32c({&theirs[at], covered}));
  WriteFile(SegmentPaths(dir.path()).at(0), theirs);
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      std::string(read.status.message()),
      HasSubstr(absl::StrFormat("checksum 0x%08x", witnessed.group_crc)));
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("overwritten"));
  EXPECT_FALSE(JournalWriter::Open(ReopenOptions(dir.path())).ok());
}

// ---------------------------------------------------------------------------
// The writer lock.

TEST(LockTest, DeletingTheLockFileDoesNotLetASecondWriterIn) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto first = JournalWriter::Open({.directory = dir.path()});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(std::filesystem::remove(dir.Sub(std::string(kLockFileName))));
  auto second = JournalWriter::Open({.directory = dir.path()});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("open for appending by another writer"));
}

TEST(LockTest, ASecondProcessIsRefusedNamingTheHolder) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto first = JournalWriter::Open({.directory = dir.path()});
  ASSERT_TRUE(first.ok()) << first.status();
  std::filesystem::remove(dir.Sub(std::string(kLockFileName)));
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto second = JournalWriter::Open({.directory = dir.path()});
    const std::string message =
        second.ok() ? "opened" : std::string(second.status().message());
    (void)!::write(fds[1], message.data(), message.size());
    ::_exit(second.ok() ? 1 : 0);
  }
  ::close(fds[1]);
  char text[512] = {};
  std::size_t got = 0;
  ssize_t n;
  while ((n = ::read(fds[0], text + got, sizeof(text) - 1 - got)) > 0) {
    got += static_cast<std::size_t>(n);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_THAT(std::string(text), HasSubstr("another writer"));
  ASSERT_TRUE((*first)->Close().ok());
  // Once the first is closed, a writer opens.
  EXPECT_TRUE(JournalWriter::Open({.directory = dir.path()}).ok());
}

TEST(LockTest, TheLockFileNamesTheWritersPid) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  std::string refusal;
  ASSERT_NO_FATAL_FAILURE(OpenASecondWriter(dir.path(), &refusal));
  EXPECT_THAT(refusal, HasSubstr(absl::StrFormat("says pid %d", ::getpid())));
}

TEST(LockTest, AReaderRunsBesideAWriter) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .checkpoint_interval_ms = 1});
  ASSERT_TRUE(writer.ok());
  AppendRange(**writer, 1, 50, 5);
  ASSERT_TRUE((*writer)->Flush().ok());
  const Verdict read = ReadVerdict(dir.path());
  EXPECT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.records, 50u);
}

}  // namespace
}  // namespace orderwire::journal
