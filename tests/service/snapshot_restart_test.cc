// Snapshots in the running service and the bounded restart, end to end over
// loopback (docs/SERVICE.md "Snapshots"):
//   - sessions trade, the service snapshots every N records, stops; a
//     restart starts from the newest snapshot and replays only the records
//     after it, and its state (books, orders, sessions, histories,
//     counters: the canonical snapshot encoding) is byte-identical to a
//     restart that replays the whole journal (--no-snapshot); both resend
//     a session's old reports byte-identical to what it received live, and
//     answer its next command identically;
//   - a damaged newest snapshot is reported and the previous one used; all
//     damaged: the whole journal;
//   - a snapshot of another journal is refused;
//   - the loop keeps answering while a (slow) snapshot is being written;
//   - a snapshot that cannot be written is logged and counted, and the
//     service goes on.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "service/service.h"
#include "state/snapshot.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using state::EncodeSnapshot;
using state::ListSnapshots;
using state::SnapshotDirectory;
using state::SnapshotFileName;
using state::SnapshotInfo;

using test_support::Bytes;
using test_support::Frame;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;
using ::testing::HasSubstr;

constexpr std::uint32_t kSessions[] = {11, 12, 13};
constexpr std::uint64_t kPerDatagram = 10;

// Command `sequence` of the session at position `s`: limit orders on one
// instrument around one price, buys and sells interleaved across sessions,
// so they rest, trade against each other's orders and partly fill.
Bytes CommandOf(std::size_t s, std::uint64_t sequence) {
  const bool buy = (sequence + s) % 2 == 0;
  return Frame(
      sequence,
      codec::NewLimit{
          .account_id = s + 1,
          .client_order_id = sequence,
          .instrument_id = 2,
          .side = buy ? codec::Side::kBuy : codec::Side::kSell,
          .time_in_force = codec::TimeInForce::kGoodTillCancel,
          .price = static_cast<std::int64_t>(100 + (sequence * 7 + s * 3) % 9),
          .quantity = 5 + (sequence + s) % 11});
}

std::vector<Bytes> DatagramOf(std::size_t s, std::uint64_t first) {
  std::vector<Bytes> frames;
  for (std::uint64_t q = first; q < first + kPerDatagram; ++q) {
    frames.push_back(CommandOf(s, q));
  }
  return frames;
}

ServiceOptions Options(const std::string& journal) {
  ServiceOptions options = TestOptions(journal, journal::Durability::kBatch);
  options.on_event = [](std::string_view) {};  // the log is tested apart
  return options;
}

// Runs a service on `journal` while every session sends `datagrams`
// datagrams of commands (from sequence `first`), each round applied before
// the next is sent; returns every report each session received.
std::map<std::uint32_t, std::vector<Bytes>> Trade(ServiceOptions options,
                                                  std::uint64_t first,
                                                  std::uint64_t datagrams,
                                                  ServiceStats* stats) {
  std::map<std::uint32_t, std::vector<Bytes>> received;
  auto service = RunningService::Start(std::move(options));
  if (service == nullptr) return received;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (std::size_t s = 0; s < std::size(kSessions); ++s) {
    clients.push_back(std::make_unique<TestClient>(service->endpoint()));
  }
  // After a restart the service knows no session's address until the
  // session sends (docs/PROTOCOL.md "Admission"): a maker's Filled for a
  // session not yet heard from is kept in its history, not sent. So each
  // session is heard from first, with a duplicate of its last command (the
  // service sends that command's reports again: a client drops those by
  // their report sequence, as AppendNew below does).
  if (first > 1) {
    for (std::size_t s = 0; s < std::size(kSessions); ++s) {
      clients[s]->Send(kSessions[s], {CommandOf(s, first - 1)});
    }
    EXPECT_TRUE(service->WaitFor([&](const ServiceStats& st) {
      return st.duplicates >= std::size(kSessions);
    }));
  }
  // The sessions go in step: after each round the journal holds every
  // session's commands so far (a snapshot of the counters is taken after
  // the durable records were applied).
  for (std::uint64_t d = 0; d < datagrams; ++d) {
    for (std::size_t s = 0; s < std::size(kSessions); ++s) {
      clients[s]->Send(kSessions[s], DatagramOf(s, first + d * kPerDatagram));
    }
    const std::uint64_t want =
        (first - 1 + (d + 1) * kPerDatagram) * std::size(kSessions);
    // And a snapshot begun in this round is written before the next one:
    // each falls due at the first boundary past its interval.
    EXPECT_TRUE(service->WaitFor([&](const ServiceStats& st) {
      return st.durable_index >= want && !st.snapshot_running;
    }));
  }
  // Stopped first: the stop answers everything durable, so every report is
  // in the clients' sockets before they are drained (draining a running
  // service until it is quiet for a while can stop early on a loaded
  // machine, before its last reports went out).
  EXPECT_TRUE(service->Stop().ok());
  for (std::size_t s = 0; s < std::size(kSessions); ++s) {
    received[kSessions[s]] = clients[s]->Drain(kSessions[s], 200);
  }
  if (stats != nullptr) *stats = service->final_stats();
  return received;
}

