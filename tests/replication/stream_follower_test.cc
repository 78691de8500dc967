// StreamFollower::Open against a server whose JetStream API never answers:
// the consumer create is sent again (every 8 s) until the open's timeout,
// then DeadlineExceeded. ctest -R replication.StreamFollowerOpen.
#include "replication/stream_follower.h"

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/child_process.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::replication {
namespace {

using std::chrono::milliseconds;
using test_support::NatsCluster;

void CountRequest(natsConnection* /*nc*/, natsSubscription* /*sub*/,
                  natsMsg* msg, void* closure) {
  static_cast<std::atomic<int>*>(closure)->fetch_add(1);
  natsMsg_Destroy(msg);
}

// A plain nats-server (no JetStream) and a test subscriber on the consumer
// create subject that counts requests and answers none: each create of the
// follower's ordered consumer goes unanswered, as when JetStream drops an API
// request while its leaders change. A 9 s open sends it twice (at 0 and 8 s)
// and gives up after 9 s.
TEST(StreamFollowerOpen, AnUnansweredConsumerCreateIsSentAgainUntilTheTimeout) {
  test_support::ScratchDir dir("ow-follower-open");
  ASSERT_FALSE(dir.path().empty());
  const int port = NatsCluster::FreeLoopbackPort();
  ASSERT_NE(port, 0);
  const std::string url = NatsCluster::LoopbackUrl(port);
  auto server = NatsCluster::SpawnServer({.port = port}, dir.Sub("server.log"));
  ASSERT_TRUE(server.ok()) << server.status();

  natsConnection* conn = nullptr;
  const auto ready_by = std::chrono::steady_clock::now() + milliseconds(20000);
  while (natsConnection_ConnectTo(&conn, url.c_str()) != NATS_OK &&
         std::chrono::steady_clock::now() < ready_by) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_NE(conn, nullptr) << (*server)->LogTail();
  std::atomic<int> creates{0};
  natsSubscription* sub = nullptr;
  ASSERT_EQ(natsConnection_Subscribe(&sub, conn, "$JS.API.CONSUMER.CREATE.>",
                                     CountRequest, &creates),
            NATS_OK);
  ASSERT_EQ(natsConnection_FlushTimeout(conn, 5000), NATS_OK);

  const auto began = std::chrono::steady_clock::now();
  auto follower = StreamFollower::Open({.servers = url,
                                        .engine_name = "unanswered",
                                        .timeout = milliseconds(9000)});
  const auto waited = std::chrono::steady_clock::now() - began;
  ASSERT_FALSE(follower.ok());
  EXPECT_EQ(follower.status().code(), absl::StatusCode::kDeadlineExceeded)
      << follower.status();
  EXPECT_THAT(std::string(follower.status().message()),
              ::testing::HasSubstr("consume orderwire_unanswered_journal"));
  EXPECT_GE(waited, milliseconds(9000));
  EXPECT_LT(waited, milliseconds(15000));
  EXPECT_EQ(creates.load(), 2);

  natsSubscription_Destroy(sub);
  natsConnection_Destroy(conn);
}

}  // namespace
}  // namespace orderwire::replication
