// The metrics HTTP endpoint; see metrics_server.h.
//
// The listening socket takes TCP_DEFER_ACCEPT, so accept returns only
// connections that have sent something. The front thread owns the listening
// socket and the connections that have not sent a whole request header yet
// ("waiting"), in a fixed table of slots (an epoll event names its slot),
// linked from the oldest accept to the newest. It looks at a connection's
// bytes with MSG_PEEK, so nothing is consumed: once "\r\n\r\n" is there, the
// connection leaves epoll and the table and goes to the worker, which hands
// cpp-httplib a Stream over it (httplib::Server::process_request, the
// library's extension point for servers that own their sockets) and closes
// it after the one answer.
//
// Why not httplib's own accept loop: it takes one connection at a time, in
// the order they came, and a silent one holds the worker for seconds; the
// measurements that chose this design are in docs/SERVICE.md "Metrics".
#include "service/metrics/metrics_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/background_thread.h"
#include "httplib.h"

namespace orderwire::service {
namespace {

using Clock = std::chrono::steady_clock;

// The content type of the text exposition format 0.0.4.
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// How long the kernel keeps a connection that has sent nothing out of the
// accept queue (TCP_DEFER_ACCEPT): such a connection reaches the front only
// with its first bytes, and one silent this long is dropped by the kernel
// (after its SYN-ACK retries: about 31 s with Linux's default 5).
constexpr int kDeferAcceptSeconds = 30;
// From a connection's accept to its whole request header.
constexpr auto kRequestDeadline = std::chrono::seconds(1);
// Once with the worker: for the rest of the request (a body), and for the
// client to take the answer.
constexpr auto kReadTimeout = std::chrono::seconds(1);
constexpr auto kWriteTimeout = std::chrono::seconds(5);
// A request header is looked for in this many first bytes; a connection
// whose first bytes hold none is closed (a scrape's header is a few hundred
// bytes; httplib refuses a longer header line).
constexpr std::size_t kMaxRequestHeader = 8192;
// Accepts per turn of the front's loop at most, so that a connection's
// request is looked at between accepts before kMaxConnections newer ones
// could push it out.
constexpr int kAcceptsPerTurn = MetricsServer::kMaxConnections / 4;
// After EMFILE, ENFILE, ENOBUFS or ENOMEM from accept, the front tries again
// this much later (the connection waits in the backlog meanwhile).
constexpr auto kAcceptRetry = std::chrono::milliseconds(10);

// Milliseconds until `deadline` for poll/epoll_wait, rounded up (0 if past).
int MillisUntil(Clock::time_point deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

// Whether `fd` has `events` (or an error) before `deadline`.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd entry{.fd = fd, .events = events, .revents = 0};
    const int ready = ::poll(&entry, 1, MillisUntil(deadline));
    if (ready > 0) return true;
    if (ready == 0 || errno != EINTR) return false;
  }
}

// The numeric address and port of `fd`'s peer or its own end ("", 0 when
// not known).
void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  sockaddr* const raw = reinterpret_cast<sockaddr*>(&address);
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> service{};
  ip.clear();
  port = 0;
  if ((peer ? ::getpeername(fd, raw, &length)
            : ::getsockname(fd, raw, &length)) != 0 ||
      ::getnameinfo(raw, length, host.data(), host.size(), service.data(),
                    service.size(), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  ip = host.data();
  port = std::atoi(service.data());
}

// One accepted, non-blocking connection as httplib reads and writes it:
// reads wait until kReadTimeout after the hand-over, writes until
// kWriteTimeout after it; a write never raises SIGPIPE.
class ConnectionStream final : public httplib::Stream {
 public:
  explicit ConnectionStream(int fd)
      : fd_(fd),
        read_by_(Clock::now() + kReadTimeout),
        write_by_(Clock::now() + kWriteTimeout) {}

  [[nodiscard]] bool is_readable() const override {
    return next_ < end_ || WaitFor(fd_, POLLIN, read_by_);
  }
  [[nodiscard]] bool is_writable() const override {
    return WaitFor(fd_, POLLOUT, write_by_);
  }

  ssize_t read(char* ptr, size_t size) override {
    while (next_ == end_) {
      const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (n >= 0) {
        if (n == 0) return 0;
        next_ = 0;
        end_ = static_cast<std::size_t>(n);
      } else if (errno != EINTR &&
                 (errno != EAGAIN || !WaitFor(fd_, POLLIN, read_by_))) {
        return -1;
      }
    }
    const std::size_t n = std::min(size, end_ - next_);
    std::memcpy(ptr, buffer_.data() + next_, n);
    next_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    while (true) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno != EINTR &&
          (errno != EAGAIN || !WaitFor(fd_, POLLOUT, write_by_))) {
        return -1;
      }
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    AddressOf(fd_, /*peer=*/true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    AddressOf(fd_, /*peer=*/false, ip, port);
  }
  [[nodiscard]] socket_t socket() const override { return fd_; }

 private:
  const int fd_;
  const Clock::time_point read_by_;
  const Clock::time_point write_by_;
  std::array<char, 4096> buffer_;
  std::size_t next_ = 0;
  std::size_t end_ = 0;
};

// httplib's request handling (parse, route, answer) over a Stream of ours.
class Router final : public httplib::Server {
 public:
  // Reads one request from `stream` and writes its answer, with
  // "Connection: close".
  void Answer(httplib::Stream& stream) {
    bool closed = false;
    (void)process_request(stream, /*close_connection=*/true, closed, nullptr);
  }
};

// The connections waiting for their request header: a fixed table of
// kMaxConnections slots, in a list from the oldest accept to the newest (so
// the oldest also has the earliest deadline). Slots are indexes; kNone is
// no slot. Used by the front thread only.
class WaitingTable {
 public:
  static constexpr int kNone = -1;

  WaitingTable() {
    for (int i = 0; i < kCapacity; ++i) slot(i).newer = i + 1;
    slot(kCapacity - 1).newer = kNone;
  }

  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] int oldest() const { return oldest_; }
  [[nodiscard]] int fd(int i) const { return slot(i).fd; }
  [[nodiscard]] Clock::time_point deadline(int i) const {
    return slot(i).deadline;
  }

  // Takes a free slot for `fd`, the newest (kNone when all are taken).
  int Add(int fd, Clock::time_point deadline) {
    const int i = free_;
    if (i == kNone) return kNone;
    Slot& s = slot(i);
    free_ = s.newer;
    s = Slot{.fd = fd, .deadline = deadline, .older = newest_, .newer = kNone};
    (newest_ == kNone ? oldest_ : slot(newest_).newer) = i;
    newest_ = i;
    ++size_;
    return i;
  }

  // Frees slot `i`; its descriptor.
  int Remove(int i) {
    Slot& s = slot(i);
    (s.older == kNone ? oldest_ : slot(s.older).newer) = s.newer;
    (s.newer == kNone ? newest_ : slot(s.newer).older) = s.older;
    const int fd = s.fd;
    s = Slot{.newer = free_};
    free_ = i;
    --size_;
    return fd;
  }

 private:
  static constexpr int kCapacity = MetricsServer::kMaxConnections;
  struct Slot {
    int fd = -1;
    Clock::time_point deadline{};
    int older = kNone;
    int newer = kNone;  // in a free slot: the next free one
  };
  Slot& slot(int i) { return slots_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] const Slot& slot(int i) const {
    return slots_[static_cast<std::size_t>(i)];
  }

  std::array<Slot, kCapacity> slots_{};
  int oldest_ = kNone;
  int newest_ = kNone;
  int free_ = 0;
  int size_ = 0;
};

// epoll tags beside the slot indexes.
constexpr std::uint64_t kListenerTag = ~std::uint64_t{0};
constexpr std::uint64_t kWakeTag = ~std::uint64_t{0} - 1;

// Whether `bytes` (a connection's first bytes) hold a whole request header.
bool HasWholeHeader(std::string_view bytes) {
  return bytes.find("\r\n\r\n") != std::string_view::npos ||
         bytes.find("\n\n") != std::string_view::npos;
}

}  // namespace