// A report frame's sequence: the u64 that opens every frame (envelope).
std::uint64_t ReportSequence(const Bytes& frame) {
  std::uint64_t sequence = 0;
  for (std::size_t i = 0; i < 8 && i < frame.size(); ++i) {
    sequence |= static_cast<std::uint64_t>(frame[i]) << (8 * i);
  }
  return sequence;
}

// Appends to `stream` the frames of `more` whose report sequence is above
// the last one it holds, as a client takes reports (the duplicates a resend
// brings are dropped).
void AppendNew(std::vector<Bytes>& stream, const std::vector<Bytes>& more) {
  for (const Bytes& frame : more) {
    if (stream.empty() ||
        ReportSequence(frame) > ReportSequence(stream.back())) {
      stream.push_back(frame);
    }
  }
}

// Whether two report streams are the same frames; if not, where they part.
::testing::AssertionResult SameFrames(const std::vector<Bytes>& a,
                                      const std::vector<Bytes>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      return ::testing::AssertionFailure()
             << "frame " << i << " of " << a.size() << " / " << b.size()
             << " differs: " << test_support::Hex(a[i]) << " vs "
             << test_support::Hex(b[i]);
    }
  }
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure()
           << a.size() << " frames vs " << b.size() << " (the first "
           << std::min(a.size(), b.size()) << " equal; the next: "
           << test_support::Hex(a.size() > b.size() ? a[b.size()] : b[a.size()])
           << ")";
  }
  return ::testing::AssertionSuccess();
}

// The whole state of a service, canonically encoded (journal id and time
// fixed): equal bytes are equal books, orders, sessions, histories and
// counters.
std::vector<std::byte> StateOf(const Service& service) {
  return EncodeSnapshot(service.state(), 1, 0);
}

// What a restart on `journal` made: its counters, its state, its banner.
struct Restart {
  ServiceStats stats;
  std::vector<std::byte> state;
  std::string warning;
  std::string report;
};
Restart RestartOn(const std::string& journal, bool from_snapshot) {
  ServiceOptions options = Options(journal);
  options.restart_from_snapshot = from_snapshot;
  absl::StatusOr<std::unique_ptr<Service>> service =
      Service::Start(std::move(options));
  EXPECT_TRUE(service.ok()) << service.status();
  if (!service.ok()) return {};
  return Restart{(*service)->stats(), StateOf(**service),
                 (*service)->startup_warning(), (*service)->startup_report()};
}

