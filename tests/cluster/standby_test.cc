// The hot standby (cluster/standby.h) following a primary, against real
// nats-servers: a journal written by a real Service (batch durability, two
// sessions trading on the same accounts) is published to the engine's
// stream as group messages of varied sizes; a standby on an empty directory
// must end with the same journal, record for record and byte for byte, and
// the same state; it resumes after a restart from the right stream sequence
// (found by binary search), follows through the loss of the stream's
// leader and a live replicated primary, snapshots its state; it opens no
// UDP socket; `orderwire serve --standby` follows until SIGTERM. What it
// refuses and the rejoin are in standby_divergence_test.cc, the seeding
// from a snapshot in standby_seed_test.cc; the helpers in
// standby_test_support.h.
#include "cluster/standby.h"

#include <dirent.h>
#include <nats/nats.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/run_client.h"
#include "cluster/primary_replication.h"
#include "engine/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replication/cluster_status.h"
#include "replication/journal_publisher.h"
#include "replication/journal_stream.h"
#include "service/service.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/cluster/standby_test_support.h"
#include "tests/support/child_process.h"
#include "tests/support/journal_replay.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::standby_test {
namespace {

// The inodes of the UDP sockets (IPv4 and IPv6) this process holds.
std::set<std::string> OwnUdpSockets() {
  std::set<std::string> udp;
  for (const char* table : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string field;
      for (int i = 0; i < 10 && fields >> field; ++i) {
      }
      udp.insert(field);  // the 10th column: inode
    }
  }
  std::set<std::string> own;
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr) return own;
  while (const dirent* entry = ::readdir(fds)) {
    char target[256];
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    const std::string link(target, static_cast<std::size_t>(n));
    if (link.rfind("socket:[", 0) != 0) continue;
    const std::string inode = link.substr(8, link.size() - 9);
    if (udp.count(inode) > 0) own.insert(inode);
  }
  ::closedir(fds);
  return own;
}

class StandbyFollows : public ::testing::TestWithParam<int> {};

TEST_P(StandbyFollows, RebuildsThePrimarysJournalAndState) {
  const SourceJournal& source = SourceJournal::Get();
  ASSERT_FALSE(source.records().empty());
  auto nats = NatsCluster::Start(GetParam());
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  const std::vector<std::size_t> starts =
      PublishRecords(*pub, source.records(), 0, source.records().size(), 1);
  ASSERT_GT(starts.size(), 50u);

  ScratchDir dir;
  // Before the standby starts: the process holds no UDP socket (the
  // service that wrote the source journal is gone).
  ASSERT_TRUE(OwnUdpSockets().empty());
  cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  options.member_name = "standby-1";
  options.report_interval = std::chrono::milliseconds(1);
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_EQ(standby->stats().start_sequence, 1u);
  // The lag: the stream messages after the one just followed.
  for (int i = 0; i < 200 && standby->stats().messages == 0; ++i) {
    ASSERT_TRUE(standby->Step(std::chrono::milliseconds(50)).ok());
  }
  EXPECT_EQ(standby->stats().lag_messages,
            starts.size() - standby->stats().messages);
  ASSERT_TRUE(FollowUntil(*standby, source.records().back().index).ok());
  EXPECT_EQ(standby->stats().lag_messages, 0u);
  EXPECT_TRUE(OwnUdpSockets().empty()) << "the standby opened a UDP socket";
  // Its report, as `orderwire cluster status` reads it (one more step puts
  // the final one).
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(standby->Step(std::chrono::milliseconds(1)).ok());
  absl::StatusOr<replication::ClusterStatus> cluster =
      replication::ReadClusterStatus((*nats)->ServersUrl(), "main",
                                     std::chrono::seconds(10));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_EQ(cluster->members.size(), 1u);
  const replication::MemberReport& member = cluster->members[0];
  EXPECT_EQ(member.name, "standby-1");
  EXPECT_EQ(member.role, "standby");
  EXPECT_EQ(member.epoch, 1u);
  EXPECT_EQ(member.applied_index, source.records().back().index);
  EXPECT_EQ(member.stream_sequence, starts.size());
  EXPECT_EQ(replication::MemberLag(*cluster, member), 0u);

  const cluster::StandbyStats stats = standby->stats();
  EXPECT_EQ(stats.messages, starts.size());
  EXPECT_EQ(stats.records_appended, source.records().size());
  EXPECT_EQ(stats.durable_index, source.records().back().index);
  EXPECT_EQ(stats.epoch, 1u);
  EXPECT_GT(stats.reports, 0u);
  // Its state, as the source's replay makes it.
  const std::vector<std::byte> expected_state =
      ReplayedState(source.dir(), source.options());
  ASSERT_FALSE(expected_state.empty());
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) == expected_state)
      << "the standby's state differs from the source journal's replay";
  // Stopped, it hands over its journal and state (for a takeover).
  cluster::StandbyState released = standby->Release();
  ASSERT_NE(released.writer, nullptr);
  EXPECT_EQ(released.writer->durable_index(), source.records().back().index);
  EXPECT_EQ(released.machine->last_index(), source.records().back().index);
  EXPECT_EQ(released.epoch, 1u);
  EXPECT_EQ(released.stream_sequence, starts.size());
  released = {};  // closes the journal
  standby.reset();

  // Its journal, record for record and byte for byte.
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) == source.records());
  // And the state its own journal replays into.
  EXPECT_TRUE(ReplayedState(dir.Sub("standby"), source.options()) ==
              expected_state);
  // A service started on it (a takeover by restart) has the same state.
  service::ServiceOptions serve = source.options();
  serve.journal.directory = dir.Sub("standby");
  absl::StatusOr<std::unique_ptr<service::Service>> service =
      service::Service::Start(serve);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_TRUE(state::EncodeSnapshot((*service)->state(), 0, 0) ==
              expected_state);
}

