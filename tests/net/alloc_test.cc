// The transport's hot path allocates nothing (net/udp.h): segmented sends
// (UdpSocket::SendSegmented), plain sends, and receives into a plain and a
// Coalesced (UDP_GRO) batch with SplitDatagrams, once the batches exist.
// tests/support/counting_new.h counts (its own binary: it replaces the
// global operator new).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "net/udp.h"
#include "tests/support/counting_new.h"

namespace orderwire::net {
namespace {

TEST(NetAllocations, SendingAndReceivingAllocateNothing) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto c = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const bool segmented = a->SupportsSegmentation();
  const bool gro = c->EnableGro();
  const Endpoint to_b = *b->LocalEndpoint();
  const Endpoint to_c = *c->LocalEndpoint();
  constexpr std::size_t kCount = 32;
  DatagramBatch tx(kCount);
  std::vector<std::uint32_t> order(kCount);
  // Slots 0-15 to b, 16-31 to c, in runs of 7 x 1400 bytes + 600.
  for (std::size_t i = 0; i < kCount; ++i) {
    tx.set_length(i, i % 8 == 7 ? 600 : 1400);
    tx.set_peer(i, i < kCount / 2 ? to_b : to_c);
    order[i] = static_cast<std::uint32_t>(i);
  }
  DatagramBatch rx(kCount);
  DatagramBatch joined(4, DatagramBatch::Coalesced::kYes);
  std::vector<std::span<const std::byte>> datagrams(std::size_t{4} * 128);

  test_support::StartCountingAllocations();
  std::size_t messages = 0;
  int sent = 0;
  for (int round = 0; round < 10; ++round) {
    sent += a->Send(tx, kCount);
    if (segmented) sent += a->SendSegmented(tx, order, &messages);
    (void)b->Receive(rx, kCount);
    const int n = c->Receive(joined, 4);
    std::size_t count = 0;
    for (int k = 0; k < n; ++k) {
      count =
          joined.SplitDatagrams(static_cast<std::size_t>(k), datagrams, count);
    }
  }
  const std::size_t allocations = test_support::StopCountingAllocations();
  EXPECT_EQ(allocations, 0u) << "segmented " << segmented << ", gro " << gro;
  EXPECT_GT(sent, 0);
}

}  // namespace
}  // namespace orderwire::net
