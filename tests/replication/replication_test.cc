// The journal on JetStream against real nats-server processes: publish and
// follow byte for byte, the window bound, the fence (Nats-Expected-Last-
// Sequence), deduplication (Nats-Msg-Id), gap detection, acknowledgement
// timeouts, and no acknowledged message lost when the stream leader of a
// 3-node cluster is killed mid-publish.
#include <nats/nats.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replication/group_message.h"
#include "replication/journal_publisher.h"
#include "replication/journal_stream.h"
#include "replication/stream_follower.h"
#include "tests/support/child_process.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::replication {
namespace {

using std::chrono::milliseconds;
using test_support::NatsCluster;
using test_support::StartNatsCluster;
using ::testing::HasSubstr;

// A journal group stand-in: deterministic bytes of a varying size.
std::vector<std::byte> Group(std::uint64_t n, std::size_t size) {
  std::vector<std::byte> bytes(size);
  std::uint64_t x = n * 0x9E3779B97F4A7C15ULL + 1;
  for (auto& b : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  return bytes;
}

std::size_t SizeOf(std::uint64_t n) { return 64 + (n * 1237) % 6000; }

PublisherOptions Options(const NatsCluster& cluster, std::string engine,
                         int replicas, std::uint64_t epoch) {
  PublisherOptions o;
  o.servers = cluster.ServersUrl();
  o.stream.engine_name = std::move(engine);
  o.stream.replicas = replicas;
  o.epoch = epoch;
  o.window = 8;
  o.ack_timeout = milliseconds(10000);
  return o;
}

// Reads `count` messages from `start` and checks each against Group().
void ExpectStreamHolds(const NatsCluster& cluster, const std::string& engine,
                       std::uint64_t start, std::uint64_t count,
                       std::uint64_t epoch) {
  // Creating a consumer needs the JetStream meta leader; after a killed
  // node it may still be in election: retry (what a standby does too).
  absl::StatusOr<std::unique_ptr<StreamFollower>> follower;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(40);
  do {
    follower = StreamFollower::Open({.servers = cluster.ServersUrl(),
                                     .engine_name = engine,
                                     .start_sequence = start,
                                     .timeout = milliseconds(5000)});
  } while (!follower.ok() &&
           (absl::IsDeadlineExceeded(follower.status()) ||
            absl::IsUnavailable(follower.status())) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(follower.ok()) << follower.status();
  for (std::uint64_t seq = start; seq < start + count; ++seq) {
    auto msg = (*follower)->Next(milliseconds(10000));
    ASSERT_TRUE(msg.ok()) << "sequence " << seq << ": " << msg.status();
    ASSERT_EQ(msg->stream_sequence, seq);
    ASSERT_EQ(msg->msg_id, absl::StrCat(epoch, "-", seq * 10));
    ASSERT_EQ(msg->bytes, Group(seq, SizeOf(seq))) << "sequence " << seq;
  }
}

class ReplicationSingleNode : public test_support::SharedNatsClusterTest<1> {};
class ReplicationThreeNodes : public test_support::SharedNatsClusterTest<3> {};

// Publishes groups 1..n (journal index 10*k, bytes Group(k)) and waits for
// every acknowledgement; checks acks came in order with sequence k.
void PublishAll(JournalPublisher& publisher, std::uint64_t n,
                const std::vector<PublishAck>& acks_seen) {
  for (std::uint64_t k = 1; k <= n; ++k) {
    auto message = publisher.Publish(k * 10, Group(k, SizeOf(k)));
    ASSERT_TRUE(message.ok()) << message.status();
    ASSERT_EQ(*message, k);
  }
  ASSERT_TRUE(publisher.Flush(milliseconds(20000)).ok()) << publisher.failure();
  ASSERT_EQ(acks_seen.size(), n);
  for (std::uint64_t k = 1; k <= n; ++k) {
    EXPECT_EQ(acks_seen[k - 1].message, k);
    EXPECT_EQ(acks_seen[k - 1].first_index, k * 10);
    EXPECT_EQ(acks_seen[k - 1].stream_sequence, k);
    EXPECT_FALSE(acks_seen[k - 1].duplicate);
  }
}

void RoundTrip(const NatsCluster& cluster, int replicas) {
  const std::string engine = absl::StrCat("roundtrip", replicas);
  std::vector<PublishAck> acks;  // written by the ack thread only
  auto options = Options(cluster, engine, replicas, /*epoch=*/1);
  options.on_ack = [&acks](const PublishAck& ack) { acks.push_back(ack); };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  ASSERT_NO_FATAL_FAILURE(PublishAll(**publisher, 300, acks));
  const PublisherProgress progress = (*publisher)->progress();
  EXPECT_EQ(progress.acknowledged, 300u);
  EXPECT_EQ(progress.last_stream_sequence, 300u);
  // Pipelined, and never more than the window.
  EXPECT_GE(progress.max_in_flight, 2u);
  EXPECT_LE(progress.max_in_flight, 8u);
  publisher->reset();

  auto state = GetJournalStreamState(cluster.ServersUrl(), engine);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->last_sequence, 300u);
  EXPECT_EQ(state->replicas, replicas);
  ExpectStreamHolds(cluster, engine, 1, 300, 1);
  // From the middle too.
  ExpectStreamHolds(cluster, engine, 151, 150, 1);
}

TEST_F(ReplicationSingleNode, FollowerReadsEveryPublishedGroupInOrder) {
  RoundTrip(*cluster_, 1);
}

TEST_F(ReplicationThreeNodes, FollowerReadsEveryPublishedGroupInOrderR3) {
  RoundTrip(*cluster_, 3);
}

// The standby's way: the follower is there first, on an empty stream, and
// reads the groups as they are published (live), in order, byte for byte.
void LiveTail(const NatsCluster& cluster, int replicas) {
  const std::string engine = absl::StrCat("live", replicas);
  auto options = Options(cluster, engine, replicas, /*epoch=*/3);
  auto created = EnsureJournalStream(options.servers, options.stream);
  ASSERT_TRUE(created.ok()) << created.status();
  auto follower = StreamFollower::Open(
      {.servers = cluster.ServersUrl(), .engine_name = engine});
  ASSERT_TRUE(follower.ok()) << follower.status();
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  constexpr std::uint64_t kGroups = 400;
  std::thread writer([&] {
    for (std::uint64_t k = 1; k <= kGroups; ++k) {
      if (!(*publisher)->Publish(k * 10, Group(k, SizeOf(k))).ok()) return;
    }
  });
  for (std::uint64_t seq = 1; seq <= kGroups; ++seq) {
    auto msg = (*follower)->Next(milliseconds(10000));
    if (!msg.ok()) {
      ADD_FAILURE() << "sequence " << seq << ": " << msg.status();
      break;
    }
    EXPECT_EQ(msg->stream_sequence, seq);
    EXPECT_EQ(msg->msg_id, absl::StrCat(3, "-", seq * 10));
    if (msg->bytes != Group(seq, SizeOf(seq))) {
      ADD_FAILURE() << "bytes of sequence " << seq << " differ";
      break;
    }
  }
  writer.join();
  EXPECT_TRUE((*publisher)->Flush(milliseconds(10000)).ok())
      << (*publisher)->failure();
  // Nothing more than was published.
  EXPECT_TRUE(
      absl::IsDeadlineExceeded((*follower)->Next(milliseconds(200)).status()));
}

TEST_F(ReplicationSingleNode, FollowerTailsThePublisherLive) {
  LiveTail(*cluster_, 1);
}

TEST_F(ReplicationThreeNodes, FollowerTailsThePublisherLiveR3) {
  LiveTail(*cluster_, 3);
}

TEST_F(ReplicationSingleNode, FollowerOfAMissingStreamIsNotFound) {
  auto follower = StreamFollower::Open(
      {.servers = cluster_->ServersUrl(), .engine_name = "nosuchengine"});
  ASSERT_FALSE(follower.ok());
  EXPECT_EQ(follower.status().code(), absl::StatusCode::kNotFound)
      << follower.status();
  EXPECT_EQ(StreamFollower::Open({.servers = cluster_->ServersUrl(),
                                  .engine_name = "x",
                                  .start_sequence = 0})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The fence: a second writer whose expected last sequence is stale is
// refused with 10071, appends nothing, and the first writer carries on.
void Fence(const NatsCluster& cluster, int replicas) {
  const std::string engine = absl::StrCat("fence", replicas);
  std::vector<PublishAck> acks;
  auto options = Options(cluster, engine, replicas, /*epoch=*/1);
  options.on_ack = [&acks](const PublishAck& ack) { acks.push_back(ack); };
  auto primary = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(primary.ok()) << primary.status();
  ASSERT_NO_FATAL_FAILURE(PublishAll(**primary, 3, acks));

  for (const std::uint64_t stale : {std::uint64_t{1}, std::uint64_t{0}}) {
    auto options2 = Options(cluster, engine, replicas, /*epoch=*/2);
    options2.expected_last_sequence = stale;
    auto intruder = JournalPublisher::Open(std::move(options2));
    ASSERT_TRUE(intruder.ok()) << intruder.status();
    auto sent = (*intruder)->Publish(990, Group(99, 100));
    ASSERT_TRUE(sent.ok()) << sent.status();
    const absl::Status flushed = (*intruder)->Flush(milliseconds(10000));
    EXPECT_EQ((*intruder)->failure_kind(), PublisherFailure::kFenced)
        << "stale expectation " << stale << ": " << flushed;
    EXPECT_EQ(flushed.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(flushed.message()), HasSubstr("10071"));
    EXPECT_THAT(std::string(flushed.message()), HasSubstr("fenced"));
    // Fail-stop: nothing more is sent.
    auto again = (*intruder)->Publish(1000, Group(100, 100));
    EXPECT_FALSE(again.ok());
    EXPECT_EQ((*intruder)->progress().published, 1u);
  }
  auto state = GetJournalStreamState(cluster.ServersUrl(), engine);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->last_sequence, 3u) << "the stale writer appended";

  // The primary is not disturbed.
  auto fourth = (*primary)->Publish(40, Group(4, SizeOf(4)));
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  ASSERT_TRUE((*primary)->Flush(milliseconds(10000)).ok())
      << (*primary)->failure();
  ExpectStreamHolds(cluster, engine, 1, 4, 1);
}

TEST_F(ReplicationSingleNode, StaleWriterIsFencedAndAppendsNothing) {
  Fence(*cluster_, 1);
}

TEST_F(ReplicationThreeNodes, StaleWriterIsFencedAndAppendsNothingR3) {
  Fence(*cluster_, 3);
}

// A publisher of the same epoch that resumes from an older sequence (it did
// not see the last acknowledgements) republishes the same groups: JetStream
// drops them as duplicates (same Msg-Id), acknowledges them with the
// original sequences, and the stream holds each group once.
void Dedupe(const NatsCluster& cluster, int replicas) {
  const std::string engine = absl::StrCat("dedupe", replicas);
  std::vector<PublishAck> acks;
  auto options = Options(cluster, engine, replicas, /*epoch=*/7);
  options.on_ack = [&acks](const PublishAck& ack) { acks.push_back(ack); };
  {
    auto first = JournalPublisher::Open(options);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_NO_FATAL_FAILURE(PublishAll(**first, 3, acks));
  }
  std::vector<PublishAck> retry_acks;
  options.expected_last_sequence = 1;
  options.on_ack = [&retry_acks](const PublishAck& ack) {
    retry_acks.push_back(ack);
  };
  auto retry = JournalPublisher::Open(options);
  ASSERT_TRUE(retry.ok()) << retry.status();
  for (std::uint64_t k = 2; k <= 4; ++k) {
    auto sent = (*retry)->Publish(k * 10, Group(k, SizeOf(k)));
    ASSERT_TRUE(sent.ok()) << sent.status();
  }
  ASSERT_TRUE((*retry)->Flush(milliseconds(10000)).ok()) << (*retry)->failure();
  ASSERT_EQ(retry_acks.size(), 3u);
  EXPECT_TRUE(retry_acks[0].duplicate);
  EXPECT_EQ(retry_acks[0].stream_sequence, 2u);
  EXPECT_TRUE(retry_acks[1].duplicate);
  EXPECT_EQ(retry_acks[1].stream_sequence, 3u);
  EXPECT_FALSE(retry_acks[2].duplicate);
  EXPECT_EQ(retry_acks[2].stream_sequence, 4u);
  auto state = GetJournalStreamState(cluster.ServersUrl(), engine);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->messages, 4u);
  ExpectStreamHolds(cluster, engine, 1, 4, 7);
}

TEST_F(ReplicationSingleNode, RepublishedGroupsAreDeduplicated) {
  Dedupe(*cluster_, 1);
}

TEST_F(ReplicationThreeNodes, RepublishedGroupsAreDeduplicatedR3) {
  Dedupe(*cluster_, 3);
}

// An epoch marker and the records message after it start at the same
// journal index: with Msg-Id "<epoch>-<first index>" for both, JetStream
// would drop the records as a duplicate of the marker. The marker's own
// Msg-Id ("<epoch>-marker") keeps both, and a later epoch's marker at the
// same index is not a duplicate of this one either.
TEST_F(ReplicationSingleNode, EpochMarkerNeverHidesTheRecordsAfterIt) {
  const std::string engine = "marker";
  std::vector<PublishAck> acks;
  auto options = Options(*cluster_, engine, 1, /*epoch=*/4);
  options.on_ack = [&acks](const PublishAck& ack) { acks.push_back(ack); };
  {
    auto primary = JournalPublisher::Open(options);
    ASSERT_TRUE(primary.ok()) << primary.status();
    auto marker = (*primary)->PublishEpochMarker(/*next_index=*/1);
    ASSERT_TRUE(marker.ok()) << marker.status();
    auto records = (*primary)->Publish(1, Group(1, SizeOf(1)));
    ASSERT_TRUE(records.ok()) << records.status();
    ASSERT_TRUE((*primary)->Flush(milliseconds(10000)).ok())
        << (*primary)->failure();
  }
  options.epoch = 5;
  options.expected_last_sequence = 2;
  {
    auto next = JournalPublisher::Open(options);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE((*next)->PublishEpochMarker(1).ok());
    ASSERT_TRUE((*next)->Flush(milliseconds(10000)).ok()) << (*next)->failure();
  }
  ASSERT_EQ(acks.size(), 3u);
  for (std::size_t i = 0; i < acks.size(); ++i) {
    EXPECT_FALSE(acks[i].duplicate) << "message " << i + 1;
    EXPECT_EQ(acks[i].stream_sequence, i + 1);
  }
  auto follower = StreamFollower::Open({.servers = cluster_->ServersUrl(),
                                        .engine_name = engine,
                                        .start_sequence = 1,
                                        .timeout = milliseconds(5000)});
  ASSERT_TRUE(follower.ok()) << follower.status();
  auto first = (*follower)->Next(milliseconds(10000));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->msg_id, "4-marker");
  auto marker = ParseGroupMessage(first->bytes);
  ASSERT_TRUE(marker.ok()) << marker.status();
  EXPECT_EQ(marker->kind, GroupMessageKind::kEpochMarker);
  EXPECT_EQ(marker->epoch, 4u);
  EXPECT_EQ(marker->first_index, 1u);
  auto second = (*follower)->Next(milliseconds(10000));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->msg_id, "4-1");
  EXPECT_EQ(second->bytes, Group(1, SizeOf(1)));
  auto third = (*follower)->Next(milliseconds(10000));
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->msg_id, "5-marker");
}

