// The hot standby (cluster/standby.h) against real nats-servers: a journal
// written by a real Service (batch durability, two sessions trading on the
// same accounts) is published to the engine's stream as group messages of
// varied sizes; a standby on an empty directory must end with the same
// journal, record for record and byte for byte, and the same state; it
// resumes after a restart from the right stream sequence (found by binary
// search); a gap, a corrupted message or a divergent local record stops it
// with DataLoss and nothing of the refused message appended; it opens no
// UDP socket.
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
#include <filesystem>
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
#include "client/run_client.h"
#include "cluster/primary_replication.h"
#include "cluster/seed.h"
#include "codec/frame.h"
#include "engine/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/cut.h"
#include "journal/reader.h"
#include "replication/cluster_status.h"
#include "replication/group_message.h"
#include "replication/journal_publisher.h"
#include "replication/journal_stream.h"
#include "service/service.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/support/bytes.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire {
namespace {

using test_support::Bytes;
using test_support::NatsCluster;
using test_support::ScratchDir;
using ::testing::HasSubstr;

// A journal record with its own bytes.
struct OwnedRecord {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;
  Bytes frame;

  [[nodiscard]] journal::Record View() const {
    journal::Record r;
    r.index = index;
    r.receive_ns = receive_ns;
    r.session_id = session_id;
    r.flags = flags;
    r.frame = *codec::FrameView::Parse(frame);
    return r;
  }
  bool operator==(const OwnedRecord&) const = default;
};

std::vector<OwnedRecord> ReadJournal(const std::string& dir) {
  std::vector<OwnedRecord> out;
  auto reader = journal::JournalReader::Open(dir);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  journal::Record r;
  journal::ReadResult result;
  while ((result = (*reader)->Next(r)) == journal::ReadResult::kRecord) {
    const auto frame = r.frame.bytes();
    out.push_back({r.index, r.receive_ns, r.session_id, r.flags,
                   Bytes(frame.begin(), frame.end())});
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  return out;
}

// The service's configuration for the source journal (and so the
// standby's): test_support::TestOptions'.
service::ServiceOptions SourceOptions(const std::string& dir) {
  service::ServiceOptions options =
      test_support::TestOptions(dir, journal::Durability::kBatch);
  options.journal.segment_size = journal::kMinSegmentCapacity;
  return options;
}

state::StateMachineOptions MachineOptionsOf(const service::ServiceOptions& o) {
  return state::StateMachineOptions{
      .engine = o.config.engine,
      .max_sessions = o.config.max_sessions,
      .report_history = o.report_history,
      .history_budget_bytes =
          static_cast<std::size_t>(o.config.max_report_history_bytes),
  };
}

// The state a plain replay of `dir` makes (no snapshot), encoded canonically
// (journal id and time 0, so two journals' states compare).
std::vector<std::byte> ReplayedState(const std::string& dir,
                                     const service::ServiceOptions& o) {
  absl::StatusOr<state::RebuiltState> rebuilt =
      state::RebuildState({.directory = dir,
                           .use_snapshots = false,
                           .machine_options = MachineOptionsOf(o),
                           .unpinned = state::PinnedConfigOf(o.config)});
  EXPECT_TRUE(rebuilt.ok()) << rebuilt.status();
  if (!rebuilt.ok()) return {};
  return state::EncodeSnapshot(*rebuilt->machine, 0, 0);
}

// A journal written by a real service: two sessions trading the mixed
// workload on shared accounts, batch durability. Written once per binary.
class SourceJournal {
 public:
  static const SourceJournal& Get() {
    if (instance_ == nullptr) instance_.reset(new SourceJournal());
    return *instance_;
  }
  // Removes the journal (from main, after the tests).
  static void Reset() { instance_.reset(); }
  [[nodiscard]] std::string dir() const { return dir_.Sub("journal"); }
  [[nodiscard]] const std::vector<OwnedRecord>& records() const {
    return records_;
  }
  [[nodiscard]] const service::ServiceOptions& options() const {
    return options_;
  }

 private:
  SourceJournal() : options_(SourceOptions(dir_.Sub("journal"))) {
    auto service = test_support::RunningService::Start(options_);
    EXPECT_NE(service, nullptr);
    if (service == nullptr) return;
    constexpr std::uint32_t kSessions = 2;
    constexpr std::size_t kCommands = 3000;
    std::vector<std::thread> threads;
    std::atomic<bool> stop{false};
    for (std::uint32_t s = 0; s < kSessions; ++s) {
      threads.emplace_back([&, s] {
        const std::vector<std::byte> input = workload::EncodeCommands(
            workload::Generate(workload::Workload::kMixed, kCommands, 300 + s));
        client::ClientOptions client;
        client.target = service->endpoint();
        client.session_id = 60 + s;
        client.window = 256;
        client.quiet_ms = 20;
        absl::StatusOr<client::ClientResult> result =
            client::RunClient(client, input, stop);
        EXPECT_TRUE(result.ok()) << result.status();
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_TRUE(service->Stop().ok());
    records_ = ReadJournal(dir());
    EXPECT_EQ(records_.size(), kSessions * kCommands);
  }

  static std::unique_ptr<SourceJournal> instance_;
  ScratchDir dir_;
  service::ServiceOptions options_;
  std::vector<OwnedRecord> records_;
};

std::unique_ptr<SourceJournal> SourceJournal::instance_;

// The group sizes the "primary" publishes, in turn.
constexpr std::size_t kGroupSizes[] = {1, 7, 64, 3, 200, 13, 2, 31};

// Publishes records [from, to) (positions in `records`) as records
// messages of kGroupSizes, cycling from `cycle`. Returns the messages'
// first positions.
std::vector<std::size_t> PublishRecords(replication::JournalPublisher& pub,
                                        const std::vector<OwnedRecord>& records,
                                        std::size_t from, std::size_t to,
                                        std::uint64_t epoch,
                                        std::size_t cycle = 0) {
  std::vector<std::size_t> starts;
  replication::GroupMessageBuilder builder;
  std::size_t at = from;
  for (std::size_t g = cycle; at < to; ++g) {
    const std::size_t n =
        std::min(kGroupSizes[g % std::size(kGroupSizes)], to - at);
    builder.Start(epoch);
    for (std::size_t i = at; i < at + n; ++i) {
      EXPECT_TRUE(builder.Add(records[i].View()).ok());
    }
    const std::span<const std::byte> bytes = builder.Finish();
    EXPECT_TRUE(pub.Publish(records[at].index, bytes).ok()) << pub.failure();
    starts.push_back(at);
    at += n;
  }
  EXPECT_TRUE(pub.Flush(std::chrono::seconds(30)).ok()) << pub.failure();
  return starts;
}

std::unique_ptr<replication::JournalPublisher> OpenPublisher(
    const NatsCluster& nats, const std::string& engine, std::uint64_t epoch) {
  replication::PublisherOptions options;
  options.servers = nats.ServersUrl();
  options.stream.engine_name = engine;
  options.stream.replicas = nats.node_count();
  options.epoch = epoch;
  options.ack_timeout = std::chrono::seconds(20);
  auto pub = replication::JournalPublisher::Open(std::move(options));
  EXPECT_TRUE(pub.ok()) << pub.status();
  if (!pub.ok()) return nullptr;
  return *std::move(pub);
}

cluster::StandbyOptions StandbyOptionsFor(const NatsCluster& nats,
                                          const std::string& engine,
                                          const std::string& dir) {
  const service::ServiceOptions& source = SourceJournal::Get().options();
  cluster::StandbyOptions o;
  o.nats_servers = nats.ServersUrl();
  o.engine_name = engine;
  o.journal.directory = dir;
  o.journal.durability = journal::Durability::kBatch;
  o.journal.segment_size = journal::kMinSegmentCapacity;
  o.config = source.config;
  o.report_history = source.report_history;
  o.on_event = [](std::string_view) {};
  return o;
}

std::unique_ptr<cluster::Standby> StartStandby(
    const cluster::StandbyOptions& options) {
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(options);
  EXPECT_TRUE(standby.ok()) << standby.status();
  if (!standby.ok()) return nullptr;
  return *std::move(standby);
}

// Steps the standby until it has applied `index` (OK), fails (its error)
// or `timeout` passes; then Stop().
absl::Status FollowUntil(
    cluster::Standby& standby, std::uint64_t index,
    std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  absl::Status status;
  while (standby.stats().applied_index < index) {
    if (std::chrono::steady_clock::now() > deadline) {
      status = absl::DeadlineExceededError(absl::StrCat(
          "standby applied ", standby.stats().applied_index, " of ", index));
      break;
    }
    status = standby.Step(std::chrono::milliseconds(50));
    if (!status.ok()) break;
  }
  if (absl::Status s = standby.Stop(); status.ok()) status = s;
  return status;
}

// Steps until the standby fails (its error) or `timeout` passes (OK).
absl::Status FollowUntilError(cluster::Standby& standby,
                              std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (absl::Status s = standby.Step(std::chrono::milliseconds(50)); !s.ok()) {
      (void)standby.Stop();
      return s;
    }
  }
  return standby.Stop();
}

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

TEST(Standby, AGapStopsItAndNothingOfTheMessageIsAppended) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  // Records 1..100, then 111..300: 101..110 never published.
  PublishRecords(*pub, records, 0, 100, 1);
  PublishRecords(*pub, records, 110, 300, 1);
  ScratchDir dir;
  auto standby =
      StartStandby(StandbyOptionsFor(**nats, "main", dir.Sub("standby")));
  ASSERT_NE(standby, nullptr);
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("indexes 101 to 110 are missing"));
  EXPECT_EQ(standby->stats().appended_index, 100u);
  EXPECT_EQ(standby->stats().applied_index, 100u);
  // Every later step says the same.
  EXPECT_EQ(standby->Step(std::chrono::milliseconds(1)), status);
  standby.reset();
  const std::vector<OwnedRecord> held = ReadJournal(dir.Sub("standby"));
  EXPECT_TRUE(held ==
              std::vector<OwnedRecord>(records.begin(), records.begin() + 100));
}

TEST(Standby, ACorruptedMessageStopsItAndNothingOfItIsAppended) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  const std::size_t before = PublishRecords(*pub, records, 0, 100, 1).size();
  // A standby that has followed them (started later, its stream search
  // would read the bad message below and refuse to start, with the same
  // error).
  ScratchDir dir;
  auto standby =
      StartStandby(StandbyOptionsFor(**nats, "main", dir.Sub("standby")));
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, 100).ok());
  // Records 101..150 with one byte of a frame flipped after the checksum
  // was computed.
  replication::GroupMessageBuilder builder;
  builder.Start(1);
  for (std::size_t i = 100; i < 150; ++i) {
    ASSERT_TRUE(builder.Add(records[i].View()).ok());
  }
  const std::span<const std::byte> finished = builder.Finish();
  std::vector<std::byte> bad(finished.begin(), finished.end());
  bad[bad.size() - 3] ^= std::byte{0x40};
  ASSERT_TRUE(pub->Publish(records[100].index, bad).ok());
  PublishRecords(*pub, records, 150, 300, 1);
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("sequence ", before + 1, " ")));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("nothing of it appended"));
  EXPECT_EQ(standby->stats().appended_index, 100u);
  EXPECT_EQ(standby->stats().applied_index, 100u);
  standby.reset();
  EXPECT_EQ(ReadJournal(dir.Sub("standby")).size(), 100u);
}

