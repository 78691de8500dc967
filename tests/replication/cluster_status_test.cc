// `orderwire cluster status`'s reading (replication/cluster_status.h)
// against a real nats-server: the lease, the stream's head and the members'
// reports, and the lag computed from them.
#include "replication/cluster_status.h"

#include <nats/nats.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codec/messages.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replication/group_message.h"
#include "replication/journal_publisher.h"
#include "replication/lease.h"
#include "tests/support/bytes.h"
#include "tests/support/nats_cluster.h"

namespace orderwire::replication {
namespace {

using std::chrono::milliseconds;
using test_support::NatsCluster;
using ::testing::HasSubstr;

constexpr milliseconds kTimeout{5000};

std::int64_t NowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ClusterStatusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = NatsCluster::Start(1);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }
  static NatsCluster* cluster_;
};
NatsCluster* ClusterStatusTest::cluster_ = nullptr;

// Publishes records first..first+count-1 as one message.
void PublishRecords(JournalPublisher& publisher, std::uint64_t first,
                    std::uint32_t count) {
  std::vector<test_support::Bytes> frames;
  GroupMessageBuilder builder;
  builder.Start(1);
  for (std::uint32_t i = 0; i < count; ++i) {
    frames.push_back(test_support::Frame(
        first + i, codec::CancelByOrder{.account_id = 1, .order_id = i}));
    journal::Record record;
    record.index = first + i;
    record.session_id = 1;
    record.frame = *codec::FrameView::Parse(frames.back());
    ASSERT_TRUE(builder.Add(record).ok());
  }
  ASSERT_TRUE(publisher.Publish(first, builder.Finish()).ok())
      << publisher.failure();
}

TEST_F(ClusterStatusTest, NothingYetIsSaidPlainly) {
  auto status = ReadClusterStatus(cluster_->ServersUrl(), "empty", kTimeout);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->lease.has_value());
  EXPECT_FALSE(status->stream.has_value());
  EXPECT_FALSE(status->head.has_value());
  EXPECT_TRUE(status->members.empty());
  const std::string text = FormatClusterStatus(*status, NowUnixNs());
  EXPECT_THAT(text, HasSubstr("leader   none (no lease has been taken)"));
  EXPECT_THAT(text, HasSubstr("stream   none"));
  EXPECT_THAT(text, HasSubstr("members  none reported"));
  EXPECT_EQ(ClusterStatusJson(*status, NowUnixNs()),
            "{\"engine\":\"empty\",\"leader\":null,\"members\":[],"
            "\"warnings\":0,\"unread\":[]}");
}