// Holds the acknowledgement thread of a publisher inside on_ack for message
// `hold_at` until Open(): while held, no later acknowledgement is read, so
// the messages published meanwhile are in flight, deterministically.
class AckGate {
 public:
  explicit AckGate(std::uint64_t hold_at) : hold_at_(hold_at) {}
  // The on_ack hook (the acknowledgement thread).
  void OnAck(const PublishAck& ack) {
    if (ack.message != hold_at_) return;
    std::unique_lock lock(mu_);
    held_ = true;
    cv_.notify_all();
    // Bounded, so a failed test never leaves the publisher's destructor
    // joining a thread that waits forever.
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return open_; });
  }
  bool WaitHeld() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [this] { return held_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  const std::uint64_t hold_at_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool open_ = false;
};

// Opens the gate when it goes out of scope (declared after the publisher,
// so it runs before the publisher's destructor joins its thread).
struct OpenOnExit {
  AckGate& gate;
  ~OpenOnExit() { gate.Open(); }
};

// One stored message's Nats-Msg-Id and Nats-Expected-Last-Msg-Id (empty
// when absent), read with STREAM.MSG.GET.
struct StoredHeaders {
  std::string msg_id;
  std::string expected_last_msg_id;
};

absl::StatusOr<StoredHeaders> ReadStoredHeaders(const NatsCluster& cluster,
                                                const std::string& engine,
                                                std::uint64_t sequence) {
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  natsMsg* msg = nullptr;
  StoredHeaders headers;
  natsStatus s = natsConnection_ConnectTo(&conn, cluster.ServersUrl().c_str());
  if (s == NATS_OK) s = natsConnection_JetStream(&js, conn, nullptr);
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (s == NATS_OK) {
    s = js_GetMsg(&msg, js, JournalStreamName(engine).c_str(), sequence,
                  nullptr, &jerr);
  }
  if (s == NATS_OK) {
    const char* value = nullptr;
    if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &value) == NATS_OK) {
      headers.msg_id = value;
    }
    if (natsMsgHeader_Get(msg, "Nats-Expected-Last-Msg-Id", &value) ==
        NATS_OK) {
      headers.expected_last_msg_id = value;
    }
  }
  natsMsg_Destroy(msg);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  if (s != NATS_OK) {
    return absl::InternalError(absl::StrCat("read sequence ", sequence, ": ",
                                            natsStatus_GetText(s),
                                            ", JetStream error ", jerr));
  }
  return headers;
}

