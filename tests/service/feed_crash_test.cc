// The market-data feed across SIGKILL and restart (docs/MARKETDATA.md
// "Sequence numbers and sessions", "Durability and determinism",
// "Retransmission"): the real `orderwire serve` publishing to a unicast
// loopback target with a request server, two go-back-N clients
// (client::RunClient) trading the `mixed` workload on two sessions, the
// service SIGKILLed twice mid-stream and restarted each time on the same
// journal and ports. A subscriber (tests/support/feed_follower.h) listens
// across every run. At the end:
//   - every restarted publisher's first packet is a Heartbeat with the next
//     sequence of its recovered state, at or past what the killed one sent,
//     and what it sends live starts there (records applied while
//     recovering are not sent again);
//   - the subscriber, having asked for what it lacked (retransmission, or a
//     snapshot where the restarted server does not retain it), holds one
//     contiguous sequence of one session with no contradiction: each
//     message, and each one any packet carried, is the journal's feed
//     message of that number, byte for byte, and its books are the
//     engine's after the journal.
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "config/service_config.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "tests/support/child_process.h"
#include "tests/support/feed_follower.h"
#include "tests/support/files.h"
#include "tests/support/journal_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/trading_clients.h"

namespace orderwire::service {
namespace {

using std::chrono::milliseconds;
using test_support::ChildProcess;

constexpr std::size_t kFeedCrashCommands = 20'000;  // per session
constexpr std::int64_t kFeedHeartbeatMs = 100;
constexpr int kFeedCrashKills = 2;

// A loopback UDP endpoint free now (bound and released), for a child to
// bind in every run.
net::Endpoint FreeLoopbackEndpoint() {
  absl::StatusOr<net::UdpSocket> probe =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  EXPECT_TRUE(probe.ok()) << probe.status();
  return probe.ok() ? *probe->LocalEndpoint() : net::Endpoint{};
}

// `orderwire serve` publishing the feed, run after run on one journal and
// the same order-entry and request-server ports.
class FeedCrashServer {
 public:
  FeedCrashServer()
      : listen_(FreeLoopbackEndpoint()), requests_(FreeLoopbackEndpoint()) {}

  [[nodiscard]] const net::Endpoint& listen() const { return listen_; }
  [[nodiscard]] const net::Endpoint& requests() const { return requests_; }
  [[nodiscard]] std::string journal() const { return dir_.Sub("journal"); }
  [[nodiscard]] int runs() const { return runs_; }
  [[nodiscard]] std::string log(int run) const {
    return dir_.Sub("serve." + std::to_string(run));
  }