INSTANTIATE_TEST_SUITE_P(Nodes, StandbyFollows, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return param.param == 1 ? std::string("R1")
                                                   : std::string("R3");
                         });

TEST(Standby, ResumesFromTheRightSequenceAfterARestart) {
  const SourceJournal& source = SourceJournal::Get();
  const std::vector<OwnedRecord>& records = source.records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  // The first part, then a standby that follows it all.
  const std::size_t half = records.size() / 2;
  const std::vector<std::size_t> first =
      PublishRecords(*pub, records, 0, half, 1);
  ScratchDir dir;
  const cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  {
    auto standby = StartStandby(options);
    ASSERT_NE(standby, nullptr);
    ASSERT_TRUE(FollowUntil(*standby, records[half - 1].index).ok());
  }
  // More while it is stopped, then it starts again: at the sequence after
  // the last one it had, found by binary search (a few reads, not one per
  // message), with no record read twice.
  const std::vector<std::size_t> second =
      PublishRecords(*pub, records, half, records.size(), 1, first.size());
  const std::uint64_t messages = first.size() + second.size();
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  const cluster::StandbyStats at_start = standby->stats();
  EXPECT_EQ(at_start.start_sequence, first.size() + 1);
  EXPECT_EQ(at_start.applied_index, records[half - 1].index);
  EXPECT_LE(at_start.search_probes,
            static_cast<std::uint32_t>(std::ceil(std::log2(messages))) + 1)
      << messages << " messages";
  ASSERT_TRUE(FollowUntil(*standby, records.back().index).ok());
  EXPECT_EQ(standby->stats().epoch, 1u);
  EXPECT_EQ(standby->stats().records_held, 0u);
  EXPECT_EQ(standby->stats().messages, second.size());
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) ==
              ReplayedState(source.dir(), source.options()));
  standby.reset();
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) == records);
}