// Waits (polling, at most 20 s) until JetStream has refused `count` of the
// publisher's messages.
bool WaitRefused(const JournalPublisher& publisher, std::uint64_t count) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (publisher.progress().refused < count) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// The hole the pipeline left in a sequence-only fence (failover runs,
// pause-primary): an old primary has two messages in flight, expecting
// stream sequences L and L+1; a new primary's epoch marker lands at L+1
// first. The first message is refused (10071: the last sequence is L+1,
// not L). The second expects L+1, which the marker now is, so the
// sequence check passes; only its Nats-Expected-Last-Msg-Id (the first
// message's id, not the marker's) refuses it (10070). Without that header
// it was accepted: an epoch-1 records message after the epoch-2 marker,
// and the new primary's next publish was fenced in turn.
void PipelinedFence(const NatsCluster& cluster, int replicas) {
  const std::string engine = absl::StrCat("pipelinefence", replicas);
  AckGate gate(/*hold_at=*/3);
  auto old_options = Options(cluster, engine, replicas, /*epoch=*/1);
  old_options.on_ack = [&gate](const PublishAck& ack) { gate.OnAck(ack); };
  auto old_primary = JournalPublisher::Open(std::move(old_options));
  ASSERT_TRUE(old_primary.ok()) << old_primary.status();
  OpenOnExit open_on_exit{gate};
  for (std::uint64_t k = 1; k <= 3; ++k) {
    ASSERT_TRUE((*old_primary)->Publish(k * 10, Group(k, SizeOf(k))).ok());
  }
  // Message 3 is acknowledged; no later acknowledgement is read.
  ASSERT_TRUE(gate.WaitHeld()) << (*old_primary)->failure();
  ASSERT_EQ((*old_primary)->progress().acknowledged, 3u);

  // The new primary (epoch 2) caught up to sequence 3: its marker is 4.
  auto new_options = Options(cluster, engine, replicas, /*epoch=*/2);
  new_options.expected_last_sequence = 3;
  auto new_primary = JournalPublisher::Open(std::move(new_options));
  ASSERT_TRUE(new_primary.ok()) << new_primary.status();
  ASSERT_TRUE((*new_primary)->PublishEpochMarker(40).ok());
  ASSERT_TRUE((*new_primary)->Flush(milliseconds(10000)).ok())
      << (*new_primary)->failure();
  ASSERT_EQ((*new_primary)->progress().last_stream_sequence, 4u);

  // The old primary's two in-flight messages: expecting 3 and 4.
  ASSERT_TRUE((*old_primary)->Publish(40, Group(4, SizeOf(4))).ok());
  ASSERT_TRUE((*old_primary)->Publish(50, Group(5, SizeOf(5))).ok());
  gate.Open();
  EXPECT_TRUE(WaitRefused(**old_primary, 2))
      << "JetStream refused " << (*old_primary)->progress().refused
      << " of the old primary's 2 messages after the marker";
  EXPECT_EQ((*old_primary)->failure_kind(), PublisherFailure::kFenced);
  EXPECT_THAT(std::string((*old_primary)->failure().message()),
              HasSubstr("10071"));
  auto state = GetJournalStreamState(cluster.ServersUrl(), engine);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->last_sequence, 4u) << "an old message after the marker";
  auto last = ReadStoredHeaders(cluster, engine, state->last_sequence);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->msg_id, "2-marker");

  // The new primary is not fenced: it publishes after its marker.
  ASSERT_TRUE((*new_primary)->Publish(40, Group(4, SizeOf(4))).ok());
  ASSERT_TRUE((*new_primary)->Flush(milliseconds(10000)).ok())
      << (*new_primary)->failure();
  EXPECT_EQ((*new_primary)->progress().last_stream_sequence, 5u);
}

