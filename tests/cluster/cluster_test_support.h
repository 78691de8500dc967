// Test support for the cluster tests that trade through a replicated primary
// on a real nats-server (replicated_service_test.cc, takeover_test.cc,
// standby_reopen_test.cc, a binary each): the session they trade on, its
// resting orders and their exchange with a primary. The standby's tests have
// standby_test_support.h; nats-server itself is tests/support/nats_cluster.h.
#ifndef ORDERWIRE_TESTS_CLUSTER_CLUSTER_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_CLUSTER_CLUSTER_TEST_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/bytes.h"
#include "tests/support/orders.h"
#include "tests/support/service_harness.h"

namespace orderwire::cluster_test {

// The session the tests trade on.
inline constexpr std::uint32_t kSession = 7;

// Command `sequence` of kSession: a resting buy of 10 on instrument 42, one
// tick below the one before (price 10000 - sequence), so that none trade.
inline test_support::Bytes Order(std::uint64_t sequence) {
  return test_support::Frame(
      sequence,
      test_support::Limit({.client_order_id = sequence,
                           .instrument_id = 42,
                           .price = 10000 - static_cast<std::int64_t>(sequence),
                           .quantity = 10}));
}

// Sends commands first..last of kSession (one datagram each) and returns
// the report frames received for them: one Accepted per command is
// expected within `timeout_ms` (a primary answers only what the stream
// acknowledged).
inline std::vector<test_support::Bytes> Trade(test_support::TestClient& client,
                                              std::uint64_t first,
                                              std::uint64_t last,
                                              int timeout_ms = 5000) {
  for (std::uint64_t s = first; s <= last; ++s) {
    client.Send(kSession, {Order(s)});
  }
  std::vector<test_support::Bytes> reports = client.Frames(
      kSession, static_cast<std::size_t>(last - first + 1), timeout_ms);
  EXPECT_EQ(reports.size(), last - first + 1);
  return reports;
}

}  // namespace orderwire::cluster_test

#endif  // ORDERWIRE_TESTS_CLUSTER_CLUSTER_TEST_SUPPORT_H_