TEST_F(ClusterStatusTest, LeaderStreamHeadAndEachMembersLag) {
  const std::string engine = "status";
  LeaseSpec spec;
  spec.servers = cluster_->ServersUrl();
  spec.engine_name = engine;
  spec.holder = "host-a";
  auto lease = LeaseMember::Open(spec);
  ASSERT_TRUE(lease.ok()) << lease.status();
  auto acquired = (*lease)->TryAcquire();
  ASSERT_TRUE(acquired.ok()) << acquired.status();
  ASSERT_EQ(acquired->outcome, AcquireOutcome::kAcquired);

  PublisherOptions options;
  options.servers = cluster_->ServersUrl();
  options.stream.engine_name = engine;
  options.epoch = 1;
  auto publisher = JournalPublisher::Open(options);
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  ASSERT_NO_FATAL_FAILURE(PublishRecords(**publisher, 1, 5));
  ASSERT_NO_FATAL_FAILURE(PublishRecords(**publisher, 6, 7));
  ASSERT_TRUE((*publisher)->Flush(kTimeout).ok());

  auto board = MemberBoard::Open(cluster_->ServersUrl(), engine, 1, kTimeout);
  ASSERT_TRUE(board.ok()) << board.status();
  ASSERT_TRUE((*board)
                  ->Put({.name = "host-a",
                         .role = "primary",
                         .epoch = 1,
                         .applied_index = 12,
                         .stream_sequence = 2})
                  .ok());
  ASSERT_TRUE((*board)
                  ->Put({.name = "host-b",
                         .role = "standby",
                         .epoch = 1,
                         .applied_index = 5,
                         .stream_sequence = 1})
                  .ok());

  auto status = ReadClusterStatus(cluster_->ServersUrl(), engine, kTimeout);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(status->lease.has_value());
  EXPECT_EQ(status->lease->holder, "host-a");
  EXPECT_EQ(status->lease->epoch, 1u);
  ASSERT_TRUE(status->stream.has_value());
  EXPECT_EQ(status->stream->messages, 2u);
  ASSERT_TRUE(status->head.has_value());
  EXPECT_EQ(status->head->sequence, 2u);
  EXPECT_EQ(status->head->last_index, 12u);
  EXPECT_FALSE(status->head->epoch_marker);
  ASSERT_EQ(status->members.size(), 2u);
  EXPECT_EQ(status->members[0].name, "host-a");
  EXPECT_EQ(status->members[0].role, "primary");
  EXPECT_EQ(MemberLag(*status, status->members[0]), 0u);
  EXPECT_EQ(status->members[1].name, "host-b");
  EXPECT_EQ(status->members[1].applied_index, 5u);
  EXPECT_EQ(MemberLag(*status, status->members[1]), 7u);
  // The server stamped each report when it stored it: within a minute of
  // now on this machine's clock.
  for (const MemberReport& m : status->members) {
    EXPECT_LT(std::abs(NowUnixNs() - m.stored_unix_ns), 60'000'000'000)
        << m.name;
  }
  const std::string text = FormatClusterStatus(*status, NowUnixNs());
  EXPECT_THAT(text, HasSubstr("leader   host-a (epoch 1"));
  EXPECT_THAT(text, HasSubstr("head     sequence 2: journal index 12"));
  const std::string json = ClusterStatusJson(*status, NowUnixNs());
  EXPECT_THAT(json, HasSubstr("\"leader\":\"host-a\",\"epoch\":1"));
  EXPECT_THAT(json, HasSubstr("\"name\":\"host-b\",\"role\":\"standby\","
                              "\"epoch\":1,\"applied_index\":5,"
                              "\"stream_sequence\":1,\"lag\":7"));

  // A new epoch's marker at the head: no record, the same last index.
  options.epoch = 2;
  options.expected_last_sequence = 2;
  auto next = JournalPublisher::Open(options);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE((*next)->PublishEpochMarker(13).ok());
  ASSERT_TRUE((*next)->Flush(kTimeout).ok());
  status = ReadClusterStatus(cluster_->ServersUrl(), engine, kTimeout);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(status->head.has_value());
  EXPECT_TRUE(status->head->epoch_marker);
  EXPECT_EQ(status->head->epoch, 2u);
  EXPECT_EQ(status->head->last_index, 12u);
  EXPECT_EQ(MemberLag(*status, status->members[1]), 7u);
}

// Puts `value` under `key` in the engine's members bucket, bypassing the
// checks of MemberBoard (a foreign or damaged writer).
void PutRaw(const std::string& servers, const std::string& engine,
            const char* key, const char* value) {
  natsConnection* conn = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&conn, servers.c_str()), NATS_OK);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, conn, nullptr), NATS_OK);
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, js, MemberBucketName(engine).c_str()), NATS_OK);
  std::uint64_t revision = 0;
  EXPECT_EQ(kvStore_PutString(&revision, kv, key, value), NATS_OK);
  kvStore_Destroy(kv);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
}

// A member's line that does not parse is reported, not fatal: the others
// are still listed.
TEST_F(ClusterStatusTest, AMalformedMemberLineIsAWarning) {
  const std::string engine = "badmember";
  auto board = MemberBoard::Open(cluster_->ServersUrl(), engine, 1, kTimeout);
  ASSERT_TRUE(board.ok()) << board.status();
  ASSERT_TRUE((*board)->Put({.name = "good", .role = "standby"}).ok());
  ASSERT_NO_FATAL_FAILURE(PutRaw(cluster_->ServersUrl(), engine, "broken",
                                 "ow-member/1 standby nine 0 0"));
  auto status = ReadClusterStatus(cluster_->ServersUrl(), engine, kTimeout);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->members.size(), 1u);
  EXPECT_EQ(status->members[0].name, "good");
  ASSERT_EQ(status->warnings.size(), 1u);
  EXPECT_THAT(status->warnings[0],
              HasSubstr("orderwire_badmember_members: member report: epoch "
                        "'nine' is not a decimal number"));
  EXPECT_THAT(FormatClusterStatus(*status, NowUnixNs()),
              HasSubstr("warning  bucket orderwire_badmember_members"));
}

