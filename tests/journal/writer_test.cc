// JournalWriter: round trips in every durability mode and I/O path, segment
// rotation, back-pressure, durable-index reporting, and I/O errors.
#include "journal/writer.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/internal/io_queue.h"
#include "journal/reader.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendRange;
using ::orderwire::journal::testing::FaultRule;
using ::orderwire::journal::testing::FrameFor;
using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::OpenASecondWriter;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ScratchDir;
using ::testing::HasSubstr;

bool UringAvailable() { return internal::ProbeIoUring().ok(); }

// ---------------------------------------------------------------------------
// Round trips in every mode.

struct Mode {
  Durability durability;
  SyncMethod method;
  IoBackend backend;
};

std::string ModeName(const ::testing::TestParamInfo<Mode>& info) {
  const Mode& m = info.param;
  return absl::StrFormat(
      "%s_%s_%s", Name(m.durability),
      m.method == SyncMethod::kDirectDsync ? "Dsync"
      : m.method == SyncMethod::kFdatasync ? "Fdatasync"
                                           : "Auto",
      m.backend == IoBackend::kBlocking ? "Blocking" : "Uring");
}

class WriterModeTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (GetParam().backend == IoBackend::kIoUring && !UringAvailable()) {
      GTEST_SKIP() << internal::ProbeIoUring().message();
    }
    ScratchDir probe;
    if (GetParam().method == SyncMethod::kDirectDsync &&
        !testing::DirectIoSupported(probe.path())) {
      GTEST_SKIP() << "the file system of " << probe.path()
                   << " does not support O_DIRECT";
    }
  }
  [[nodiscard]] WriterOptions Options(const std::string& dir) const {
    WriterOptions o;
    o.directory = dir;
    o.durability = GetParam().durability;
    o.sync_method = GetParam().method;
    o.backend = GetParam().backend;
    return o;
  }
};

TEST_P(WriterModeTest, RoundTripsEveryRecordExactly) {
  ScratchDir dir;
  auto writer = JournalWriter::Open(Options(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().created);
  AppendRange(**writer, 1, 3000, 7);
  ASSERT_TRUE((*writer)->Flush().ok()) << (*writer)->status();
  EXPECT_EQ((*writer)->durable_index(), 3000u);
  EXPECT_EQ((*writer)->last_index(), 3000u);
  ASSERT_TRUE((*writer)->Close().ok());

  const auto back = ReadAndCheck(dir.path(), 7);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 3000u);
}

TEST_P(WriterModeTest, RoundTripsAcrossManySegmentsAndRotationBoundaries) {
  ScratchDir dir;
  WriterOptions o = Options(dir.path());
  o.segment_size =
      std::uint64_t{64} * 1024;  // the smallest: rotate every ~850 records
  o.group_size = 8 * 1024;
  auto writer = JournalWriter::Open(o);
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendRange(**writer, 1, 12000, 13);
  ASSERT_TRUE((*writer)->Close().ok()) << (*writer)->status();
  EXPECT_GE((*writer)->stats().rotations, 10u);

  const auto back = ReadAndCheck(dir.path(), 13);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 12000u);
  // Each segment starts where the previous ended, and its name says so.
  ASSERT_GE(back.segments.size(), 11u);
  std::uint64_t next = 1;
  for (const SegmentInfo& s : back.segments) {
    EXPECT_EQ(s.header.first_index, next);
    EXPECT_THAT(s.path, HasSubstr(SegmentFileName(next)));
    EXPECT_GT(s.records, 0u);
    EXPECT_LE(s.data_end, s.header.capacity);
    next = s.last_index + 1;
  }
  EXPECT_EQ(next, 12001u);
}