TEST(Standby, ALocalRecordThatDiffersFromThePrimarysIsRefused) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  // Engine "old": records 1..100, where record 100 was received at another
  // time than on engine "new" (an old primary's record the new one never
  // had). The standby follows "old" to 100, then is pointed at "new".
  std::vector<OwnedRecord> old_records(records.begin(), records.begin() + 100);
  old_records[99].receive_ns += 1;
  {
    auto pub = OpenPublisher(**nats, "old", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, old_records, 0, 100, 1);
  }
  {
    auto pub = OpenPublisher(**nats, "new", 1);
    ASSERT_NE(pub, nullptr);
    // One message of 91..110: it holds both the differing 100 and 101.
    PublishRecords(*pub, records, 0, 90, 1);
    replication::GroupMessageBuilder builder;
    builder.Start(1);
    for (std::size_t i = 90; i < 110; ++i) {
      ASSERT_TRUE(builder.Add(records[i].View()).ok());
    }
    ASSERT_TRUE(pub->Publish(records[90].index, builder.Finish()).ok());
    ASSERT_TRUE(pub->Flush(std::chrono::seconds(10)).ok());
  }
  ScratchDir dir;
  {
    auto standby =
        StartStandby(StandbyOptionsFor(**nats, "old", dir.Sub("standby")));
    ASSERT_NE(standby, nullptr);
    ASSERT_TRUE(FollowUntil(*standby, 100).ok());
  }
  // The parting (index 100) is inside a stream message: no new primary
  // took over there, so nothing is cut and the start is refused.
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(
          StandbyOptionsFor(**nats, "new", dir.Sub("standby")));
  ASSERT_FALSE(standby.ok());
  EXPECT_TRUE(absl::IsDataLoss(standby.status())) << standby.status();
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("diverges from stream new at index 100"));
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("inside a message"));
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) == old_records);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("standby") + "/cut"));
}