  // Starts the next run, publishing to `target`, and waits until it
  // listens (a loaded machine: up to 60 s).
  ::testing::AssertionResult Start(const net::Endpoint& target) {
    const std::string log = this->log(runs_++);
    auto child = ChildProcess::Spawn(
        {ORDERWIRE_BINARY, "serve", "--journal", journal(), "--durability",
         "batch", "--listen", listen_.ToString(), "--segment-size", "1048576",
         "--md-target", target.ToString(), "--md-request-listen",
         requests_.ToString(), "--md-heartbeat-ms",
         std::to_string(kFeedHeartbeatMs)},
        log);
    if (!child.ok()) return ::testing::AssertionFailure() << child.status();
    child_ = *std::move(child);
    const auto deadline =
        std::chrono::steady_clock::now() + milliseconds(60'000);
    while (test_support::ReadText(log).find("listening on") ==
           std::string::npos) {
      if (child_->Exited().has_value() ||
          std::chrono::steady_clock::now() > deadline) {
        return ::testing::AssertionFailure() << "serve did not start:\n"
                                             << child_->LogTail();
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    return ::testing::AssertionSuccess();
  }
  void Kill() { ASSERT_TRUE(child_->Kill().ok()); }
  // SIGTERM: a clean stop (EndOfSession sent).
  void Stop() {
    absl::StatusOr<int> status = child_->Stop(SIGTERM, milliseconds(30'000));
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << child_->LogTail();
  }

 private:
  test_support::ScratchDir dir_{"ow-feedcrash"};
  net::Endpoint listen_;
  net::Endpoint requests_;
  int runs_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

// The last journal index a restart's log says it replayed ("replayed N
// records (1 to LAST)"); 0 if it says none.
std::uint64_t ReplayedThrough(const std::string& log) {
  const std::size_t at = log.find("replayed ");
  if (at == std::string::npos) return 0;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  if (std::sscanf(log.c_str() + at,
                  "replayed %*u records (%" SCNu64 " to %" SCNu64 ")", &first,
                  &last) != 2) {
    return 0;
  }
  return last;
}

TEST(FeedCrash, ASubscriberSeesOneContiguousFeedAcrossKillsAndRestarts) {
  FeedCrashServer server;
  test_support::FeedFollower follower({server.requests()},
                                      kFeedHeartbeatMs * 1'000'000);
  ASSERT_TRUE(server.Start(follower.endpoint()));
  // Seconds of load at 4,000 a second per session: the kills land under it.
  test_support::TradingClients clients({.target = server.listen(),
                                        .sessions = {1, 2},
                                        .commands = kFeedCrashCommands,
                                        .seed = 40,
                                        .rate = 4000});
  // Each kill once the subscriber has 1500 more messages: mid-stream.
  int kills = 0;
  for (; kills < kFeedCrashKills; ++kills) {
    const std::uint64_t want = follower.next_sequence() + 1500;
    while (follower.next_sequence() < want && clients.Busy()) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    if (!clients.Busy()) break;
    ASSERT_NO_FATAL_FAILURE(server.Kill());
    ASSERT_TRUE(server.Start(follower.endpoint()));
  }
  clients.Join();
  EXPECT_EQ(kills, kFeedCrashKills) << "the load ended before the kills";
  clients.ExpectAllAcknowledged();
  // A message made durable but not published before a kill comes from the
  // last run's request server only: the subscriber has it before the stop.
  EXPECT_TRUE(follower.WaitCaughtUp(milliseconds(60'000)))
      << follower.SummaryNow();
  ASSERT_NO_FATAL_FAILURE(server.Stop());

  const test_support::SessionReplay replay =
      test_support::ReplayJournalBySession(server.journal(),
                                           config::ServiceConfig{}.engine);
  ASSERT_GT(replay.feed.size(), 3000u);
  EXPECT_TRUE(
      follower.WaitForNext(replay.feed.size() + 1, milliseconds(60'000)))
      << "the subscriber expects " << follower.next_sequence() << " of "
      << replay.feed.size() + 1;
  follower.Stop();
  test_support::ExpectFollowedTheJournalsFeed(follower, replay);
  const std::vector<test_support::PublisherRun> runs =
      test_support::ExpectEachPublisherContinuesTheFeed(follower.packets());
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(server.runs()));
  EXPECT_EQ(runs.front().start, 1u);
  // Each restart starts at the next sequence of the records it recovered.
  for (std::size_t r = 1; r < runs.size(); ++r) {
    const std::uint64_t last = ReplayedThrough(
        test_support::ReadText(server.log(static_cast<int>(r))));
    ASSERT_GT(last, 0u) << "run " << r + 1 << " replayed nothing";
    ASSERT_LE(last, replay.feed_after.size());
    EXPECT_EQ(runs[r].start, replay.feed_after[last - 1] + 1)
        << "run " << r + 1;
  }
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::printf("run %zu: live messages %llu to %llu\n", r + 1,
                static_cast<unsigned long long>(runs[r].start),
                static_cast<unsigned long long>(runs[r].end - 1));
  }
  std::printf("%s\n", test_support::Summary(follower.subscriber()).c_str());
}

}  // namespace
}  // namespace orderwire::service
