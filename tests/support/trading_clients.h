// TradingClients: sessions trading the `mixed` workload through
// client::RunClient, one thread each, for end-to-end tests that do
// something to the service while it trades (kill and restart it, flood its
// feed's request server) and then check that every command was
// acknowledged.
//
// Each session resends on a 100 ms timeout and gives up after 60 s without
// an answer, so a service that restarts under it is ridden through.
//
// Threading: the constructor starts the threads; Busy() from any thread;
// ExpectAllAcknowledged() after Join(). The destructor asks the clients to
// stop and joins them. Part of orderwire::test_support_service.
#ifndef ORDERWIRE_TESTS_SUPPORT_TRADING_CLIENTS_H_
#define ORDERWIRE_TESTS_SUPPORT_TRADING_CLIENTS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "client/run_client.h"
#include "net/udp.h"

namespace orderwire::test_support {

struct TradingClientsOptions {
  net::Endpoint target;
  std::vector<std::uint32_t> sessions;  // one client each
  std::size_t commands = 0;             // per session
  std::uint64_t seed = 0;               // session i's workload: seed + i
  double rate = 0;  // commands a second per session (0: unpaced)
};

class TradingClients {
 public:
  explicit TradingClients(TradingClientsOptions options);
  ~TradingClients();
  TradingClients(const TradingClients&) = delete;
  TradingClients& operator=(const TradingClients&) = delete;

  // Whether some session has not finished yet.
  [[nodiscard]] bool Busy() const {
    return done_.load() < options_.sessions.size();
  }
  void Join();
  // After Join(): every session ran and had all its commands acknowledged
  // (gtest expectations).
  void ExpectAllAcknowledged() const;

 private:
  const TradingClientsOptions options_;
  std::vector<absl::StatusOr<client::ClientResult>> results_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> done_{0};
  std::vector<std::thread> threads_;
};

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_TRADING_CLIENTS_H_
