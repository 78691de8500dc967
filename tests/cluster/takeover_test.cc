// The takeover (cluster/cluster_member.h, docs/REPLICATION.md "The
// takeover", plan item 3) in-process against a real nats-server
// (tests/support/nats_cluster.h): a standby whose primary goes away takes the
// lease with the next epoch, publishes one epoch marker and serves on from
// the old journal; of two standbys exactly one takes over and the other
// follows it; a publish between the catch-up and the marker fences the
// marker, and the member follows and tries again; a stop during the catch-up
// leaves no marker; a Service started with a held lease keeps renewing it;
// a member with takeover off lets the lease expire; a standby seeded from
// the primary's snapshot (cluster/seed.h) takes over like any other. Leases of
// 800 ms keep each test within a few seconds.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "cluster/cluster_member.h"
#include "cluster/primary_replication.h"
#include "cluster/seed.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "config/service_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "replication/cluster_status.h"
#include "replication/group_message.h"
#include "replication/journal_stream.h"
#include "replication/lease.h"
#include "replication/stream_follower.h"
#include "service/service.h"
#include "state/pinned_config.h"
#include "state/record_flags.h"
#include "state/snapshot.h"
#include "tests/cluster/cluster_test_support.h"
#include "tests/support/bytes.h"
#include "tests/support/journal_replay.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::cluster {
namespace {

using service::Service;
using service::ServiceOptions;

using state::ListSnapshots;
using state::PinnedConfigOf;
using state::SnapshotInfo;

using cluster_test::kSession;
using cluster_test::Order;
using cluster_test::Trade;
using std::chrono::milliseconds;
using test_support::Bytes;
using test_support::Frame;
using test_support::Hex;
using test_support::NatsCluster;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::StartNatsCluster;
using test_support::TestClient;
using ::testing::HasSubstr;

constexpr char kEngine[] = "tko";
constexpr milliseconds kLease{800};

LeaseOptions ShortLease(std::string holder) {
  return LeaseOptions{.holder = std::move(holder),
                      .duration = kLease,
                      .safety_margin = milliseconds(150),
                      .renew_interval = milliseconds(100),
                      .request_timeout = milliseconds(300),
                      .acquire_wait = milliseconds(0)};
}

replication::LeaseSpec LeaseSpecFor(const NatsCluster& nats,
                                    std::string holder) {
  replication::LeaseSpec spec;
  spec.servers = nats.ServersUrl();
  spec.engine_name = kEngine;
  spec.holder = std::move(holder);
  spec.duration = kLease;
  spec.safety_margin = milliseconds(150);
  spec.renew_interval = milliseconds(100);
  spec.request_timeout = milliseconds(300);
  return spec;
}

// A primary's replication; with a lease unless `holder` is empty.
ReplicationOptions PrimaryReplicationOptions(const NatsCluster& nats,
                                             const std::string& holder) {
  ReplicationOptions replication;
  replication.servers = nats.ServersUrl();
  replication.engine_name = kEngine;
  replication.connect_timeout = milliseconds(5000);
  if (!holder.empty()) replication.lease = ShortLease(holder);
  return replication;
}

// A primary in the replicated mode; with a lease unless `holder` is empty,
// the one handed over in `held` if given.
ServiceOptions PrimaryOptions(const std::string& journal,
                              const NatsCluster& nats,
                              const std::string& holder,
                              std::shared_ptr<HeldLease> held = nullptr,
                              config::ServiceConfig config = {}) {
  ServiceOptions options = test_support::TestOptions(
      journal, journal::Durability::kBatch, std::move(config));
  ReplicationOptions replication = PrimaryReplicationOptions(nats, holder);
  replication.held_lease = std::move(held);
  options.replication = ReplicatedDurability(std::move(replication));
  return options;
}

// The member's lines (on_event), from any thread.
class EventLog {
 public:
  void Add(std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.emplace_back(line);
  }
  std::string All() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string all;
    for (const std::string& line : lines_) all += line + "\n";
    return all;
  }
  // Whether a line containing `text` came within `timeout`.
  bool WaitFor(std::string_view text, milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (All().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

ClusterMemberOptions MemberOptions(const NatsCluster& nats,
                                   const std::string& journal,
                                   const std::string& name, EventLog& log,
                                   config::ServiceConfig config = {}) {
  const ServiceOptions primary =
      PrimaryOptions(journal, nats, name, nullptr, std::move(config));
  ClusterMemberOptions o;
  o.standby.nats_servers = nats.ServersUrl();
  o.standby.engine_name = kEngine;
  o.standby.journal.directory = journal;
  o.standby.journal.durability = journal::Durability::kBatch;
  o.standby.journal.segment_size = primary.journal.segment_size;
  o.standby.config = primary.config;
  o.standby.report_history = primary.report_history;
  o.standby.member_name = name;
  o.standby.poll = milliseconds(20);
  o.standby.connect_timeout = milliseconds(10000);
  o.standby.on_event = [&log](std::string_view line) { log.Add(line); };
  o.primary = primary;
  o.replication = PrimaryReplicationOptions(nats, name);
  return o;
}

// A ClusterMember running Run() on a thread of its own.
class RunningMember {
 public:
  static std::unique_ptr<RunningMember> Start(ClusterMemberOptions options) {
    absl::StatusOr<std::unique_ptr<ClusterMember>> member =
        ClusterMember::Start(std::move(options));
    if (!member.ok()) {
      ADD_FAILURE() << "ClusterMember::Start: " << member.status();
      return nullptr;
    }
    auto running = std::unique_ptr<RunningMember>(new RunningMember());
    running->member_ = std::move(*member);
    RunningMember* const self = running.get();
    running->thread_ = std::thread(
        [self] { self->status_ = self->member_->Run(self->stop_); });
    return running;
  }
  ~RunningMember() { (void)Stop(); }

  // Where it serves once it has taken over; nullopt after `timeout`.
  std::optional<net::Endpoint> WaitServing(milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto endpoint = member_->serving_endpoint()) return endpoint;
      if (member_->role() == MemberRole::kStopped) return std::nullopt;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return std::nullopt;
  }
  absl::Status Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  // Run() returned by itself.
  bool WaitStopped(milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (member_->role() != MemberRole::kStopped) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(milliseconds(10));
    }
    if (thread_.joinable()) thread_.join();
    return true;
  }
  ClusterMember& member() { return *member_; }
  std::atomic<bool>& stop_flag() { return stop_; }

 private:
  RunningMember() = default;
  std::unique_ptr<ClusterMember> member_;
  std::atomic<bool> stop_{false};
  absl::Status status_;
  std::thread thread_;
};

struct StreamMessage {
  std::uint64_t sequence = 0;
  replication::GroupMessageKind kind{};
  std::uint64_t epoch = 0;
  std::uint64_t first_index = 0;
  std::uint64_t last_index = 0;
  std::string msg_id;
};

std::vector<StreamMessage> ReadStream(const NatsCluster& nats) {
  std::vector<StreamMessage> out;
  auto state = replication::GetJournalStreamState(nats.ServersUrl(), kEngine);
  EXPECT_TRUE(state.ok()) << state.status();
  if (!state.ok() || state->last_sequence == 0) return out;
  auto follower = replication::StreamFollower::Open(
      {.servers = nats.ServersUrl(), .engine_name = kEngine});
  EXPECT_TRUE(follower.ok()) << follower.status();
  if (!follower.ok()) return out;
  for (std::uint64_t seq = 1; seq <= state->last_sequence; ++seq) {
    auto message = (*follower)->Next(milliseconds(5000));
    EXPECT_TRUE(message.ok()) << message.status();
    if (!message.ok()) break;
    auto parsed = replication::ParseGroupMessage(message->bytes);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (!parsed.ok()) break;
    out.push_back({message->stream_sequence, parsed->kind, parsed->epoch,
                   parsed->first_index, parsed->last_index(), message->msg_id});
  }
  return out;
}

std::vector<StreamMessage> Markers(const std::vector<StreamMessage>& stream) {
  std::vector<StreamMessage> markers;
  for (const StreamMessage& m : stream) {
    if (m.kind == replication::GroupMessageKind::kEpochMarker) {
      markers.push_back(m);
    }
  }
  return markers;
}

struct OwnedRecord {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;
  Bytes frame;
  bool operator==(const OwnedRecord&) const = default;
};

// The journal's records up to its end (or the first that does not read:
// a journal being written may end in a group not yet whole).
std::vector<OwnedRecord> ReadJournal(const std::string& dir) {
  std::vector<OwnedRecord> out;
  auto reader = journal::JournalReader::Open(dir);
  if (!reader.ok()) return out;
  journal::Record r;
  while ((*reader)->Next(r) == journal::ReadResult::kRecord) {
    const auto frame = r.frame.bytes();
    out.push_back({r.index, r.receive_ns, r.session_id, r.flags,
                   Bytes(frame.begin(), frame.end())});
  }
  return out;
}

// Waits (polling) until `dir`'s journal holds `count` records.
bool WaitJournal(const std::string& dir, std::size_t count,
                 milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (ReadJournal(dir).size() < count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

std::vector<Bytes> Concat(std::vector<Bytes> a, const std::vector<Bytes>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Epoch 1: an old member takes the lease (and lets it lapse), a primary
// at `journal` answers commands 1..6 of kSession (returned in *reports)
// and stops: what a standby that takes over next must carry on from.
void TradeAsALapsedPrimary(const NatsCluster& nats, const std::string& journal,
                           std::vector<Bytes>* reports) {
  {
    auto holder = replication::LeaseMember::Open(LeaseSpecFor(nats, "old"));
    ASSERT_TRUE(holder.ok()) << holder.status();
    ASSERT_TRUE((*holder)->TryAcquire().ok());
  }
  auto primary = RunningService::Start(PrimaryOptions(journal, nats, ""));
  ASSERT_NE(primary, nullptr);
  TestClient client(primary->endpoint());
  *reports = Trade(client, 1, 6);
  ASSERT_TRUE(primary->Stop().ok());
}

// A lease long enough to outlast a NATS pause of several seconds without a
// renewal, for the member that takes it.
void LengthenLease(ClusterMemberOptions& options) {
  LeaseOptions& lease = *options.replication->lease;
  lease.duration = milliseconds(14000);
  lease.safety_margin = milliseconds(2000);
  lease.renew_interval = milliseconds(300);
  lease.request_timeout = milliseconds(1000);
}

// The primary (with the lease) stops; the standby takes the lease with epoch
// 2, publishes exactly one marker and serves: the session trades on, the
// journal continues the old one's indexes, and the reports the client got
// from both are what the new journal replays into.
TEST(Takeover, AStandbyTakesOverWithTheNextEpochAndServesOn) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  auto primary =
      RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, "primary-a"));
  ASSERT_NE(primary, nullptr);
  EXPECT_THAT(primary->service().startup_report(), HasSubstr("epoch 1"));
  auto member =
      RunningMember::Start(MemberOptions(*nats, dir.Sub("b"), "member-b", log));
  ASSERT_NE(member, nullptr);
  TestClient client_a(primary->endpoint());
  const std::vector<Bytes> from_a = Trade(client_a, 1, 20);
  // It stays a standby while the primary renews.
  EXPECT_FALSE(member->WaitServing(2 * kLease).has_value());
  EXPECT_EQ(member->member().role(), MemberRole::kStandby);

  ASSERT_TRUE(primary->Stop().ok());
  const std::optional<net::Endpoint> serving =
      member->WaitServing(milliseconds(15000));
  ASSERT_TRUE(serving.has_value()) << log.All();
  EXPECT_EQ(member->member().epoch(), 2u);
  TestClient client_b(*serving);
  const std::vector<Bytes> from_b = Trade(client_b, 21, 30);
  ASSERT_TRUE(member->Stop().ok());
  const std::string events = log.All();
  EXPECT_THAT(events, HasSubstr("lease acquired epoch 2"));
  EXPECT_THAT(events, HasSubstr("caught up to stream sequence"));
  EXPECT_THAT(events, HasSubstr("(index 20)"));
  EXPECT_THAT(events, HasSubstr("epoch marker published at sequence"));
  EXPECT_THAT(events, HasSubstr("as primary of epoch 2"));
  EXPECT_EQ(member->member().takeover().marker_attempts, 1);

  // One marker, epoch 2, at index 21; everything after it is epoch 2.
  const std::vector<StreamMessage> stream = ReadStream(*nats);
  const std::vector<StreamMessage> markers = Markers(stream);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].epoch, 2u);
  EXPECT_EQ(markers[0].first_index, 21u);
  EXPECT_EQ(markers[0].msg_id, "2-marker");
  EXPECT_EQ(markers[0].sequence, member->member().takeover().marker_sequence);
  for (const StreamMessage& m : stream) {
    EXPECT_EQ(m.epoch,
              m.sequence > markers[0].sequence ||
                      m.kind == replication::GroupMessageKind::kEpochMarker
                  ? 2u
                  : 1u)
        << "sequence " << m.sequence;
  }
  EXPECT_EQ(stream.back().last_index, 30u);

  const std::vector<OwnedRecord> old_journal = ReadJournal(dir.Sub("a"));
  const std::vector<OwnedRecord> new_journal = ReadJournal(dir.Sub("b"));
  ASSERT_EQ(old_journal.size(), 20u);
  ASSERT_EQ(new_journal.size(), 30u);
  for (std::size_t i = 0; i < new_journal.size(); ++i) {
    EXPECT_EQ(new_journal[i].index, i + 1);
  }
  EXPECT_TRUE(
      std::equal(old_journal.begin(), old_journal.end(), new_journal.begin()));
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(
          dir.Sub("b"),
          test_support::TestOptions("", journal::Durability::kBatch)
              .config.engine);
  EXPECT_EQ(replay.records, 30u);
  EXPECT_TRUE(replay.reports_by_session.at(kSession) == Concat(from_a, from_b));
}

