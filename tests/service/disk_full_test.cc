// The service on a full disk, end to end (docs/SERVICE.md "Disk full"): a
// Service with 256 KiB journal segments on a small ext4 file system of its
// own (a file mounted through a loop device), the go-back-N client offering
// load on one session, the disk filled with a ballast file. The test checks
// that the service keeps running and answers Busy, that everything it
// journaled is durable while it is full, that it resumes by itself once the
// ballast is removed, that the client finishes with every command
// acknowledged, and that the journal holds each command exactly once,
// verbatim, in sequence order. A second test, on a small tmpfs with a raw
// client, checks the Busy frame itself (its expected sequence and cause, its
// repetition) and that duplicates are still answered while the disk is
// full. Skip where mounting is not permitted.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "client/run_client.h"
#include "codec/frame.h"
#include "codec/types.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "service/service.h"
#include "state/pinned_config.h"
#include "tests/support/bytes.h"
#include "tests/support/service_harness.h"
#include "tests/support/small_filesystem.h"

namespace orderwire::service {
namespace {

using state::EncodePinnedConfig;
using state::PinnedConfigOf;

using test_support::Bytes;
using test_support::Frame;
using test_support::Hex;
using test_support::RunningService;
using test_support::SmallFilesystem;
using test_support::TestClient;
using test_support::TestOptions;

constexpr std::size_t kCommands = 30'000;
constexpr std::uint32_t kDiskFullSession = 7;

// The journal fills its first segment, then answers kJournalFull: the
// service keeps running (its counters keep coming) and answers Busy.
void ExpectBusyWhileTheDiskIsFull(RunningService& running) {
  ASSERT_TRUE(running.WaitFor(
      [](const ServiceStats& s) {
        return s.journal_full && s.busy_sent > 0 &&
               s.refused_journal_full_frames > 0;
      },
      20'000))
      << "the service never reported the journal full";
  // While full: everything journaled becomes durable and is answered, and
  // nothing more is journaled.
  std::uint64_t full_at = 0;
  ASSERT_TRUE(running.WaitFor(
      [&](const ServiceStats& s) {
        full_at = s.last_index;
        return s.journal_full && s.durable_index == s.last_index &&
               s.commands_applied == s.last_index;
      },
      5'000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ServiceStats during;
  ASSERT_TRUE(running.WaitFor(
      [&](const ServiceStats& s) {
        during = s;
        return true;
      },
      5'000))
      << "the service stopped while the disk was full";
  EXPECT_TRUE(during.journal_full);
  EXPECT_EQ(during.last_index, full_at);
  EXPECT_LT(during.last_index, kCommands);
  EXPECT_GT(during.busy_sent, 1u);
}

// The journal at `dir`: every frame of `frames` exactly once, verbatim, in
// sequence order, all from kDiskFullSession.
void ExpectJournalHoldsTheFramesOnce(const std::string& dir,
                                     const std::vector<std::byte>& frames) {
  auto reader = journal::JournalReader::Open(dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  journal::Record record;
  std::size_t offset = 0;
  std::uint64_t count = 0;
  while ((*reader)->Next(record) == journal::ReadResult::kRecord) {
    ++count;
    ASSERT_EQ(record.session_id, kDiskFullSession);
    ASSERT_EQ(record.frame.sequence(), count);
    const auto bytes = record.frame.bytes();
    ASSERT_LE(offset + bytes.size(), frames.size());
    ASSERT_TRUE(std::equal(bytes.begin(), bytes.end(),
                           frames.begin() + static_cast<long>(offset)))
        << "record " << count << " is not the command sent";
    offset += bytes.size();
  }
  ASSERT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_EQ(count, kCommands);
  EXPECT_EQ(offset, frames.size());
}

TEST(ServiceDiskFull, BusyWhileTheDiskIsFullThenResumesWithNothingLost) {
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = SmallFilesystem::Mount(
      SmallFilesystem::Type::kLoopExt4, std::uint64_t{24} << 20, &why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";

  ServiceOptions options = TestOptions(dir, journal::Durability::kBatch);
  options.journal.segment_size = 256 << 10;
  options.journal.no_space_retry_ms = 50;
  std::vector<std::string> events;  // read after Stop() only
  options.on_event = [&events](std::string_view line) {
    events.emplace_back(line);
  };
  std::unique_ptr<RunningService> running =
      RunningService::Start(std::move(options));
  ASSERT_NE(running, nullptr);
  fs->Fill();  // no room for a second segment

  const std::vector<codec::Command> commands =
      workload::Generate(workload::Workload::kMixed, kCommands, 11);
  const std::vector<std::byte> frames = workload::EncodeCommands(commands);
  client::ClientOptions client;
  client.target = running->endpoint();
  client.session_id = kDiskFullSession;
  client.rate = 100'000;
  client.window = 1024;
  client.retransmit_timeout_ms = 100;
  client.give_up_ms = 30'000;
  std::atomic<bool> stop{false};
  absl::StatusOr<client::ClientResult> result = absl::UnknownError("not run");
  std::thread client_thread(
      [&] { result = client::RunClient(client, frames, stop); });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } joiner{stop, client_thread};

  ASSERT_NO_FATAL_FAILURE(ExpectBusyWhileTheDiskIsFull(*running));

  // Space appears: the service resumes by itself and the client finishes.
  fs->Free();
  ASSERT_TRUE(running->WaitFor(
      [](const ServiceStats& s) { return !s.journal_full && s.last_index > 0; },
      10'000))
      << "the service did not resume after space was freed";
  client_thread.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->acknowledged, kCommands);
  EXPECT_GT(result->busy, 0u);
  EXPECT_EQ(result->busy_cause,
            static_cast<std::uint8_t>(codec::BusyCause::kJournalFull));
  ASSERT_TRUE(running->Stop().ok());
  const ServiceStats& end = running->final_stats();
  EXPECT_EQ(end.journal_full_episodes, 1u);
  EXPECT_FALSE(end.journal_full);
  EXPECT_EQ(end.last_index, kCommands);
  EXPECT_EQ(end.frames_out[static_cast<std::size_t>(codec::Kind::kBusy)],
            end.busy_sent);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[0].find("journal full: need 262144 bytes free in " + dir),
            std::string::npos)
      << events[0];
  EXPECT_NE(events[1].find("journal resumed"), std::string::npos) << events[1];

  ExpectJournalHoldsTheFramesOnce(dir, frames);
}

TEST(ServiceDiskFull, BusyCarriesTheExpectedSequenceAndDuplicatesAreAnswered) {
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = SmallFilesystem::Mount(
      SmallFilesystem::Type::kTmpfs, std::uint64_t{1} << 20, &why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";
  ServiceOptions options = TestOptions(dir, journal::Durability::kBatch);
  options.journal.segment_size = 64 << 10;
  options.journal.no_space_retry_ms = 10;
  std::unique_ptr<RunningService> running =
      RunningService::Start(std::move(options));
  ASSERT_NE(running, nullptr);
  fs->Fill();
  TestClient client(running->endpoint());
  constexpr std::uint32_t kRaw = 3;
  const auto order = [](std::uint64_t seq) {
    return Frame(seq, codec::NewLimit{
                          .account_id = 1,
                          .client_order_id = seq,
                          .instrument_id = 9,
                          .side = codec::Side::kSell,
                          .time_in_force = codec::TimeInForce::kGoodTillCancel,
                          .price = 5000 + static_cast<int>(seq),
                          .quantity = 1});
  };

  // One command per datagram (a journal group each, about 112 bytes packed:
  // some 540 fill the 64 KiB segment) until one is refused.
  std::vector<Bytes> accepted;
  std::uint64_t seq = 1;
  std::vector<Bytes> reports;
  for (; seq <= 2000; ++seq) {
    client.Send(kRaw, {order(seq)});
    reports = client.Frames(kRaw, 1);
    ASSERT_EQ(reports.size(), 1u);
    const auto kind = static_cast<codec::Kind>(reports[0][8]);
    if (kind != codec::Kind::kAccepted) break;
    accepted.push_back(reports[0]);
  }
  ASSERT_GT(accepted.size(), 1u);
  ASSERT_LE(seq, 2000u) << "the journal never filled up";
  // Busy, frame sequence 0, naming the refused command's sequence.
  const codec::Busy busy{.expected_sequence = seq,
                         .cause = codec::BusyCause::kJournalFull};
  EXPECT_EQ(Hex(reports[0]), Hex(Frame(0, busy)));

  // A duplicate is answered while the disk is full: its report again.
  client.Send(kRaw, {order(seq - 1)});
  reports = client.Frames(kRaw, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(Hex(reports[0]), Hex(accepted.back()));

  // The refused command again (past the 2 ms repeat limit): Busy again.
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  client.Send(kRaw, {order(seq)});
  reports = client.Frames(kRaw, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(Hex(reports[0]), Hex(Frame(0, busy)));
  EXPECT_TRUE(running->WaitFor([&](const ServiceStats& s) {
    return s.journal_full && s.busy_sent == 2 &&
           s.refused_journal_full_datagrams == 2 &&
           s.refused_journal_full_frames == 2 && s.last_index == seq - 1 &&
           s.durable_index == seq - 1;
  }));

  // Space: the service resumes by itself and takes the command.
  fs->Free();
  ASSERT_TRUE(running->WaitFor(
      [](const ServiceStats& s) { return !s.journal_full; }, 10'000));
  client.Send(kRaw, {order(seq)});
  reports = client.Frames(kRaw, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(static_cast<codec::Kind>(reports[0][8]), codec::Kind::kAccepted);
  ASSERT_TRUE(running->Stop().ok());
  EXPECT_EQ(running->final_stats().last_index, seq);
}

// A replace of an order that does not exist: Rejected, and nothing kept.
Bytes UnknownReplace(std::uint64_t seq) {
  return Frame(seq, codec::Replace{.account_id = 1,
                                   .order_id = 1'000'000 + seq,
                                   .new_client_order_id = seq,
                                   .price = 100,
                                   .quantity = 1});
}

// Session kDiskFullSession's commands 1..n (UnknownReplace) appended
// offline, through the journal writer, as the service journals them, until
// the journal on `fs` is full: the first segment. Gives `fs` its space back
// and n in `count`.
void FillTheFirstSegmentOffline(const ServiceOptions& options,
                                SmallFilesystem& fs, std::uint64_t* count) {
  std::uint64_t n = 0;
  journal::WriterOptions offline = options.journal;
  offline.durability = journal::Durability::kNone;
  offline.metadata = EncodePinnedConfig(PinnedConfigOf(options.config));
  offline.no_space_retry_ms = 600'000;  // no second try while open
  auto writer = journal::JournalWriter::Open(offline);
  ASSERT_TRUE(writer.ok()) << writer.status();
  fs.Fill();  // no room for a next segment of any size
  for (journal::AppendStatus st = journal::AppendStatus::kOk;;) {
    const Bytes frame = UnknownReplace(n + 1);
    st = (*writer)->Append(frame, kDiskFullSession, 1000 + n);
    if (st == journal::AppendStatus::kJournalFull) break;
    if (st == journal::AppendStatus::kFull) {
      ASSERT_TRUE((*writer)->Wait().ok()) << (*writer)->status();
      continue;
    }
    ASSERT_EQ(st, journal::AppendStatus::kOk) << (*writer)->status();
    ++n;
  }
  ASSERT_TRUE((*writer)->Flush().ok());
  fs.Free();  // for the checkpoint Close() writes
  ASSERT_TRUE((*writer)->Close().ok());
  *count = n;
}

// The journal at `dir`: `records` records, UnknownReplace 1, 2, ... of
// kDiskFullSession, in a first segment of `segment` bytes and a smaller
// second one.
void ExpectASegmentThenASmallerOne(const std::string& dir,
                                   std::uint64_t records,
                                   std::uint64_t segment) {
  auto reader = journal::JournalReader::Open(dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  journal::Record record;
  std::uint64_t count = 0;
  while ((*reader)->Next(record) == journal::ReadResult::kRecord) {
    ++count;
    ASSERT_EQ(record.session_id, kDiskFullSession);
    ASSERT_EQ(
        Hex(Bytes(record.frame.bytes().begin(), record.frame.bytes().end())),
        Hex(UnknownReplace(count)));
  }
  ASSERT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_EQ(count, records);
  ASSERT_EQ((*reader)->segments().size(), 2u);
  EXPECT_EQ((*reader)->segments()[0].header.capacity, segment);
  EXPECT_LT((*reader)->segments()[1].header.capacity, segment);
}

// The case: a 128 MB file system and the default 64 MiB segments,
// which it cannot hold two of. The service says so at start; once the
// journal is full, freeing less than a whole segment is enough for it to
// resume (the next segment is smaller), and the journal reads back whole.
// The first segment is filled offline, through the journal writer, with
// records as the service journals them (a million commands through the
// service would take most of a minute).
TEST(ServiceDiskFull,
     ASmallDiskWarnsAtStartAndResumesWithLessThanASegmentFree) {
  std::string why;
  std::unique_ptr<SmallFilesystem> fs = SmallFilesystem::Mount(
      SmallFilesystem::Type::kLoopExt4, std::uint64_t{128} << 20, &why);
  if (fs == nullptr) GTEST_SKIP() << why;
  const std::string dir = fs->path() + "/journal";
  ServiceOptions options = TestOptions(dir, journal::Durability::kBatch);
  const std::uint64_t segment = journal::WriterOptions{}.segment_size;
  options.journal.segment_size = segment;
  options.journal.no_space_retry_ms = 50;

  // Session 7's commands 1..n fill the first segment.
  std::uint64_t n = 0;
  ASSERT_NO_FATAL_FAILURE(FillTheFirstSegmentOffline(options, *fs, &n));
  ASSERT_GT(n, 100'000u);

  fs->Fill();
  std::vector<std::string> events;  // read after Stop() only
  options.on_event = [&events](std::string_view line) {
    events.emplace_back(line);
  };
  std::unique_ptr<RunningService> running = RunningService::Start(options);
  ASSERT_NE(running, nullptr);
  // (a) The warning, shown even without the banner.
  EXPECT_NE(running->service().startup_warning().find(
                "cannot hold two journal segments"),
            std::string::npos)
      << running->service().startup_warning();

  // The next command finds the journal full: Busy.
  TestClient client(running->endpoint());
  client.Send(kDiskFullSession, {UnknownReplace(n + 1)});
  ASSERT_TRUE(running->WaitFor(
      [](const ServiceStats& s) { return s.journal_full && s.busy_sent > 0; },
      10'000))
      << "the journal never became full";

  // Free a quarter of a segment: the service resumes, and the command is
  // answered (Rejected: no such order) once it is retransmitted.
  fs->FreeSome(segment / 4);
  ASSERT_LT(fs->FreeBytes(), segment);
  bool answered = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!answered && std::chrono::steady_clock::now() < deadline) {
    client.Send(kDiskFullSession, {UnknownReplace(n + 1)});
    while (std::optional<Bytes> datagram = client.Receive(50)) {
      std::vector<Bytes> frames;
      client.AppendFrames(kDiskFullSession, *datagram, frames);
      for (const Bytes& frame : frames) {
        const auto view = codec::FrameView::Parse(frame);
        answered |= view.ok() && view->kind() == codec::Kind::kRejected;
      }
    }
  }
  EXPECT_TRUE(answered) << "the service did not resume with " << fs->FreeBytes()
                        << " bytes free";
  ASSERT_TRUE(running->Stop().ok());
  const ServiceStats& end = running->final_stats();
  EXPECT_FALSE(end.journal_full);
  EXPECT_EQ(end.last_index, n + 1);
  EXPECT_GE(end.journal_reduced_segments, 1u);
  bool logged = false;
  for (const std::string& line : events) {
    logged |= line.find("smaller segment") != std::string::npos;
  }
  EXPECT_TRUE(logged) << "no line says the next segment is smaller";

  // The journal: the 64 MiB segment, then a smaller one; every record.
  fs->Free();
  ExpectASegmentThenASmallerOne(dir, n + 1, segment);
}

}  // namespace
}  // namespace orderwire::service