TEST_P(WriterModeTest, ReopeningContinuesTheIndexInTheSameSegment) {
  ScratchDir dir;
  {
    auto writer = JournalWriter::Open(Options(dir.path()));
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 500, 10);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  {
    auto writer = JournalWriter::Open(Options(dir.path()));
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_FALSE((*writer)->recovery().created);
    EXPECT_FALSE((*writer)->recovery().torn_tail);
    EXPECT_EQ((*writer)->recovery().last_index, 500u);
    EXPECT_EQ((*writer)->durable_index(), 500u);
    AppendRange(**writer, 501, 500, 10);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
  const auto back = ReadAndCheck(dir.path(), 10);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 1000u);
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, WriterModeTest,
    ::testing::Values(
        Mode{Durability::kNone, SyncMethod::kAuto, IoBackend::kIoUring},
        Mode{Durability::kBatch, SyncMethod::kDirectDsync, IoBackend::kIoUring},
        Mode{Durability::kBatch, SyncMethod::kFdatasync, IoBackend::kIoUring},
        Mode{Durability::kSync, SyncMethod::kDirectDsync, IoBackend::kIoUring},
        Mode{Durability::kSync, SyncMethod::kFdatasync, IoBackend::kIoUring},
        Mode{Durability::kNone, SyncMethod::kAuto, IoBackend::kBlocking},
        Mode{Durability::kBatch, SyncMethod::kDirectDsync,
             IoBackend::kBlocking},
        Mode{Durability::kBatch, SyncMethod::kFdatasync, IoBackend::kBlocking}),
    ModeName);

// ---------------------------------------------------------------------------
// Durability reporting.

TEST(WriterTest, SyncModeRecordsAreDurableWhenAppendReturns) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer = JournalWriter::Open(
      {.directory = dir.path(), .durability = Durability::kSync});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (std::uint64_t i = 1; i <= 50; ++i) {
    const auto frame = FrameFor(i);
    ASSERT_EQ((*writer)->Append(frame, 1, 1), AppendStatus::kOk);
    EXPECT_EQ((*writer)->durable_index(), i);
  }
  EXPECT_EQ((*writer)->stats().groups, 50u);
}

// The id a snapshot names its journal by: the one in every segment header,
// the same after a reopen, and different for another journal.
TEST(WriterTest, JournalIdIsTheSegmentHeadersAndSurvivesReopening) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  std::uint64_t id = 0;
  {
    auto writer = JournalWriter::Open({.directory = dir.path()});
    ASSERT_TRUE(writer.ok()) << writer.status();
    id = (*writer)->journal_id();
    EXPECT_NE(id, 0u);
    ASSERT_EQ((*writer)->Append(FrameFor(1), 1, 1), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  auto reader = JournalReader::Open(dir.path());
  ASSERT_TRUE(reader.ok()) << reader.status();
  Record record;
  ASSERT_EQ((*reader)->Next(record), ReadResult::kRecord);
  EXPECT_EQ((*reader)->segments().front().header.journal_id, id);
  auto reopened = JournalWriter::Open({.directory = dir.path()});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->journal_id(), id);
  ScratchDir other;
  auto another = JournalWriter::Open({.directory = other.path()});
  ASSERT_TRUE(another.ok()) << another.status();
  EXPECT_NE((*another)->journal_id(), id);
}

TEST(WriterTest, BatchModeGroupsManyAppendsAndReachesTheLastIndexOnFlush) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path()});
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::uint64_t previous = 0;
  for (std::uint64_t i = 1; i <= 5000; ++i) {
    const auto frame = FrameFor(i);
    AppendStatus st;
    while ((st = (*writer)->Append(frame, 1, 1)) == AppendStatus::kFull) {
      ASSERT_TRUE((*writer)->Wait().ok());
    }
    ASSERT_EQ(st, AppendStatus::kOk);
    const std::uint64_t durable = (*writer)->Poll();
    EXPECT_GE(durable, previous);  // never goes back
    EXPECT_LE(durable, i);         // never ahead of what was appended
    previous = durable;
  }
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ((*writer)->durable_index(), 5000u);
  // Group commit: far fewer groups (syncs) than appends.
  EXPECT_LT((*writer)->stats().groups, 1000u);
  EXPECT_EQ((*writer)->durable_latency().count(), (*writer)->stats().groups);
}

// Records, for every completion the writer sees, the op, its result and the
// durable index at that moment (before the writer handles it).
struct CompletionLog {
  struct Entry {
    internal::IoOp op;
    std::int32_t result;
    std::uint64_t durable_before;
  };
  std::vector<Entry> entries;
  const JournalWriter* writer = nullptr;
};