void CopyJournal(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

std::vector<std::uint64_t> SnapshotIndexes(const std::string& journal) {
  std::vector<std::uint64_t> out;
  absl::StatusOr<std::vector<SnapshotInfo>> list = ListSnapshots(journal);
  EXPECT_TRUE(list.ok()) << list.status();
  if (list.ok()) {
    for (const SnapshotInfo& info : *list) out.push_back(info.index);
  }
  return out;  // newest first
}

// Flips one byte in the middle of `path`.
void Damage(const std::string& path) {
  std::vector<std::byte> bytes = test_support::ReadFile(path);
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] ^= std::byte{0x40};
  test_support::WriteFile(path, bytes);
}

// 3 sessions x 9 datagrams x 10 commands with a snapshot every 40 records
// (at least 3 snapshots), then one more datagram each without snapshots:
// 300 records, the newest snapshot at most 270.
class SnapshotRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    journal_ = dir_.Sub("journal");
    ServiceOptions options = Options(journal_);
    options.snapshot_every_records = 40;
    live_ = Trade(options, 1, 9, &stats_);
    ASSERT_EQ(stats_.last_index, 270u);
    ASSERT_GE(stats_.snapshots_taken, 3u);
    ASSERT_EQ(stats_.snapshots_failed, 0u);
    const std::uint64_t newest = stats_.last_snapshot_index;
    ASSERT_GT(newest, 0u);
    for (auto& [id, reports] : Trade(Options(journal_), 91, 1, &stats_)) {
      AppendNew(live_[id], reports);
    }
    ASSERT_EQ(stats_.last_index, 300u);
    ASSERT_EQ(stats_.started_from_snapshot, newest);
    indexes_ = SnapshotIndexes(journal_);
    ASSERT_GE(indexes_.size(), 3u);
    ASSERT_EQ(indexes_.front(), newest);
  }

  ScratchDir dir_;
  std::string journal_;
  std::map<std::uint32_t, std::vector<Bytes>> live_;
  ServiceStats stats_;
  std::vector<std::uint64_t> indexes_;
};

TEST_F(SnapshotRestartTest, RestartReplaysOnlyTheTailAndEqualsAFullReplay) {
  const std::string full = dir_.Sub("full");
  CopyJournal(journal_, full);

  const Restart snap = RestartOn(journal_, /*from_snapshot=*/true);
  EXPECT_EQ(snap.stats.started_from_snapshot, indexes_.front());
  EXPECT_EQ(snap.stats.replayed, 300 - indexes_.front());
  EXPECT_THAT(snap.report, HasSubstr("started from snapshot"));
  EXPECT_TRUE(snap.warning.empty()) << snap.warning;
  const Restart whole = RestartOn(full, /*from_snapshot=*/false);
  EXPECT_EQ(whole.stats.started_from_snapshot, 0u);
  EXPECT_EQ(whole.stats.replayed, 300u);
  ASSERT_FALSE(snap.state.empty());
  EXPECT_TRUE(snap.state == whole.state)
      << "the state after snapshot + tail differs from a full replay";

  // Both resend a session's old reports as it received them live, and
  // answer its next command alike (its expected sequence carried on).
  std::map<std::uint32_t, std::vector<Bytes>> resent[2];
  std::map<std::uint32_t, std::vector<Bytes>> next[2];
  const std::string journals[2] = {journal_, full};
  for (int j = 0; j < 2; ++j) {
    ServiceOptions options = Options(journals[j]);
    options.restart_from_snapshot = j == 0;
    auto service = RunningService::Start(options);
    ASSERT_NE(service, nullptr);
    std::vector<std::unique_ptr<TestClient>> clients;
    for (std::size_t s = 0; s < std::size(kSessions); ++s) {
      clients.push_back(std::make_unique<TestClient>(service->endpoint()));
      clients[s]->Send(kSessions[s], DatagramOf(s, 1));  // a duplicate
      // As many as it received live (more would show below: they would
      // be read with the next command's reports).
      resent[j][kSessions[s]] =
          clients[s]->Frames(kSessions[s], live_[kSessions[s]].size(), 20000);
    }
    // Then each session's next command (which may fill another's order).
    for (std::size_t s = 0; s < std::size(kSessions); ++s) {
      clients[s]->Send(kSessions[s], {CommandOf(s, 101)});
      ASSERT_TRUE(service->WaitFor(
          [&](const ServiceStats& st) { return st.durable_index >= 301 + s; }));
    }
    ASSERT_TRUE(service->Stop().ok());  // every durable command answered
    for (std::size_t s = 0; s < std::size(kSessions); ++s) {
      next[j][kSessions[s]] = clients[s]->Drain(kSessions[s], 200);
    }
  }
  for (std::uint32_t id : kSessions) {
    SCOPED_TRACE(id);
    ASSERT_FALSE(live_[id].empty());
    EXPECT_TRUE(SameFrames(resent[0][id], live_[id]));
    EXPECT_TRUE(SameFrames(resent[1][id], live_[id]));
    ASSERT_FALSE(next[0][id].empty());
    EXPECT_TRUE(SameFrames(next[0][id], next[1][id]));
  }
}