TEST_F(ReplicationSingleNode, PipelinedOldPrimaryIsFencedAfterTheMarker) {
  PipelinedFence(*cluster_, 1);
}

TEST_F(ReplicationThreeNodes, PipelinedOldPrimaryIsFencedAfterTheMarkerR3) {
  PipelinedFence(*cluster_, 3);
}

// What the fence relies on, checked on nats-server itself (libnats's
// js_PublishMsg with the headers set by hand): Nats-Expected-Last-Msg-Id is
// enforced (10070) after Nats-Expected-Last-Sequence (10071), and a retried
// publish (same Msg-Id, same now-stale expectations) after it landed is
// acknowledged as a duplicate with its sequence, not refused: JetStream
// checks the Msg-Id's duplicate window before the expectations.
void ServerOrderOfChecks(const NatsCluster& cluster, int replicas) {
  const std::string engine = absl::StrCat("expectations", replicas);
  auto options = Options(cluster, engine, replicas, /*epoch=*/1);
  ASSERT_TRUE(EnsureJournalStream(options.servers, options.stream).ok());
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&conn, cluster.ServersUrl().c_str()),
            NATS_OK);
  ASSERT_EQ(natsConnection_JetStream(&js, conn, nullptr), NATS_OK);
  const std::string subject = JournalSubject(engine);
  struct Outcome {
    natsStatus status = NATS_OK;
    int error = 0;
    std::uint64_t sequence = 0;
    bool duplicate = false;
  };
  auto publish = [&](const char* id, const char* last_sequence,
                     const char* last_id) {
    Outcome out;
    natsMsg* msg = nullptr;
    EXPECT_EQ(natsMsg_Create(&msg, subject.c_str(), nullptr, "x", 1), NATS_OK);
    natsMsgHeader_Set(msg, "Nats-Msg-Id", id);
    natsMsgHeader_Set(msg, "Nats-Expected-Last-Sequence", last_sequence);
    if (last_id != nullptr) {
      natsMsgHeader_Set(msg, "Nats-Expected-Last-Msg-Id", last_id);
    }
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    out.status = js_PublishMsg(&ack, js, msg, nullptr, &jerr);
    out.error = static_cast<int>(jerr);
    if (ack != nullptr) {
      out.sequence = ack->Sequence;
      out.duplicate = ack->Duplicate;
    }
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
    return out;
  };
  // The new stream may still be electing its leader (slow on a loaded
  // machine): the first publish is tried again while it times out. A retry
  // of a publish that landed is acknowledged as a duplicate, sequence 1.
  Outcome a;
  for (int attempt = 0; attempt < 5; ++attempt) {
    a = publish("1-10", "0", nullptr);
    if (a.status != NATS_TIMEOUT && a.status != NATS_NO_RESPONDERS) break;
  }
  ASSERT_EQ(a.status, NATS_OK) << a.error;
  EXPECT_EQ(a.sequence, 1u);
  Outcome b = publish("1-20", "1", "1-10");
  ASSERT_EQ(b.status, NATS_OK) << b.error;
  EXPECT_EQ(b.sequence, 2u);
  Outcome c = publish("1-30", "2", "1-20");
  ASSERT_EQ(c.status, NATS_OK) << c.error;
  EXPECT_EQ(c.sequence, 3u);
  // Right sequence, wrong last Msg-Id: 10070.
  Outcome wrong_id = publish("2-marker", "3", "1-20");
  EXPECT_NE(wrong_id.status, NATS_OK);
  EXPECT_EQ(wrong_id.error, 10070);
  // Wrong sequence (checked first): 10071.
  Outcome wrong_sequence = publish("2-marker", "2", "1-30");
  EXPECT_NE(wrong_sequence.status, NATS_OK);
  EXPECT_EQ(wrong_sequence.error, 10071);
  // b and c retried after they landed: duplicates, with their sequences.
  Outcome b_again = publish("1-20", "1", "1-10");
  ASSERT_EQ(b_again.status, NATS_OK) << b_again.error;
  EXPECT_TRUE(b_again.duplicate);
  EXPECT_EQ(b_again.sequence, 2u);
  Outcome c_again = publish("1-30", "2", "1-20");
  ASSERT_EQ(c_again.status, NATS_OK) << c_again.error;
  EXPECT_TRUE(c_again.duplicate);
  EXPECT_EQ(c_again.sequence, 3u);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  auto state = GetJournalStreamState(cluster.ServersUrl(), engine);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->messages, 3u);
}

