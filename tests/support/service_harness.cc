#include "tests/support/service_harness.h"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/status/statusor.h"
#include "codec/datagram.h"
#include "codec/error.h"
#include "gtest/gtest.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/support/orders.h"

namespace orderwire::test_support {

using net::Endpoint;
using net::UdpSocket;
using service::Service;
using service::ServiceOptions;
using service::ServiceStats;

ServiceOptions TestOptions(const std::string& journal_dir,
                           journal::Durability durability,
                           config::ServiceConfig config) {
  ServiceOptions options;
  options.listen = *Endpoint::Parse("127.0.0.1:0");
  options.journal.directory = journal_dir;
  options.journal.durability = durability;
  options.journal.segment_size = std::uint64_t{1} << 20;
  options.config = std::move(config);
  options.config.engine.max_live_orders = 1 << 14;
  options.max_pending = 1 << 12;
  options.report_history = 1 << 12;
  return options;
}

void SnapshotThenPrune(const ServiceOptions& options,
                       std::uint64_t before_index,
                       journal::PruneReport* pruned) {
  const std::string& journal_dir = options.journal.directory;
  absl::StatusOr<std::uint64_t> id = state::JournalIdOf(journal_dir, {});
  ASSERT_TRUE(id.ok()) << id.status();
  {
    absl::StatusOr<std::unique_ptr<Service>> stopped = Service::Start(options);
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    ASSERT_TRUE(state::WriteSnapshot((*stopped)->state(), *id, journal_dir)
                    .status()
                    .ok());
  }
  absl::StatusOr<journal::PruneReport> report = journal::PruneJournal(
      {.directory = journal_dir, .before_index = before_index});
  ASSERT_TRUE(report.ok()) << report.status();
  *pruned = *report;
}

// ---------------------------------------------------------------------------
// RunningService

std::unique_ptr<RunningService> RunningService::Start(ServiceOptions options) {
  auto running = std::unique_ptr<RunningService>(new RunningService());
  RunningService* const self = running.get();
  options.interval_s = 0.0005;
  options.on_interval = [self] { self->OnInterval(); };
  absl::StatusOr<std::unique_ptr<Service>> service =
      Service::Start(std::move(options));
  if (!service.ok()) {
    ADD_FAILURE() << "Service::Start: " << service.status();
    return nullptr;
  }
  running->service_ = std::move(*service);
  running->thread_ = std::thread(
      [self] { self->run_status_ = self->service_->Run(self->stop_); });
  return running;
}

RunningService::~RunningService() { (void)Stop(); }

absl::Status RunningService::Stop() {
  if (thread_.joinable()) {
    stop_.store(true);
    thread_.join();
  }
  return run_status_;
}

const ServiceStats& RunningService::final_stats() const {
  EXPECT_FALSE(thread_.joinable());
  return service_->stats();
}

bool RunningService::WaitFor(
    const std::function<bool(const ServiceStats&)>& predicate, int timeout_ms) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return have_snapshot_ && predicate(snapshot_); });
}

void RunningService::StopWhen(
    std::function<bool(const ServiceStats&)> predicate) {
  std::lock_guard lock(mu_);
  stop_when_ = std::move(predicate);
}

ServiceStats RunningService::stats_at_stop() {
  std::lock_guard lock(mu_);
  return stats_at_stop_;
}

void RunningService::OnInterval() {
  std::lock_guard lock(mu_);
  snapshot_ = service_->stats();
  have_snapshot_ = true;
  if (stop_when_ && !stop_.load() && stop_when_(snapshot_)) {
    stats_at_stop_ = snapshot_;
    stop_.store(true);
  }
  cv_.notify_all();
}

// ---------------------------------------------------------------------------
// TestClient

TestClient::TestClient(const Endpoint& target)
    : TestClient(target, *Endpoint::Parse("127.0.0.1:0")) {}