TEST(WriterTest, NeverCountsAGroupDurableBeforeItsWriteAndSyncComplete) {
  SKIP_WITHOUT_URING();
  for (const SyncMethod method :
       {SyncMethod::kDirectDsync, SyncMethod::kFdatasync}) {
    ScratchDir dir;
    if (method == SyncMethod::kDirectDsync &&
        !testing::DirectIoSupported(dir.path())) {
      continue;  // no O_DIRECT on this file system
    }
    CompletionLog log;
    FaultRule rule([&](const internal::IoOp& op, std::int32_t result) {
      log.entries.push_back({op, result, log.writer->durable_index()});
      return result;
    });
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .group_size = 8192,
                                       .sync_method = method,
                                       .faults = &rule});
    ASSERT_TRUE(writer.ok()) << writer.status();
    log.writer = writer->get();
    AppendRange(**writer, 1, 4000, 9);
    ASSERT_TRUE((*writer)->Close().ok());

    // The last index and end offset of each group in the segment.
    const std::string segment = SegmentPaths(dir.path()).at(0);
    const std::vector<std::byte> bytes = test_support::ReadFile(segment);
    struct Group {
      std::uint64_t offset, end, last;
    };
    std::vector<Group> groups;
    // Packed groups (format versions 2, 3): the next starts at the first
    // 8-byte boundary after this one's trailer.
    for (const testing::GroupAt& g : testing::WalkGroups(bytes)) {
      groups.push_back(
          {g.offset, g.end, g.header.first_index + g.header.record_count - 1});
    }
    ASSERT_GT(groups.size(), 10u);
    // For each group: the first moment durable >= its last index comes
    // after its write completed in full and (fdatasync) after a sync.
    std::size_t checked = 0;
    for (const Group& g : groups) {
      std::optional<std::size_t> write_done;
      std::optional<std::size_t> durable_at;
      for (std::size_t i = 0; i < log.entries.size(); ++i) {
        const auto& e = log.entries[i];
        if (!durable_at && e.durable_before >= g.last) durable_at = i;
        // The write that put the group's last bytes down (under O_DIRECT
        // it starts at the group's block and ends on a block boundary).
        if (!write_done && e.op.code == internal::OpCode::kWrite &&
            e.op.offset >= g.offset / kBlockSize * kBlockSize &&
            e.op.offset < g.end && e.op.offset + e.op.length >= g.end &&
            e.result == static_cast<std::int32_t>(e.op.length)) {
          write_done = i;
        }
      }
      if (!durable_at) continue;  // became durable after the last completion
      ASSERT_TRUE(write_done.has_value()) << "group at " << g.offset;
      EXPECT_LT(*write_done, *durable_at) << "group at " << g.offset;
      if (method == SyncMethod::kFdatasync) {
        bool synced = false;
        for (std::size_t i = *write_done; i < *durable_at; ++i) {
          synced |= log.entries[i].op.code == internal::OpCode::kFdatasync &&
                    log.entries[i].result == 0;
        }
        EXPECT_TRUE(synced) << "group at " << g.offset;
      }
      ++checked;
    }
    EXPECT_GT(checked, 10u);
  }
}

// ---------------------------------------------------------------------------
// Append contract.

TEST(WriterTest, AppendRejectsPartialFramesReportsAndEmptyInputAtomically) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path()});
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::vector<std::byte> frames = FramesFor(1, 3);
  // A partial last frame.
  EXPECT_EQ((*writer)->Append({frames.data(), frames.size() - 1}, 1, 1),
            AppendStatus::kInvalidFrame);
  // An unknown kind in the middle.
  std::vector<std::byte> bad = frames;
  bad[FrameFor(1).size() + codec::kKindOffset] = std::byte{0x7F};
  EXPECT_EQ((*writer)->Append(bad, 1, 1), AppendStatus::kInvalidFrame);
  // A report kind (Accepted) is not journaled.
  std::vector<std::byte> report(55);
  report[codec::kKindOffset] = std::byte{0x41};
  EXPECT_EQ((*writer)->Append(report, 1, 1), AppendStatus::kInvalidFrame);
  EXPECT_EQ((*writer)->Append({}, 1, 1), AppendStatus::kInvalidFrame);
  EXPECT_EQ((*writer)->last_index(), 0u);
  // A whole batch still goes in, as records 1..3.
  EXPECT_EQ((*writer)->Append(frames, 1, 1), AppendStatus::kOk);
  EXPECT_EQ((*writer)->last_index(), 3u);
}