TEST_F(SnapshotRestartTest, ADamagedNewestSnapshotFallsBackToThePreviousOne) {
  const std::string full = dir_.Sub("full");
  CopyJournal(journal_, full);
  const std::string newest =
      SnapshotDirectory(journal_) + "/" + SnapshotFileName(indexes_[0]);
  Damage(newest);

  const Restart restart = RestartOn(journal_, /*from_snapshot=*/true);
  EXPECT_EQ(restart.stats.started_from_snapshot, indexes_[1]);
  EXPECT_EQ(restart.stats.replayed, 300 - indexes_[1]);
  EXPECT_THAT(restart.warning, HasSubstr(newest));
  EXPECT_THAT(restart.warning, HasSubstr("previous"));
  const Restart whole = RestartOn(full, /*from_snapshot=*/false);
  EXPECT_TRUE(restart.state == whole.state);

  // Every snapshot damaged: the whole journal, each one named.
  for (std::uint64_t index : indexes_) {
    if (index != indexes_[0]) {
      Damage(SnapshotDirectory(journal_) + "/" + SnapshotFileName(index));
    }
  }
  const Restart none = RestartOn(journal_, /*from_snapshot=*/true);
  EXPECT_EQ(none.stats.started_from_snapshot, 0u);
  EXPECT_EQ(none.stats.replayed, 300u);
  for (std::uint64_t index : indexes_) {
    EXPECT_THAT(none.warning, HasSubstr(SnapshotFileName(index)));
  }
  EXPECT_TRUE(none.state == whole.state);
}

TEST_F(SnapshotRestartTest, ASnapshotOfAnotherJournalIsRefused) {
  // Another journal with the same records, written without snapshots: the
  // first journal's newest snapshot copied into it is not its own.
  const std::string other = dir_.Sub("other");
  ServiceStats other_stats;
  (void)Trade(Options(other), 1, 10, &other_stats);
  ASSERT_EQ(other_stats.last_index, 300u);
  std::filesystem::create_directories(SnapshotDirectory(other));
  const std::string foreign =
      SnapshotDirectory(other) + "/" + SnapshotFileName(indexes_[0]);
  std::filesystem::copy_file(
      SnapshotDirectory(journal_) + "/" + SnapshotFileName(indexes_[0]),
      foreign);

  const Restart restart = RestartOn(other, /*from_snapshot=*/true);
  EXPECT_EQ(restart.stats.started_from_snapshot, 0u);
  EXPECT_EQ(restart.stats.replayed, 300u);
  EXPECT_THAT(restart.warning, HasSubstr(foreign));
}

// A service started with `options` whose first 10 commands (session 0)
// were answered: record 10, where snapshot_every_records = 10 is due.
struct Answered {
  std::unique_ptr<RunningService> service;
  std::unique_ptr<TestClient> client;
};
void StartAndAnswerTen(const ServiceOptions& options, Answered* out) {
  out->service = RunningService::Start(options);
  ASSERT_NE(out->service, nullptr);
  out->client = std::make_unique<TestClient>(out->service->endpoint());
  out->client->Send(kSessions[0], DatagramOf(0, 1));
  ASSERT_GE(out->client->Frames(kSessions[0], 10).size(), 10u);
}