// Rejoining as a standby (cluster/standby.h): an old primary's journal
// holds records 1..150, of which 101..150 the stream never acknowledged;
// a new primary (epoch 2) took over at 101 with an epoch marker and went on
// with records of its own.
constexpr std::size_t kAgreed = 100;   // records 1..100 agree
constexpr std::size_t kOldLast = 150;  // the old primary's last
constexpr std::size_t kNewLast = 200;  // the stream's last

// The old primary's records: the source's, 101..150 received at another
// time.
std::vector<OwnedRecord> OldPrimaryRecords() {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  std::vector<OwnedRecord> old(records.begin(), records.begin() + kOldLast);
  for (std::size_t i = kAgreed; i < kOldLast; ++i) old[i].receive_ns += 1;
  return old;
}

// Writes the old primary's journal in `dir` (a standby follows engine
// "old", where they were published).
void WriteOldPrimaryJournal(const NatsCluster& nats, const std::string& dir) {
  {
    auto pub = OpenPublisher(nats, "old", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, OldPrimaryRecords(), 0, kOldLast, 1);
  }
  auto standby = StartStandby(StandbyOptionsFor(nats, "old", dir));
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, kOldLast).ok());
}

// Engine "main": epoch 1's records 1..100 (a message ends at 100), then
// `after_agreed`: by default epoch 2's marker at 101 and its records
// 101..200.
enum class AfterAgreed { kNewPrimary, kSameEpochRecords, kOlderMarker };
void PublishMain(const NatsCluster& nats,
                 AfterAgreed after = AfterAgreed::kNewPrimary) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  {
    auto pub = OpenPublisher(nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, records, 0, kAgreed, 1);
    if (after == AfterAgreed::kSameEpochRecords) {
      PublishRecords(*pub, records, kAgreed, kNewLast, 1);
      return;
    }
  }
  const std::uint64_t epoch = after == AfterAgreed::kOlderMarker ? 1 : 2;
  auto pub = OpenPublisher(nats, "main", epoch);
  ASSERT_NE(pub, nullptr);
  ASSERT_TRUE(pub->PublishEpochMarker(kAgreed + 1).ok()) << pub->failure();
  PublishRecords(*pub, records, kAgreed, kNewLast, epoch);
}

