// Seeding a new hot standby from a primary's snapshot (cluster/seed.h):
// it catches up from the snapshot on and can take over; a restart before
// any record starts from the snapshot; a directory that holds anything, a
// file that is not a valid snapshot, a snapshot of another configuration,
// ahead of the stream or behind what the stream still holds are refused;
// and `orderwire serve --standby --seed-snapshot`, the binary. Against a
// real nats-server; the helpers are in standby_test_support.h.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cluster/seed.h"
#include "cluster/standby.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/service.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/cluster/standby_test_support.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::standby_test {
namespace {

// Seeding a new standby from a primary's snapshot (cluster/seed.h).

// The snapshot the source journal's primary would have written at `index`
// (its state there, its journal id), in `dir`/snapshots/.
state::SnapshotInfo SourceSnapshotAt(std::uint64_t index,
                                     const std::string& dir) {
  const SourceJournal& source = SourceJournal::Get();
  absl::StatusOr<std::uint64_t> journal_id =
      state::JournalIdOf(source.dir(), {});
  EXPECT_TRUE(journal_id.ok()) << journal_id.status();
  std::filesystem::create_directories(dir);
  absl::StatusOr<state::RebuiltState> rebuilt = state::RebuildState(
      {.directory = source.dir(),
       .use_snapshots = false,
       .up_to_index = index,
       .machine_options = MachineOptionsOf(source.options()),
       .unpinned = state::PinnedConfigOf(source.options().config)});
  EXPECT_TRUE(rebuilt.ok()) << rebuilt.status();
  if (!journal_id.ok() || !rebuilt.ok()) return {};
  EXPECT_EQ(rebuilt->machine->last_index(), index);
  absl::StatusOr<state::SnapshotInfo> written =
      state::WriteSnapshot(*rebuilt->machine, *journal_id, dir);
  EXPECT_TRUE(written.ok()) << written.status();
  return written.ok() ? *written : state::SnapshotInfo{};
}

cluster::SeedOptions SeedOptionsFor(const cluster::StandbyOptions& standby,
                                    const std::string& snapshot) {
  return cluster::SeedOptions{.journal = standby.journal,
                              .snapshot = snapshot,
                              .given = state::PinnedConfigOf(standby.config)};
}

// A standby's options for `dir` where no NATS is needed (the seeding's
// refusals): the source's configuration, small segments.
cluster::StandbyOptions OfflineStandbyOptions(const std::string& dir) {
  cluster::StandbyOptions o;
  o.journal.directory = dir;
  o.journal.segment_size = journal::kMinSegmentCapacity;
  o.config = SourceJournal::Get().options().config;
  return o;
}

// The names in `dir` (none if it does not exist).
std::vector<std::string> EntriesOf(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The snapshot's index: inside a stream message (PublishRecords from index
// 1: a cycle of kGroupSizes holds 321 records; in the eighth, the message
// of 200 records holds indexes 2323..2522).
constexpr std::size_t kSeedIndex = 2500;

TEST(StandbySeed, CatchesUpFromAPrimarysSnapshotAndCanTakeOver) {
  const SourceJournal& source = SourceJournal::Get();
  const std::vector<OwnedRecord>& records = source.records();
  ASSERT_EQ(records.size(), 6000u);
  ASSERT_EQ(records[kSeedIndex - 1].index, kSeedIndex);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  PublishRecords(*pub, records, 0, records.size(), 1);
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  ASSERT_FALSE(snapshot.path.empty());

  const cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  absl::StatusOr<cluster::SeededJournal> seeded =
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path));
  ASSERT_TRUE(seeded.ok()) << seeded.status();
  EXPECT_EQ(seeded->first_index, kSeedIndex + 1);
  EXPECT_EQ(seeded->journal_id, snapshot.journal_id);
  EXPECT_EQ(seeded->snapshot.path,
            state::SnapshotDirectory(dir.Sub("standby")) + "/" +
                state::SnapshotFileName(kSeedIndex));
  EXPECT_TRUE(test_support::ReadFile(seeded->snapshot.path) ==
              test_support::ReadFile(snapshot.path))
      << "the copy is not the snapshot byte for byte";
  EXPECT_THAT(seeded->report, HasSubstr("it starts at index 2501"));

  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_EQ(standby->stats().started_from_snapshot, kSeedIndex);
  EXPECT_EQ(standby->stats().replayed, 0u);
  EXPECT_EQ(standby->stats().applied_index, kSeedIndex);
  EXPECT_THAT(standby->startup_report(), HasSubstr("for journal index 2501"));
  ASSERT_TRUE(FollowUntil(*standby, records.back().index).ok());
  const cluster::StandbyStats stats = standby->stats();
  EXPECT_EQ(stats.records_appended, records.size() - kSeedIndex);
  // The message that holds the snapshot's index starts before it: its
  // records 2323..2500 are the snapshot's, skipped.
  EXPECT_EQ(stats.records_before_start, 178u);
  EXPECT_EQ(stats.records_held, 0u);
  const std::vector<std::byte> expected_state =
      ReplayedState(source.dir(), source.options());
  ASSERT_FALSE(expected_state.empty());
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) == expected_state)
      << "the seeded standby's state differs from the primary's";
  standby.reset();
  // Its journal: the primary's records after the snapshot, byte for byte.
  EXPECT_TRUE(
      ReadJournal(dir.Sub("standby")) ==
      std::vector<OwnedRecord>(records.begin() + kSeedIndex, records.end()));
  // A restart starts from the snapshot and replays the records after it.
  standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_EQ(standby->stats().started_from_snapshot, kSeedIndex);
  EXPECT_EQ(standby->stats().replayed, records.size() - kSeedIndex);
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) == expected_state);
  ASSERT_TRUE(standby->Stop().ok());
  standby.reset();
  // A service started on it (a takeover by restart) has the same state.
  service::ServiceOptions serve = source.options();
  serve.journal.directory = dir.Sub("standby");
  absl::StatusOr<std::unique_ptr<service::Service>> service =
      service::Service::Start(serve);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_TRUE(state::EncodeSnapshot((*service)->state(), 0, 0) ==
              expected_state);
}