// A client that dies with resting orders just before its primary stops
// (docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect"): the
// standby that takes over counts the session's silence from its own start,
// lapses it and cancels its orders (cancel-on-disconnect), and the journal
// it continues replays to the same reports and feed.
TEST(Takeover, TheNewPrimaryLapsesASessionThatDiedWithTheOldOne) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  config::ServiceConfig config;
  config.sessions[kSession].liveness_seconds = 2;
  config.sessions[kSession].cancel_on_disconnect = true;
  auto primary = RunningService::Start(
      PrimaryOptions(dir.Sub("a"), *nats, "primary-a", nullptr, config));
  ASSERT_NE(primary, nullptr);
  auto member = RunningMember::Start(
      MemberOptions(*nats, dir.Sub("b"), "member-b", log, config));
  ASSERT_NE(member, nullptr);
  {
    TestClient client(primary->endpoint());
    (void)Trade(client, 1, 2);
  }  // the client is gone
  ASSERT_TRUE(primary->Stop().ok());
  EXPECT_EQ(primary->final_stats().session_lapses, 0u);
  ASSERT_TRUE(member->WaitServing(milliseconds(15000)).has_value())
      << log.All();
  const auto serving = std::chrono::steady_clock::now();
  // The lapse is the third record the stream carries.
  const auto deadline = serving + milliseconds(10000);
  while (ReadStream(*nats).back().last_index < 3 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - serving, milliseconds(1900));
  ASSERT_TRUE(member->Stop().ok());
  const std::vector<test_support::JournalRecordCopy> records =
      test_support::ReadJournalRecords(dir.Sub("b"));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].session_id, kSession);
  EXPECT_EQ(records[2].flags,
            state::kRecordLapse | state::kRecordCancelOnDisconnect);
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(
          dir.Sub("b"),
          test_support::TestOptions("", journal::Durability::kBatch)
              .config.engine);
  const std::vector<Bytes>& reports = replay.reports_by_session.at(kSession);
  ASSERT_EQ(reports.size(), 5u);  // 2 Accepted, 2 Cancelled, SessionClosed
  EXPECT_EQ(Hex(reports[4]),
            Hex(Frame(5, codec::SessionClosed{
                             .account_id = 0,
                             .request_id = 0,
                             .reason = codec::SessionCloseReason::kLapsed,
                             .cancelled_orders = 2})));
  EXPECT_TRUE(replay.live_orders.empty());
  // The feed: each order added, then deleted.
  ASSERT_EQ(replay.feed_after.size(), 3u);
  EXPECT_EQ(replay.feed_after[2] - replay.feed_after[1], 2u);
}