TEST(StandbyRejoin, CutsTheUnacknowledgedTailAndFollowsTheNewPrimary) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), kNewLast);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  const std::string local = dir.Sub("standby");
  WriteOldPrimaryJournal(**nats, local);
  PublishMain(**nats);

  cluster::StandbyOptions options = StandbyOptionsFor(**nats, "main", local);
  std::vector<std::string> events;
  options.on_event = [&](std::string_view line) { events.emplace_back(line); };
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_THAT(events, ::testing::Contains(HasSubstr(
                          "REJOINING AS A STANDBY: cut local records 101..150 "
                          "(never acknowledged by the stream; kept in " +
                          local + "/cut/101-150)")));
  EXPECT_EQ(standby->stats().rejoin_cuts, 1u);
  EXPECT_EQ(standby->stats().records_cut, kOldLast - kAgreed);
  EXPECT_EQ(standby->stats().replayed, kAgreed);
  ASSERT_TRUE(FollowUntil(*standby, kNewLast).ok());
  EXPECT_EQ(standby->stats().epoch, 2u);
  const std::vector<std::byte> state =
      state::EncodeSnapshot(standby->state(), 0, 0);
  standby.reset();
  // Its journal is the stream's, byte for byte, and its state the replay
  // of it.
  const std::vector<OwnedRecord> expected(records.begin(),
                                          records.begin() + kNewLast);
  EXPECT_TRUE(ReadJournal(local) == expected);
  EXPECT_TRUE(ReplayedState(local, SourceJournal::Get().options()) == state);
  // The records cut are kept, byte for byte.
  const std::vector<OwnedRecord> old = OldPrimaryRecords();
  std::vector<OwnedRecord> kept;
  for (const OwnedRecord& r : ReadJournal(local + "/cut/101-150")) {
    if (r.index > kAgreed) kept.push_back(r);
  }
  EXPECT_TRUE(kept ==
              std::vector<OwnedRecord>(old.begin() + kAgreed, old.end()));
}

