// Failover end to end (docs/REPLICATION.md "Failover test and runs", issue
// 14): real nats-server nodes (tests/support/nats_cluster.h), a replicated
// primary holding the lease and a hot standby, both the built `orderwire`
// binary run as child processes (tests/support/child_process.h), and two
// client sessions trading through RunClient with the primary and the
// standby as their failover targets.
//
//  - The primary is SIGKILLed mid-load: the standby takes the lease and
//    serves, the clients finish on it; every command is in the new
//    primary's journal exactly once, and what each session received is, byte
//    for byte, that journal's per-session replay (so nothing acknowledged is
//    missing). The old primary then restarts as a standby on its own journal,
//    rejoins, and once caught up its journal equals the new primary's record
//    for record. On 3 nodes (an R3 stream) and on 1 (R1).
//  - The primary is SIGSTOPped past its lease: the standby takes over; after
//    SIGCONT the old primary sends not one datagram more to a client that
//    has commands waiting at it, and exits saying it lost the lease.
//  - Both publish the market-data feed (docs/MARKETDATA.md) to one
//    subscriber (tests/support/feed_follower.h), the primary SIGKILLed
//    mid-load: the new primary's first packet is a Heartbeat of the same
//    session at the next sequence of its state, and the subscriber, asking
//    the new primary's request server for what it lacks, ends with the new
//    primary's journal's feed, one contiguous sequence, and its books.
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/run_client.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "engine/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "replication/cluster_status.h"
#include "tests/support/bytes.h"
#include "tests/support/child_process.h"
#include "tests/support/feed_follower.h"
#include "tests/support/files.h"
#include "tests/support/journal_replay.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire {
namespace {

using std::chrono::milliseconds;
using test_support::Bytes;
using test_support::ChildProcess;
using test_support::Limit;
using test_support::NatsCluster;
using test_support::ScratchDir;
using ::testing::HasSubstr;

constexpr char kEngine[] = "failover";
// The lease: short, so that a takeover takes seconds (the standby waits for
// the holder's lease to expire).
constexpr char kLeaseMs[] = "1500";
// Sessions 7 and 8 may trade any account.
constexpr char kConfig[] =
    "[sessions.7]\naccounts = \"any\"\n[sessions.8]\naccounts = \"any\"\n";

// Polls `done` every 20 ms until it holds or `timeout` passes.
bool PollUntil(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

std::string LogOf(const ChildProcess& process) {
  return test_support::ReadText(process.log_path());
}

// Waits until the process's log holds `line`; false on timeout or if the
// process exits first.
bool WaitForLog(ChildProcess& process, const std::string& line,
                milliseconds timeout) {
  return PollUntil(
             [&] {
               return LogOf(process).find(line) != std::string::npos ||
                      process.Exited().has_value();
             },
             timeout) &&
         LogOf(process).find(line) != std::string::npos;
}

// A loopback UDP port free now, for a member to bind later (the clients are
// given both addresses before the standby listens).
net::Endpoint FreeUdpEndpoint() {
  auto probe = net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  EXPECT_TRUE(probe.ok()) << probe.status();
  return probe.ok() ? *probe->LocalEndpoint() : net::Endpoint{};
}

// A primary and a standby of engine kEngine on `nodes` nats-server nodes,
// each with its journal and its UDP address in one scratch directory.
class Members {
 public:
  explicit Members(int nodes) : nodes_(nodes) {
    auto nats = NatsCluster::Start(nodes);
    EXPECT_TRUE(nats.ok()) << "cannot start nats-server: " << nats.status();
    if (nats.ok()) nats_ = *std::move(nats);
    test_support::WriteText(config_path(), kConfig);
    auto config = config::ParseServiceConfig(kConfig);
    EXPECT_TRUE(config.ok()) << config.status();
    if (config.ok()) engine_ = config->engine;
    address_a_ = FreeUdpEndpoint();
    address_b_ = FreeUdpEndpoint();
  }

  [[nodiscard]] bool ok() const { return nats_ != nullptr; }
  [[nodiscard]] std::string journal_a() const { return dir_.Sub("a"); }
  [[nodiscard]] std::string journal_b() const { return dir_.Sub("b"); }
  [[nodiscard]] const net::Endpoint& address_a() const { return address_a_; }
  [[nodiscard]] const net::Endpoint& address_b() const { return address_b_; }
  [[nodiscard]] const engine::EngineConfig& engine() const { return engine_; }
  [[nodiscard]] std::string config_path() const {
    return dir_.Sub("service.toml");
  }
  [[nodiscard]] std::string servers() const { return nats_->ServersUrl(); }

  // `orderwire serve` as the replicated primary holding the lease, member
  // "member-a" on journal a at address a; waits until it listens. Right
  // after a 3-node cluster starts, creating the lease bucket or the R3
  // stream may time out for a moment (scripts/nats_cluster.sh says the
  // same): a primary that exits so is started again, up to 5 times.
  // `extra`: more flags (e.g. the feed's).
  std::unique_ptr<ChildProcess> StartPrimary(
      const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {ORDERWIRE_BINARY,
                                     "serve",
                                     "--durability",
                                     "replicated",
                                     "--lease",
                                     "--nats",
                                     servers(),
                                     "--engine-name",
                                     kEngine,
                                     "--replicas",
                                     absl::StrCat(nodes_),
                                     "--lease-ms",
                                     kLeaseMs,
                                     "--journal",
                                     journal_a(),
                                     "--listen",
                                     address_a_.ToString(),
                                     "--member-name",
                                     "member-a",
                                     "--config",
                                     config_path()};
    args.insert(args.end(), extra.begin(), extra.end());
    for (int attempt = 1; attempt <= 5; ++attempt) {
      auto child = ChildProcess::Spawn(args, dir_.Sub("primary-a.log"));
      EXPECT_TRUE(child.ok()) << child.status();
      if (!child.ok()) return nullptr;
      if (WaitForLog(**child, "listening on", milliseconds(30'000))) {
        return *std::move(child);
      }
      const std::string log = (*child)->LogTail();
      if (!(*child)->Exited().has_value() ||
          log.find("Timeout") == std::string::npos || attempt == 5) {
        ADD_FAILURE() << "the primary did not start:\n" << log;
        return nullptr;
      }
      std::this_thread::sleep_for(milliseconds(500));
    }
    return nullptr;
  }

  // `orderwire serve --standby` for `member` on `journal`, taking over on
  // `listen` when the lease expires; waits until it follows. `extra`: more
  // flags (e.g. the feed's).
  std::unique_ptr<ChildProcess> StartStandby(
      const std::string& member, const std::string& journal,
      const net::Endpoint& listen, const std::string& log_name,
      const std::string& ready_line,
      const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {ORDERWIRE_BINARY,
                                     "serve",
                                     "--standby",
                                     "--nats",
                                     servers(),
                                     "--engine-name",
                                     kEngine,
                                     "--journal",
                                     journal,
                                     "--member-name",
                                     member,
                                     "--config",
                                     config_path(),
                                     "--listen",
                                     listen.ToString(),
                                     "--lease-ms",
                                     kLeaseMs,
                                     "--replicas",
                                     absl::StrCat(nodes_),
                                     "--stats-interval",
                                     "0.2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Spawn(std::move(args), log_name, ready_line);
  }

  // The cluster as `orderwire cluster status` reads it; nullopt while it
  // cannot be read (a node is down and the request timed out).
  [[nodiscard]] std::optional<replication::ClusterStatus> Status() const {
    auto status =
        replication::ReadClusterStatus(servers(), kEngine, milliseconds(2000));
    if (!status.ok()) return std::nullopt;
    return *std::move(status);
  }

  // The last journal index on the stream (0 while none can be read).
  [[nodiscard]] std::uint64_t StreamLastIndex() const {
    const auto status = Status();
    return status.has_value() && status->head.has_value()
               ? status->head->last_index
               : 0;
  }

 private:
  std::unique_ptr<ChildProcess> Spawn(std::vector<std::string> args,
                                      const std::string& log_name,
                                      const std::string& ready_line) {
    auto child = ChildProcess::Spawn(std::move(args), dir_.Sub(log_name));
    EXPECT_TRUE(child.ok()) << child.status();
    if (!child.ok()) return nullptr;
    if (!WaitForLog(**child, ready_line, milliseconds(30'000))) {
      ADD_FAILURE() << log_name << " never said '" << ready_line << "':\n"
                    << (*child)->LogTail();
      return nullptr;
    }
    return *std::move(child);
  }

  int nodes_;
  ScratchDir dir_;
  std::unique_ptr<NatsCluster> nats_;
  engine::EngineConfig engine_;
  net::Endpoint address_a_;
  net::Endpoint address_b_;
};

// Two client sessions trading the mixed workload on shared accounts through
// RunClient on their own threads, with targets a then b; each session's
// reports go to its own file.
class Trading {
 public:
  static constexpr std::size_t kCommands = 4000;

  // `rate`: commands per second per session.
  Trading(const Members& members, const std::string& reports_dir,
          double rate = 2000)
      : results_(kIds.size(), absl::UnknownError("not run")) {
    for (std::size_t s = 0; s < kIds.size(); ++s) {
      paths_.push_back(absl::StrCat(reports_dir, "/session-", kIds[s], ".bin"));
      threads_.emplace_back([this, &members, s, rate] {
        const std::vector<std::byte> input = workload::EncodeCommands(
            workload::Generate(workload::Workload::kMixed, kCommands, 500 + s));
        std::FILE* reports = std::fopen(paths_[s].c_str(), "wb");
        EXPECT_NE(reports, nullptr) << paths_[s];
        if (reports == nullptr) return;
        client::ClientOptions client;
        client.target = members.address_a();
        client.failover_targets = {members.address_b()};
        client.failover_timeout_ms = 500;
        client.session_id = kIds[s];
        client.window = 256;
        // Paced, so that the load is still running when the primary goes.
        client.rate = rate;
        client.give_up_ms = 40'000;
        client.reports_out = reports;
        results_[s] = client::RunClient(client, input, stop_);
        std::fclose(reports);
      });
    }
  }
  ~Trading() {
    stop_.store(true);
    Join();
  }

  void Join() {
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  // After Join(): each session finished on b, every command acknowledged;
  // b's journal (`replay`) holds each command exactly once and replays
  // into what each session received, byte for byte.
  void ExpectExactlyOnce(const test_support::SessionReplay& replay,
                         const net::Endpoint& b) const {
    EXPECT_EQ(replay.records, kIds.size() * kCommands)
        << "a command is missing from the new primary's journal or is in it "
           "twice";
    for (std::size_t s = 0; s < kIds.size(); ++s) {
      SCOPED_TRACE(::testing::Message() << "session " << kIds[s]);
      ASSERT_TRUE(results_[s].ok()) << results_[s].status();
      const client::ClientResult& r = *results_[s];
      EXPECT_EQ(r.acknowledged, kCommands);
      EXPECT_EQ(r.unconfirmed, 0u);
      EXPECT_GE(r.failovers, 1u);
      EXPECT_EQ(r.final_target.ToString(), b.ToString());
      EXPECT_EQ(replay.records_by_session.count(kIds[s]) == 0
                    ? 0
                    : replay.records_by_session.at(kIds[s]),
                kCommands);
      const auto replayed = replay.reports_by_session.find(kIds[s]);
      ASSERT_NE(replayed, replay.reports_by_session.end());
      EXPECT_EQ(
          test_support::ExpectLiveIsReplayPrefix(
              kIds[s], test_support::ReadFile(paths_[s]), replayed->second),
          r.reports);
    }
  }

 private:
  static constexpr std::array<std::uint32_t, 2> kIds{7, 8};
  std::vector<std::string> paths_;
  std::vector<absl::StatusOr<client::ClientResult>> results_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The next index in the new primary's "epoch marker published at sequence
// S (epoch E, next index N)" line: the first index of its epoch (0: none).
std::uint64_t MarkerNextIndex(const std::string& log) {
  const std::string marker = "epoch marker published at sequence";
  const std::size_t line = log.find(marker);
  if (line == std::string::npos) return 0;
  const std::string next = "next index ";
  const std::size_t at = log.find(next, line);
  if (at == std::string::npos) return 0;
  return std::strtoull(log.c_str() + at + next.size(), nullptr, 10);
}

class FailoverKill : public ::testing::TestWithParam<int> {};

TEST_P(FailoverKill, EveryAcknowledgedCommandOnceAndTheOldPrimaryRejoins) {
  Members members(GetParam());
  ASSERT_TRUE(members.ok());
  std::unique_ptr<ChildProcess> a = members.StartPrimary();
  ASSERT_NE(a, nullptr);
  std::unique_ptr<ChildProcess> b =
      members.StartStandby("member-b", members.journal_b(), members.address_b(),
                           "standby-b.log", "standby (answering no client");
  ASSERT_NE(b, nullptr);
  ScratchDir reports;
  Trading trading(members, reports.path());
  // Mid-load: a third of the commands replicated.
  ASSERT_TRUE(PollUntil(
      [&] { return members.StreamLastIndex() >= 2 * Trading::kCommands / 3; },
      milliseconds(40'000)))
      << a->LogTail();
  ASSERT_TRUE(a->Kill().ok());
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForLog(
      *b,
      "serving on " + members.address_b().ToString() + " as primary of epoch",
      milliseconds(30'000)))
      << b->LogTail();
  const auto took_over = std::chrono::steady_clock::now();
  trading.Join();
  std::printf("takeover (kill to serving): %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(took_over - killed)
                      .count()));

  // The clients are done: the new primary's journal is still (it takes no
  // more commands) and is the truth.
  trading.ExpectExactlyOnce(test_support::ReplayJournalBySession(
                                members.journal_b(), members.engine()),
                            members.address_b());

  // The old primary restarts as a standby on its own journal and follows
  // the new primary to its last index.
  const std::uint64_t last = members.StreamLastIndex();
  ASSERT_GE(last, 2 * Trading::kCommands);
  // It must cut its local tail (and say so) exactly when its journal goes
  // past the index where the new primary's epoch marker took over: records
  // it journaled that the stream never acknowledged.
  const std::uint64_t takeover_index = MarkerNextIndex(LogOf(*b));
  ASSERT_GT(takeover_index, 0u) << "no epoch marker line:\n" << b->LogTail();
  const std::vector<test_support::JournalRecordCopy> old_journal =
      test_support::ReadJournalRecords(members.journal_a());
  const std::uint64_t old_last =
      old_journal.empty() ? 0 : old_journal.back().index;
  std::unique_ptr<ChildProcess> rejoined =
      members.StartStandby("member-a", members.journal_a(), members.address_a(),
                           "rejoin-a.log", "standby (answering no client");
  ASSERT_NE(rejoined, nullptr);
  if (old_last >= takeover_index) {
    EXPECT_THAT(LogOf(*rejoined), HasSubstr("REJOINING AS A STANDBY"));
    EXPECT_TRUE(std::filesystem::is_directory(absl::StrCat(
        members.journal_a(), "/cut/", takeover_index, "-", old_last)))
        << "the cut records " << takeover_index << ".." << old_last
        << " are not kept";
  } else {
    EXPECT_THAT(LogOf(*rejoined),
                ::testing::Not(HasSubstr("REJOINING AS A STANDBY")))
        << "nothing to cut: the old journal ends at " << old_last;
  }
  EXPECT_TRUE(PollUntil(
      [&] {
        const auto status = members.Status();
        if (!status.has_value()) return false;
        for (const replication::MemberReport& m : status->members) {
          if (m.name == "member-a" && m.role == "standby" &&
              m.applied_index >= last) {
            return true;
          }
        }
        return false;
      },
      milliseconds(30'000)))
      << rejoined->LogTail();
  absl::StatusOr<int> rejoin_exit =
      rejoined->Stop(SIGTERM, milliseconds(10'000));
  ASSERT_TRUE(rejoin_exit.ok()) << rejoin_exit.status();
  EXPECT_TRUE(WIFEXITED(*rejoin_exit) && WEXITSTATUS(*rejoin_exit) == 0)
      << rejoined->LogTail();
  absl::StatusOr<int> b_exit = b->Stop(SIGTERM, milliseconds(10'000));
  ASSERT_TRUE(b_exit.ok()) << b_exit.status();
  EXPECT_TRUE(WIFEXITED(*b_exit) && WEXITSTATUS(*b_exit) == 0) << b->LogTail();

  const std::vector<test_support::JournalRecordCopy> new_primary =
      test_support::ReadJournalRecords(members.journal_b());
  EXPECT_EQ(new_primary.size(), last);
  EXPECT_TRUE(test_support::ReadJournalRecords(members.journal_a()) ==
              new_primary)
      << "the rejoined member's journal differs from the new primary's";
}

INSTANTIATE_TEST_SUITE_P(Nodes, FailoverKill, ::testing::Values(3, 1),
                         [](const ::testing::TestParamInfo<int>& nodes) {
                           return absl::StrCat("R", nodes.param);
                         });

// --- The market-data feed across the takeover ---------------------------

constexpr std::int64_t kFeedHeartbeatMs = 100;

// The feed's flags of a member: publishing to `target`, requests on
// `requests`.
std::vector<std::string> FeedFlags(const net::Endpoint& target,
                                   const net::Endpoint& requests) {
  return {"--md-target",         target.ToString(),
          "--md-request-listen", requests.ToString(),
          "--md-heartbeat-ms",   absl::StrCat(kFeedHeartbeatMs)};
}

// The newest snapshot file the primary has written in `journal` (empty:
// none yet).
std::string NewestSnapshot(const std::string& journal) {
  std::string newest;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(journal + "/snapshots", error)) {
    if (entry.path().extension() == ".ows" && entry.path().string() > newest) {
      newest = entry.path().string();
    }
  }
  return newest;
}

// After the follower stopped: it holds `replay`'s feed and books; the
// primary published from 1, then the new primary (whose log is `b_log`)
// from the next sequence of the records it took over with (those below its
// epoch marker's next index).
void ExpectTheNewPrimaryContinuedTheFeed(
    const test_support::FeedFollower& follower,
    const test_support::SessionReplay& replay, const std::string& b_log) {
  test_support::ExpectFollowedTheJournalsFeed(follower, replay);
  const std::vector<test_support::PublisherRun> runs =
      test_support::ExpectEachPublisherContinuesTheFeed(follower.packets());
  ASSERT_EQ(runs.size(), 2u) << "the primary's, then the new primary's";
  EXPECT_EQ(runs[0].start, 1u);
  const std::uint64_t marker_next = MarkerNextIndex(b_log);
  ASSERT_GT(marker_next, 1u) << b_log;
  ASSERT_LE(marker_next - 1, replay.feed_after.size());
  EXPECT_EQ(runs[1].start, replay.feed_after[marker_next - 2] + 1);
  EXPECT_LT(runs[1].start, runs[1].end)
      << "the new primary published nothing live";
  std::printf("primary: live 1 to %llu; new primary: live %llu to %llu; %s\n",
              static_cast<unsigned long long>(runs[0].end - 1),
              static_cast<unsigned long long>(runs[1].start),
              static_cast<unsigned long long>(runs[1].end - 1),
              test_support::Summary(follower.subscriber()).c_str());
}

// Whether the standby is started from the primary's snapshot
// (--seed-snapshot: its journal then has the primary's journal_id) or
// follows the stream from an empty journal.
class FailoverFeed : public ::testing::TestWithParam<bool> {};

// The primary publishes the feed and is SIGKILLed mid-load; the standby
// takes over and continues the same feed: its first packet is a Heartbeat
// of the same session with the next sequence of its state, and a
// subscriber that listened to both, asking the new primary's request
// server for what it lacks, ends with one contiguous sequence equal to the
// new primary's journal's feed and the engine's books.
TEST_P(FailoverFeed, TheNewPrimaryContinuesOneContiguousFeed) {
  const bool seeded = GetParam();
  Members members(1);
  ASSERT_TRUE(members.ok());
  const net::Endpoint requests_a = FreeUdpEndpoint();
  const net::Endpoint requests_b = FreeUdpEndpoint();
  test_support::FeedFollower follower({requests_a, requests_b},
                                      kFeedHeartbeatMs * 1'000'000);
  std::vector<std::string> primary_flags =
      FeedFlags(follower.endpoint(), requests_a);
  primary_flags.insert(primary_flags.end(), {"--snapshot-every", "300"});
  std::unique_ptr<ChildProcess> a = members.StartPrimary(primary_flags);
  ASSERT_NE(a, nullptr);
  ScratchDir reports;
  Trading trading(members, reports.path(), 700);
  std::vector<std::string> standby_flags =
      FeedFlags(follower.endpoint(), requests_b);
  if (seeded) {
    ASSERT_TRUE(
        PollUntil([&] { return !NewestSnapshot(members.journal_a()).empty(); },
                  milliseconds(40'000)))
        << a->LogTail();
    standby_flags.insert(
        standby_flags.end(),
        {"--seed-snapshot", NewestSnapshot(members.journal_a())});
  }
  std::unique_ptr<ChildProcess> b = members.StartStandby(
      "member-b", members.journal_b(), members.address_b(), "standby-b.log",
      "standby (answering no client", standby_flags);
  ASSERT_NE(b, nullptr);
  // Mid-load, with the subscriber well into the feed.
  ASSERT_TRUE(
      PollUntil([&] { return members.StreamLastIndex() >= Trading::kCommands; },
                milliseconds(60'000)))
      << a->LogTail();
  const std::uint64_t heard_from_a = follower.next_sequence();
  ASSERT_GT(heard_from_a, 1u) << "the primary published nothing";
  ASSERT_TRUE(a->Kill().ok());
  ASSERT_TRUE(WaitForLog(
      *b,
      "serving on " + members.address_b().ToString() + " as primary of epoch",
      milliseconds(30'000)))
      << b->LogTail();
  trading.Join();
  // The messages the primary made durable but did not publish come from
  // the new primary's request server only: the subscriber has them before
  // it stops.
  EXPECT_TRUE(follower.WaitCaughtUp(milliseconds(60'000)))
      << follower.SummaryNow();
  absl::StatusOr<int> b_exit = b->Stop(SIGTERM, milliseconds(20'000));
  ASSERT_TRUE(b_exit.ok()) << b_exit.status();
  // The new primary's journal (seeded: after the records of the
  // primary's that its snapshot holds).
  const test_support::SessionReplay replay =
      seeded ? test_support::ReplaySeededJournalBySession(
                   members.journal_a(), members.journal_b(), members.engine())
             : test_support::ReplayJournalBySession(members.journal_b(),
                                                    members.engine());
  EXPECT_TRUE(
      follower.WaitForNext(replay.feed.size() + 1, milliseconds(60'000)))
      << "the subscriber expects " << follower.next_sequence() << " of "
      << replay.feed.size() + 1;
  follower.Stop();
  ExpectTheNewPrimaryContinuedTheFeed(follower, replay, LogOf(*b));
}

// Seeded: the standby's journal is made from the primary's snapshot and
// has its journal_id. Not seeded: it follows the stream from an empty
// journal, which it creates with the journal_id the primary labelled the
// stream with (docs/REPLICATION.md "The stream"), so it continues the same
// session all the same (docs/MARKETDATA.md "Sequence numbers and
// sessions").
INSTANTIATE_TEST_SUITE_P(Failover, FailoverFeed, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& seeded) {
                           return seeded.param ? "Seeded" : "NotSeeded";
                         });

// Session 7's commands `first`..`last`, one per datagram.
void SendLimits(test_support::TestClient& client, std::uint64_t first,
                std::uint64_t last) {
  for (std::uint64_t seq = first; seq <= last; ++seq) {
    client.Send(7, {test_support::Frame(seq, Limit({.client_order_id = seq}))});
  }
}

// A primary paused past its lease wakes up to a new primary: whatever it
// had in flight and whatever waits in its socket, it answers nothing more,
// and it stops saying it lost the lease.
TEST(FailoverPause, AResumedOldPrimarySendsNothingAndExitsOnTheLostLease) {
  Members members(1);
  ASSERT_TRUE(members.ok());
  std::unique_ptr<ChildProcess> a = members.StartPrimary();
  ASSERT_NE(a, nullptr);
  std::unique_ptr<ChildProcess> b =
      members.StartStandby("member-b", members.journal_b(), members.address_b(),
                           "standby-b.log", "standby (answering no client");
  ASSERT_NE(b, nullptr);
  // A client of the primary (it talks to a only, so every datagram it gets
  // is a's): answered while a holds the lease.
  test_support::TestClient client(members.address_a());
  SendLimits(client, 1, 20);
  EXPECT_EQ(client.Frames(7, 20, 10'000).size(), 20u);
  // Commands in flight as a stops; what a answered before it stopped is
  // taken off the socket.
  SendLimits(client, 21, 60);
  ASSERT_TRUE(a->Pause().ok());
  const std::size_t before_pause = client.Drain(7, 200).size();
  ASSERT_TRUE(WaitForLog(
      *b,
      "serving on " + members.address_b().ToString() + " as primary of epoch",
      milliseconds(30'000)))
      << b->LogTail();
  // More wait in a's socket while it sleeps: new commands, and the first
  // 20 again, as a client retransmits (a live primary answers those from
  // its report history at once, without the stream).
  SendLimits(client, 61, 80);
  SendLimits(client, 1, 20);
  ASSERT_TRUE(a->Resume().ok());
  ASSERT_TRUE(
      PollUntil([&] { return a->Exited().has_value(); }, milliseconds(20'000)))
      << "the old primary still runs after it lost the lease:\n"
      << a->LogTail();
  // a is gone: anything it sent after SIGCONT is already in the socket.
  std::size_t after_resume = 0;
  while (client.Receive(100).has_value()) ++after_resume;
  EXPECT_EQ(after_resume, 0u)
      << "the old primary answered after it lost the lease (" << before_pause
      << " reports came before the pause)";
  const std::optional<int> status = a->Exited();
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  // It stops as no longer the primary: its lease check or the stream's
  // fence (its next publish after the new epoch's marker), whichever it
  // meets first.
  EXPECT_THAT(LogOf(*a), ::testing::AnyOf(HasSubstr("lost the lease"),
                                          HasSubstr("fenced")));
  // The new primary serves on: nothing the old one did on waking up may
  // have ended it (another session, from another socket).
  test_support::TestClient other(members.address_b());
  other.Send(8, {test_support::Frame(1, Limit({.client_order_id = 1}))});
  EXPECT_EQ(other.Frames(8, 1, 10'000).size(), 1u)
      << "the new primary does not answer after the old one woke up:\n"
      << b->LogTail();
  EXPECT_FALSE(b->Exited().has_value()) << b->LogTail();
}

}  // namespace
}  // namespace orderwire