// A standby seeded from the primary's snapshot at S (cluster/seed.h) takes
// over like any other: its journal starts at S + 1 and continues the old
// primary's indexes byte for byte, and the session trades on from the state
// the snapshot and the records after it make.
TEST(Takeover, AStandbySeededFromThePrimarysSnapshotTakesOver) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  ServiceOptions primary_options =
      PrimaryOptions(dir.Sub("a"), *nats, "primary-a");
  primary_options.snapshot_every_records = 8;
  auto primary = RunningService::Start(primary_options);
  ASSERT_NE(primary, nullptr);
  TestClient client_a(primary->endpoint());
  std::vector<Bytes> from_a = Trade(client_a, 1, 10);
  // The snapshot the primary's snapshot child wrote (at 8 to 10), then
  // more records, which the standby follows from the stream.
  std::vector<SnapshotInfo> snapshots;
  for (int i = 0; i < 500 && snapshots.empty(); ++i) {
    absl::StatusOr<std::vector<SnapshotInfo>> listed =
        ListSnapshots(dir.Sub("a"));
    ASSERT_TRUE(listed.ok()) << listed.status();
    snapshots = *listed;
    if (snapshots.empty()) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(snapshots.size(), 1u);
  const SnapshotInfo snapshot = snapshots.front();
  ASSERT_GE(snapshot.index, 8u);
  ASSERT_LE(snapshot.index, 10u);
  from_a = Concat(from_a, Trade(client_a, 11, 20));
  ClusterMemberOptions options =
      MemberOptions(*nats, dir.Sub("b"), "member-b", log);
  absl::StatusOr<SeededJournal> seeded =
      SeedJournal({.journal = options.standby.journal,
                   .snapshot = snapshot.path,
                   .given = PinnedConfigOf(options.standby.config)});
  ASSERT_TRUE(seeded.ok()) << seeded.status();
  auto member = RunningMember::Start(std::move(options));
  ASSERT_NE(member, nullptr);

  ASSERT_TRUE(primary->Stop().ok());
  const std::optional<net::Endpoint> serving =
      member->WaitServing(milliseconds(15000));
  ASSERT_TRUE(serving.has_value()) << log.All();
  EXPECT_EQ(member->member().epoch(), 2u);
  TestClient client_b(*serving);
  const std::vector<Bytes> from_b = Trade(client_b, 21, 30);
  ASSERT_TRUE(member->Stop().ok());
  EXPECT_THAT(log.All(), HasSubstr("(index 20)"));
  const std::vector<StreamMessage> markers = Markers(ReadStream(*nats));
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].first_index, 21u);

  const std::vector<OwnedRecord> old_journal = ReadJournal(dir.Sub("a"));
  const std::vector<OwnedRecord> new_journal = ReadJournal(dir.Sub("b"));
  ASSERT_EQ(old_journal.size(), 20u);
  ASSERT_EQ(new_journal.size(), 30 - snapshot.index);
  for (std::size_t i = 0; i < new_journal.size(); ++i) {
    EXPECT_EQ(new_journal[i].index, snapshot.index + 1 + i);
  }
  EXPECT_TRUE(std::equal(
      old_journal.begin() + static_cast<std::ptrdiff_t>(snapshot.index),
      old_journal.end(), new_journal.begin()));
  // The reports from both are the ones one service taking commands 1..30
  // makes (order ids, session sequences): the seeded state was the
  // primary's.
  ScratchDir check;
  {
    auto source = RunningService::Start(
        test_support::TestOptions(check.Sub("j"), journal::Durability::kBatch));
    ASSERT_NE(source, nullptr);
    TestClient client(source->endpoint());
    const std::vector<Bytes> all = Trade(client, 1, 30);
    ASSERT_EQ(all.size(), 30u);
    EXPECT_TRUE(std::vector<Bytes>(all.begin(), all.begin() + 20) == from_a);
    EXPECT_TRUE(std::vector<Bytes>(all.begin() + 20, all.end()) == from_b);
  }
}