// The service's event lines (ServiceOptions::on_event), kept for a test to
// read while or after it runs.
class EventLog {
 public:
  explicit EventLog(ServiceOptions& options) {
    options.on_event = [lines = lines_, mu = mu_](std::string_view line) {
      std::lock_guard lock(*mu);
      lines->emplace_back(line);
    };
  }
  [[nodiscard]] std::vector<std::string> Lines() const {
    std::lock_guard lock(*mu_);
    return *lines_;
  }

 private:
  std::shared_ptr<std::vector<std::string>> lines_ =
      std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::mutex> mu_ = std::make_shared<std::mutex>();
};

TEST(SnapshotWhileServing, TheLoopKeepsAnsweringWhileASnapshotIsWritten) {
  ScratchDir dir;
  ServiceOptions options = Options(dir.Sub("journal"));
  options.snapshot_every_records = 10;
  // The child takes 2 s before it writes: a loop that waited for it would
  // answer nothing meanwhile.
  options.in_snapshot_child = [] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
  };
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  client.Send(kSessions[0], DatagramOf(0, 1));
  ASSERT_FALSE(client.Frames(kSessions[0], 10).empty());
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshot_running; }));
  // Commands 11..30 are answered while the child sleeps.
  const auto sent = std::chrono::steady_clock::now();
  for (std::uint64_t first = 11; first <= 21; first += kPerDatagram) {
    client.Send(kSessions[0], DatagramOf(0, first));
    ASSERT_TRUE(service->WaitFor([&](const ServiceStats& s) {
      return s.commands_applied >= first + kPerDatagram - 1;
    }));
  }
  const auto answered = std::chrono::steady_clock::now() - sent;
  EXPECT_LT(answered, std::chrono::milliseconds(1000));
  EXPECT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshot_running; }, 0))
      << "the snapshot ended before the commands were answered: the test "
         "proves nothing";
  // The child finishes on its own; the next snapshot follows it.
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshots_taken >= 1; }, 10000));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().snapshots_failed, 0u);
  EXPECT_GE(SnapshotIndexes(dir.Sub("journal")).size(), 1u);
}

// A child that cannot finish (a hung disk; a lock its fork inherited held)
// must not hold back every later snapshot, nor the stop: past the limit it
// is killed, counted and said, and the next snapshot is taken when due.
TEST(SnapshotWhileServing,
     AChildThatNeverFinishesIsKilledAndTheNextOneIsTaken) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  ServiceOptions options = Options(journal);
  options.snapshot_every_records = 10;
  options.snapshot_child_limit_s = 0.3;
  options.snapshot_stop_wait_s = 0.3;
  const EventLog log(options);
  // The first child hangs for good; the others write at once.
  const std::string hung = dir.Sub("hung");
  // (No allocation in the child: another thread may hold the allocator's
  // lock at the fork.)
  options.in_snapshot_child = [hung] {
    if (::open(hung.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) < 0) return;
    for (;;) ::pause();
  };
  Answered answered;
  ASSERT_NO_FATAL_FAILURE(StartAndAnswerTen(options, &answered));
  RunningService* const service = answered.service.get();
  TestClient& client = *answered.client;
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshots_failed >= 1; }, 10000));
  // Later records: the next snapshot is taken.
  for (std::uint64_t first = 11; first <= 21; first += kPerDatagram) {
    client.Send(kSessions[0], DatagramOf(0, first));
    ASSERT_TRUE(service->WaitFor([&](const ServiceStats& s) {
      return s.commands_applied >= first + kPerDatagram - 1;
    }));
  }
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshots_taken >= 1; }, 10000));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().snapshots_failed, 1u);
  EXPECT_THAT(log.Lines(), ::testing::Contains(HasSubstr(
                               "failed: not finished within 0.3 s (the child "
                               "was killed")));
}