class MetricsServer::Impl {
 public:
  Impl() {
    router_.Get("/metrics",
                [this](const auto&, auto& response) { Scrape(response); });
    // Only GET (and HEAD) has a handler: any other method is refused
    // before httplib would read a body, which could hold the worker until
    // the read timeout.
    router_.set_pre_routing_handler(
        [](const httplib::Request& request, httplib::Response& response) {
          if (request.method == "GET" || request.method == "HEAD") {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          response.status = 404;
          return httplib::Server::HandlerResponse::Handled;
        });
  }
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Binds and listens on `endpoint`, then starts the threads.
  absl::Status Start(const net::Endpoint& endpoint);

  std::atomic<const StatsMirror*> mirror{nullptr};
  net::Endpoint local;

 private:
  // What Examine found.
  enum class Seen { kWaiting, kGone };

  void Scrape(httplib::Response& response) const;

  // The front: its loop, and what a turn of it does.
  void Front();
  [[nodiscard]] int FrontTimeoutMillis() const;
  void AcceptSome();
  // Whether a connection accepted now could be held: there is room, or a
  // waiting connection to evict.
  [[nodiscard]] bool CanTakeOne() const;
  [[nodiscard]] bool MakeRoom();
  void Hold(int fd);
  Seen Examine(int slot);
  void CloseExpired();
  void Close(int slot) { ::close(waiting_.Remove(slot)); }
  [[nodiscard]] int Answering() const;
  void Wake() const;

  void Worker();

  Router router_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop, or a connection answered
  std::atomic<bool> stopping_{false};

  // The front thread's own.
  WaitingTable waiting_;
  bool listener_ready_ = false;  // accept has not said EAGAIN since an event
  Clock::time_point accept_retry_at_{};
  std::array<char, kMaxRequestHeader> peek_{};

  // Between the front and the worker.
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<int> ready_;  // whole requests, first come first answered
  int answering_ = 0;      // ready_ and the one being answered

  std::thread front_;
  std::thread worker_;
};

void MetricsServer::Impl::Scrape(httplib::Response& response) const {
  const StatsMirror* stats_mirror = mirror.load(std::memory_order_acquire);
  if (stats_mirror == nullptr) {
    response.status = 503;
    response.set_content(
        "orderwire serve is starting (recovering its journal): no metrics "
        "yet\n",
        "text/plain; charset=utf-8");
    return;
  }
  ServiceStats stats;
  stats_mirror->Read(&stats);
  std::string body;
  body.reserve(32 << 10);
  AppendServiceMetrics(stats, &body);
  response.set_content(body, kContentType);
}

absl::Status MetricsServer::Impl::Start(const net::Endpoint& endpoint) {
  auto failed = [&endpoint](const char* step) {
    const int error = errno;
    return absl::UnavailableError(
        absl::StrFormat("cannot listen for metrics on %s: %s%s",
                        endpoint.ToString(), step, std::strerror(error)));
  };
  listen_fd_ = ::socket(endpoint.family(),
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return failed("socket: ");
  // SO_REUSEADDR (a restart can bind while old connections linger in
  // TIME_WAIT), not SO_REUSEPORT, which would let a second server bind the
  // same port and take half the scrapes.
  const int yes = 1;
  (void)::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  if (::bind(listen_fd_, endpoint.addr(), endpoint.length) != 0) {
    return failed("");
  }
  if (::setsockopt(listen_fd_, IPPROTO_TCP, TCP_DEFER_ACCEPT,
                   &kDeferAcceptSeconds, sizeof(kDeferAcceptSeconds)) != 0) {
    return failed("TCP_DEFER_ACCEPT: ");
  }
  // The kernel's limit (net.core.somaxconn): the front drains the backlog as
  // fast as connections come, so a short one would only drop SYNs (a
  // scrape's among them: 1 s until the client tries again).
  if (::listen(listen_fd_, SOMAXCONN) != 0) return failed("listen: ");
  local.length = sizeof(local.storage);
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&local.storage),
                    &local.length) != 0) {
    return failed("getsockname: ");
  }
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return failed("epoll_create1: ");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return failed("eventfd: ");
  epoll_event listener{.events = EPOLLIN | EPOLLET,
                       .data = {.u64 = kListenerTag}};
  epoll_event wake{.events = EPOLLIN, .data = {.u64 = kWakeTag}};
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listener) != 0 ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
    return failed("epoll_ctl: ");
  }
  // SIGINT and SIGTERM go to the service's thread, whose blocking waits
  // they interrupt (serve installs its handlers without SA_RESTART).
  front_ = base::StartWithStopSignalsBlocked([this] { Front(); });
  worker_ = base::StartWithStopSignalsBlocked([this] { Worker(); });
  return absl::OkStatus();
}