TEST(StandbyRejoin, NoRejoinRefusesAndCutsNothing) {
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  const std::string local = dir.Sub("standby");
  WriteOldPrimaryJournal(**nats, local);
  PublishMain(**nats);
  cluster::StandbyOptions options = StandbyOptionsFor(**nats, "main", local);
  options.rejoin = false;
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(options);
  ASSERT_FALSE(standby.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(standby.status())) << standby.status();
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("records 101..150 were never acknowledged"));
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("--no-rejoin"));
  EXPECT_TRUE(ReadJournal(local) == OldPrimaryRecords());
}

TEST(StandbyRejoin, WithoutANewerEpochMarkerNothingIsCut) {
  for (const AfterAgreed after :
       {AfterAgreed::kSameEpochRecords, AfterAgreed::kOlderMarker}) {
    SCOPED_TRACE(static_cast<int>(after));
    auto nats = NatsCluster::Start(1);
    ASSERT_TRUE(nats.ok()) << nats.status();
    ScratchDir dir;
    const std::string local = dir.Sub("standby");
    WriteOldPrimaryJournal(**nats, local);
    PublishMain(**nats, after);
    absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
        cluster::Standby::Start(StandbyOptionsFor(**nats, "main", local));
    ASSERT_FALSE(standby.ok());
    EXPECT_TRUE(absl::IsDataLoss(standby.status())) << standby.status();
    EXPECT_THAT(std::string(standby.status().message()),
                HasSubstr("diverges from stream main at index 101"));
    EXPECT_TRUE(ReadJournal(local) == OldPrimaryRecords());
  }
}

TEST(StandbyRejoin, AJournalAheadOfAStreamThatSimplyEndsIsNotCut) {
  // The stream holds epoch 1's records 1..100 and nothing after, or nothing
  // at all: no primary went on from there, so nothing is decided at start.
  for (const bool empty : {false, true}) {
    SCOPED_TRACE(empty);
    auto nats = NatsCluster::Start(1);
    ASSERT_TRUE(nats.ok()) << nats.status();
    ScratchDir dir;
    const std::string local = dir.Sub("standby");
    WriteOldPrimaryJournal(**nats, local);
    {
      auto pub = OpenPublisher(**nats, "main", 1);
      ASSERT_NE(pub, nullptr);
      if (!empty) {
        PublishRecords(*pub, SourceJournal::Get().records(), 0, kAgreed, 1);
      }
    }
    auto standby = StartStandby(StandbyOptionsFor(**nats, "main", local));
    ASSERT_NE(standby, nullptr);
    EXPECT_EQ(standby->stats().rejoin_cuts, 0u);
    EXPECT_EQ(standby->stats().appended_index, kOldLast);
    standby.reset();
    EXPECT_TRUE(ReadJournal(local) == OldPrimaryRecords());
    EXPECT_FALSE(std::filesystem::exists(local + "/cut"));
  }
}