TEST_F(ReplicationSingleNode, JetStreamDedupesBeforeCheckingTheExpectations) {
  ServerOrderOfChecks(*cluster_, 1);
}

TEST_F(ReplicationThreeNodes, JetStreamDedupesBeforeCheckingTheExpectationsR3) {
  ServerOrderOfChecks(*cluster_, 3);
}

// Publishes `count` groups from journal index 10 * first with the
// acknowledgement thread held after the publisher's message 1: messages 3..
// are sent with message 2.. unacknowledged, so they carry
// Nats-Expected-Last-Msg-Id; then checks every message lands, and that each
// stored expectation names the Msg-Id stored just before it.
void PublishChained(const NatsCluster& cluster, const std::string& engine,
                    PublisherOptions options, std::uint64_t first,
                    std::uint64_t count, std::uint64_t base) {
  AckGate gate(/*hold_at=*/1);
  options.on_ack = [&gate](const PublishAck& ack) { gate.OnAck(ack); };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  OpenOnExit open_on_exit{gate};
  ASSERT_TRUE((*publisher)->Publish(first * 10, Group(first, 100)).ok());
  ASSERT_TRUE(gate.WaitHeld()) << (*publisher)->failure();
  for (std::uint64_t k = first + 1; k < first + count; ++k) {
    ASSERT_TRUE((*publisher)->Publish(k * 10, Group(k, 100)).ok());
  }
  gate.Open();
  ASSERT_TRUE((*publisher)->Flush(milliseconds(10000)).ok())
      << (*publisher)->failure();
  EXPECT_EQ((*publisher)->progress().last_stream_sequence, base + count);
  EXPECT_EQ((*publisher)->progress().refused, 0u);
  int chained = 0;
  for (std::uint64_t seq = base + 1; seq <= base + count; ++seq) {
    auto stored = ReadStoredHeaders(cluster, engine, seq);
    ASSERT_TRUE(stored.ok()) << stored.status();
    if (seq <= base + 2) {
      // Message 1 expects what was read from the stream, message 2 its
      // acknowledged predecessor: the sequence alone is exact.
      EXPECT_EQ(stored->expected_last_msg_id, "") << "sequence " << seq;
      continue;
    }
    auto previous = ReadStoredHeaders(cluster, engine, seq - 1);
    ASSERT_TRUE(previous.ok()) << previous.status();
    EXPECT_EQ(stored->expected_last_msg_id, previous->msg_id)
        << "sequence " << seq;
    ++chained;
  }
  EXPECT_EQ(chained, static_cast<int>(count) - 2);
}

// A new primary's publisher opens on a stream that ends with its epoch
// marker (what ReplicationLink does after a takeover) and publishes a
// pipelined run after it; so does a publisher on an empty stream.
TEST_F(ReplicationSingleNode, PublishersChainAfterAMarkerAndOnAnEmptyStream) {
  const std::string engine = "chain";
  ASSERT_NO_FATAL_FAILURE(PublishChained(
      *cluster_, engine, Options(*cluster_, engine, 1, /*epoch=*/1),
      /*first=*/1, /*count=*/6, /*base=*/0));
  {
    auto options = Options(*cluster_, engine, 1, /*epoch=*/2);
    options.expected_last_sequence = 6;
    auto marker = JournalPublisher::Open(std::move(options));
    ASSERT_TRUE(marker.ok()) << marker.status();
    ASSERT_TRUE((*marker)->PublishEpochMarker(70).ok());
    ASSERT_TRUE((*marker)->Flush(milliseconds(10000)).ok())
        << (*marker)->failure();
  }
  auto options = Options(*cluster_, engine, 1, /*epoch=*/2);
  options.expected_last_sequence = 7;  // the marker
  ASSERT_NO_FATAL_FAILURE(PublishChained(*cluster_, engine, std::move(options),
                                         /*first=*/7,
                                         /*count=*/6, /*base=*/7));
  auto marker = ReadStoredHeaders(*cluster_, engine, 7);
  ASSERT_TRUE(marker.ok()) << marker.status();
  EXPECT_EQ(marker->msg_id, "2-marker");
}

// A hole in the stream (here: a deleted message) stops the follower with a
// DataLoss error naming the missing sequence.
TEST_F(ReplicationSingleNode, FollowerReportsAGap) {
  const std::string engine = "gap";
  std::vector<PublishAck> acks;
  auto options = Options(*cluster_, engine, 1, /*epoch=*/1);
  options.stream.allow_delete_for_tests = true;
  options.on_ack = [&acks](const PublishAck& ack) { acks.push_back(ack); };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  ASSERT_NO_FATAL_FAILURE(PublishAll(**publisher, 5, acks));

  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&conn, cluster_->ServersUrl().c_str()),
            NATS_OK);
  ASSERT_EQ(natsConnection_JetStream(&js, conn, nullptr), NATS_OK);
  jsErrCode jerr = static_cast<jsErrCode>(0);
  EXPECT_EQ(
      js_DeleteMsg(js, JournalStreamName(engine).c_str(), 3, nullptr, &jerr),
      NATS_OK)
      << "JetStream error " << jerr;
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);

  auto follower = StreamFollower::Open(
      {.servers = cluster_->ServersUrl(), .engine_name = engine});
  ASSERT_TRUE(follower.ok()) << follower.status();
  for (std::uint64_t seq = 1; seq <= 2; ++seq) {
    auto msg = (*follower)->Next(milliseconds(10000));
    ASSERT_TRUE(msg.ok()) << msg.status();
    EXPECT_EQ(msg->stream_sequence, seq);
  }
  auto hole = (*follower)->Next(milliseconds(10000));
  ASSERT_FALSE(hole.ok());
  EXPECT_EQ(hole.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(hole.status().message()),
              HasSubstr("sequences 3 to 3"));
  // It stays stopped.
  EXPECT_EQ((*follower)->Next(milliseconds(100)).status(), hole.status());
}