TEST(Standby, FollowsThroughTheLossOfTheStreamLeader) {
  const SourceJournal& source = SourceJournal::Get();
  const std::vector<OwnedRecord>& records = source.records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(3);
  ASSERT_TRUE(nats.ok()) << nats.status();
  const std::size_t half = records.size() / 2;
  {
    auto pub = OpenPublisher(**nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, records, 0, half, 1);
  }
  // The standby is given only the stream leader's address: when that node
  // goes, its connection goes with it, and it must carry on through a
  // server it learnt from the cluster.
  absl::StatusOr<replication::JournalStreamState> state =
      replication::GetJournalStreamState((*nats)->ServersUrl(), "main");
  ASSERT_TRUE(state.ok()) << state.status();
  const int leader = (*nats)->NodeByName(state->leader);
  ASSERT_GE(leader, 0) << state->leader;
  ScratchDir dir;
  cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  options.nats_servers = (*nats)->NodeUrl(leader);
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, records[half - 1].index).ok());
  // The stream's leader goes; the rest is published once a new one is
  // elected (a publisher opened until it can be), while the standby keeps
  // following.
  ASSERT_TRUE((*nats)->Kill(leader).ok());
  std::unique_ptr<replication::JournalPublisher> pub;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (pub == nullptr && std::chrono::steady_clock::now() < deadline) {
    replication::PublisherOptions publisher;
    publisher.servers = (*nats)->ServersUrl();
    publisher.stream.engine_name = "main";
    publisher.stream.replicas = 3;
    publisher.epoch = 1;
    publisher.ack_timeout = std::chrono::seconds(20);
    auto opened = replication::JournalPublisher::Open(std::move(publisher));
    if (opened.ok()) {
      pub = *std::move(opened);
    } else {
      ASSERT_TRUE(standby->Step(std::chrono::milliseconds(200)).ok());
    }
  }
  ASSERT_NE(pub, nullptr) << "no stream leader within 60 s";
  PublishRecords(*pub, records, half, records.size(), 1);
  ASSERT_TRUE(FollowUntil(*standby, records.back().index).ok());
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) ==
              ReplayedState(source.dir(), source.options()));
  standby.reset();
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) == records);
}

// The whole chain: a real primary in the `replicated` durability mode
// (cluster/replication_link.h) serving two trading sessions, and a standby
// following its stream while it serves: the standby's journal and state are
// the primary's.
TEST(Standby, FollowsALiveReplicatedPrimary) {
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  service::ServiceOptions primary = SourceOptions(dir.Sub("primary"));
  cluster::ReplicationOptions replication;
  replication.servers = (*nats)->ServersUrl();
  replication.engine_name = "live";
  primary.replication = cluster::ReplicatedDurability(replication);
  auto service = test_support::RunningService::Start(primary);
  ASSERT_NE(service, nullptr);

  // The standby runs on a thread of its own from now on.
  cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "live", dir.Sub("standby"));
  options.config = primary.config;
  options.report_history = primary.report_history;
  std::atomic<std::uint64_t> applied{0};
  cluster::Standby* standby_ptr = nullptr;
  options.interval_s = 0.001;
  options.on_interval = [&] {
    applied.store(standby_ptr->stats().applied_index);
  };
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  standby_ptr = standby.get();
  std::atomic<bool> stop_standby{false};
  absl::Status standby_status;
  std::thread follower([&] { standby_status = standby->Run(stop_standby); });

  constexpr std::size_t kCommands = 1500;
  std::vector<std::thread> clients;
  std::atomic<bool> stop{false};
  for (std::uint32_t s = 0; s < 2; ++s) {
    clients.emplace_back([&, s] {
      const std::vector<std::byte> input = workload::EncodeCommands(
          workload::Generate(workload::Workload::kMixed, kCommands, 500 + s));
      client::ClientOptions client;
      client.target = service->endpoint();
      client.session_id = 80 + s;
      client.window = 128;
      client.quiet_ms = 20;
      absl::StatusOr<client::ClientResult> result =
          client::RunClient(client, input, stop);
      EXPECT_TRUE(result.ok()) << result.status();
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(service->Stop().ok());
  const std::uint64_t last = service->final_stats().last_index;
  EXPECT_EQ(last, 2 * kCommands);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (applied.load() < last && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop_standby.store(true);
  follower.join();
  EXPECT_TRUE(standby_status.ok()) << standby_status;
  EXPECT_EQ(standby->stats().applied_index, last);
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) ==
              ReplayedState(dir.Sub("primary"), primary));
  standby.reset();
  service.reset();
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) ==
              ReadJournal(dir.Sub("primary")));
  // Not seeded, its journal is the primary's journal all the same: the
  // journal_id the primary labelled the stream with (the feed's session).
  const std::uint64_t primary_id =
      test_support::JournalIdOf(dir.Sub("primary"));
  EXPECT_NE(primary_id, 0u);
  EXPECT_EQ(test_support::JournalIdOf(dir.Sub("standby")), primary_id);
}