// A stop does not wait for a hung child longer than its bound.
TEST(SnapshotWhileServing, AStopWaitsForAHungChildOnlyItsBound) {
  ScratchDir dir;
  ServiceOptions options = Options(dir.Sub("journal"));
  options.snapshot_every_records = 10;
  options.snapshot_stop_wait_s = 0.5;
  const EventLog log(options);
  options.in_snapshot_child = [] {
    for (;;) ::pause();
  };
  Answered answered;
  ASSERT_NO_FATAL_FAILURE(StartAndAnswerTen(options, &answered));
  RunningService* const service = answered.service.get();
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshot_running; }));
  const auto stopping = std::chrono::steady_clock::now();
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - stopping,
            std::chrono::seconds(5));
  EXPECT_EQ(service->final_stats().snapshots_failed, 1u);
  EXPECT_EQ(service->final_stats().snapshot_running, 0u);
  EXPECT_THAT(log.Lines(),
              ::testing::Contains(HasSubstr("abandoned at the stop")));
}

// A service killed while its child writes must restart at once: the child
// holds none of the parent's descriptors (the journal's flock, its files,
// the ring, the socket), only standard streams and its report pipe.
TEST(SnapshotWhileServing, TheChildHoldsNoneOfTheServicesDescriptors) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  const std::string listing = dir.Sub("child-fds.txt");
  ServiceOptions options = Options(journal);
  options.snapshot_every_records = 10;
  options.in_snapshot_child = [listing] {
    std::string out;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code error;
      out += entry.path().filename().string() + " " +
             std::filesystem::read_symlink(entry.path(), error).string() + "\n";
    }
    test_support::WriteText(listing, out);
  };
  Answered answered;
  ASSERT_NO_FATAL_FAILURE(StartAndAnswerTen(options, &answered));
  RunningService* const service = answered.service.get();
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshots_taken >= 1; }));
  ASSERT_TRUE(service->Stop().ok());
  const std::string fds = test_support::ReadText(listing);
  ASSERT_FALSE(fds.empty());
  EXPECT_THAT(fds, ::testing::Not(HasSubstr(journal))) << fds;
  EXPECT_THAT(fds, ::testing::Not(HasSubstr("socket:"))) << fds;
  EXPECT_THAT(fds, ::testing::Not(HasSubstr("io_uring"))) << fds;
  // 0, 1, 2, the report pipe and the listing's own directory handle.
  EXPECT_LE(std::count(fds.begin(), fds.end(), '\n'), 5) << fds;
}

TEST(SnapshotWhileServing, AFailedSnapshotIsLoggedAndCountedAndServingGoesOn) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  ServiceOptions options = Options(journal);
  options.snapshot_every_records = 10;
  const EventLog log(options);
  // The snapshot directory's place is taken by a file.
  std::filesystem::create_directories(journal);
  test_support::WriteText(SnapshotDirectory(journal), "not a directory");
  Answered answered;
  ASSERT_NO_FATAL_FAILURE(StartAndAnswerTen(options, &answered));
  RunningService* const service = answered.service.get();
  TestClient& client = *answered.client;
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.snapshots_failed >= 1; }));
  client.Send(kSessions[0], DatagramOf(0, 11));
  EXPECT_GE(client.Frames(kSessions[0], 10).size(), 10u);
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_EQ(service->final_stats().snapshots_taken, 0u);
  const std::vector<std::string> lines = log.Lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.front(), HasSubstr("snapshot at index 10 failed"));
  EXPECT_THAT(lines.front(), HasSubstr(SnapshotDirectory(journal)));
}

