// MetricsServer (service/metrics/metrics_server.h) in-process: what a scraper
// sees before the service has recovered its journal (503 with the reason),
// after (200, the Prometheus text of the mirror), and for anything but
// GET /metrics; scrapes beside a flood of connections that send nothing (or
// half a request) and come back as soon as they are closed; the request
// deadline and the eviction of the oldest connection.
#include "service/metrics/metrics_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/metrics/metrics.h"
#include "service/service.h"
#include "tests/support/http.h"

namespace orderwire::service {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Clock = std::chrono::steady_clock;

std::string Get(const MetricsServer& server, const std::string& path,
                const std::string& method = "GET") {
  auto answer =
      test_support::HttpRequest(server.local_endpoint().port(), method, path);
  EXPECT_TRUE(answer.ok()) << answer.status();
  return answer.ok() ? *answer : "";
}

TEST(MetricsServer, AnswersUnavailableUntilTheServiceServesThenTheCounters) {
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();

  // Bound, journal still recovering: 503 saying why, and no samples.
  const std::string starting = Get(**server, "/metrics");
  EXPECT_THAT(starting, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(starting, HasSubstr("is starting (recovering its journal)"));
  EXPECT_THAT(starting, ::testing::Not(HasSubstr("orderwire_")));

  StatsMirror mirror;
  ServiceStats stats;
  stats.datagrams_in = 1234;
  mirror.Publish(stats);
  (*server)->Serve(mirror);
  const std::string serving = Get(**server, "/metrics");
  EXPECT_THAT(serving, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(serving, HasSubstr("orderwire_datagrams_received_total 1234"));
}

TEST(MetricsServer, AnswersNotFoundForOtherPathsAndNoOtherMethod) {
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();
  StatsMirror mirror;
  (*server)->Serve(mirror);
  for (const char* path : {"/", "/metric", "/metrics/x", "/healthz"}) {
    EXPECT_THAT(Get(**server, path), StartsWith("HTTP/1.1 404")) << path;
  }
  // Refused before a body is read (none comes: this HTTP/1.0 request has no
  // Content-Length, so a body would run to the end of the stream).
  const std::string post = Get(**server, "/metrics", "POST");
  EXPECT_THAT(post, StartsWith("HTTP/1.1 404")) << post;
  EXPECT_THAT(post, ::testing::Not(HasSubstr("orderwire_")));
}

// Descriptors this process holds open.
std::size_t OpenDescriptors() {
  std::size_t n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++n;
  }
  return n;
}

// Raises this process's RLIMIT_NOFILE to at least `needed` for its lifetime
// (as far as the hard limit allows: ok() says whether it did).
class DescriptorLimit {
 public:
  explicit DescriptorLimit(rlim_t needed) {
    if (::getrlimit(RLIMIT_NOFILE, &saved_) != 0) return;
    rlimit raised = saved_;
    if (raised.rlim_cur >= needed) {
      ok_ = true;
      return;
    }
    if (raised.rlim_max != RLIM_INFINITY && raised.rlim_max < needed) return;
    raised.rlim_cur = needed;
    ok_ = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
    restore_ = ok_;
  }
  ~DescriptorLimit() {
    if (restore_) (void)::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  DescriptorLimit(const DescriptorLimit&) = delete;
  DescriptorLimit& operator=(const DescriptorLimit&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] rlim_t hard() const { return saved_.rlim_max; }

 private:
  rlimit saved_{};
  bool ok_ = false;
  bool restore_ = false;
};

// A connection to 127.0.0.1:`port` that has begun (non-blocking connect).
int StartConnection(std::uint16_t port) {
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                  sizeof(address));  // EINPROGRESS
  return fd;
}

// What each connection of a flood sends: nothing, or the first bytes of a
// request line and then nothing.
enum class FloodSends { kNothing, kHalfARequest };

void PrintTo(FloodSends sends, std::ostream* out) {
  *out << (sends == FloodSends::kNothing ? "nothing" : "half a request");
}

// `count` connections to a port that never send a whole request, kept open:
// on a thread of its own, each one the server closes is replaced at once by
// a new one, as a hostile local program would keep its flood up. The flood
// holds `count` descriptors and one epoll descriptor (one fewer for the
// instant between a close and its replacement).
class Flood {
 public:
  Flood(std::uint16_t port, int count, FloodSends sends)
      : port_(port), sends_(sends), epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {
    for (int i = 0; i < count; ++i) Open();
    thread_ = std::thread([this] { Run(); });
  }
  ~Flood() {
    stop_.store(true);
    thread_.join();
    for (int fd = 0; fd < static_cast<int>(open_.size()); ++fd) {
      if (open_[static_cast<std::size_t>(fd)]) ::close(fd);
    }
    ::close(epoll_fd_);
  }
  Flood(const Flood&) = delete;
  Flood& operator=(const Flood&) = delete;

  // Connections the server closed and the flood opened again.
  [[nodiscard]] std::uint64_t replaced() const { return replaced_.load(); }
  [[nodiscard]] bool failed() const { return failed_.load(); }

 private:
  void Open() {
    const int fd = StartConnection(port_);
    if (fd < 0) {
      failed_.store(true);
      return;
    }
    epoll_event event{};
    event.events = sends_ == FloodSends::kNothing ? EPOLLIN | EPOLLRDHUP
                                                  : EPOLLOUT | EPOLLRDHUP;
    event.data.fd = fd;
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    if (open_.size() <= static_cast<std::size_t>(fd)) {
      open_.resize(static_cast<std::size_t>(fd) + 1);
    }
    open_[static_cast<std::size_t>(fd)] = true;
  }

  void Run() {
    std::array<epoll_event, 256> events;
    while (!stop_.load()) {
      const int n = ::epoll_wait(epoll_fd_, events.data(),
                                 static_cast<int>(events.size()), 10);
      for (int i = 0; i < n; ++i) {
        const epoll_event& event = events[static_cast<std::size_t>(i)];
        const int fd = event.data.fd;
        if ((event.events & EPOLLOUT) != 0 &&
            (event.events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) == 0) {
          // Connected: half a request line, then silence.
          (void)::send(fd, "GET /met", 8, MSG_NOSIGNAL);
          epoll_event quiet{};
          quiet.events = EPOLLIN | EPOLLRDHUP;
          quiet.data.fd = fd;
          (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &quiet);
          continue;
        }
        // Closed (or refused) by the server: come back at once.
        open_[static_cast<std::size_t>(fd)] = false;
        ::close(fd);
        Open();
        replaced_.fetch_add(1);
      }
    }
  }

  const std::uint16_t port_;
  const FloodSends sends_;
  const int epoll_fd_;
  std::vector<bool> open_;  // by descriptor
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::atomic<std::uint64_t> replaced_{0};
  std::thread thread_;
};

constexpr int kFlood = 2000;
constexpr int kScrapes = 20;
constexpr auto kScrapeBound = std::chrono::seconds(1);

class MetricsServerFlood : public ::testing::TestWithParam<FloodSends> {};

// 2,000 connections that never send a whole request, replaced as soon as the
// server closes one: every scrape is answered, in full, within 1 s, and the
// server holds at most kMaxConnections of them (one more for an instant).
TEST_P(MetricsServerFlood, AnswersEachScrapeWithinASecond) {
  // The flood's descriptors and the server's, with room to spare.
  DescriptorLimit limit(kFlood + MetricsServer::kMaxConnections + 256);
  if (!limit.ok()) {
    GTEST_SKIP() << "RLIMIT_NOFILE cannot be raised to "
                 << kFlood + MetricsServer::kMaxConnections + 256
                 << " (hard limit " << limit.hard()
                 << "): the flood does not fit";
  }
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();
  StatsMirror mirror;
  ServiceStats stats;
  stats.datagrams_in = 1234;
  mirror.Publish(stats);
  (*server)->Serve(mirror);
  const std::uint16_t port = (*server)->local_endpoint().port();
  const std::size_t before = OpenDescriptors();

  Flood flood(port, kFlood, GetParam());
  ASSERT_FALSE(flood.failed());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // connected
  // The flood's and its epoll's, and the server's (one more for the instant
  // between an accept and the eviction it makes).
  const std::size_t bound =
      before + kFlood + 1 + MetricsServer::kMaxConnections + 1;
  std::size_t most = OpenDescriptors();
  Clock::duration slowest{};
  for (int i = 0; i < kScrapes; ++i) {
    const Clock::time_point start = Clock::now();
    auto answer = test_support::HttpRequest(
        port, "GET", "/metrics", std::chrono::milliseconds(kScrapeBound));
    const Clock::duration took = Clock::now() - start;
    slowest = std::max(slowest, took);
    ASSERT_TRUE(answer.ok())
        << "scrape " << i << ": " << answer.status() << " (" << flood.replaced()
        << " flood connections replaced so far)";
    EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200")) << "scrape " << i;
    EXPECT_THAT(*answer, HasSubstr("orderwire_datagrams_received_total 1234"))
        << "scrape " << i;
    most = std::max(most, OpenDescriptors());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LE(most, bound) << "descriptors before the flood: " << before;
  std::printf(
      "[          ] slowest scrape %.1f ms; %llu flood connections "
      "replaced; at most %zu descriptors beyond the flood's\n",
      std::chrono::duration<double, std::milli>(slowest).count(),
      static_cast<unsigned long long>(flood.replaced()),
      most - before - kFlood);
}

INSTANTIATE_TEST_SUITE_P(Floods, MetricsServerFlood,
                         ::testing::Values(FloodSends::kNothing,
                                           FloodSends::kHalfARequest),
                         [](const ::testing::TestParamInfo<FloodSends>& flood) {
                           return flood.param == FloodSends::kNothing
                                      ? "SendingNothing"
                                      : "SendingHalfARequest";
                         });

// Whether the server closed `fd` (end of stream or a reset), waiting at most
// `wait`.
bool ClosedByServer(int fd, std::chrono::milliseconds wait) {
  pollfd entry{.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
  if (::poll(&entry, 1, static_cast<int>(wait.count())) <= 0) return false;
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// A connection to `port` that has sent the first bytes of a request line
// and nothing more (-1 if it could not be made).
int HalfARequest(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                sizeof(address)) != 0 ||
      ::send(fd, "GET /met", 8, MSG_NOSIGNAL) != 8) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A connection that has not sent a whole request 1 s after its accept is
// closed, not held longer.
TEST(MetricsServer, ClosesAConnectionWithoutAWholeRequestAfterASecond) {
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();
  const Clock::time_point start = Clock::now();
  const int fd = HalfARequest((*server)->local_endpoint().port());
  ASSERT_GE(fd, 0) << std::strerror(errno);
  const bool closed = ClosedByServer(fd, std::chrono::milliseconds(3000));
  const Clock::duration took = Clock::now() - start;
  ::close(fd);
  EXPECT_TRUE(closed) << "still open after 3 s";
  EXPECT_GE(took, std::chrono::milliseconds(900))
      << "closed before the deadline";
  EXPECT_LE(took, std::chrono::milliseconds(2000));
}

// With kMaxConnections held, none with a whole request, one more connection
// evicts the oldest (closed at once), not itself: the newest is answered.
TEST(MetricsServer, EvictsTheOldestWaitingConnectionWhenFull) {
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();
  StatsMirror mirror;
  (*server)->Serve(mirror);
  const std::uint16_t port = (*server)->local_endpoint().port();
  std::vector<int> held;
  for (int i = 0; i < MetricsServer::kMaxConnections; ++i) {
    held.push_back(HalfARequest(port));
    ASSERT_GE(held.back(), 0) << std::strerror(errno);
  }
  // Each connect returned once its handshake was done, and its bytes went
  // out before the next: the first is the oldest the server took.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ClosedByServer(held.front(), std::chrono::milliseconds(0)))
      << "the oldest was closed while there was room";
  auto answer = test_support::HttpRequest(port, "GET", "/metrics",
                                          std::chrono::milliseconds(500));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200"));
  EXPECT_TRUE(ClosedByServer(held.front(), std::chrono::milliseconds(200)))
      << "the oldest waiting connection was not evicted";
  for (std::size_t i = 1; i < held.size(); ++i) {
    EXPECT_FALSE(ClosedByServer(held[i], std::chrono::milliseconds(0)))
        << "connection " << i << " was evicted too";
  }
  for (const int fd : held) ::close(fd);
}

}  // namespace
}  // namespace orderwire::service
