// The in-process harness for end-to-end tests of the UDP service over
// loopback: the options every test starts from (TestOptions), a Service
// running Run() in its own thread with race-free counter snapshots
// (RunningService), and a raw client that sends and receives datagram bytes
// (TestClient), with runs of resting buy orders (SendRestingBuys). Part of
// orderwire::test_support_service, which links the service; codec-level
// tests use orderwire::test_support alone.
#ifndef ORDERWIRE_TESTS_SUPPORT_SERVICE_HARNESS_H_
#define ORDERWIRE_TESTS_SUPPORT_SERVICE_HARNESS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "config/service_config.h"
#include "journal/prune.h"
#include "journal/writer.h"
#include "net/udp.h"
#include "service/service.h"
#include "tests/support/bytes.h"

namespace orderwire::test_support {

// The options every test starts from: loopback port 0, a small engine and
// small journal segments so that start-up is cheap.
service::ServiceOptions TestOptions(
    const std::string& journal_dir, journal::Durability durability,
    config::ServiceConfig config = config::ServiceConfig{});

// The journal of `options` (no service running on it) with a snapshot at
// its end (the state of a Service started on it, of its journal id), then
// its segments before `before_index` pruned: what the prune did in
// `pruned`. A step that fails fails the test.
void SnapshotThenPrune(const service::ServiceOptions& options,
                       std::uint64_t before_index,
                       journal::PruneReport* pruned);

// A Service running Run() in its own thread. Counters are read race-free:
// ServiceOptions::on_interval runs on the service's thread and copies stats()
// into a snapshot under a mutex; after Stop() (the thread joined)
// final_stats() reads them directly.
class RunningService {
 public:
  // Starts the service (overriding interval_s and on_interval of `options`);
  // null, with a test failure, if Service::Start fails.
  static std::unique_ptr<RunningService> Start(service::ServiceOptions options);

  RunningService(const RunningService&) = delete;
  RunningService& operator=(const RunningService&) = delete;
  ~RunningService();

  // Sets the stop flag, waits for Run() to return and gives its status.
  absl::Status Stop();

  [[nodiscard]] const net::Endpoint& endpoint() const {
    return service_->local_endpoint();
  }
  [[nodiscard]] const service::Service& service() const { return *service_; }
  // Only after Stop(): the service's own counters.
  [[nodiscard]] const service::ServiceStats& final_stats() const;

  // Waits until `predicate` holds for a snapshot of the counters taken on
  // the service's thread. False after `timeout_ms`.
  bool WaitFor(
      const std::function<bool(const service::ServiceStats&)>& predicate,
      int timeout_ms = 5000);

  // Sets the stop flag from the service's own thread as soon as `predicate`
  // holds for its counters.
  void StopWhen(std::function<bool(const service::ServiceStats&)> predicate);

  // The counters when StopWhen's predicate fired.
  [[nodiscard]] service::ServiceStats stats_at_stop();

 private:
  RunningService() = default;

  void OnInterval();

  std::unique_ptr<service::Service> service_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  absl::Status run_status_;
  std::mutex mu_;
  std::condition_variable cv_;
  service::ServiceStats snapshot_;
  bool have_snapshot_ = false;
  std::function<bool(const service::ServiceStats&)> stop_when_;
  service::ServiceStats stats_at_stop_;
};

// A raw client: one UDP socket on 127.0.0.1, datagrams as bytes.
class TestClient {
 public:
  explicit TestClient(const net::Endpoint& target);
  // The same, from `local` (e.g. 127.0.0.2:0: another source address).
  TestClient(const net::Endpoint& target, const net::Endpoint& local);

  // Sends `datagram` as it is (any length, any bytes).
  void Send(std::span<const std::byte> datagram);
  // Sends one datagram of `session` holding `frames` (test_support::Datagram).
  void Send(std::uint32_t session, const std::vector<Bytes>& frames);

  // The next datagram, or nullopt after `timeout_ms` without one.
  std::optional<Bytes> Receive(int timeout_ms);

  // Receives report datagrams of `session` until `count` frames have come,
  // in arrival order. Every datagram must parse as a report datagram of that
  // session; a timeout fails the test (the frames so far are returned).
  std::vector<Bytes> Frames(std::uint32_t session, std::size_t count,
                            int timeout_ms = 5000);

  // Everything that arrives until `quiet_ms` pass without a datagram.
  std::vector<Bytes> Drain(std::uint32_t session, int quiet_ms);

  // Whether nothing is waiting (and nothing arrives within `ms`).
  bool Silent(int ms) { return !Receive(ms).has_value(); }

  // Appends the frames of a report datagram of `session` to `frames`.
  static void AppendFrames(std::uint32_t session, const Bytes& datagram,
                           std::vector<Bytes>& frames);

 private:
  net::Endpoint target_;
  std::optional<net::UdpSocket> socket_;
  net::DatagramBatch rx_;
  std::vector<Bytes> queue_;
};

// Sends `datagrams` datagrams of 10 resting buy orders each from session 1
// of `client`, one at a time, each answered (10 reports) before the next; a
// datagram not answered fails the test. Order i (0 to 9) of a datagram is
// account 1's good-till-cancel buy of 1 on instrument 3 at
// `price + i * price_step`, with frame sequence and client order id
// `sequence`, which advances past it.
void SendRestingBuys(TestClient& client, std::uint64_t& sequence,
                     std::size_t datagrams, std::int64_t price,
                     std::int64_t price_step);

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_SERVICE_HARNESS_H_