TEST_F(ReplicationSingleNode, ProductionStreamDeniesDeletes) {
  const std::string engine = "nodelete";
  auto options = Options(*cluster_, engine, 1, /*epoch=*/1);
  std::vector<PublishAck> acks;
  options.on_ack = [&acks](const PublishAck& ack) { acks.push_back(ack); };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  ASSERT_NO_FATAL_FAILURE(PublishAll(**publisher, 2, acks));
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&conn, cluster_->ServersUrl().c_str()),
            NATS_OK);
  ASSERT_EQ(natsConnection_JetStream(&js, conn, nullptr), NATS_OK);
  jsErrCode jerr = static_cast<jsErrCode>(0);
  EXPECT_NE(
      js_DeleteMsg(js, JournalStreamName(engine).c_str(), 1, nullptr, &jerr),
      NATS_OK);
  EXPECT_NE(
      js_PurgeStream(js, JournalStreamName(engine).c_str(), nullptr, &jerr),
      NATS_OK);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  ExpectStreamHolds(*cluster_, engine, 1, 2, 1);
}

TEST_F(ReplicationSingleNode, ExistingStreamWithOtherSettingsIsRefused) {
  auto options = Options(*cluster_, "settings", 1, 1);
  auto created = EnsureJournalStream(options.servers, options.stream);
  ASSERT_TRUE(created.ok()) << created.status();
  options.stream.replicas = 3;
  auto other = JournalPublisher::Open(options);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(other.status().message()),
              HasSubstr("other settings"));
}