TEST(StandbySeed, ARestartBeforeAnyRecordStartsFromTheSnapshot) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  // The stream ends exactly at the snapshot's index.
  PublishRecords(*pub, records, 0, kSeedIndex, 1);
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  const cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  ASSERT_TRUE(
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path)).ok());
  for (int start = 0; start < 2; ++start) {
    auto standby = StartStandby(options);
    ASSERT_NE(standby, nullptr);
    EXPECT_EQ(standby->stats().started_from_snapshot, kSeedIndex);
    EXPECT_EQ(standby->stats().applied_index, kSeedIndex);
    ASSERT_TRUE(FollowUntilError(*standby, std::chrono::seconds(1)).ok());
  }
  // Then the primary goes on, and the standby with it.
  PublishRecords(*pub, records, kSeedIndex, records.size(), 1);
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, records.back().index).ok());
  EXPECT_EQ(standby->stats().records_before_start, 0u);
  standby.reset();
  EXPECT_TRUE(
      ReadJournal(dir.Sub("standby")) ==
      std::vector<OwnedRecord>(records.begin() + kSeedIndex, records.end()));
}

TEST(StandbySeed, RefusesADirectoryThatHoldsAnything) {
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  cluster::StandbyOptions options = OfflineStandbyOptions(dir.Sub("standby"));
  std::filesystem::create_directories(dir.Sub("standby"));
  test_support::WriteText(dir.Sub("standby") + "/notes.txt", "mine");
  absl::StatusOr<cluster::SeededJournal> seeded =
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path));
  ASSERT_TRUE(absl::IsFailedPrecondition(seeded.status())) << seeded.status();
  EXPECT_THAT(seeded.status().message(),
              HasSubstr(dir.Sub("standby") +
                        ": the directory is not empty (it holds 1 entry: "
                        "notes.txt)"));
  EXPECT_TRUE(EntriesOf(dir.Sub("standby")) ==
              std::vector<std::string>{"notes.txt"});
  // A journal already there (a standby that ran): refused alike.
  ASSERT_TRUE(std::filesystem::remove(dir.Sub("standby") + "/notes.txt"));
  ASSERT_TRUE(
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path)).ok());
  const std::vector<std::string> seeded_entries = EntriesOf(dir.Sub("standby"));
  seeded = cluster::SeedJournal(SeedOptionsFor(options, snapshot.path));
  ASSERT_TRUE(absl::IsFailedPrecondition(seeded.status())) << seeded.status();
  EXPECT_THAT(seeded.status().message(),
              HasSubstr("the directory is not empty"));
  EXPECT_TRUE(EntriesOf(dir.Sub("standby")) == seeded_entries);
}