// Two standbys: exactly one takes over; the other stays a standby, follows
// the new primary, and its journal is the new primary's byte for byte.
TEST(Takeover, OfTwoStandbysExactlyOneTakesOverAndTheOtherFollowsIt) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log_b;
  EventLog log_c;
  auto primary =
      RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, "primary-a"));
  ASSERT_NE(primary, nullptr);
  auto b = RunningMember::Start(
      MemberOptions(*nats, dir.Sub("b"), "member-b", log_b));
  auto c = RunningMember::Start(
      MemberOptions(*nats, dir.Sub("c"), "member-c", log_c));
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  TestClient client_a(primary->endpoint());
  (void)Trade(client_a, 1, 10);
  ASSERT_TRUE(primary->Stop().ok());

  RunningMember* winner = nullptr;
  RunningMember* loser = nullptr;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(15000);
  while (winner == nullptr && std::chrono::steady_clock::now() < deadline) {
    if (b->member().serving_endpoint().has_value()) {
      winner = b.get();
      loser = c.get();
    } else if (c->member().serving_endpoint().has_value()) {
      winner = c.get();
      loser = b.get();
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_NE(winner, nullptr) << log_b.All() << log_c.All();
  const std::string winner_dir = winner == b.get() ? "b" : "c";
  const std::string loser_dir = winner == b.get() ? "c" : "b";
  // The loser never takes it while the winner renews (three lease times).
  EXPECT_FALSE(loser->WaitServing(3 * kLease).has_value());
  EXPECT_EQ(loser->member().role(), MemberRole::kStandby);
  TestClient client(*winner->member().serving_endpoint());
  (void)Trade(client, 11, 25);
  ASSERT_TRUE(WaitJournal(dir.Sub(loser_dir), 25, milliseconds(10000)));
  ASSERT_TRUE(loser->Stop().ok());
  EXPECT_EQ(loser->member().epoch(), 0u);
  ASSERT_TRUE(winner->Stop().ok());
  EXPECT_EQ(winner->member().epoch(), 2u);
  EXPECT_EQ(Markers(ReadStream(*nats)).size(), 1u);
  const std::vector<OwnedRecord> winner_journal =
      ReadJournal(dir.Sub(winner_dir));
  ASSERT_EQ(winner_journal.size(), 25u);
  EXPECT_TRUE(ReadJournal(dir.Sub(loser_dir)) == winner_journal);
  EXPECT_THAT(winner == b.get() ? log_c.All() : log_b.All(),
              HasSubstr("epoch 2 begins at index 11"));
}

// An old primary without the lease (its lease holder stopped renewing) still
// publishes after the member caught up: the marker is fenced (10071); the
// member follows the extra message, publishes again and serves with it
// applied.
TEST(Takeover, AFencedMarkerIsRetriedAfterFollowingTheExtraMessage) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  auto holder = replication::LeaseMember::Open(LeaseSpecFor(*nats, "old"));
  ASSERT_TRUE(holder.ok()) << holder.status();
  auto taken = (*holder)->TryAcquire();
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_EQ(taken->outcome, replication::AcquireOutcome::kAcquired);
  // Never renewed: it expires after kLease.
  auto primary = RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, ""));
  ASSERT_NE(primary, nullptr);
  TestClient client_a(primary->endpoint());
  std::vector<Bytes> from_a = Trade(client_a, 1, 5);

  ClusterMemberOptions options =
      MemberOptions(*nats, dir.Sub("b"), "member-b", log);
  int calls = 0;
  options.before_marker_for_tests = [&] {
    if (++calls == 1) {
      // Answered by the old primary: acknowledged by the stream, after the
      // sequence the member caught up to.
      from_a = Concat(from_a, Trade(client_a, 6, 6));
    }
  };
  auto member = RunningMember::Start(std::move(options));
  ASSERT_NE(member, nullptr);
  const std::optional<net::Endpoint> serving =
      member->WaitServing(milliseconds(15000));
  ASSERT_TRUE(serving.has_value()) << log.All();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(member->member().takeover().marker_attempts, 2);
  EXPECT_THAT(log.All(), HasSubstr("epoch marker fenced"));
  TestClient client_b(*serving);
  const std::vector<Bytes> from_b = Trade(client_b, 7, 8);
  ASSERT_TRUE(member->Stop().ok());
  // The old primary is fenced now: its next publish is refused.
  (void)primary->Stop();

  const std::vector<StreamMessage> markers = Markers(ReadStream(*nats));
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].first_index, 7u);
  EXPECT_EQ(member->member().takeover().caught_up_index, 6u);
  const std::vector<OwnedRecord> journal = ReadJournal(dir.Sub("b"));
  ASSERT_EQ(journal.size(), 8u);
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(
          dir.Sub("b"),
          test_support::TestOptions("", journal::Durability::kBatch)
              .config.engine);
  EXPECT_TRUE(replay.reports_by_session.at(kSession) == Concat(from_a, from_b));
}