TEST(ReplicationNames, EngineNamesAreChecked) {
  EXPECT_TRUE(ValidateEngineName("venue-1_A").ok());
  EXPECT_EQ(JournalStreamName("x"), "orderwire_x_journal");
  EXPECT_EQ(JournalSubject("x"), "orderwire.x.journal");
  for (const char* bad : {"", "a.b", "a b", "a*", "a>", "é"}) {
    const absl::Status s = ValidateEngineName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ValidateEngineName(std::string(65, 'a')).ok());
  PublisherOptions o;
  o.servers = "nats://127.0.0.1:1";
  o.stream.engine_name = "x";
  o.window = 0;
  EXPECT_EQ(JournalPublisher::Open(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The window: with the server paused (SIGSTOP) nothing is acknowledged;
// `window` publishes go out, the next one waits and fails, and after the
// server resumes the stream holds exactly `window` messages. The oldest
// message's acknowledgement timeout fails the publisher.
TEST(ReplicationPausedServer, FullWindowBlocksAndAckTimeoutFailsThePublisher) {
  auto cluster = StartNatsCluster(1);
  ASSERT_NE(cluster, nullptr);
  const std::string engine = "window";
  auto options = Options(*cluster, engine, 1, /*epoch=*/1);
  options.window = 4;
  options.ack_timeout = milliseconds(1500);
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();

  ASSERT_TRUE(cluster->Pause(0).ok());
  for (std::uint64_t k = 1; k <= 4; ++k) {
    auto sent = (*publisher)->Publish(k * 10, Group(k, SizeOf(k)));
    ASSERT_TRUE(sent.ok()) << sent.status();
  }
  auto blocked = (*publisher)->Publish(50, Group(5, SizeOf(5)));
  EXPECT_FALSE(blocked.ok());
  // The acknowledgement thread declares the oldest message timed out.
  const absl::Status flushed = (*publisher)->Flush(milliseconds(10000));
  EXPECT_EQ((*publisher)->failure_kind(), PublisherFailure::kAckTimeout)
      << flushed;
  EXPECT_THAT(std::string(flushed.message()),
              HasSubstr("message 1 (journal index 10, expected after stream "
                        "sequence 0) not acknowledged within 1500 ms"));
  EXPECT_EQ((*publisher)->progress().published, 4u);
  ASSERT_TRUE(cluster->Resume(0).ok());

  auto state = GetJournalStreamState(cluster->ServersUrl(), engine);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->last_sequence, 4u) << "more than the window went out";
}

// Losing the only server mid-publish: the publisher reports it (the
// acknowledgements of the messages in flight never come) within the
// acknowledgement timeout, and refuses to publish after that.
TEST(ReplicationLostServer, PublisherReportsTheLostServer) {
  auto cluster = StartNatsCluster(1);
  ASSERT_NE(cluster, nullptr);
  auto options = Options(*cluster, "lost", 1, /*epoch=*/1);
  options.ack_timeout = milliseconds(1500);
  std::atomic<std::uint64_t> acked{0};
  options.on_ack = [&acked](const PublishAck& ack) {
    acked.store(ack.message, std::memory_order_release);
  };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  for (std::uint64_t k = 1; k <= 20; ++k) {
    ASSERT_TRUE((*publisher)->Publish(k * 10, Group(k, SizeOf(k))).ok());
  }
  ASSERT_TRUE((*publisher)->Flush(milliseconds(10000)).ok());
  ASSERT_TRUE(cluster->Kill(0).ok());
  const auto start = std::chrono::steady_clock::now();
  // Whatever Publish says (the bytes may still fit in libnats's reconnect
  // buffer), the failure comes from the missing acknowledgement.
  (void)(*publisher)->Publish(210, Group(21, SizeOf(21)));
  const absl::Status flushed = (*publisher)->Flush(milliseconds(10000));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(flushed.ok());
  const PublisherFailure kind = (*publisher)->failure_kind();
  EXPECT_TRUE(kind == PublisherFailure::kAckTimeout ||
              kind == PublisherFailure::kConnectionClosed)
      << flushed;
  EXPECT_LT(waited, std::chrono::seconds(5)) << flushed;
  EXPECT_EQ(acked.load(), 20u);
  auto after = (*publisher)->Publish(220, Group(22, SizeOf(22)));
  EXPECT_EQ(after.status(), (*publisher)->failure());
}

// nats-server 2.9.10 keeps a stream's last Msg-Id in memory; on a restart
// it restores it only if the last message is within the duplicate window.
// A restart in a quiet period longer than the window must not fence the
// publishers: message 1 and a message after an acknowledged one expect only
// the sequence (exact there), so only a pipelined message names its
// predecessor's Msg-Id, which the stream learnt again when it stored it.
// Checked twice: the running primary's next message after the restart, and
// a new primary's publisher (marker, then a pipelined run) after another.
// (Expecting the true last Msg-Id after such a restart is refused: 10070
// "wrong last msg ID: ", naming none.)
TEST(ReplicationRestartedServer, AQuietRestartDoesNotFenceThePublishers) {
  // A missing nats-server fails here, not in launch() (whose failure
  // message reads the log of a server that never started).
  const auto binary = NatsCluster::FindServerBinary();
  ASSERT_TRUE(binary.ok()) << binary.status();
  test_support::ScratchDir dir("ow-restart");
  ASSERT_FALSE(dir.path().empty());
  const int port = NatsCluster::FreeLoopbackPort();
  ASSERT_NE(port, 0);
  const std::string url = NatsCluster::LoopbackUrl(port);
  const NatsCluster::LoneServer lone{
      .port = port, .name = "r0", .store_dir = dir.Sub("store")};
  std::unique_ptr<test_support::ChildProcess> server;
  int launches = 0;
  auto launch = [&]() -> absl::Status {
    auto spawned = NatsCluster::SpawnServer(
        lone, dir.Sub(absl::StrCat("n0-", ++launches, ".log")));
    if (!spawned.ok()) return spawned.status();
    server = *std::move(spawned);
    return NatsCluster::WaitForJetStream(url, milliseconds(30000));
  };
  // SIGTERM (a clean shutdown), past the 1 s duplicate window after
  // `last_stored`, then up again. The condition is the clock itself.
  auto quiet_restart =
      [&](std::chrono::steady_clock::time_point last_stored) -> absl::Status {
    auto stopped = server->Stop(SIGTERM, milliseconds(20000));
    if (!stopped.ok()) return stopped.status();
    std::this_thread::sleep_until(last_stored + milliseconds(1500));
    return launch();
  };
  ASSERT_TRUE(launch().ok()) << server->LogTail();

  const std::string engine = "quietrestart";
  PublisherOptions options;
  options.servers = url;
  options.stream.engine_name = engine;
  options.stream.duplicate_window = std::chrono::seconds(1);
  options.epoch = 1;
  options.window = 8;
  options.ack_timeout = milliseconds(10000);
  {
    auto running = JournalPublisher::Open(options);
    ASSERT_TRUE(running.ok()) << running.status();
    for (std::uint64_t k = 1; k <= 3; ++k) {
      ASSERT_TRUE((*running)->Publish(k * 10, Group(k, 100)).ok());
    }
    ASSERT_TRUE((*running)->Flush(milliseconds(10000)).ok())
        << (*running)->failure();
    ASSERT_TRUE(quiet_restart(std::chrono::steady_clock::now()).ok())
        << server->LogTail();
    // libnats reconnects (every 100 ms) and sends what it buffered.
    ASSERT_TRUE((*running)->Publish(40, Group(4, 100)).ok());
    ASSERT_TRUE((*running)->Flush(milliseconds(10000)).ok())
        << (*running)->failure();
    EXPECT_EQ((*running)->progress().last_stream_sequence, 4u);
  }
  ASSERT_TRUE(quiet_restart(std::chrono::steady_clock::now()).ok())
      << server->LogTail();

  // A new primary's publisher: the marker, then records, pipelined.
  AckGate gate(/*hold_at=*/1);
  options.epoch = 2;
  options.on_ack = [&gate](const PublishAck& ack) { gate.OnAck(ack); };
  auto next = JournalPublisher::Open(options);
  ASSERT_TRUE(next.ok()) << next.status();
  OpenOnExit open_on_exit{gate};
  EXPECT_EQ((*next)->base_sequence(), 4u);
  ASSERT_TRUE((*next)->PublishEpochMarker(50).ok());
  ASSERT_TRUE(gate.WaitHeld()) << (*next)->failure();
  for (std::uint64_t k = 5; k <= 8; ++k) {
    ASSERT_TRUE((*next)->Publish(k * 10, Group(k, 100)).ok());
  }
  gate.Open();
  ASSERT_TRUE((*next)->Flush(milliseconds(10000)).ok()) << (*next)->failure();
  EXPECT_EQ((*next)->progress().last_stream_sequence, 9u);
  EXPECT_EQ((*next)->progress().refused, 0u);
}

// Killing the stream's leader in a 3-node cluster mid-publish: the stream
// elects another leader, and every message acknowledged before (and after)
// the kill is in the stream, in order, byte for byte.
TEST(ReplicationLeaderKill, EveryAcknowledgedGroupSurvivesTheStreamLeader) {
  auto cluster = StartNatsCluster(3);
  ASSERT_NE(cluster, nullptr);
  const std::string engine = "leaderkill";
  std::atomic<std::uint64_t> acked{0};
  auto options = Options(*cluster, engine, 3, /*epoch=*/1);
  options.ack_timeout = milliseconds(3000);
  options.on_ack = [&acked](const PublishAck& ack) {
    acked.store(ack.message, std::memory_order_release);
  };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  auto before = GetJournalStreamState(cluster->ServersUrl(), engine);
  ASSERT_TRUE(before.ok()) << before.status();
  const int leader = cluster->NodeByName(before->leader);
  ASSERT_GE(leader, 0) << "stream leader '" << before->leader << "'";

  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t k = 1; k <= 3000 && !done.load(); ++k) {
      if (!(*publisher)->Publish(k * 10, Group(k, SizeOf(k))).ok()) break;
    }
  });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (acked.load(std::memory_order_acquire) < 200 &&
         (*publisher)->failure().ok() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_GE(acked.load(), 200u) << (*publisher)->failure();
  ASSERT_TRUE(cluster->Kill(leader).ok());
  // The publisher either rides out the election or fails (ack timeout);
  // both are allowed. Then it stops.
  std::this_thread::sleep_for(milliseconds(200));
  done.store(true);
  writer.join();
  (void)(*publisher)->Flush(milliseconds(15000));
  const PublisherProgress progress = (*publisher)->progress();
  publisher->reset();
  ASSERT_GE(progress.acknowledged, 200u);

  // Wait for the stream's new leader, then read it all back.
  absl::StatusOr<JournalStreamState> after;
  const auto elect_deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    after = GetJournalStreamState(cluster->ServersUrl(), engine,
                                  milliseconds(2000));
    if (after.ok() && !after->leader.empty() &&
        after->leader != before->leader) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  } while (std::chrono::steady_clock::now() < elect_deadline);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_NE(after->leader, before->leader);
  EXPECT_GE(after->last_sequence, progress.acknowledged)
      << "acknowledged messages lost";
  ExpectStreamHolds(*cluster, engine, 1, progress.acknowledged, 1);
}