TestClient::TestClient(const Endpoint& target, const Endpoint& local)
    : target_(target), rx_(64) {
  absl::StatusOr<UdpSocket> socket = UdpSocket::Bind(local);
  EXPECT_TRUE(socket.ok()) << socket.status();
  if (socket.ok()) socket_.emplace(std::move(*socket));
}

void TestClient::Send(std::span<const std::byte> datagram) {
  ASSERT_TRUE(socket_.has_value());
  const ssize_t n = ::sendto(socket_->fd(), datagram.data(), datagram.size(), 0,
                             target_.addr(), target_.length);
  ASSERT_EQ(n, static_cast<ssize_t>(datagram.size()))
      << "sendto: " << std::strerror(errno);
}

void TestClient::Send(std::uint32_t session, const std::vector<Bytes>& frames) {
  Send(Datagram(session, frames));
}

std::optional<Bytes> TestClient::Receive(int timeout_ms) {
  if (!socket_.has_value()) return std::nullopt;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (queue_.empty()) {
    const int n = socket_->Receive(rx_, rx_.capacity());
    if (n > 0) {
      for (int i = 0; i < n; ++i) {
        const auto slot = static_cast<std::size_t>(i);
        EXPECT_TRUE(rx_.peer(slot) == target_)
            << "a datagram from " << rx_.peer(slot).ToString();
        EXPECT_FALSE(rx_.truncated(slot));
        queue_.emplace_back(rx_.datagram(slot).begin(),
                            rx_.datagram(slot).end());
      }
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return std::nullopt;
    socket_->WaitReadable(static_cast<int>(left));
  }
  Bytes datagram = std::move(queue_.front());
  queue_.erase(queue_.begin());
  return datagram;
}

std::vector<Bytes> TestClient::Frames(std::uint32_t session, std::size_t count,
                                      int timeout_ms) {
  std::vector<Bytes> frames;
  while (frames.size() < count) {
    std::optional<Bytes> datagram = Receive(timeout_ms);
    if (!datagram.has_value()) {
      ADD_FAILURE() << "timed out with " << frames.size() << " of " << count
                    << " report frames";
      break;
    }
    AppendFrames(session, *datagram, frames);
  }
  return frames;
}

std::vector<Bytes> TestClient::Drain(std::uint32_t session, int quiet_ms) {
  std::vector<Bytes> frames;
  while (std::optional<Bytes> datagram = Receive(quiet_ms)) {
    AppendFrames(session, *datagram, frames);
  }
  return frames;
}

void TestClient::AppendFrames(std::uint32_t session, const Bytes& datagram,
                              std::vector<Bytes>& frames) {
  const auto view =
      codec::DatagramView::Parse(datagram, codec::FrameFilter::kReports);
  ASSERT_TRUE(view.ok()) << "a malformed report datagram: "
                         << codec::Name(view.error());
  EXPECT_EQ(view->session_id(), session);
  for (const codec::FrameView frame : *view) {
    frames.emplace_back(frame.bytes().begin(), frame.bytes().end());
  }
}

void SendRestingBuys(TestClient& client, std::uint64_t& sequence,
                     std::size_t datagrams, std::int64_t price,
                     std::int64_t price_step) {
  for (std::size_t d = 0; d < datagrams; ++d) {
    std::vector<Bytes> frames;
    for (std::int64_t i = 0; i < 10; ++i, ++sequence) {
      frames.push_back(Frame(
          sequence, Limit({.account_id = 1,
                           .client_order_id = sequence,
                           .instrument_id = 3,
                           .side = codec::Side::kBuy,
                           .time_in_force = codec::TimeInForce::kGoodTillCancel,
                           .price = price + i * price_step,
                           .quantity = 1})));
    }
    client.Send(1, frames);
    ASSERT_EQ(client.Frames(1, 10).size(), 10u) << "datagram " << d;
  }
}

}  // namespace orderwire::test_support
