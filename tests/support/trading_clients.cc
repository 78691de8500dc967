// Sessions trading through client::RunClient; see trading_clients.h.
#include "tests/support/trading_clients.h"

#include <utility>

#include "engine/workload.h"
#include "gtest/gtest.h"

namespace orderwire::test_support {

TradingClients::TradingClients(TradingClientsOptions options)
    : options_(std::move(options)),
      results_(options_.sessions.size(), absl::UnknownError("not run")) {
  for (std::size_t c = 0; c < options_.sessions.size(); ++c) {
    threads_.emplace_back([this, c] {
      const std::vector<std::byte> input = workload::EncodeCommands(
          workload::Generate(workload::Workload::kMixed, options_.commands,
                             options_.seed + c));
      client::ClientOptions client;
      client.target = options_.target;
      client.session_id = options_.sessions[c];
      client.rate = options_.rate;
      client.retransmit_timeout_ms = 100;
      client.give_up_ms = 60'000;
      results_[c] = client::RunClient(client, input, stop_);
      done_.fetch_add(1);
    });
  }
}

TradingClients::~TradingClients() {
  stop_.store(true);
  Join();
}

void TradingClients::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void TradingClients::ExpectAllAcknowledged() const {
  for (std::size_t c = 0; c < results_.size(); ++c) {
    const auto& result = results_[c];
    ASSERT_TRUE(result.ok())
        << "session " << options_.sessions[c] << ": " << result.status();
    EXPECT_EQ(result->acknowledged, options_.commands)
        << "session " << options_.sessions[c];
  }
}

}  // namespace orderwire::test_support
