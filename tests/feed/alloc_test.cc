// The feed codec never touches the heap: parsing packets and requests,
// walking their blocks, reading messages and building packets performs zero
// heap allocations. A binary of its own: it links orderwire::counting_new,
// which replaces the global operator new. Inputs are prepared outside the
// counted region; only feed calls run while counting.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "feed/builder.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "tests/feed/golden.h"
#include "tests/support/counting_new.h"

namespace orderwire::feed::test {
namespace {

using test_support::StartCountingAllocations;
using test_support::StopCountingAllocations;

TEST(FeedAllocTest, ParsingAndBuildingAllocateNothing) {
  std::vector<std::vector<std::byte>> packets;
  for (const golden::GoldenBytes& g : golden::kSubscriberPackets) {
    packets.push_back(golden::FromHex(g.hex));
  }
  std::vector<std::vector<std::byte>> requests;
  for (const golden::GoldenBytes& g : golden::kRequests) {
    requests.push_back(golden::FromHex(g.hex));
  }
  std::array<std::byte, kMaxPacketBytes> buffer{};
  std::uint64_t sum = 0;
  std::size_t parsed = 0;

  StartCountingAllocations();
  for (int round = 0; round < 1000; ++round) {
    for (const std::vector<std::byte>& bytes : packets) {
      const auto packet =
          PacketView::Parse(bytes, SessionFilter::Only(golden::kSession));
      if (!packet.ok()) continue;
      ++parsed;
      PacketBuilder builder(buffer);
      builder.BeginData(packet->session(), packet->sequence(), 0);
      for (const MessageBlock block : *packet) {
        sum += block.timestamp() + block.length();
        if (const auto added = MessageView<OrderAdded>::FromBlock(block);
            added.ok()) {
          sum += added->ToModel().quantity;
          (void)builder.Append(added->ToModel());
        }
      }
      sum += builder.Finish().size();
    }
    for (const std::vector<std::byte>& bytes : requests) {
      const auto request = RequestView::Parse(bytes);
      if (request.ok()) sum += request->sequence() + request->token();
    }
    const auto heartbeat = EncodeHeartbeat(buffer, golden::kSession, 7);
    sum += heartbeat.ok() ? *heartbeat : 0;
  }
  const std::size_t allocations = StopCountingAllocations();

  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(parsed, 1000u * packets.size());
  EXPECT_NE(sum, 0u);
}

}  // namespace
}  // namespace orderwire::feed::test