// The members bucket (R1 here) loses its only server while the lease and
// the stream (R3) stay readable: the status says what it has and lists the
// members as unread, instead of failing as a whole ("list bucket ...:
// Timeout", seen 40 s after a NATS node was killed).
TEST(ClusterStatusUnread, AMembersBucketThatDoesNotAnswerIsListedUnread) {
  auto cluster = NatsCluster::Start(3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string servers = (*cluster)->ServersUrl();
  const std::string engine = "unread";
  LeaseSpec spec;
  spec.servers = servers;
  spec.engine_name = engine;
  spec.replicas = 3;
  spec.holder = "host-a";
  auto lease = LeaseMember::Open(spec);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE((*lease)->TryAcquire().ok());
  PublisherOptions options;
  options.servers = servers;
  options.stream.engine_name = engine;
  options.stream.replicas = 3;
  options.epoch = 1;
  auto publisher = JournalPublisher::Open(options);
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  ASSERT_NO_FATAL_FAILURE(PublishRecords(**publisher, 1, 3));
  ASSERT_TRUE((*publisher)->Flush(kTimeout).ok());
  publisher->reset();
  auto board = MemberBoard::Open(servers, engine, 1, kTimeout);
  ASSERT_TRUE(board.ok()) << board.status();
  ASSERT_TRUE((*board)
                  ->Put({.name = "host-a",
                         .role = "primary",
                         .epoch = 1,
                         .applied_index = 3,
                         .stream_sequence = 1})
                  .ok());
  board->reset();

  // The node that holds the members bucket's stream.
  natsConnection* conn = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&conn, servers.c_str()), NATS_OK);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, conn, nullptr), NATS_OK);
  jsStreamInfo* info = nullptr;
  const std::string bucket_stream =
      std::string("KV_") + MemberBucketName(engine);
  ASSERT_EQ(
      js_GetStreamInfo(&info, js, bucket_stream.c_str(), nullptr, nullptr),
      NATS_OK);
  const std::string holder_name =
      info->Cluster != nullptr && info->Cluster->Leader != nullptr
          ? info->Cluster->Leader
          : "";
  jsStreamInfo_Destroy(info);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  const int holder = (*cluster)->NodeByName(holder_name);
  ASSERT_GE(holder, 0) << "members bucket led by '" << holder_name << "'";
  ASSERT_TRUE((*cluster)->Kill(holder).ok());

  // The R3 lease and stream may be re-electing too: poll until they answer.
  absl::StatusOr<ClusterStatus> status;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    status = ReadClusterStatus(servers, engine, milliseconds(2000));
    seen = status.ok() && status->lease.has_value() &&
           status->head.has_value() && status->unread.size() == 1;
  }
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(seen) << FormatClusterStatus(*status, NowUnixNs());
  EXPECT_EQ(status->unread[0], "members");
  EXPECT_EQ(status->lease->holder, "host-a");
  EXPECT_EQ(status->head->last_index, 3u);
  EXPECT_TRUE(status->members.empty());
  const std::string text = FormatClusterStatus(*status, NowUnixNs());
  EXPECT_THAT(text, HasSubstr("leader   host-a"));
  EXPECT_THAT(text, HasSubstr("members  unknown (they could not be read)"));
  EXPECT_THAT(text, HasSubstr("unread   members could not be read now: "));
  EXPECT_THAT(ClusterStatusJson(*status, NowUnixNs()),
              HasSubstr("\"unread\":[\"members\"]}"));
}

TEST(MemberReport, ValueIsStrict) {
  auto value = EncodeMemberReport({.name = "b-1",
                                   .role = "standby",
                                   .epoch = 3,
                                   .applied_index = 0,
                                   .stream_sequence = 9});
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "ow-member/1 standby 3 0 9");
  auto parsed = ParseMemberReport("b-1", *value);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->epoch, 3u);
  EXPECT_EQ(parsed->stream_sequence, 9u);
  for (const char* bad :
       {"", "ow-member/2 standby 3 0 9", "ow-member/1 standby 3 0",
        "ow-member/1 standby 3 0 9 1", "ow-member/1 Standby 3 0 9",
        "ow-member/1 standby 03 0 9", "ow-member/1 standby -3 0 9",
        "ow-member/1 standby x 0 9", "ow-member/1  standby 3 0 9",
        "ow-member/1 standby 3 0 99999999999999999999"}) {
    EXPECT_FALSE(ParseMemberReport("b-1", bad).ok()) << "'" << bad << "'";
  }
  EXPECT_THAT(EncodeMemberReport({.name = "host:1", .role = "standby"})
                  .status()
                  .message(),
              HasSubstr("':' cannot be part of a NATS key"));
  EXPECT_FALSE(EncodeMemberReport({.name = "a", .role = ""}).ok());
}

}  // namespace
}  // namespace orderwire::replication