// A stop right after the lease was acquired (during the catch-up): Run
// returns OK, no marker is published, the journal is a prefix of the
// stream's records, and the lease lapses (another member takes epoch 3).
TEST(Takeover, AStopDuringTheCatchUpLeavesNothingHalfDone) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  {
    auto holder = replication::LeaseMember::Open(LeaseSpecFor(*nats, "old"));
    ASSERT_TRUE(holder.ok()) << holder.status();
    ASSERT_TRUE((*holder)->TryAcquire().ok());
  }
  auto primary = RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, ""));
  ASSERT_NE(primary, nullptr);
  TestClient client_a(primary->endpoint());
  (void)Trade(client_a, 1, 12);
  ASSERT_TRUE(primary->Stop().ok());

  ClusterMemberOptions options =
      MemberOptions(*nats, dir.Sub("b"), "member-b", log);
  std::atomic<std::atomic<bool>*> stop{nullptr};
  options.after_acquire_for_tests = [&] {
    while (stop.load() == nullptr) std::this_thread::yield();
    stop.load()->store(true);
  };
  auto member = RunningMember::Start(std::move(options));
  ASSERT_NE(member, nullptr);
  stop.store(&member->stop_flag());
  ASSERT_TRUE(member->WaitStopped(milliseconds(15000))) << log.All();
  EXPECT_TRUE(member->Stop().ok());
  EXPECT_EQ(member->member().takeover().epoch, 2u);
  EXPECT_EQ(member->member().takeover().marker_attempts, 0);
  EXPECT_FALSE(member->member().serving_endpoint().has_value());
  EXPECT_THAT(log.All(), HasSubstr("stopped while taking over"));
  EXPECT_TRUE(Markers(ReadStream(*nats)).empty());
  const std::vector<OwnedRecord> old_journal = ReadJournal(dir.Sub("a"));
  const std::vector<OwnedRecord> journal = ReadJournal(dir.Sub("b"));
  ASSERT_LE(journal.size(), old_journal.size());
  EXPECT_TRUE(std::equal(journal.begin(), journal.end(), old_journal.begin()));

  // The lease lapses: the next member takes epoch 3.
  EventLog log_c;
  auto next = RunningMember::Start(
      MemberOptions(*nats, dir.Sub("c"), "member-c", log_c));
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(next->WaitServing(milliseconds(15000)).has_value())
      << log_c.All();
  EXPECT_EQ(next->member().epoch(), 3u);
  EXPECT_TRUE(next->Stop().ok());
}