// The standby's journal is the stream's journal (replication/journal_stream.h
// "names the journal it carries"): created in an empty directory with the
// journal_id the stream names; a local journal of another id is refused,
// naming both, before anything is followed; for an unlabelled stream a new
// journal gets a random id, and the standby says so.
TEST(Standby, ItsJournalIsTheJournalTheStreamNames) {
  const SourceJournal& source = SourceJournal::Get();
  const std::vector<OwnedRecord>& records = source.records();
  ASSERT_GE(records.size(), 100u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  const std::uint64_t source_id = test_support::JournalIdOf(source.dir());
  ASSERT_NE(source_id, 0u);
  {
    replication::PublisherOptions options;
    options.servers = (*nats)->ServersUrl();
    options.stream.engine_name = "labelled";
    options.stream.journal_id = source_id;
    options.ack_timeout = std::chrono::seconds(20);
    auto pub = replication::JournalPublisher::Open(std::move(options));
    ASSERT_TRUE(pub.ok()) << pub.status();
    PublishRecords(**pub, records, 0, 100, 1);
  }
  ScratchDir dir;
  {
    auto standby =
        StartStandby(StandbyOptionsFor(**nats, "labelled", dir.Sub("new")));
    ASSERT_NE(standby, nullptr);
    ASSERT_TRUE(FollowUntil(*standby, records[99].index).ok());
  }
  EXPECT_EQ(test_support::JournalIdOf(dir.Sub("new")), source_id);

  // A journal made from an unlabelled stream of the same records.
  auto plain = OpenPublisher(**nats, "plain", 1);
  ASSERT_NE(plain, nullptr);
  PublishRecords(*plain, records, 0, 10, 1);
  std::vector<std::string> events;
  {
    cluster::StandbyOptions options =
        StandbyOptionsFor(**nats, "plain", dir.Sub("other"));
    options.on_event = [&](std::string_view line) {
      events.emplace_back(line);
    };
    auto standby = StartStandby(options);
    ASSERT_NE(standby, nullptr);
    ASSERT_TRUE(FollowUntil(*standby, records[9].index).ok());
  }
  const std::uint64_t other_id = test_support::JournalIdOf(dir.Sub("other"));
  ASSERT_NE(other_id, source_id);
  EXPECT_THAT(events, ::testing::Contains(HasSubstr(absl::StrFormat(
                          "names no journal (made before streams were "
                          "labelled): the new journal %s gets a random "
                          "journal_id, %016x",
                          dir.Sub("other"), other_id))));

  absl::StatusOr<std::unique_ptr<cluster::Standby>> refused =
      cluster::Standby::Start(
          StandbyOptionsFor(**nats, "labelled", dir.Sub("other")));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr(absl::StrFormat("is journal %016x", other_id)));
  EXPECT_THAT(refused.status().message(),
              HasSubstr(absl::StrFormat("carries journal %016x", source_id)));
  EXPECT_EQ(ReadJournal(dir.Sub("other")).size(), 10u);
}

// The state at `up_to` that a plain replay of `dir` makes, encoded as
// ReplayedState does.
std::vector<std::byte> ReplayedStateAt(const std::string& dir,
                                       const service::ServiceOptions& o,
                                       std::uint64_t up_to) {
  absl::StatusOr<state::RebuiltState> rebuilt =
      state::RebuildState({.directory = dir,
                           .use_snapshots = false,
                           .up_to_index = up_to,
                           .machine_options = MachineOptionsOf(o),
                           .unpinned = state::PinnedConfigOf(o.config)});
  EXPECT_TRUE(rebuilt.ok()) << rebuilt.status();
  if (!rebuilt.ok()) return {};
  EXPECT_EQ(rebuilt->machine->last_index(), up_to);
  return state::EncodeSnapshot(*rebuilt->machine, 0, 0);
}

