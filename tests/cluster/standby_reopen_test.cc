// The standby's follower re-open (cluster/standby.h, Standby::Step;
// docs/REPLICATION.md "When NATS loses a leader"), against a real
// nats-server and a real replicated primary.
//
// What makes Step re-open: an error of StreamFollower::Next other than a
// timeout, a hole (DataLoss) or a bad argument. With libnats 3.4 that is the
// follower's connection closed (NATS_CONNECTION_CLOSED). A paused server, a
// killed stream leader or a deleted consumer are ridden out inside libnats
// (it reconnects, and recreates the ordered consumer from its
// missed-heartbeat timer) while its sync subscription reports nothing but
// timeouts: tried, a 13 s pause of the one server and a consumer deleted
// through the JetStream API left follower_reopens at 0 (the deleted one was
// recreated after about 17 s), and replication.Standby.
// FollowsThroughTheLossOfTheStreamLeader follows through a killed leader.
// libnats closes a connection when its reconnect budget runs out
// (replication/internal/nats_handles.cc: 600 tries 100 ms apart, a minute
// and more of NATS away: 90 s measured with every connection refused) or when
// the server sends an -ERR that is not a stale connection, a permissions or an
// authorization error. The first is too slow for a test; so the standby reaches
// the server through a TCP forwarder of this test (NatsForwarder) that can end
// every connection through it the second way, as the server would. The
// follower's Next then fails with "Connection Closed", which only a re-open (a
// new connection and a new ordered consumer from the sequence due next)
// recovers from.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cluster/primary_replication.h"
#include "cluster/standby.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replication/journal_stream.h"
#include "service/service.h"
#include "tests/cluster/cluster_test_support.h"
#include "tests/support/bytes.h"
#include "tests/support/journal_replay.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::cluster {
namespace {

using service::ServiceOptions;

using cluster_test::kSession;
using cluster_test::Order;
using cluster_test::Trade;
using std::chrono::milliseconds;
using test_support::Bytes;
using test_support::Frame;
using test_support::JournalRecordCopy;
using test_support::NatsCluster;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::StartNatsCluster;
using test_support::TestClient;
using ::testing::HasSubstr;

constexpr char kEngine[] = "reopen";

// A TCP forwarder on 127.0.0.1 to one nats-server: every connection
// accepted gets its own connection to the server, bytes are copied both
// ways on one thread. CloseWithServerError() ends every connection open
// now as a server that gives up on a client does: an -ERR line, then the
// socket closed. Connections made afterwards are forwarded as before, or
// refused (SetRefusing).
class NatsForwarder {
 public:
  static std::unique_ptr<NatsForwarder> Start(int server_port) {
    auto forwarder = std::unique_ptr<NatsForwarder>(new NatsForwarder());
    forwarder->server_port_ = server_port;
    forwarder->listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (forwarder->listener_ < 0 ||
        bind(forwarder->listener_, reinterpret_cast<sockaddr*>(&address),
             sizeof(address)) != 0 ||
        listen(forwarder->listener_, 16) != 0 ||
        getsockname(forwarder->listener_, reinterpret_cast<sockaddr*>(&address),
                    &length) != 0 ||
        pipe(forwarder->wake_) != 0) {
      ADD_FAILURE() << "forwarder: cannot listen on 127.0.0.1: "
                    << std::strerror(errno);
      return nullptr;
    }
    forwarder->port_ = ntohs(address.sin_port);
    NatsForwarder* const self = forwarder.get();
    forwarder->thread_ = std::thread([self] { self->Loop(); });
    return forwarder;
  }
  NatsForwarder(const NatsForwarder&) = delete;
  NatsForwarder& operator=(const NatsForwarder&) = delete;
  ~NatsForwarder() {
    stop_.store(true);
    Wake();
    if (thread_.joinable()) thread_.join();
    for (const Link& link : links_) {
      close(link.client);
      close(link.server);
    }
    close(listener_);
    close(wake_[0]);
    close(wake_[1]);
  }

  [[nodiscard]] std::string url() const {
    return absl::StrCat("nats://127.0.0.1:", port_);
  }
  // Connections forwarded so far; every connection taken, refused ones
  // included.
  [[nodiscard]] int accepted() const { return accepted_.load(); }
  [[nodiscard]] int attempts() const { return attempts_.load(); }
  // While set, a new connection is closed as soon as it is taken (before
  // the server's INFO): a client sees a server it cannot connect to.
  void SetRefusing(bool refusing) { refusing_.store(refusing); }