// A Service given a held lease (ReplicationOptions::held_lease) renews it
// from the acquisition through its start and while it serves: a rival never
// gets it; once the service stops, the rival takes the next epoch.
TEST(Takeover, AServiceStartedWithAHeldLeaseKeepsRenewingIt) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  auto member = replication::LeaseMember::Open(LeaseSpecFor(*nats, "x"));
  ASSERT_TRUE(member.ok()) << member.status();
  auto taken = (*member)->TryAcquire();
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_EQ(taken->outcome, replication::AcquireOutcome::kAcquired);
  auto held = std::make_shared<HeldLease>();
  held->member = *std::move(member);
  held->renewer = std::make_unique<replication::LeaseRenewer>(*held->member);

  std::atomic<bool> rival_stop{false};
  std::atomic<bool> rival_acquired{false};
  std::atomic<std::uint64_t> rival_epoch{0};
  std::thread rival([&] {
    replication::LeaseSpec spec = LeaseSpecFor(*nats, "rival");
    spec.create_if_absent = false;
    auto opened = replication::LeaseMember::Open(spec);
    ASSERT_TRUE(opened.ok()) << opened.status();
    while (!rival_stop.load() && !rival_acquired.load()) {
      auto step = (*opened)->TryAcquire();
      if (step.ok() &&
          step->outcome == replication::AcquireOutcome::kAcquired) {
        rival_epoch.store(step->epoch);
        rival_acquired.store(true);
      }
      std::this_thread::sleep_for(milliseconds(30));
    }
  });
  // Longer than a lease before the service even starts.
  std::this_thread::sleep_for(2 * kLease);
  ServiceOptions options = PrimaryOptions(dir.Sub("a"), *nats, "x", held);
  held.reset();
  auto service = RunningService::Start(std::move(options));
  ASSERT_NE(service, nullptr);
  EXPECT_THAT(service->service().startup_report(),
              HasSubstr("held by x (taken over): epoch 1"));
  TestClient client(service->endpoint());
  (void)Trade(client, 1, 3);
  std::this_thread::sleep_for(2 * kLease);
  (void)Trade(client, 4, 5);
  EXPECT_FALSE(rival_acquired.load());
  ASSERT_TRUE(service->Stop().ok());
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(10000);
  while (!rival_acquired.load() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  rival_stop.store(true);
  rival.join();
  EXPECT_TRUE(rival_acquired.load());
  EXPECT_EQ(rival_epoch.load(), 2u);
}

// A held lease that is no longer held is refused by Service::Start.
TEST(Takeover, AServiceRefusesAHeldLeaseThatLapsed) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  auto member = replication::LeaseMember::Open(LeaseSpecFor(*nats, "x"));
  ASSERT_TRUE(member.ok()) << member.status();
  ASSERT_TRUE((*member)->TryAcquire().ok());
  auto held = std::make_shared<HeldLease>();
  held->member = *std::move(member);
  held->renewer = std::make_unique<replication::LeaseRenewer>(*held->member);
  held->renewer->Stop();  // no renewal: past its deadline after D - margin
  std::this_thread::sleep_for(kLease);
  ServiceOptions options = PrimaryOptions(dir.Sub("a"), *nats, "x", held);
  auto service = Service::Start(std::move(options));
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(service.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(service.status().message(), HasSubstr("not held any more"));
}

