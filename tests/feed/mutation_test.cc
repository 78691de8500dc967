// Every one-bit change of every golden packet and request: what still
// parses is re-encoded to exactly its bytes by the encoders (the oracle of
// fuzz/fuzz_feed_packet.cc, run deterministically here), and a change in
// the magic or the version is always refused.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "feed/builder.h"
#include "feed/packet.h"
#include "gtest/gtest.h"
#include "tests/feed/feed_test_support.h"
#include "tests/feed/golden.h"

namespace orderwire::feed::test {
namespace {

// `packet` rebuilt by the encoders.
std::vector<std::byte> Reencode(const PacketView& packet) {
  std::array<std::byte, kMaxPacketBytes> out{};
  if (CarrierBit(packet.type()) != 0) {
    PacketBuilder builder(out);
    if (packet.type() == PacketType::kData) {
      builder.BeginData(packet.session(), packet.sequence(), packet.token());
    } else {
      builder.BeginSnapshot(packet.session(), packet.sequence(),
                            packet.token());
    }
    for (const MessageBlock block : packet) {
      EXPECT_EQ(builder.Append(block), codec::CodecError::kOk);
    }
    const std::span<const std::byte> bytes = builder.Finish();
    return {bytes.begin(), bytes.end()};
  }
  codec::Result<std::size_t> size = codec::CodecError::kBufferTooSmall;
  if (packet.type() == PacketType::kHeartbeat) {
    size = EncodeHeartbeat(out, packet.session(), packet.sequence());
  } else if (packet.type() == PacketType::kEndOfSession) {
    size = EncodeEndOfSession(out, packet.session(), packet.sequence());
  } else {
    size = EncodeRefused(out, packet.session(), packet.sequence(),
                         packet.token(), packet.refused());
  }
  EXPECT_TRUE(size.ok());
  return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(*size)};
}

std::vector<std::byte> Reencode(const RequestView& request) {
  std::array<std::byte, kMaxPacketBytes> out{};
  const codec::Result<std::size_t> size =
      request.type() == PacketType::kRetransmitRequest
          ? EncodeRetransmitRequest(out, request.session(), request.sequence(),
                                    request.count(), request.token())
          : EncodeSnapshotRequest(out, request.session(), request.token(),
                                  request.instrument_id());
  EXPECT_TRUE(size.ok());
  return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(*size)};
}

TEST(FeedMutationTest, WhateverParsesReencodesToItsBytes) {
  std::size_t parsed = 0;
  std::size_t refused = 0;
  for (const golden::GoldenBytes& g : golden::kSubscriberPackets) {
    const std::vector<std::byte> original = golden::FromHex(g.hex);
    for (std::size_t i = 0; i < original.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<std::byte> bytes = original;
        bytes[i] ^= static_cast<std::byte>(1 << bit);
        const auto packet = PacketView::Parse(bytes, SessionFilter::Any());
        if (!packet.ok()) {
          ++refused;
          EXPECT_NE(packet.error(), CheckCause::kOtherSession);
          continue;
        }
        ++parsed;
        EXPECT_LT(i, original.size());
        EXPECT_GE(i, 3u) << g.name << ": magic and version never change";
        EXPECT_EQ(Hex(Reencode(*packet)), Hex(bytes))
            << g.name << " byte " << i << " bit " << bit;
      }
    }
  }
  // Timestamps, ids and prices change freely; lengths and counts do not.
  EXPECT_GT(parsed, 2000u);
  EXPECT_GT(refused, 300u);
}

TEST(FeedMutationTest, WhateverRequestParsesReencodesToItsBytes) {
  std::size_t parsed = 0;
  for (const golden::GoldenBytes& g : golden::kRequests) {
    const std::vector<std::byte> original = golden::FromHex(g.hex);
    for (std::size_t i = 0; i < original.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<std::byte> bytes = original;
        bytes[i] ^= static_cast<std::byte>(1 << bit);
        const auto request = RequestView::Parse(bytes);
        if (!request.ok()) continue;
        ++parsed;
        EXPECT_GE(i, 3u) << g.name;
        EXPECT_EQ(Hex(Reencode(*request)), Hex(bytes))
            << g.name << " byte " << i << " bit " << bit;
      }
    }
  }
  EXPECT_GT(parsed, 300u);
}

}  // namespace
}  // namespace orderwire::feed::test