  // Sends `error_line` ("-ERR '...'\r\n") to every client connected now,
  // between two of the server's protocol lines, and closes the connection;
  // waits until done (up to 10 s). How many connections it ended; -1 when
  // one was still in the middle of a server message after 10 s.
  int CloseWithServerError(std::string error_line) {
    std::unique_lock<std::mutex> lock(mutex_);
    error_line_ = std::move(error_line);
    ended_ = -1;
    Wake();
    if (!done_.wait_for(lock, std::chrono::seconds(10),
                        [this] { return ended_ >= 0; })) {
      return -1;  // a connection never reached a line end
    }
    return ended_;
  }

 private:
  struct Link {
    int client = -1;
    int server = -1;
    // The server's bytes so far end a protocol line: an -ERR may go next.
    bool at_line_end = true;
  };

  NatsForwarder() = default;

  void Wake() { (void)!write(wake_[1], "w", 1); }

  static bool WriteAll(int fd, const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

  void Accept() {
    const int client = accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    attempts_.fetch_add(1);
    if (refusing_.load()) {
      close(client);
      return;
    }
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(server_port_));
    if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&address),
                              sizeof(address)) != 0) {
      close(client);
      if (server >= 0) close(server);
      return;
    }
    links_.push_back(Link{.client = client, .server = server});
    accepted_.fetch_add(1);
  }

  // Copies what `from` has to `to`; false when either side is done.
  static bool Copy(int from, int to, bool* at_line_end) {
    char buffer[64 * 1024];
    const ssize_t n = read(from, buffer, sizeof(buffer));
    if (n <= 0) return n < 0 && errno == EINTR;
    if (at_line_end != nullptr) {
      *at_line_end = n >= 2 && buffer[n - 2] == '\r' && buffer[n - 1] == '\n';
    }
    return WriteAll(to, buffer, static_cast<std::size_t>(n));
  }

  // Ends with the error every link whose server bytes end a protocol line
  // (the others after their next line end).
  void EndLinksAtLineEnd() {
    for (auto it = links_.begin(); it != links_.end();) {
      if (!it->at_line_end) {
        ++it;
        continue;
      }
      (void)WriteAll(it->client, error_line_.data(), error_line_.size());
      close(it->client);
      close(it->server);
      it = links_.erase(it);
      ++ending_;
    }
  }

  void Loop() {
    while (!stop_.load()) {
      std::vector<pollfd> fds;
      fds.push_back({.fd = wake_[0], .events = POLLIN, .revents = 0});
      fds.push_back({.fd = listener_, .events = POLLIN, .revents = 0});
      for (const Link& link : links_) {
        fds.push_back({.fd = link.client, .events = POLLIN, .revents = 0});
        fds.push_back({.fd = link.server, .events = POLLIN, .revents = 0});
      }
      if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return;
      if ((fds[0].revents & POLLIN) != 0) {
        char drain[64];
        (void)!read(wake_[0], drain, sizeof(drain));
      }
      std::vector<Link> kept;
      for (std::size_t i = 0; i < links_.size(); ++i) {
        Link& link = links_[i];
        const short from_client = fds[2 + 2 * i].revents;
        const short from_server = fds[3 + 2 * i].revents;
        bool open = true;
        if (from_client != 0) open = Copy(link.client, link.server, nullptr);
        if (open && from_server != 0) {
          open = Copy(link.server, link.client, &link.at_line_end);
        }
        if (open) {
          kept.push_back(link);
        } else {
          close(link.client);
          close(link.server);
        }
      }
      links_ = std::move(kept);
      // After the links polled (a new one has no entry in `fds`).
      if ((fds[1].revents & POLLIN) != 0) Accept();
      std::lock_guard<std::mutex> lock(mutex_);
      if (ended_ < 0) {
        EndLinksAtLineEnd();
        if (links_.empty()) {
          ended_ = ending_;
          ending_ = 0;
          done_.notify_all();
        }
      }
    }
  }

  int server_port_ = 0;
  int port_ = 0;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::vector<Link> links_;  // the forwarder's thread only
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> attempts_{0};
  std::atomic<bool> refusing_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::string error_line_;
  int ended_ = 0;   // -1: an end asked for and not done
  int ending_ = 0;  // links ended for the request in progress
};