// Start-up verifies the whole retained journal (docs/SERVICE.md "What
// start-up verifies"): a bit flipped in an old segment, before both the
// checkpoint's group and the newest snapshot, refuses the start from that
// snapshot as it refuses a full replay; --accept-loss cuts the journal at
// the damage and starts, saying so.
TEST(StartupVerification, DamageInAnOldSegmentRefusesAStartFromASnapshot) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  ServiceOptions options = Options(journal);
  options.journal.segment_size = journal::kMinSegmentCapacity;
  options.snapshot_every_records = 600;
  ServiceStats stats;
  (void)Trade(options, 1, 100, &stats);
  ASSERT_EQ(stats.last_index, 3000u);
  const std::vector<std::uint64_t> snapshots = SnapshotIndexes(journal);
  ASSERT_FALSE(snapshots.empty());
  std::vector<std::string> segments;
  for (const auto& entry : std::filesystem::directory_iterator(journal)) {
    if (journal::ParseSegmentFileName(entry.path().filename().string())) {
      segments.push_back(entry.path().string());
    }
  }
  std::sort(segments.begin(), segments.end());
  ASSERT_GE(segments.size(), 3u) << "the test needs an old segment";
  // The first segment ends well before the newest snapshot.
  const std::optional<std::uint64_t> second_starts =
      journal::ParseSegmentFileName(
          std::filesystem::path(segments[1]).filename().string());
  ASSERT_TRUE(second_starts.has_value());
  ASSERT_LT(*second_starts, snapshots.front());

  // Undamaged, the same journal starts from its snapshot (the control).
  const std::string intact = dir.Sub("intact");
  CopyJournal(journal, intact);
  {
    ServiceOptions start = Options(intact);
    start.journal.segment_size = journal::kMinSegmentCapacity;
    absl::StatusOr<std::unique_ptr<Service>> service =
        Service::Start(std::move(start));
    ASSERT_TRUE(service.ok()) << service.status();
    EXPECT_EQ((*service)->stats().started_from_snapshot, snapshots.front());
    EXPECT_THAT((*service)->startup_report(),
                HasSubstr("verified records 1 to"));
  }

  // One bit of a record in the middle of the first segment.
  std::vector<std::byte> bytes = test_support::ReadFile(segments[0]);
  std::size_t at = bytes.size() / 2;
  while (at > 0 && bytes[at] == std::byte{0}) --at;
  ASSERT_GT(at, journal::kBlockSize);
  bytes[at] ^= std::byte{0x01};
  test_support::WriteFile(segments[0], bytes);

  for (const bool from_snapshot : {true, false}) {
    SCOPED_TRACE(from_snapshot ? "from the snapshot" : "--no-snapshot");
    ServiceOptions start = Options(journal);
    start.journal.segment_size = journal::kMinSegmentCapacity;
    start.restart_from_snapshot = from_snapshot;
    absl::StatusOr<std::unique_ptr<Service>> service =
        Service::Start(std::move(start));
    ASSERT_FALSE(service.ok()) << "started on a damaged journal";
    EXPECT_EQ(service.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(service.status().message(), HasSubstr(segments[0]));
  }
  {
    ServiceOptions start = Options(journal);
    start.journal.segment_size = journal::kMinSegmentCapacity;
    absl::StatusOr<std::unique_ptr<Service>> service =
        Service::Start(std::move(start));
    ASSERT_FALSE(service.ok());
    EXPECT_THAT(service.status().message(), HasSubstr("--accept-loss"));
    EXPECT_THAT(service.status().message(), HasSubstr("cannot be read"));
  }

  ServiceOptions accept = Options(journal);
  accept.journal.segment_size = journal::kMinSegmentCapacity;
  accept.journal.accept_loss = true;
  absl::StatusOr<std::unique_ptr<Service>> service =
      Service::Start(std::move(accept));
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_THAT((*service)->startup_warning(), HasSubstr("DATA LOSS ACCEPTED"));
  EXPECT_LT((*service)->stats().last_index, *second_starts);
}

}  // namespace
}  // namespace orderwire::service