// Takeover off (`--no-takeover`): the primary's lease expires and the member
// does not take it; it stays a standby, and a rival later takes epoch 2.
TEST(Takeover, WithTakeoverOffTheStandbyLetsTheLeaseExpire) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  auto primary =
      RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, "primary-a"));
  ASSERT_NE(primary, nullptr);
  ClusterMemberOptions options =
      MemberOptions(*nats, dir.Sub("b"), "member-b", log);
  options.takeover = false;
  auto member = RunningMember::Start(std::move(options));
  ASSERT_NE(member, nullptr);
  TestClient client_a(primary->endpoint());
  (void)Trade(client_a, 1, 5);
  ASSERT_TRUE(primary->Stop().ok());
  EXPECT_FALSE(member->WaitServing(4 * kLease).has_value());
  EXPECT_EQ(member->member().role(), MemberRole::kStandby);
  EXPECT_EQ(member->member().epoch(), 0u);
  ASSERT_TRUE(WaitJournal(dir.Sub("b"), 5, milliseconds(5000)));
  // Nobody took epoch 2: a rival gets it.
  replication::LeaseSpec spec = LeaseSpecFor(*nats, "rival");
  auto rival = replication::LeaseMember::Open(spec);
  ASSERT_TRUE(rival.ok()) << rival.status();
  auto acquired = (*rival)->Acquire(3 * kLease);
  ASSERT_TRUE(acquired.ok()) << acquired.status();
  EXPECT_EQ(acquired->outcome, replication::AcquireOutcome::kAcquired);
  EXPECT_EQ(acquired->epoch, 2u);
  EXPECT_TRUE(member->Stop().ok());
  EXPECT_TRUE(Markers(ReadStream(*nats)).empty());
  // Stopped, it says so in `orderwire cluster status`.
  auto status = replication::ReadClusterStatus(nats->ServersUrl(), kEngine,
                                               milliseconds(5000));
  ASSERT_TRUE(status.ok()) << status.status();
  bool stopped = false;
  for (const replication::MemberReport& m : status->members) {
    stopped = stopped || (m.name == "member-b" && m.role == "stopped");
  }
  EXPECT_TRUE(stopped) << "no members-bucket line: member-b stopped";
}

// NATS not answering (the server paused) makes the lease steps fail: the
// member logs it and follows on, and takes over once NATS is back and the
// holder stops renewing.
TEST(Takeover, ANatsHiccupWhileLookingAtTheLeaseDoesNotEndTheStandby) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  auto primary = RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, ""));
  ASSERT_NE(primary, nullptr);
  TestClient client_a(primary->endpoint());
  const std::vector<Bytes> from_a = Trade(client_a, 1, 3);
  ASSERT_TRUE(primary->Stop().ok());
  auto holder = replication::LeaseMember::Open(LeaseSpecFor(*nats, "old"));
  ASSERT_TRUE(holder.ok()) << holder.status();
  ASSERT_TRUE((*holder)->TryAcquire().ok());
  auto renewer = std::make_unique<replication::LeaseRenewer>(**holder);

  auto member =
      RunningMember::Start(MemberOptions(*nats, dir.Sub("b"), "member-b", log));
  ASSERT_NE(member, nullptr);
  ASSERT_TRUE(WaitJournal(dir.Sub("b"), 3, milliseconds(10000)));
  // Caught up and looking at the lease (a pause during the catch-up would
  // test the start's retries instead).
  ASSERT_TRUE(log.WaitFor("lease held by old", milliseconds(10000)))
      << log.All();
  ASSERT_TRUE(nats->Pause(0).ok());
  const bool noticed = log.WaitFor("(following goes on)", milliseconds(10000));
  ASSERT_TRUE(nats->Resume(0).ok());
  EXPECT_TRUE(noticed) << log.All();
  EXPECT_EQ(member->member().role(), MemberRole::kStandby);
  // The holder renews again: still no takeover.
  EXPECT_FALSE(member->WaitServing(2 * kLease).has_value()) << log.All();
  renewer.reset();  // the holder goes away
  const std::optional<net::Endpoint> serving =
      member->WaitServing(milliseconds(15000));
  ASSERT_TRUE(serving.has_value()) << log.All();
  EXPECT_EQ(member->member().epoch(), 2u);
  TestClient client_b(*serving);
  const std::vector<Bytes> from_b = Trade(client_b, 4, 5);
  EXPECT_TRUE(member->Stop().ok());
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(
          dir.Sub("b"),
          test_support::TestOptions("", journal::Durability::kBatch)
              .config.engine);
  EXPECT_TRUE(replay.reports_by_session.at(kSession) == Concat(from_a, from_b));
}