TEST(WriterTest, AppendRefusesMoreThanOneGroupOfRecords) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer =
      JournalWriter::Open({.directory = dir.path(), .group_size = 8192});
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->max_append_bytes(), 8192u - kGroupOverhead);
  // 47-byte frames make 71-byte records: 114 fit in 8152 bytes, 115 do not.
  std::vector<std::byte> frames;
  for (int i = 0; i < 115; ++i) {
    const auto f = FrameFor(5);  // NewLimit
    frames.insert(frames.end(), f.begin(), f.end());
  }
  EXPECT_EQ((*writer)->Append(frames, 1, 1), AppendStatus::kTooLarge);
  EXPECT_EQ((*writer)->Append({frames.data(), std::size_t{114} * 47}, 1, 1),
            AppendStatus::kOk);
  EXPECT_EQ((*writer)->last_index(), 114u);
}

TEST(WriterTest, AppendAnswersFullInsteadOfBlockingAndLosesNothing) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kBatch,
                                     .group_size = 8192,
                                     .slots = 2});
  ASSERT_TRUE(writer.ok()) << writer.status();
  // Fill groups without ever polling: with two buffers the writer soon has
  // none free and must say so.
  std::uint64_t next = 1;
  int full = 0;
  while (next <= 2000) {
    const auto frames = FramesFor(next, 10);
    const AppendStatus st = (*writer)->Append(frames, testing::SessionFor(next),
                                              testing::TimeFor(next));
    if (st == AppendStatus::kFull) {
      ++full;
      ASSERT_TRUE((*writer)->Wait().ok());
      continue;
    }
    ASSERT_EQ(st, AppendStatus::kOk);
    next += 10;
  }
  EXPECT_GT(full, 0);
  EXPECT_EQ((*writer)->stats().full, static_cast<std::uint64_t>(full));
  ASSERT_TRUE((*writer)->Close().ok());
  const auto back = ReadAndCheck(dir.path(), 0);
  EXPECT_EQ(back.records, 2000u);
  EXPECT_EQ(back.end, ReadResult::kEnd);
}

TEST(WriterTest, ASecondWriterOnTheSameJournalIsRefused) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  std::string refusal;
  ASSERT_NO_FATAL_FAILURE(OpenASecondWriter(dir.path(), &refusal));
  EXPECT_THAT(refusal, HasSubstr("another writer"));
}

TEST(WriterTest, CloseLeavesOnlySegmentsLockCheckpointAndDurable) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .group_size = 8192});
  ASSERT_TRUE(writer.ok());
  AppendRange(**writer, 1, 2000, 20);
  ASSERT_TRUE((*writer)->Close().ok());
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(ParseSegmentFileName(name).has_value() || name == "LOCK" ||
                name == kCheckpointFileName || name == kDurableFileName)
        << name;
  }
}