// The client port of "nats://127.0.0.1:PORT".
int PortOf(const std::string& url) {
  return std::stoi(url.substr(url.rfind(':') + 1));
}

// A primary in the replicated mode (no lease), publishing to kEngine.
ServiceOptions PrimaryOptions(const std::string& journal,
                              const NatsCluster& nats) {
  ServiceOptions options =
      test_support::TestOptions(journal, journal::Durability::kBatch);
  ReplicationOptions replication;
  replication.servers = nats.ServersUrl();
  replication.engine_name = kEngine;
  replication.connect_timeout = milliseconds(5000);
  options.replication = ReplicatedDurability(replication);
  return options;
}

// A standby of the primary started with `primary`, reaching NATS at
// `servers`, its events appended to `log`.
StandbyOptions StandbyOptionsFor(const std::string& servers,
                                 const std::string& journal,
                                 const ServiceOptions& primary,
                                 std::string& log) {
  StandbyOptions options;
  options.nats_servers = servers;
  options.engine_name = kEngine;
  options.journal.directory = journal;
  options.journal.durability = journal::Durability::kBatch;
  options.journal.segment_size = primary.journal.segment_size;
  options.config = primary.config;
  options.report_history = primary.report_history;
  options.connect_timeout = milliseconds(10000);
  options.on_event = [&log](std::string_view line) {
    log.append(line);
    log += "\n";
  };
  return options;
}