TEST(StandbyRejoin, ACutLeftHalfDoneIsFinishedAtTheNextStart) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  const std::string local = dir.Sub("standby");
  WriteOldPrimaryJournal(**nats, local);
  PublishMain(**nats);
  // A crash in the middle of the rejoin's cut: its intent is written and
  // the segment cut, the rest not done.
  absl::StatusOr<journal::CutReport> crashed =
      journal::CutJournalTail({.directory = local,
                               .keep_through_index = kAgreed,
                               .stop_after = journal::CutStep::kSegmentCut});
  ASSERT_TRUE(absl::IsAborted(crashed.status())) << crashed.status();
  ASSERT_TRUE(std::filesystem::exists(local + "/CUT"));
  auto standby = StartStandby(StandbyOptionsFor(**nats, "main", local));
  ASSERT_NE(standby, nullptr);
  EXPECT_FALSE(std::filesystem::exists(local + "/CUT"));
  EXPECT_EQ(standby->stats().rejoin_cuts, 0u);  // finished, not decided now
  ASSERT_TRUE(FollowUntil(*standby, kNewLast).ok());
  standby.reset();
  EXPECT_TRUE(
      ReadJournal(local) ==
      std::vector<OwnedRecord>(records.begin(), records.begin() + kNewLast));
}

TEST(Standby, RemembersEachEpochAndRefusesAnOlderOneAfterIt) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  {
    // Epoch 1: its marker, then records 1..100.
    auto pub = OpenPublisher(**nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    ASSERT_TRUE(pub->PublishEpochMarker(1).ok()) << pub->failure();
    PublishRecords(*pub, records, 0, 100, 1);
  }
  {
    // Epoch 2 takes over at 101.
    auto pub = OpenPublisher(**nats, "main", 2);
    ASSERT_NE(pub, nullptr);
    ASSERT_TRUE(pub->PublishEpochMarker(101).ok()) << pub->failure();
    PublishRecords(*pub, records, 100, 200, 2);
  }
  ScratchDir dir;
  cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  std::vector<std::string> events;
  options.on_event = [&](std::string_view line) { events.emplace_back(line); };
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, 200).ok());
  EXPECT_EQ(standby->stats().epoch, 2u);
  EXPECT_EQ(standby->stats().epoch_markers, 2u);
  EXPECT_THAT(events,
              ::testing::Contains(HasSubstr("epoch 2 begins at index 101")));
  {
    // A writer of epoch 1 that was not fenced (it opened after the marker):
    // its records cannot follow epoch 2's.
    auto pub = OpenPublisher(**nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, records, 200, 210, 1);
  }
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("epoch 1 after epoch 2"));
  EXPECT_EQ(standby->stats().appended_index, 200u);
}

TEST(Standby, AMarkerThatDoesNotContinueTheLocalJournalIsRefused) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  PublishRecords(*pub, records, 0, 100, 1);
  ScratchDir dir;
  auto standby =
      StartStandby(StandbyOptionsFor(**nats, "main", dir.Sub("standby")));
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, 100).ok());
  // A new primary that says its journal ends at 90: the standby holds
  // records it does not have.
  auto next = OpenPublisher(**nats, "main", 2);
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(next->PublishEpochMarker(91).ok()) << next->failure();
  ASSERT_TRUE(next->Flush(std::chrono::seconds(10)).ok());
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("continues from index 91, but the local journal ends "
                        "at 100"));
  EXPECT_EQ(standby->stats().epoch, 1u);
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
}  // namespace orderwire

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  orderwire::SourceJournal::Reset();
  // libnats keeps library-wide state (threads, timers) until nats_Close;
  // closing and waiting leaves nothing for LeakSanitizer to report.
  nats_CloseAndWait(5000);
  return result;
}
