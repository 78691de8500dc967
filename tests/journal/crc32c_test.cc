// CRC32C: the published check value, agreement with the bit-by-bit
// definition at every length and alignment, and extension.
#include "journal/crc32c.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "codec/testing/random_commands.h"
#include "gtest/gtest.h"
#include "tests/support/bytes.h"

namespace orderwire::journal {
namespace {

using test_support::AsBytes;

TEST(Crc32cTest, MatchesThePublishedCheckValue) {
  EXPECT_EQ(Crc32c(AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c({}), 0u);
}

TEST(Crc32cTest, MatchesRfc3720TestVectors) {
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of 0xFF, ascending.
  std::vector<std::byte> zeros(32, std::byte{0});
  std::vector<std::byte> ones(32, std::byte{0xFF});
  std::vector<std::byte> ascending(32);
  for (std::size_t i = 0; i < 32; ++i) ascending[i] = static_cast<std::byte>(i);
  EXPECT_EQ(Crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32cTest, AgreesWithTheDefinitionAtEveryLengthAndAlignment) {
  codec::testing::SplitMix64 rng(7);
  std::vector<std::byte> data(70000);
  for (std::byte& b : data) b = static_cast<std::byte>(rng.Next());
  // Every length up to 2000 (both lane loops and the tail), at 8 offsets.
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t length = 0; length < 2000; ++length) {
      const std::span<const std::byte> s(data.data() + offset, length);
      ASSERT_EQ(Crc32c(s), Crc32cPortable(s)) << offset << " " << length;
    }
  }
  // Long buffers: the 3 x 8 KiB lanes and their joins.
  for (const std::size_t length :
       {24575u, 24576u, 24577u, 49152u, 65536u, 69999u}) {
    const std::span<const std::byte> s(data.data() + 1, length);
    EXPECT_EQ(Crc32c(s), Crc32cPortable(s)) << length;
  }
}

TEST(Crc32cTest, ExtendingEqualsComputingTheConcatenation) {
  std::vector<std::byte> data(5000);
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<std::byte>(i * 7 + 3);
  }
  const std::span<const std::byte> all(data);
  for (const std::size_t cut : {0u, 1u, 100u, 2500u, 4999u, 5000u}) {
    EXPECT_EQ(Crc32cExtend(Crc32c(all.first(cut)), all.subspan(cut)),
              Crc32c(all));
  }
}

TEST(Crc32cTest, DetectsEverySingleBitFlip) {
  std::vector<std::byte> data(300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i);
  const std::uint32_t clean = Crc32c(data);
  for (std::size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= std::byte(1u << (bit % 8));
    ASSERT_NE(Crc32c(data), clean) << bit;
    data[bit / 8] ^= std::byte(1u << (bit % 8));
  }
}

TEST(Crc32cTest, DetectsEveryTwoBitError) {
  std::vector<std::byte> data(96);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 13);
  const std::uint32_t clean = Crc32c(data);
  const std::size_t bits = data.size() * 8;
  for (std::size_t a = 0; a < bits; ++a) {
    data[a / 8] ^= std::byte(1u << (a % 8));
    for (std::size_t b = a + 1; b < bits; ++b) {
      data[b / 8] ^= std::byte(1u << (b % 8));
      ASSERT_NE(Crc32c(data), clean) << a << " " << b;
      data[b / 8] ^= std::byte(1u << (b % 8));
    }
    data[a / 8] ^= std::byte(1u << (a % 8));
  }
}

}  // namespace
}  // namespace orderwire::journal
