// LoadLE / StoreLE: little-endian byte order at every alignment, for every
// wire width, signed and enum types included.
#include "codec/wire.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/types.h"
#include "gtest/gtest.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

TEST(WireTest, StoreLEWritesLeastSignificantByteFirstAtAnyAlignment) {
  for (std::size_t at = 0; at < 8; ++at) {
    std::array<std::byte, 24> buffer{};
    StoreLE(buffer.data() + at, std::uint64_t{0x0102030405060708});
    EXPECT_EQ(Hex(std::span(buffer).subspan(at, 8)), "0807060504030201");
    StoreLE(buffer.data() + at, std::uint32_t{0xA1B2C3D4});
    EXPECT_EQ(Hex(std::span(buffer).subspan(at, 4)), "d4c3b2a1");
    StoreLE(buffer.data() + at, std::uint16_t{0xBEEF});
    EXPECT_EQ(Hex(std::span(buffer).subspan(at, 2)), "efbe");
    StoreLE(buffer.data() + at, std::int64_t{-2});
    EXPECT_EQ(Hex(std::span(buffer).subspan(at, 8)), "feffffffffffffff");
    StoreLE(buffer.data() + at, RejectReason::kUnauthorized);
    EXPECT_EQ(Hex(std::span(buffer).subspan(at, 2)), "0b00");
    // Bytes outside the stored width are untouched.
    EXPECT_EQ(Hex(std::span(buffer).subspan(at + 2, 6)), "ffffffffffff");
  }
}

TEST(WireTest, LoadLEReadsLeastSignificantByteFirstAtAnyAlignment) {
  const std::vector<std::byte> bytes =
      FromHex("00112233445566778899aabbccddeeff0011223344556677");
  for (std::size_t at = 0; at < 8; ++at) {
    const std::byte* p = bytes.data() + at;
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      expected |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    }
    EXPECT_EQ(LoadLE<std::uint64_t>(p), expected);
    EXPECT_EQ(LoadLE<std::int64_t>(p), static_cast<std::int64_t>(expected));
    EXPECT_EQ(LoadLE<std::uint32_t>(p), static_cast<std::uint32_t>(expected));
    EXPECT_EQ(LoadLE<std::uint16_t>(p), static_cast<std::uint16_t>(expected));
    EXPECT_EQ(LoadLE<std::uint8_t>(p), static_cast<std::uint8_t>(expected));
    EXPECT_EQ(static_cast<std::uint8_t>(LoadLE<Side>(p)),
              static_cast<std::uint8_t>(expected));
  }
}

TEST(WireTest, LoadOfStoreIsTheIdentityForExtremes) {
  std::array<std::byte, 9> buffer{};
  for (std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, INT64_MIN,
                         INT64_MAX, std::int64_t{-5}}) {
    StoreLE(buffer.data() + 1, v);
    EXPECT_EQ(LoadLE<std::int64_t>(buffer.data() + 1), v);
  }
}

TEST(WireTest, OnlyIntegersAndEnumsOfWireWidthsAreWireScalars) {
  static_assert(kIsWireScalar<std::uint8_t> && kIsWireScalar<std::int64_t>);
  static_assert(kIsWireScalar<Kind> && kIsWireScalar<RejectReason>);
  static_assert(!kIsWireScalar<bool>);
  static_assert(!kIsWireScalar<double>);
  SUCCEED();
}

}  // namespace
}  // namespace orderwire::codec::test