// Steps the standby until its state holds `index` and the follower is open
// (OK), it fails (its error) or `timeout` passes.
absl::Status FollowUntil(Standby& standby, std::uint64_t index,
                         milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (standby.stats().applied_index < index) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("standby applied ", standby.stats().applied_index,
                       " of ", index, " within ", timeout.count(), " ms"));
    }
    if (absl::Status s = standby.Step(milliseconds(50)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The standby's follower connection is closed by the server side (an -ERR
// libnats cannot ride out) while the primary goes on publishing: the next
// Step fails on "Connection Closed", the one after re-opens the follower
// from the sequence due next, and the standby catches up with the records
// published meanwhile and after: its journal equals the primary's, record
// for record, up to the stream's last message. Without the re-open, Step
// returns the error and the standby stops (seen failing so).
TEST(StandbyReopen, AFollowerWhoseConnectionIsClosedIsOpenedAgainAndCatchesUp) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  auto forwarder = NatsForwarder::Start(PortOf(nats->NodeUrl(0)));
  ASSERT_NE(forwarder, nullptr);
  ScratchDir dir;
  const ServiceOptions primary_options = PrimaryOptions(dir.Sub("a"), *nats);
  auto primary = RunningService::Start(primary_options);
  ASSERT_NE(primary, nullptr);
  TestClient client(primary->endpoint());
  Trade(client, 1, 5);

  std::string log;  // the standby's events (on this thread: Step's)
  const StandbyOptions options =
      StandbyOptionsFor(forwarder->url(), dir.Sub("b"), primary_options, log);
  const auto events = [&log] { return log; };
  absl::StatusOr<std::unique_ptr<Standby>> started = Standby::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  Standby& standby = **started;
  ASSERT_TRUE(FollowUntil(standby, 5, milliseconds(10000)).ok()) << events();
  const std::uint64_t followed = standby.stats().stream_sequence;
  ASSERT_GT(followed, 0u);

  // Only the follower's connection is open through the forwarder now (the
  // start's stream search closed its own).
  const int connections = forwarder->accepted();
  EXPECT_EQ(forwarder->CloseWithServerError(
                "-ERR 'orderwire test: connection closed by the server'\r\n"),
            1);
  // Published while the standby has no follower.
  Trade(client, 6, 12);
  absl::Status status = FollowUntil(standby, 12, milliseconds(15000));
  ASSERT_TRUE(status.ok()) << status << "\n" << events();
  EXPECT_EQ(standby.stats().follower_reopens, 1u) << events();
  EXPECT_THAT(events(), HasSubstr("Connection Closed"));
  EXPECT_THAT(events(),
              HasSubstr(absl::StrCat("following stream ", kEngine,
                                     " again from sequence ", followed + 1)));
  EXPECT_EQ(forwarder->accepted(), connections + 1) << "the re-opened "
                                                       "follower's";
  // Followed on by the re-opened follower.
  Trade(client, 13, 20);
  status = FollowUntil(standby, 20, milliseconds(10000));
  ASSERT_TRUE(status.ok()) << status << "\n" << events();
  EXPECT_EQ(standby.stats().follower_reopens, 1u) << events();

  absl::StatusOr<replication::JournalStreamState> stream =
      replication::GetJournalStreamState(nats->ServersUrl(), kEngine);
  ASSERT_TRUE(stream.ok()) << stream.status();
  EXPECT_EQ(standby.stats().stream_sequence, stream->last_sequence);
  ASSERT_TRUE(standby.Stop().ok());
  ASSERT_TRUE(primary->Stop().ok());
  const std::vector<JournalRecordCopy> primary_journal =
      test_support::ReadJournalRecords(dir.Sub("a"));
  const std::vector<JournalRecordCopy> standby_journal =
      test_support::ReadJournalRecords(dir.Sub("b"));
  ASSERT_EQ(primary_journal.size(), 20u);
  EXPECT_TRUE(standby_journal == primary_journal);
}

// After the follower's connection is closed, NATS refuses connections for
// 2 s (as a killed server does): the re-open is tried again 100 ms after a
// failure, doubling to 1 s, and each Step without a follower waits out its
// timeout, so the standby neither spins nor opens a connection per Step
// (seen failing without the backoff: thousands of tries and Steps in those
// 2 s, each try at once refused); once NATS takes connections again the
// follower opens within the backoff and the standby catches up.
TEST(StandbyReopen, AReopenThatCannotConnectIsTriedAgainWithABackoff) {
  auto nats = StartNatsCluster(1);
  ASSERT_NE(nats, nullptr);
  auto forwarder = NatsForwarder::Start(PortOf(nats->NodeUrl(0)));
  ASSERT_NE(forwarder, nullptr);
  ScratchDir dir;
  const ServiceOptions primary_options = PrimaryOptions(dir.Sub("a"), *nats);
  auto primary = RunningService::Start(primary_options);
  ASSERT_NE(primary, nullptr);
  TestClient client(primary->endpoint());
  Trade(client, 1, 5);
  std::string log;  // the standby's events (on this thread: Step's)
  absl::StatusOr<std::unique_ptr<Standby>> started = Standby::Start(
      StandbyOptionsFor(forwarder->url(), dir.Sub("b"), primary_options, log));
  ASSERT_TRUE(started.ok()) << started.status();
  Standby& standby = **started;
  ASSERT_TRUE(FollowUntil(standby, 5, milliseconds(10000)).ok()) << log;

  forwarder->SetRefusing(true);
  EXPECT_EQ(forwarder->CloseWithServerError(
                "-ERR 'orderwire test: connection closed by the server'\r\n"),
            1);
  const int attempts_before = forwarder->attempts();
  int steps = 0;
  const auto refusing_until =
      std::chrono::steady_clock::now() + milliseconds(2000);
  while (std::chrono::steady_clock::now() < refusing_until) {
    ASSERT_TRUE(standby.Step(milliseconds(50)).ok()) << log;
    ++steps;
  }
  const int tries = forwarder->attempts() - attempts_before;
  // Tries at about 0, 0.1, 0.3, 0.7 and 1.5 s; Steps of 50 ms, at most
  // two more per try (one cut short at the try's time, the try's own).
  EXPECT_GE(tries, 3) << log;
  EXPECT_LE(tries, 7) << log;
  EXPECT_LE(steps, 2000 / 50 + 20) << log;
  EXPECT_EQ(standby.stats().follower_reopens, 0u) << log;
  EXPECT_THAT(log, HasSubstr("(trying again)"));

  forwarder->SetRefusing(false);
  Trade(client, 6, 12);
  const auto back = std::chrono::steady_clock::now();
  absl::Status status = FollowUntil(standby, 12, milliseconds(10000));
  ASSERT_TRUE(status.ok()) << status << "\n" << log;
  // The next try is at most 1 s away.
  EXPECT_LT(std::chrono::steady_clock::now() - back, milliseconds(3000));
  EXPECT_EQ(standby.stats().follower_reopens, 1u) << log;
  ASSERT_TRUE(standby.Stop().ok());
  ASSERT_TRUE(primary->Stop().ok());
  const std::vector<JournalRecordCopy> primary_journal =
      test_support::ReadJournalRecords(dir.Sub("a"));
  ASSERT_EQ(primary_journal.size(), 12u);
  EXPECT_TRUE(test_support::ReadJournalRecords(dir.Sub("b")) ==
              primary_journal);
}

}  // namespace
}  // namespace orderwire::cluster
