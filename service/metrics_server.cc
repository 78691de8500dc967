// The metrics HTTP endpoint; see metrics_server.h.
#include "service/metrics_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/background_thread.h"
#include "httplib.h"

namespace orderwire::service {
namespace {

// The content type of the text exposition format 0.0.4.
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// SO_REUSEADDR only (a restart can bind while old connections linger in
// TIME_WAIT). httplib's default also sets SO_REUSEPORT, which would let a
// second server bind the same port and take half the scrapes.
void ReuseAddressOnly(int fd) {
  const int yes = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Why `endpoint` cannot be bound: httplib says only that it failed, so the
// bind is tried again here for its errno.
std::string WhyNotBound(const net::Endpoint& endpoint) {
  const int fd = ::socket(endpoint.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::StrFormat("socket: %s", std::strerror(errno));
  ReuseAddressOnly(fd);
  std::string why = "it could not be bound (the reason is not known)";
  if (::bind(fd, endpoint.addr(), endpoint.length) != 0) {
    why = std::strerror(errno);
  } else if (::listen(fd, 1) != 0) {
    why = absl::StrFormat("listen: %s", std::strerror(errno));
  }
  ::close(fd);
  return why;
}

// httplib's ThreadPool queues every accepted connection, without limit: a
// local program that opens connections and sends nothing would grow the
// queue, and the descriptors it holds are the service's too (the journal's
// next segment, a snapshot). This queue holds at most `max_queued`
// connections for its one worker; beyond that the accept thread serves the
// connection itself, so it accepts nothing more until that one is done (at
// most the read timeout) and further connections wait in the kernel's
// listen backlog, which costs the process no descriptor. The worker is
// started on the accept thread, so it inherits its blocked stop signals.
class BoundedQueue final : public httplib::TaskQueue {
 public:
  explicit BoundedQueue(std::size_t max_queued)
      : max_queued_(max_queued), worker_([this] { Work(); }) {}
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;
  ~BoundedQueue() override {
    if (worker_.joinable()) shutdown();
  }

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        lock.unlock();
        wake_.notify_one();
        return;
      }
    }
    fn();  // full: served here, the accept loop waits (back-pressure)
  }

  // Serves what is queued (each within the read timeout), then joins.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

 private:
  void Work() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  const std::size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread worker_;  // last: started once the rest exists
};

// Connections queued for the worker at most (see BoundedQueue).
constexpr std::size_t kMaxQueuedConnections = 4;

}  // namespace

class MetricsServer::Impl {
 public:
  httplib::Server server;
  std::thread thread;
  std::atomic<const StatsMirror*> mirror{nullptr};
  std::atomic<bool> accept_loop_ended{false};
  net::Endpoint local;
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Bind(
    const net::Endpoint& endpoint) {
  std::array<char, NI_MAXHOST> host{};
  if (const int rc =
          ::getnameinfo(endpoint.addr(), endpoint.length, host.data(),
                        host.size(), nullptr, 0, NI_NUMERICHOST);
      rc != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "metrics address %s: %s", endpoint.ToString(), ::gai_strerror(rc)));
  }
  auto impl = std::make_unique<Impl>();
  httplib::Server& server = impl->server;
  server.set_socket_options(ReuseAddressOnly);
  // One worker: scrapes are rare and each is answered in well under a
  // millisecond; one request per connection, and a connection that sends
  // no request is dropped after 1 s, so no client holds the worker long.
  // At most kMaxQueuedConnections wait for it (BoundedQueue).
  server.new_task_queue = [] {
    return new BoundedQueue(kMaxQueuedConnections);
  };
  server.set_keep_alive_max_count(1);
  server.set_read_timeout(1, 0);
  server.set_write_timeout(5, 0);
  Impl* const state = impl.get();
  server.Get("/metrics", [state](const httplib::Request&,
                                 httplib::Response& response) {
    const StatsMirror* mirror = state->mirror.load(std::memory_order_acquire);
    if (mirror == nullptr) {
      response.status = 503;
      response.set_content(
          "orderwire serve is starting (recovering its journal): no metrics "
          "yet\n",
          "text/plain; charset=utf-8");
      return;
    }
    ServiceStats stats;
    mirror->Read(&stats);
    std::string body;
    body.reserve(32 << 10);
    AppendServiceMetrics(stats, &body);
    response.set_content(body, kContentType);
  });

  int port = endpoint.port();
  const bool bound = port == 0
                         ? (port = server.bind_to_any_port(host.data())) > 0
                         : server.bind_to_port(host.data(), port);
  if (!bound) {
    return absl::UnavailableError(
        absl::StrFormat("cannot listen for metrics on %s: %s",
                        endpoint.ToString(), WhyNotBound(endpoint)));
  }
  const std::string numeric =
      endpoint.family() == AF_INET6
          ? absl::StrFormat("[%s]:%d", host.data(), port)
          : absl::StrFormat("%s:%d", host.data(), port);
  absl::StatusOr<net::Endpoint> local = net::Endpoint::Parse(numeric);
  if (!local.ok()) return local.status();
  impl->local = *local;
  // The HTTP threads (this one and the worker it starts) block SIGINT and
  // SIGTERM: the stop signals go to the service's thread, whose blocking
  // waits they interrupt (serve installs its handlers without SA_RESTART).
  impl->thread = base::StartWithStopSignalsBlocked([state] {
    (void)state->server.listen_after_bind();
    state->accept_loop_ended.store(true);
  });
  // Until the thread runs its accept loop, stop() would not reach it.
  while (!server.is_running() && !state->accept_loop_ended.load()) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (state->accept_loop_ended.load()) {
    impl->thread.join();
    return absl::UnavailableError(
        absl::StrFormat("the metrics listener on %s stopped as it started",
                        impl->local.ToString()));
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

void MetricsServer::Serve(const StatsMirror& mirror) {
  impl_->mirror.store(&mirror, std::memory_order_release);
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

const net::Endpoint& MetricsServer::local_endpoint() const {
  return impl_->local;
}

}  // namespace orderwire::service