TEST(Standby, SnapshotsItsStateAndRestartsFromTheNewest) {
  const SourceJournal& source = SourceJournal::Get();
  const std::vector<OwnedRecord>& records = source.records();
  ASSERT_EQ(records.size(), 6000u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  PublishRecords(*pub, records, 0, records.size(), 1);
  ScratchDir dir;
  cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  options.snapshot_every_records = 1000;
  std::uint64_t journal_id = 0;
  {
    auto standby = StartStandby(options);
    ASSERT_NE(standby, nullptr);
    ASSERT_TRUE(FollowUntil(*standby, 6000).ok());
    EXPECT_EQ(standby->stats().snapshots_taken, 6u);
    EXPECT_EQ(standby->stats().snapshots_failed, 0u);
    EXPECT_EQ(standby->stats().last_snapshot_index, 6000u);
    journal_id = standby->Release().writer->journal_id();
  }
  absl::StatusOr<std::vector<state::SnapshotInfo>> list =
      state::ListSnapshots(dir.Sub("standby"));
  ASSERT_TRUE(list.ok()) << list.status();
  std::vector<std::uint64_t> indexes;
  for (const state::SnapshotInfo& info : *list) indexes.push_back(info.index);
  std::sort(indexes.begin(), indexes.end());
  EXPECT_EQ(indexes,
            (std::vector<std::uint64_t>{1000, 2000, 3000, 4000, 5000, 6000}));
  // Each one is the state the source's replay has at its index.
  for (const std::uint64_t at :
       {std::uint64_t{1000}, std::uint64_t{3500}, std::uint64_t{6000}}) {
    absl::StatusOr<std::optional<state::LoadedSnapshot>> loaded =
        state::LoadNewestSnapshot(dir.Sub("standby"), journal_id, at, nullptr);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_TRUE(loaded->has_value());
    const std::uint64_t index = (*loaded)->info.index;
    EXPECT_EQ(index, at / 1000 * 1000);
    EXPECT_TRUE(state::EncodeSnapshot(*(*loaded)->machine, 0, 0) ==
                ReplayedStateAt(source.dir(), source.options(), index))
        << "snapshot " << index;
  }
  // A restart starts from the newest and replays nothing.
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_EQ(standby->stats().started_from_snapshot, 6000u);
  EXPECT_EQ(standby->stats().replayed, 0u);
  EXPECT_TRUE(state::EncodeSnapshot(standby->state(), 0, 0) ==
              ReplayedState(source.dir(), source.options()));
}

// `orderwire serve --standby`, the binary: follows the stream into its
// journal, prints its status line, stops on SIGTERM with exit 0.
TEST(StandbyCommand, FollowsUntilSigtermAndExitsZero) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_FALSE(records.empty());
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "cli", 1);
  ASSERT_NE(pub, nullptr);
  PublishRecords(*pub, records, 0, records.size(), 1);
  ScratchDir dir;
  const std::string log = dir.Sub("stderr");
  const std::vector<std::string> args = {ORDERWIRE_BINARY,
                                         "serve",
                                         "--standby",
                                         "--nats",
                                         (*nats)->ServersUrl(),
                                         "--engine-name",
                                         "cli",
                                         "--journal",
                                         dir.Sub("standby"),
                                         "--stats-interval",
                                         "0.05"};
  auto child = test_support::ChildProcess::Spawn(args, log);
  ASSERT_TRUE(child.ok()) << child.status();
  const auto read_log = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string done =
      absl::StrCat("applied ", records.back().index, " (durable ",
                   records.back().index, ")");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_log().find(done) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // It must be gone within 10 s of SIGTERM (if not, the destructor kills
  // it).
  absl::StatusOr<int> wstatus =
      (*child)->Stop(SIGTERM, std::chrono::seconds(10));
  ASSERT_TRUE(wstatus.ok()) << wstatus.status() << "\n" << read_log();
  const std::string text = read_log();
  EXPECT_TRUE(WIFEXITED(*wstatus) && WEXITSTATUS(*wstatus) == 0) << text;
  EXPECT_THAT(text, HasSubstr("standby (answering no client)"));
  EXPECT_THAT(text, HasSubstr(done));
  EXPECT_THAT(text, HasSubstr("standby stopped cleanly"));
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) == records);
}

}  // namespace
}  // namespace orderwire::standby_test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  orderwire::standby_test::SourceJournal::Reset();
  // libnats keeps library-wide state (threads, timers) until nats_Close;
  // closing and waiting leaves nothing for LeakSanitizer to report.
  nats_CloseAndWait(5000);
  return result;
}