TEST(StandbySeed, RefusesAFileThatIsNotAValidSnapshot) {
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  std::vector<std::byte> bytes = test_support::ReadFile(snapshot.path);
  ASSERT_GT(bytes.size(), 200u);
  bytes[150] ^= std::byte{0x01};
  const std::string damaged = dir.Sub("damaged.ows");
  test_support::WriteFile(damaged, bytes);
  cluster::StandbyOptions options = OfflineStandbyOptions(dir.Sub("standby"));
  absl::StatusOr<cluster::SeededJournal> seeded =
      cluster::SeedJournal(SeedOptionsFor(options, damaged));
  ASSERT_FALSE(seeded.ok());
  EXPECT_TRUE(absl::IsDataLoss(seeded.status()) ||
              absl::IsInvalidArgument(seeded.status()))
      << seeded.status();
  EXPECT_THAT(seeded.status().message(),
              HasSubstr("from " + damaged + " (a snapshot file that verifies"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("standby")));
  // Not a snapshot at all.
  seeded = cluster::SeedJournal(
      SeedOptionsFor(options, dir.Sub("primary") + "/snapshots"));
  EXPECT_FALSE(seeded.ok());
  EXPECT_THAT(seeded.status().message(), HasSubstr("not a regular file"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("standby")));
}

TEST(StandbySeed, RefusesASnapshotOfAnotherConfiguration) {
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  cluster::StandbyOptions options = OfflineStandbyOptions(dir.Sub("standby"));
  options.config.max_sessions += 1;
  absl::StatusOr<cluster::SeededJournal> seeded =
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path));
  ASSERT_TRUE(absl::IsFailedPrecondition(seeded.status())) << seeded.status();
  EXPECT_THAT(seeded.status().message(),
              HasSubstr("the configuration given differs"));
  EXPECT_THAT(seeded.status().message(), HasSubstr("max_sessions"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("standby")));
}

TEST(StandbySeed, ASnapshotAheadOfTheStreamIsRefusedAtStart) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  const cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  ASSERT_TRUE(
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path)).ok());
  // An empty stream, then one that ends one record before the snapshot.
  for (const std::size_t published : {std::size_t{0}, kSeedIndex - 1}) {
    if (published > 0) PublishRecords(*pub, records, 0, published, 1);
    absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
        cluster::Standby::Start(options);
    ASSERT_TRUE(absl::IsFailedPrecondition(standby.status()))
        << standby.status();
    EXPECT_THAT(standby.status().message(),
                HasSubstr("the snapshot is ahead of the replicated journal"));
    EXPECT_THAT(
        standby.status().message(),
        HasSubstr(published == 0 ? std::string("is empty")
                                 : absl::StrCat("holds journal indexes only up "
                                                "to ",
                                                published)));
  }
  // The journal is as seeded: nothing appended.
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")).empty());
}

TEST(StandbySeed, AStreamThatNoLongerHoldsTheNextIndexIsRefusedAtStart) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  // The stream holds the journal from 50 records after the snapshot on
  // (as after its retention removed the messages before).
  PublishRecords(*pub, records, kSeedIndex + 50, records.size(), 1);
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  const cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  ASSERT_TRUE(
      cluster::SeedJournal(SeedOptionsFor(options, snapshot.path)).ok());
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(options);
  ASSERT_TRUE(absl::IsDataLoss(standby.status())) << standby.status();
  EXPECT_THAT(standby.status().message(),
              HasSubstr(absl::StrCat("holds journal indexes only from ",
                                     kSeedIndex + 51, " on")));
  EXPECT_THAT(
      standby.status().message(),
      HasSubstr(absl::StrCat("records ", kSeedIndex + 1, "..", kSeedIndex + 50,
                             " are no longer in the stream")));
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")).empty());
}