TEST(WriterTest, RejectsBadOptions) {
  ScratchDir dir;
  EXPECT_EQ(JournalWriter::Open({.directory = ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(JournalWriter::Open({.directory = dir.path(), .segment_size = 4096})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(JournalWriter::Open({.directory = dir.path(), .slots = 1})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseDurability("fast").ok());
  EXPECT_EQ(*ParseDurability("batch"), Durability::kBatch);
}

// ---------------------------------------------------------------------------
// I/O errors, retries, short writes.

TEST(WriterTest, RetriesEagainAndCompletesShortWrites) {
  SKIP_WITHOUT_URING();
  for (const SyncMethod method :
       {SyncMethod::kDirectDsync, SyncMethod::kFdatasync}) {
    ScratchDir dir;
    if (method == SyncMethod::kDirectDsync &&
        !testing::DirectIoSupported(dir.path())) {
      continue;  // no O_DIRECT on this file system
    }
    // Every write longer than a block is faulted in turn (short, as is,
    // EAGAIN): 100 records per append make every group write longer than
    // a block however the appends fall into groups (a group commit that
    // seals one append per group, as a slow run under a sanitizer does,
    // included), so both faults happen whatever the timing.
    int n = 0;
    FaultRule rule([&](const internal::IoOp& op, std::int32_t result) {
      if (op.code != internal::OpCode::kWrite || op.length <= 4096) {
        return result;
      }
      ++n;
      if (n % 3 == 0) return -EAGAIN;
      if (n % 3 == 1) return static_cast<std::int32_t>(op.length / 2 + 100);
      return result;
    });
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .group_size = 16384,
                                       .sync_method = method,
                                       .faults = &rule});
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendRange(**writer, 1, 3000, 100);
    ASSERT_TRUE((*writer)->Close().ok()) << (*writer)->status();
    EXPECT_GT((*writer)->stats().retries, 0u);
    EXPECT_GT((*writer)->stats().short_writes, 0u);
    const auto back = ReadAndCheck(dir.path(), 100);
    EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
    EXPECT_EQ(back.records, 3000u);
  }
}

TEST(WriterTest, AWriteErrorStopsTheWriterNamingFileOffsetAndErrno) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  // The third group's write fails with EIO; the groups after it succeed,
  // yet the writer must never count them durable.
  int groups = 0;
  FaultRule rule([&](const internal::IoOp& op, std::int32_t result) {
    if (op.code == internal::OpCode::kWrite && op.offset >= kFirstGroupOffset &&
        op.length >= 4096 && ++groups == 3) {
      return -EIO;
    }
    return result;
  });
  auto writer = JournalWriter::Open(
      {.directory = dir.path(), .group_size = 8192, .faults = &rule});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const auto& w = **writer;
  std::uint64_t next = 1;
  AppendStatus st = AppendStatus::kOk;
  while (next < 3000 && st != AppendStatus::kFailed) {
    const auto frames = FramesFor(next, 100);  // > one group's worth / 2
    st = (*writer)->Append(frames, 1, 1);
    if (st == AppendStatus::kOk) next += 100;
    if (st == AppendStatus::kFull) (void)(*writer)->Wait();
    (*writer)->Poll();
  }
  const absl::Status flushed = (*writer)->Flush();
  ASSERT_FALSE(flushed.ok());
  const std::string message(flushed.message());
  EXPECT_THAT(message, HasSubstr(SegmentPaths(dir.path()).at(0)));
  EXPECT_THAT(message, HasSubstr("offset "));
  EXPECT_THAT(message, HasSubstr("errno 5"));
  EXPECT_THAT(message, HasSubstr("stopped"));
  EXPECT_EQ((*writer)->Append(FrameFor(next), 1, 1), AppendStatus::kFailed);
  // Durable stops before the failed (third) group, whatever came after.
  EXPECT_LE(w.durable_index(), 200u);
  EXPECT_LT(w.durable_index(), w.last_index());
  const std::uint64_t durable = w.durable_index();
  (void)(*writer)->Close();
  // What it said was durable is in the journal.
  auto reader = JournalReader::Open(dir.path());
  ASSERT_TRUE(reader.ok());
  Record r;
  std::uint64_t read = 0;
  while ((*reader)->Next(r) == ReadResult::kRecord) ++read;
  EXPECT_GE(read, durable);
}

TEST(WriterTest, AnFdatasyncErrorStopsTheWriter) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  FaultRule rule([&](const internal::IoOp& op, std::int32_t result) {
    return op.code == internal::OpCode::kFdatasync ? -EIO : result;
  });
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .sync_method = SyncMethod::kFdatasync,
                                     .faults = &rule});
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_EQ((*writer)->Append(FrameFor(1), 1, 1), AppendStatus::kOk);
  const absl::Status s = (*writer)->Flush();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("fdatasync failed"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("errno 5"));
  EXPECT_EQ((*writer)->durable_index(), 0u);
}

// A real short write and a real error: the file-size limit cuts a write
// short (the kernel writes up to the limit) and fails the next with EFBIG.
// Runs in a child so that the limit does not outlive the test.
TEST(WriterTest, ARealShortWriteIsCompletedAndEfbigStopsTheWriter) {
  SKIP_WITHOUT_URING();
  for (const Durability durability : {Durability::kNone, Durability::kBatch}) {
    ScratchDir dir;
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto writer = JournalWriter::Open({.directory = dir.path(),
                                         .durability = durability,
                                         .segment_size = 1 << 20,
                                         .group_size = 16384});
      if (!writer.ok()) ::_exit(10);
      ::signal(SIGXFSZ, SIG_IGN);
      // 250 frames (about 14.4 KB of records) fill one 16 KiB group: groups
      // start at 4096, 20480, ...; a limit inside the second group writes
      // part of it, then fails the rest.
      rlimit limit{20480 + 6144, 20480 + 6144};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(11);
      std::uint64_t next = 1;
      for (int i = 0; i < 1000 && !(*writer)->failed(); ++i) {
        const auto frames = FramesFor(next, 250);
        const AppendStatus st = (*writer)->Append(frames, 1, 1);
        if (st == AppendStatus::kOk) next += 250;
        (void)(*writer)->Wait();
      }
      (void)(*writer)->Flush();
      const std::string message((*writer)->status().message());
      const bool ok = (*writer)->failed() &&
                      message.find("errno 27") != std::string::npos &&
                      message.find("offset ") != std::string::npos &&
                      (*writer)->stats().short_writes > 0 &&
                      (*writer)->durable_index() > 0 &&
                      (*writer)->durable_index() < (*writer)->last_index();
      if (!ok) {
        std::fprintf(stderr, "status: %s short=%d durable=%d last=%d\n",
                     message.c_str(),
                     static_cast<int>((*writer)->stats().short_writes),
                     static_cast<int>((*writer)->durable_index()),
                     static_cast<int>((*writer)->last_index()));
      }
      ::_exit(ok ? 0 : 12);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << Name(durability);
  }
}

