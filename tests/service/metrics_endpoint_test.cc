// `orderwire serve --metrics-listen` end to end: the real binary on
// loopback, known traffic from a raw client (N orders, M datagrams that do
// not parse), a scrape with the real `curl`, every value checked against
// what was sent, `promtool check metrics` on the scrape (skipped, saying so,
// where promtool is not installed); the HTTP thread stops with the service
// on SIGTERM; a bad HOST:PORT is a usage error and a port in use stops the
// start before the journal is touched.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/metrics/metrics_server.h"
#include "tests/support/bytes.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"
#include "tests/support/shell.h"

namespace orderwire::service {
namespace {

using test_support::Bytes;
using test_support::Frame;
using test_support::ReadText;
using test_support::RunShell;
using test_support::ScratchDir;
using test_support::TestClient;

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMetricsSession = 1;
constexpr std::uint64_t kOrders = 40;  // N: in datagrams of 10
constexpr std::uint64_t kOrdersPerDatagram = 10;
constexpr std::uint64_t kBadDatagrams = 5;  // M: first byte not 'O'

bool Installed(const char* program) {
  return std::system((std::string("command -v ") + program + " >/dev/null 2>&1")
                         .c_str()) == 0;
}

// `orderwire serve` in a child process, its standard error in `log`;
// SIGKILLed if the test ends without stopping it.
class Server {
 public:
  Server(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv{ORDERWIRE_BINARY, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto process = test_support::ChildProcess::Spawn(std::move(argv), log);
    if (process.ok()) {
      process_ = *std::move(process);
    } else {
      ADD_FAILURE() << "cannot start orderwire serve: " << process.status();
    }
  }

  [[nodiscard]] pid_t pid() const {
    return process_ == nullptr ? -1 : process_->pid();
  }

  // SIGTERM, then its exit status (-1: killed after `timeout_ms`, or not
  // a normal exit).
  int Terminate(int timeout_ms) {
    if (process_ == nullptr) return -1;
    absl::StatusOr<int> status =
        process_->Stop(SIGTERM, std::chrono::milliseconds(timeout_ms));
    if (!status.ok() || !WIFEXITED(*status)) return -1;
    return WEXITSTATUS(*status);
  }

 private:
  std::unique_ptr<test_support::ChildProcess> process_;
};

// The two addresses the banner names ("listening on A, metrics at
// http://B/metrics"), once it is written.
struct Addresses {
  std::string udp;
  std::string metrics;
};

// The text between `open` and the next `close` in `text`, if both occur.
std::optional<std::string> Between(const std::string& text,
                                   const std::string& open,
                                   const std::string& close) {
  const std::size_t start = text.find(open);
  if (start == std::string::npos) return std::nullopt;
  const std::size_t from = start + open.size();
  const std::size_t end = text.find(close, from);
  if (end == std::string::npos) return std::nullopt;
  return text.substr(from, end - from);
}

// Parsed by hand: std::regex trips g++ 12's -Wmaybe-uninitialized under
// the sanitizers (-Werror), and the banner's form is fixed.
std::optional<Addresses> WaitForBanner(const std::string& log) {
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    const std::string text = ReadText(log);
    const std::optional<std::string> udp =
        Between(text, "listening on ", ", metrics at http://");
    const std::optional<std::string> metrics =
        Between(text, ", metrics at http://", "/metrics");
    if (udp.has_value() && metrics.has_value()) {
      return Addresses{*udp, *metrics};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// Sample lines "name{labels} value" by "name{labels}".
std::map<std::string, std::string> Samples(const std::string& scrape) {
  std::map<std::string, std::string> samples;
  std::istringstream in(scrape);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = line.substr(space + 1);
  }
  return samples;
}

// Scrapes with curl into `file` until `done` holds for the samples (the
// service publishes when it goes idle); the last scrape.
std::map<std::string, std::string> ScrapeUntil(
    const std::string& dir, const std::string& metrics, const std::string& file,
    const std::function<bool(std::map<std::string, std::string>&)>& done) {
  std::map<std::string, std::string> samples;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    const test_support::ShellOutcome curl = RunShell(
        dir, absl::StrCat("curl --silent --show-error --fail --max-time 5 -o ",
                          file, " http://", metrics, "/metrics"));
    EXPECT_EQ(curl.status, 0) << curl.err;
    samples = Samples(ReadText(absl::StrCat(dir, "/", file)));
    if (done(samples)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return samples;
}

class MetricsEndpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Installed("curl")) {
      GTEST_SKIP() << "curl is not installed (scripts/setup.sh installs it): "
                      "the metrics endpoint is not tested";
    }
  }
};

codec::NewLimit RestingBuy(std::uint64_t i) {
  return codec::NewLimit{.account_id = 1,
                         .client_order_id = i,
                         .instrument_id = 3,
                         .side = codec::Side::kBuy,
                         .time_in_force = codec::TimeInForce::kGoodTillCancel,
                         .price = 1000 + static_cast<std::int64_t>(i),
                         .quantity = 10};
}

// Sends N resting orders and M datagrams with a bad magic, scrapes, and
// checks every number against them; validates the scrape with promtool.
TEST_F(MetricsEndpoint, ScrapeCountsTheTrafficSentAndPassesPromtool) {
  ScratchDir dir;
  const std::string log = dir.path() + "/serve.log";
  Server server({"--journal", dir.Sub("journal"), "--listen", "127.0.0.1:0",
                 "--metrics-listen", "127.0.0.1:0"},
                log);
  const std::optional<Addresses> at = WaitForBanner(log);
  ASSERT_TRUE(at.has_value()) << ReadText(log);
  absl::StatusOr<net::Endpoint> udp = net::Endpoint::Parse(at->udp);
  ASSERT_TRUE(udp.ok()) << udp.status();

  TestClient client(*udp);
  std::vector<Bytes> datagram;
  for (std::uint64_t seq = 1; seq <= kOrders; ++seq) {
    datagram.push_back(Frame(seq, RestingBuy(seq)));
    if (datagram.size() == kOrdersPerDatagram) {
      client.Send(kMetricsSession, datagram);
      datagram.clear();
    }
  }
  const std::vector<Bytes> reports = client.Frames(kMetricsSession, kOrders);
  ASSERT_EQ(reports.size(), kOrders);
  Bytes bad = test_support::Datagram(kMetricsSession,
                                     {Frame(kOrders + 1, RestingBuy(99))});
  bad[0] = std::byte{'X'};
  for (std::uint64_t i = 0; i < kBadDatagrams; ++i) client.Send(bad);

  constexpr std::uint64_t kDatagrams = kOrders / kOrdersPerDatagram;
  auto samples =
      ScrapeUntil(dir.path(), at->metrics, "scrape.txt", [&](auto& s) {
        return s["orderwire_datagrams_received_total"] ==
                   std::to_string(kDatagrams + kBadDatagrams) &&
               s["orderwire_command_durable_latency_seconds_count"] ==
                   std::to_string(kOrders);
      });
  const std::map<std::string, std::string> expected = {
      {"orderwire_datagrams_received_total",
       std::to_string(kDatagrams + kBadDatagrams)},
      {"orderwire_datagrams_malformed_total{reason=\"BadMagic\"}",
       std::to_string(kBadDatagrams)},
      {"orderwire_datagrams_malformed_total{reason=\"Truncated\"}", "0"},
      {"orderwire_datagrams_refused_total{cause=\"BadMac\"}", "0"},
      {"orderwire_commands_journaled_total{kind=\"NewLimit\"}",
       std::to_string(kOrders)},
      {"orderwire_commands_journaled_total{kind=\"CancelByOrder\"}", "0"},
      {"orderwire_commands_applied_total", std::to_string(kOrders)},
      {"orderwire_reports_sent_total{kind=\"Accepted\"}",
       std::to_string(kOrders)},
      {"orderwire_reports_sent_total{kind=\"Filled\"}", "0"},
      {"orderwire_rejects_total{reason=\"UnknownOrder\"}", "0"},
      {"orderwire_journal_durable_index", std::to_string(kOrders)},
      {"orderwire_journal_last_index", std::to_string(kOrders)},
      {"orderwire_journal_appended_records_total", std::to_string(kOrders)},
      {"orderwire_sessions", "1"},
      {"orderwire_sessions_listed", "0"},
      {"orderwire_journal_full", "0"},
      {"orderwire_command_durable_latency_seconds_count",
       std::to_string(kOrders)},
      {"orderwire_command_durable_latency_seconds_bucket{le=\"+Inf\"}",
       std::to_string(kOrders)},
  };
  for (const auto& [name, value] : expected) {
    EXPECT_EQ(samples[name], value) << name;
  }
  // Every report sent: one datagram per session flush at least.
  EXPECT_GE(std::stoull(samples["orderwire_datagrams_sent_total"]), 1u);
  EXPECT_GE(std::stoull(samples["orderwire_journal_group_commits_total"]), 1u);

  if (!Installed("promtool")) {
    std::printf(
        "[  SKIPPED ] promtool check metrics: promtool is not installed "
        "(Debian package prometheus; scripts/setup.sh installs it)\n");
  } else {
    const test_support::ShellOutcome check =
        RunShell(dir.path(), "promtool check metrics < scrape.txt");
    EXPECT_EQ(check.status, 0) << check.out << check.err;
  }

  // SIGTERM stops the service and the HTTP thread: exit 0, port closed.
  EXPECT_EQ(server.Terminate(10'000), 0) << ReadText(log);
  const test_support::ShellOutcome after =
      RunShell(dir.path(), "curl --silent --max-time 5 -o /dev/null http://" +
                               at->metrics + "/metrics");
  EXPECT_EQ(after.status, 7) << "curl exit 7: could not connect";
}

// Descriptors the process `pid` holds open.
std::size_t OpenDescriptors(pid_t pid) {
  std::size_t n = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/fd", error);
       !error && it != std::filesystem::directory_iterator(); ++it) {
    ++n;
  }
  return n;
}

// A local program opens hundreds of connections to the metrics port and
// sends nothing: the service takes at most a few of their descriptors (the
// kernel holds a connection that has sent nothing out of the accept queue;
// one that sends part of a request is held, at most
// MetricsServer::kMaxConnections of them, the oldest evicted), so the
// descriptors the journal and snapshots need stay free, and a scrape with
// curl is answered within 1 s while the flood is open.
TEST_F(MetricsEndpoint, AScrapeIsAnsweredBesideAFloodOfIdleConnections) {
  ScratchDir dir;
  const std::string log = dir.path() + "/serve.log";
  Server server({"--journal", dir.Sub("journal"), "--listen", "127.0.0.1:0",
                 "--metrics-listen", "127.0.0.1:0"},
                log);
  const std::optional<Addresses> at = WaitForBanner(log);
  ASSERT_TRUE(at.has_value()) << ReadText(log);
  absl::StatusOr<net::Endpoint> metrics = net::Endpoint::Parse(at->metrics);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  // Scraped once, so every thread and descriptor of a served request exists.
  ScrapeUntil(dir.path(), at->metrics, "before.txt",
              [](auto& s) { return !s.empty(); });
  const std::size_t before = OpenDescriptors(server.pid());
  ASSERT_GT(before, 0u);

  constexpr int kFlood = 300;
  std::vector<int> flood;
  for (int i = 0; i < kFlood; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    (void)::connect(fd, metrics->addr(), metrics->length);  // EINPROGRESS
    flood.push_back(fd);
  }
  // Long enough for an unbounded accept loop to take them all (it takes
  // thousands a second), short of the 1 s request deadline that frees them.
  std::size_t most = before;
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    most = std::max(most, OpenDescriptors(server.pid()));
  }
  EXPECT_LE(most, before + MetricsServer::kMaxConnections + 1)
      << "descriptors before the flood: " << before;

  const test_support::ShellOutcome scrape =
      RunShell(dir.path(), absl::StrCat("curl --silent --show-error --fail "
                                        "--max-time 1 -o during.txt http://",
                                        at->metrics, "/metrics"));
  EXPECT_EQ(scrape.status, 0) << "curl: " << scrape.err;
  EXPECT_EQ(Samples(ReadText(dir.path() +
                             "/during.txt"))["orderwire_journal_durable_index"],
            "0");
  for (const int fd : flood) ::close(fd);
  EXPECT_EQ(server.Terminate(20'000), 0) << ReadText(log);
}

TEST_F(MetricsEndpoint, ABadAddressIsAUsageErrorNamingTheFlag) {
  ScratchDir dir;
  for (const char* bad : {"nonsense", "127.0.0.1:99999", "127.0.0.1:"}) {
    const test_support::ShellOutcome run =
        RunShell(dir.path(), "timeout 20 " + std::string(ORDERWIRE_BINARY) +
                                 " serve --journal j --listen 127.0.0.1:0 "
                                 "--metrics-listen " +
                                 bad);
    EXPECT_EQ(run.status, 2) << bad << ": " << run.err;
    EXPECT_NE(run.err.find("--metrics-listen"), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/j")) << bad;
  }
}

// A port that cannot be bound stops serve before it touches the journal or
// takes a datagram: exit 1, the flag, the address and the reason named.
TEST_F(MetricsEndpoint, APortInUseStopsTheStartBeforeTheJournalIsTouched) {
  ScratchDir dir;
  // The holder takes SO_REUSEPORT, as a second `serve` with httplib's
  // default socket options would: the port must still be refused.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  const int yes = 1;
  ASSERT_EQ(::setsockopt(holder, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes)),
            0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t length = sizeof(addr);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &length),
            0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  const test_support::ShellOutcome run =
      RunShell(dir.path(), "timeout 20 " + std::string(ORDERWIRE_BINARY) +
                               " serve --journal j --listen 127.0.0.1:0 "
                               "--metrics-listen " +
                               taken);
  ::close(holder);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("--metrics-listen"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(taken), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Address already in use"), std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/j"));
}

}  // namespace
}  // namespace orderwire::service
