// The deterministic command generator used by tests, benchmarks and the
// demo: splitmix64 reference outputs, field ranges, and streams that decode.
#include "codec/testing/random_commands.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "gtest/gtest.h"

namespace orderwire::codec::test {
namespace {

using ::orderwire::codec::testing::EncodeRandomStream;
using ::orderwire::codec::testing::kDecodeBenchMix;
using ::orderwire::codec::testing::RandomCommand;
using ::orderwire::codec::testing::RandomKind;
using ::orderwire::codec::testing::SplitMix64;

TEST(SplitMix64Test, MatchesTheReferenceSequenceForSeedZero) {
  SplitMix64 rng(0);
  EXPECT_EQ(rng.Next(), 0xE220A8397B1DCDAFu);
  EXPECT_EQ(rng.Next(), 0x6E789E6AA1B965F4u);
  EXPECT_EQ(rng.Next(), 0x06C45D188009454Fu);
}

TEST(RandomCommandTest, PlausibleValuesAreInRangeAndAbsentFieldsAreZero) {
  SplitMix64 rng(1);
  for (int i = 0; i < 5000; ++i) {
    const Kind kind = RandomKind(rng, kDecodeBenchMix);
    const Command c = RandomCommand(rng, kind, false);
    EXPECT_EQ(c.kind, kind);
    EXPECT_GE(c.account_id.value(), 1u);
    const CommandRecipe& r = Info(kind).recipe;
    for (std::size_t s = 0; s < kCommandSlotCount; ++s) {
      if (r.mask[s] == 0) {
        EXPECT_EQ(c.Slot(static_cast<CommandSlot>(s + 1)), 0u);
      }
    }
    if (kind == Kind::kNewLimit || kind == Kind::kNewMarket) {
      EXPECT_TRUE(c.side == Side::kBuy || c.side == Side::kSell);
      EXPECT_GE(c.quantity.value(), 1u);
    }
    if (kind == Kind::kNewLimit) {
      EXPECT_GE(static_cast<int>(c.time_in_force), 1);
      EXPECT_LE(static_cast<int>(c.time_in_force), 4);
      EXPECT_GT(c.price.value(), 0);
    }
  }
}

TEST(EncodeRandomStreamTest, IsDeterministicAndDecodesToItsKinds) {
  std::vector<Kind> kinds;
  const std::vector<std::byte> a =
      EncodeRandomStream(10000, 99, kDecodeBenchMix, &kinds);
  const std::vector<std::byte> b =
      EncodeRandomStream(10000, 99, kDecodeBenchMix);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, EncodeRandomStream(10000, 100, kDecodeBenchMix));
  ASSERT_EQ(kinds.size(), 10000u);
  std::vector<Command> out(10000);
  const DecodeBatch batch = DecodeCommands(a, out);
  EXPECT_EQ(batch.error, CodecError::kOk);
  ASSERT_EQ(batch.frames, 10000u);
  EXPECT_EQ(batch.bytes, a.size());
  std::array<int, 5> counts{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].sequence, i + 1);
    EXPECT_EQ(out[i].kind, kinds[i]);
    ++counts[static_cast<std::size_t>(kinds[i]) - 1];
  }
  // 50/5/25/5/15 within a few percent.
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_NEAR(counts[k], 100 * static_cast<int>(kDecodeBenchMix.percent[k]),
                300)
        << k;
  }
}

}  // namespace
}  // namespace orderwire::codec::test