// `serve --standby --seed-snapshot`, the binary: a directory that holds
// anything is a usage error (exit 2) and stays as it was; an empty one is
// seeded, and the standby follows from the snapshot on.
TEST(StandbyCommand, SeedsANewStandbyFromASnapshot) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "cli", 1);
  ASSERT_NE(pub, nullptr);
  PublishRecords(*pub, records, 0, records.size(), 1);
  ScratchDir dir;
  const state::SnapshotInfo snapshot =
      SourceSnapshotAt(kSeedIndex, dir.Sub("primary"));
  ASSERT_FALSE(snapshot.path.empty());
  // The source's configuration (test_support::TestOptions), every key
  // the journal pins.
  const config::ServiceConfig& source = SourceJournal::Get().options().config;
  const std::string config = dir.Sub("serve.toml");
  test_support::WriteText(
      config,
      absl::StrCat("[engine]\nmin_instrument = ", source.engine.min_instrument,
                   "\nmax_instrument = ", source.engine.max_instrument,
                   "\nmin_price = ", source.engine.min_price,
                   "\nmax_price = ", source.engine.max_price,
                   "\nmin_quantity = ", source.engine.min_quantity,
                   "\nmax_quantity = ", source.engine.max_quantity,
                   "\nmax_live_orders = ", source.engine.max_live_orders,
                   "\n[service]\nmax_sessions = ", source.max_sessions, "\n"));
  const auto args_for = [&](const std::string& journal) {
    return std::vector<std::string>{ORDERWIRE_BINARY,
                                    "serve",
                                    "--standby",
                                    "--nats",
                                    (*nats)->ServersUrl(),
                                    "--engine-name",
                                    "cli",
                                    "--journal",
                                    journal,
                                    "--config",
                                    config,
                                    "--seed-snapshot",
                                    snapshot.path,
                                    "--stats-interval",
                                    "0.05"};
  };
  {
    std::filesystem::create_directories(dir.Sub("occupied"));
    test_support::WriteText(dir.Sub("occupied") + "/x", "");
    auto child = test_support::ChildProcess::Spawn(
        args_for(dir.Sub("occupied")), dir.Sub("occupied.log"));
    ASSERT_TRUE(child.ok()) << child.status();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::optional<int> exited;
    while (!(exited = (*child)->Exited()).has_value() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(exited.has_value()) << (*child)->LogTail();
    EXPECT_TRUE(WIFEXITED(*exited) && WEXITSTATUS(*exited) == 2)
        << (*child)->LogTail();
    EXPECT_THAT(
        test_support::ReadText(dir.Sub("occupied.log")),
        HasSubstr("--seed-snapshot: cannot seed a journal in " +
                  dir.Sub("occupied") + ": the directory is not empty"));
    EXPECT_TRUE(EntriesOf(dir.Sub("occupied")) ==
                std::vector<std::string>{"x"});
  }
  const std::string log = dir.Sub("stderr");
  auto child =
      test_support::ChildProcess::Spawn(args_for(dir.Sub("standby")), log);
  ASSERT_TRUE(child.ok()) << child.status();
  const std::string done =
      absl::StrCat("applied ", records.back().index, " (durable ",
                   records.back().index, ")");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (test_support::ReadText(log).find(done) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  absl::StatusOr<int> wstatus =
      (*child)->Stop(SIGTERM, std::chrono::seconds(10));
  const std::string text = test_support::ReadText(log);
  ASSERT_TRUE(wstatus.ok()) << wstatus.status() << "\n" << text;
  EXPECT_TRUE(WIFEXITED(*wstatus) && WEXITSTATUS(*wstatus) == 0) << text;
  EXPECT_THAT(text, HasSubstr("seeded from snapshot " + snapshot.path));
  EXPECT_THAT(text, HasSubstr("it starts at index 2501"));
  EXPECT_THAT(text, HasSubstr("started from snapshot"));
  EXPECT_THAT(text, HasSubstr(done));
  EXPECT_TRUE(
      ReadJournal(dir.Sub("standby")) ==
      std::vector<OwnedRecord>(records.begin() + kSeedIndex, records.end()));
}

}  // namespace
}  // namespace orderwire::standby_test