TEST(WriterTest, TheBlockingFallbackSaysSoAndWorks) {
  ScratchDir dir;
  auto writer = JournalWriter::Open(
      {.directory = dir.path(), .backend = IoBackend::kBlocking});
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_THAT((*writer)->io_description(), HasSubstr("blocking"));
  AppendRange(**writer, 1, 100, 3);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadAndCheck(dir.path(), 3).records, 100u);
}

TEST(WriterTest, DescribesItsIoPath) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  auto batch = JournalWriter::Open({.directory = dir.path()});
  ASSERT_TRUE(batch.ok());
  EXPECT_THAT((*batch)->io_description(), HasSubstr("io_uring"));
  EXPECT_THAT((*batch)->io_description(),
              HasSubstr(testing::DirectIoSupported(dir.path())
                            ? "O_DIRECT writes with RWF_DSYNC"
                            : "a linked fdatasync"));
}

}  // namespace
}  // namespace orderwire::journal

namespace orderwire::journal {
namespace {

// Record flags are the caller's: the journal stores every bit verbatim and
// gives none a meaning (the service defines them, state/record_flags.h).
TEST(WriterTest, RecordFlagsAreWrittenAndReadBackVerbatim) {
  constexpr std::uint32_t kSomeFlag = 1;
  constexpr std::uint32_t kEveryBit = 0xFFFF'FFFF;
  constexpr std::uint32_t kHighBits = 0xA5A5'0000;
  test_support::ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kNone,
                                     .backend = IoBackend::kBlocking});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<std::byte> frame = testing::FrameFor(1);
  ASSERT_EQ((*writer)->Append(frame, 7, 100, 0), AppendStatus::kOk);
  ASSERT_EQ((*writer)->Append(frame, 7, 101, kSomeFlag), AppendStatus::kOk);
  ASSERT_EQ((*writer)->Append(frame, 8, 102, kEveryBit), AppendStatus::kOk);
  ASSERT_EQ((*writer)->Append(frame, 9, 103, kHighBits), AppendStatus::kOk);
  ASSERT_TRUE((*writer)->Close().ok());
  auto reader = JournalReader::Open(dir.path());
  ASSERT_TRUE(reader.ok()) << reader.status();
  Record r;
  ASSERT_EQ((*reader)->Next(r), ReadResult::kRecord);
  EXPECT_EQ(r.flags, 0u);
  ASSERT_EQ((*reader)->Next(r), ReadResult::kRecord);
  EXPECT_EQ(r.flags, kSomeFlag);
  EXPECT_EQ(r.session_id, 7u);
  EXPECT_EQ(r.receive_ns, 101u);
  ASSERT_EQ((*reader)->Next(r), ReadResult::kRecord);
  EXPECT_EQ(r.flags, kEveryBit);
  EXPECT_EQ(r.session_id, 8u);
  ASSERT_EQ((*reader)->Next(r), ReadResult::kRecord);
  EXPECT_EQ(r.flags, kHighBits);
  EXPECT_EQ(r.session_id, 9u);
  EXPECT_EQ((*reader)->Next(r), ReadResult::kEnd);
  // Recovery takes them as they are too.
  reader->reset();
  auto reopened = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kNone,
                                       .backend = IoBackend::kBlocking});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->last_index(), 4u);
  EXPECT_FALSE((*reopened)->recovery().torn_tail);
}

}  // namespace
}  // namespace orderwire::journal