MetricsServer::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  work_.notify_all();
  if (wake_fd_ >= 0) Wake();
  if (front_.joinable()) front_.join();
  if (worker_.joinable()) worker_.join();
  while (waiting_.oldest() != WaitingTable::kNone) Close(waiting_.oldest());
  for (const int fd : ready_) ::close(fd);
  for (const int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void MetricsServer::Impl::Wake() const {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

int MetricsServer::Impl::Answering() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return answering_;
}

void MetricsServer::Impl::Front() {
  std::array<epoll_event, 64> events;
  while (true) {
    const int n =
        ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                     FrontTimeoutMillis());
    if (n < 0 && errno != EINTR) return;  // only with a bad descriptor
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[static_cast<std::size_t>(i)].data.u64;
      if (tag == kWakeTag) {
        std::uint64_t count = 0;
        (void)!::read(wake_fd_, &count, sizeof(count));
        if (stopping_.load()) return;
      } else if (tag == kListenerTag) {
        listener_ready_ = true;
      } else if (waiting_.fd(static_cast<int>(tag)) >= 0) {
        (void)Examine(static_cast<int>(tag));
      }
    }
    CloseExpired();
    if (listener_ready_ && Clock::now() >= accept_retry_at_) AcceptSome();
  }
}

// 0 while connections are left to accept and there is room for one; else
// until the oldest waiting connection's deadline or the next accept retry;
// else until an event (-1). With no room (all kMaxConnections with the
// worker), the worker's Wake() ends the wait.
int MetricsServer::Impl::FrontTimeoutMillis() const {
  Clock::time_point until = Clock::time_point::max();
  if (listener_ready_) {
    if (Clock::now() < accept_retry_at_) {
      until = accept_retry_at_;
    } else if (CanTakeOne()) {
      return 0;
    }
  }
  if (waiting_.oldest() != WaitingTable::kNone) {
    until = std::min(until, waiting_.deadline(waiting_.oldest()));
  }
  return until == Clock::time_point::max() ? -1 : MillisUntil(until);
}