// NATS stops answering right after the member took the lease (the server
// paused longer than a request's 5 s, as while the stream's leader is
// re-elected): reading the stream's last sequence fails on a timeout. The
// member holds the lease (its D outlasts the pause), so it keeps trying,
// catches up, publishes its marker and serves. Before the retry, the
// timeout ended Run while the lease was held (nobody served).
TEST(Takeover, ACatchUpThatHitsATransientErrorKeepsTryingAndServes) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  std::vector<Bytes> from_a;
  ASSERT_NO_FATAL_FAILURE(TradeAsALapsedPrimary(*nats, dir.Sub("a"), &from_a));
  ClusterMemberOptions options =
      MemberOptions(*nats, dir.Sub("b"), "member-b", log);
  LengthenLease(options);
  std::thread resumer;
  options.after_acquire_for_tests = [&] {
    ASSERT_TRUE(nats->Pause(0).ok());
    resumer = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(6500));
      EXPECT_TRUE(nats->Resume(0).ok());
    });
  };
  auto member = RunningMember::Start(std::move(options));
  ASSERT_NE(member, nullptr);
  const std::optional<net::Endpoint> serving =
      member->WaitServing(milliseconds(25000));
  if (resumer.joinable()) resumer.join();
  ASSERT_TRUE(serving.has_value()) << log.All();
  EXPECT_EQ(member->member().epoch(), 2u);
  EXPECT_GE(member->member().takeover().transient_retries, 1) << log.All();
  EXPECT_THAT(log.All(), HasSubstr("transient; trying again while the lease "
                                   "is held"));
  TestClient client_b(*serving);
  const std::vector<Bytes> from_b = Trade(client_b, 7, 8);
  ASSERT_TRUE(member->Stop().ok());
  const std::vector<StreamMessage> markers = Markers(ReadStream(*nats));
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].epoch, 2u);
  EXPECT_EQ(markers[0].first_index, 7u);
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(
          dir.Sub("b"),
          test_support::TestOptions("", journal::Durability::kBatch)
              .config.engine);
  EXPECT_TRUE(replay.reports_by_session.at(kSession) == Concat(from_a, from_b));
}

// NATS stops answering right after the epoch marker, as the primary
// starts: its replication link's first request times out. The service
// hands the held lease back and the member starts it again once NATS
// answers: it serves. Before, Service::Start's timeout ended the member
// with the lease held (seen in scripts/failover_runs.sh kill-nats-leader:
// "--durability replicated: journal follower: consume ...: Timeout").
TEST(Takeover, APrimaryStartThatHitsATransientErrorIsRetriedWithTheLease) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  std::vector<Bytes> from_a;
  ASSERT_NO_FATAL_FAILURE(TradeAsALapsedPrimary(*nats, dir.Sub("a"), &from_a));
  ClusterMemberOptions options =
      MemberOptions(*nats, dir.Sub("b"), "member-b", log);
  LengthenLease(options);
  options.replication->connect_timeout = milliseconds(1500);
  // The member's retry, not the service's own wait for NATS.
  options.replication->start_timeout = milliseconds(0);
  std::thread resumer;
  options.before_primary_start_for_tests = [&] {
    ASSERT_TRUE(nats->Pause(0).ok());
    resumer = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(4000));
      EXPECT_TRUE(nats->Resume(0).ok());
    });
  };
  auto member = RunningMember::Start(std::move(options));
  ASSERT_NE(member, nullptr);
  const std::optional<net::Endpoint> serving =
      member->WaitServing(milliseconds(25000));
  if (resumer.joinable()) resumer.join();
  ASSERT_TRUE(serving.has_value()) << log.All();
  EXPECT_EQ(member->member().epoch(), 2u);
  EXPECT_THAT(log.All(), HasSubstr("starting the primary: "));
  TestClient client_b(*serving);
  const std::vector<Bytes> from_b = Trade(client_b, 7, 8);
  ASSERT_TRUE(member->Stop().ok());
  EXPECT_EQ(Markers(ReadStream(*nats)).size(), 1u);
  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(
          dir.Sub("b"),
          test_support::TestOptions("", journal::Durability::kBatch)
              .config.engine);
  EXPECT_TRUE(replay.reports_by_session.at(kSession) == Concat(from_a, from_b));
}

// A standby never takes a lease that was never taken: an engine without a
// leased primary has none to replace.
TEST(Takeover, AStandbyDoesNotTakeALeaseThatWasNeverTaken) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  ScratchDir dir;
  EventLog log;
  auto primary = RunningService::Start(PrimaryOptions(dir.Sub("a"), *nats, ""));
  ASSERT_NE(primary, nullptr);
  auto member =
      RunningMember::Start(MemberOptions(*nats, dir.Sub("b"), "member-b", log));
  ASSERT_NE(member, nullptr);
  TestClient client_a(primary->endpoint());
  (void)Trade(client_a, 1, 3);
  EXPECT_FALSE(member->WaitServing(3 * kLease).has_value());
  EXPECT_EQ(member->member().role(), MemberRole::kStandby);
  EXPECT_THAT(log.All(), HasSubstr("the lease was never taken"));
  (void)Trade(client_a, 4, 4);  // the primary serves on, unfenced
  EXPECT_TRUE(member->Stop().ok());
  EXPECT_TRUE(primary->Stop().ok());
}

}  // namespace
}  // namespace orderwire::cluster