// Waits until the stream has a leader other than `old_leader`.
absl::StatusOr<JournalStreamState> WaitForNewLeader(
    const NatsCluster& cluster, const std::string& engine,
    const std::string& old_leader) {
  absl::StatusOr<JournalStreamState> after;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    after =
        GetJournalStreamState(cluster.ServersUrl(), engine, milliseconds(2000));
    if (after.ok() && !after->leader.empty() && after->leader != old_leader) {
      return after;
    }
    std::this_thread::sleep_for(milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  if (!after.ok()) return after.status();
  return absl::DeadlineExceededError(
      absl::StrCat("stream still led by '", after->leader, "'"));
}

// The stream's leader is killed while the publisher keeps publishing: with
// an ack_timeout longer than the re-election, the publisher rides it out
// (republishing what was answered 503, not answered, or refused behind the
// gap): every message is acknowledged once, in order, at sequence k, and
// the stream holds each exactly once (no duplicate, no hole). Before the
// republish, the publisher stopped on the first 503 ("reading
// acknowledgements: No responders available for request").
TEST(ReplicationLeaderKill, PublisherRidesOutTheStreamLeadersLoss) {
  auto cluster = StartNatsCluster(3);
  ASSERT_NE(cluster, nullptr);
  const std::string engine = "rideout";
  constexpr std::uint64_t kMessages = 1500;
  std::mutex mu;
  std::vector<PublishAck> acks;
  std::vector<std::string> events;
  std::atomic<std::uint64_t> acked{0};
  auto options = Options(*cluster, engine, 3, /*epoch=*/1);
  // Longer than any re-election seen: 4-9 s on 2 quiet cores, over 20 s
  // beside two sanitizer test processes (seen once in CI). The claim is
  // that the publisher rides the loss out, not how fast NATS elects.
  options.ack_timeout = milliseconds(60000);
  options.on_ack = [&](const PublishAck& ack) {
    std::lock_guard lock(mu);
    acks.push_back(ack);
    acked.store(ack.message, std::memory_order_release);
  };
  options.on_event = [&](const std::string& line) {
    std::lock_guard lock(mu);
    events.push_back(line);
  };
  auto publisher = JournalPublisher::Open(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  auto before = GetJournalStreamState(cluster->ServersUrl(), engine);
  ASSERT_TRUE(before.ok()) << before.status();
  const int leader = cluster->NodeByName(before->leader);
  ASSERT_GE(leader, 0) << "stream leader '" << before->leader << "'";

  absl::Status writer_status;
  std::thread writer([&] {
    for (std::uint64_t k = 1; k <= kMessages; ++k) {
      auto sent = (*publisher)->Publish(k * 10, Group(k, SizeOf(k)));
      if (!sent.ok()) {
        writer_status = sent.status();
        return;
      }
    }
  });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (acked.load(std::memory_order_acquire) < 100 &&
         (*publisher)->failure().ok() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_GE(acked.load(), 100u) << (*publisher)->failure();
  ASSERT_TRUE(cluster->Kill(leader).ok());
  writer.join();
  ASSERT_TRUE(writer_status.ok()) << writer_status;
  const absl::Status flushed = (*publisher)->Flush(milliseconds(60000));
  ASSERT_TRUE(flushed.ok()) << flushed;
  const PublisherProgress progress = (*publisher)->progress();
  publisher->reset();
  EXPECT_EQ(progress.acknowledged, kMessages);
  EXPECT_EQ(progress.last_stream_sequence, kMessages);
  EXPECT_GE(progress.republished, 1u) << "the kill did not stall anything";
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(acks.size(), kMessages);
    for (std::uint64_t k = 1; k <= kMessages; ++k) {
      ASSERT_EQ(acks[k - 1].message, k);
      ASSERT_EQ(acks[k - 1].stream_sequence, k);
    }
    // A stall's rounds 1, 2, 4, 8, ... are logged, and its end.
    std::uint64_t republish_lines = 0;
    std::uint64_t stall_ends = 0;
    for (const std::string& line : events) {
      if (line.find(": republished ") != std::string::npos) {
        ++republish_lines;
        const std::size_t at = line.find("(round ");
        ASSERT_NE(at, std::string::npos) << line;
        const std::uint64_t round = std::stoull(line.substr(at + 7));
        EXPECT_EQ(round & (round - 1), 0u)
            << "round not a power of 2: " << line;
      } else if (line.find(": acknowledged again (up to message ") !=
                 std::string::npos) {
        ++stall_ends;
      }
    }
    EXPECT_GE(republish_lines, 1u);
    EXPECT_LE(republish_lines, progress.republish_rounds);
    EXPECT_GE(stall_ends, 1u) << "every stall ended: all were acknowledged";
  }
  auto after = WaitForNewLeader(*cluster, engine, before->leader);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->last_sequence, kMessages) << "a message stored twice";
  ExpectStreamHolds(*cluster, engine, 1, kMessages, 1);
}

}  // namespace
}  // namespace orderwire::replication

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  // libnats keeps library-wide state (threads, timers) until nats_Close;
  // closing and waiting leaves nothing for LeakSanitizer to report.
  nats_CloseAndWait(5000);
  return result;
}