// Accepts first and evicts after, so that no connection is evicted for one
// that is not there: for that instant the server holds kMaxConnections + 1.
void MetricsServer::Impl::AcceptSome() {
  for (int i = 0; i < kAcceptsPerTurn && CanTakeOne(); ++i) {
    const int fd =
        ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (MakeRoom()) {
        Hold(fd);
      } else {
        ::close(fd);  // the last waiting ones turned out whole requests
      }
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      listener_ready_ = false;
      return;
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
               errno == ENOMEM) {
      accept_retry_at_ = Clock::now() + kAcceptRetry;
      return;
    }
    // Anything else (ECONNABORTED, a network error pending on the new
    // connection): that connection is gone, the next one is tried.
  }
}

bool MetricsServer::Impl::CanTakeOne() const {
  return waiting_.size() > 0 || Answering() < kMaxConnections;
}

// Room for one more connection: evicts the oldest waiting one if all
// kMaxConnections are taken (a last look first: one whose header has come
// goes to the worker instead). False if every connection is with the
// worker.
bool MetricsServer::Impl::MakeRoom() {
  while (waiting_.size() + Answering() >= kMaxConnections) {
    const int oldest = waiting_.oldest();
    if (oldest == WaitingTable::kNone) return false;
    if (Examine(oldest) == Seen::kWaiting) Close(oldest);
  }
  return true;
}

void MetricsServer::Impl::Hold(int fd) {
  const int slot = waiting_.Add(fd, Clock::now() + kRequestDeadline);
  // Edge-triggered: Examine only peeks, so the bytes stay readable, and an
  // event comes when more arrive.
  epoll_event event{.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                    .data = {.u64 = static_cast<std::uint64_t>(slot)}};
  if (slot == WaitingTable::kNone ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    if (slot != WaitingTable::kNone) (void)waiting_.Remove(slot);
    ::close(fd);
    return;
  }
  (void)Examine(slot);  // the request may have come with the connection
}

// Looks at the waiting connection in `slot`: a whole header hands it to the
// worker; the end of the stream, an error or a header too long closes it.
MetricsServer::Impl::Seen MetricsServer::Impl::Examine(int slot) {
  const int fd = waiting_.fd(slot);
  const ssize_t n =
      ::recv(fd, peek_.data(), peek_.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    return Seen::kWaiting;
  }
  if (n > 0 && HasWholeHeader(std::string_view(peek_.data(),
                                               static_cast<std::size_t>(n)))) {
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    (void)waiting_.Remove(slot);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(fd);
      ++answering_;
    }
    work_.notify_one();
    return Seen::kGone;
  }
  if (n > 0 && static_cast<std::size_t>(n) < peek_.size()) {
    return Seen::kWaiting;
  }
  Close(slot);
  return Seen::kGone;
}

void MetricsServer::Impl::CloseExpired() {
  const Clock::time_point now = Clock::now();
  while (waiting_.oldest() != WaitingTable::kNone &&
         waiting_.deadline(waiting_.oldest()) <= now) {
    const int oldest = waiting_.oldest();
    if (Examine(oldest) == Seen::kWaiting) Close(oldest);
  }
}

void MetricsServer::Impl::Worker() {
  while (true) {
    int fd = -1;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return stopping_.load() || !ready_.empty(); });
      if (stopping_.load()) return;
      fd = ready_.front();
      ready_.pop_front();
    }
    {
      ConnectionStream stream(fd);
      router_.Answer(stream);
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --answering_;
    }
    Wake();  // the front may be waiting for room
  }
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Bind(
    const net::Endpoint& endpoint) {
  auto impl = std::make_unique<Impl>();
  if (absl::Status started = impl->Start(endpoint); !started.ok()) {
    return started;
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

void MetricsServer::Serve(const StatsMirror& mirror) {
  impl_->mirror.store(&mirror, std::memory_order_release);
}

MetricsServer::~MetricsServer() = default;

const net::Endpoint& MetricsServer::local_endpoint() const {
  return impl_->local;
}

}  // namespace orderwire::service
