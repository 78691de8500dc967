// Test support for the hot standby's tests (standby_test.cc,
// standby_divergence_test.cc, standby_seed_test.cc, one binary): the source
// journal a real Service writes once per binary, its records published to
// the engine's stream as group messages, and a standby started and stepped
// on it.
#ifndef ORDERWIRE_TESTS_CLUSTER_STANDBY_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_CLUSTER_STANDBY_TEST_SUPPORT_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/run_client.h"
#include "cluster/standby.h"
#include "codec/frame.h"
#include "engine/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "replication/group_message.h"
#include "replication/journal_publisher.h"
#include "service/service.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/support/bytes.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::standby_test {

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

inline std::vector<OwnedRecord> ReadJournal(const std::string& dir) {
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
inline service::ServiceOptions SourceOptions(const std::string& dir) {
  service::ServiceOptions options =
      test_support::TestOptions(dir, journal::Durability::kBatch);
  options.journal.segment_size = journal::kMinSegmentCapacity;
  return options;
}

inline state::StateMachineOptions MachineOptionsOf(
    const service::ServiceOptions& o) {
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
inline std::vector<std::byte> ReplayedState(const std::string& dir,
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

  inline static std::unique_ptr<SourceJournal> instance_;
  ScratchDir dir_;
  service::ServiceOptions options_;
  std::vector<OwnedRecord> records_;
};

// The group sizes the "primary" publishes, in turn.
inline constexpr std::size_t kGroupSizes[] = {1, 7, 64, 3, 200, 13, 2, 31};

// Publishes records [from, to) (positions in `records`) as records
// messages of kGroupSizes, cycling from `cycle`. Returns the messages'
// first positions.
inline std::vector<std::size_t> PublishRecords(
    replication::JournalPublisher& pub, const std::vector<OwnedRecord>& records,
    std::size_t from, std::size_t to, std::uint64_t epoch,
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

inline std::unique_ptr<replication::JournalPublisher> OpenPublisher(
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

inline cluster::StandbyOptions StandbyOptionsFor(const NatsCluster& nats,
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

inline std::unique_ptr<cluster::Standby> StartStandby(
    const cluster::StandbyOptions& options) {
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(options);
  EXPECT_TRUE(standby.ok()) << standby.status();
  if (!standby.ok()) return nullptr;
  return *std::move(standby);
}

// Steps the standby until it has applied `index` (OK), fails (its error)
// or `timeout` passes; then Stop().
inline absl::Status FollowUntil(
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
inline absl::Status FollowUntilError(cluster::Standby& standby,
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

}  // namespace orderwire::standby_test

#endif  // ORDERWIRE_TESTS_CLUSTER_STANDBY_TEST_SUPPORT_H_
