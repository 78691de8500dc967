// The 256-entry kind-dispatch table against docs/PROTOCOL.md's kind tables and
// body field offsets, typed here from the text of docs/PROTOCOL.md.
#include "codec/kind_table.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codec/layout.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

struct KindRow {
  std::uint8_t kind;
  std::string_view name;
  std::size_t body_size;
  std::size_t frame_size;
  KindClass kind_class;
};

// docs/PROTOCOL.md "Commands" and "Reports" tables (version 2).
constexpr std::array<KindRow, 21> kKindRows = {{
    {0x01, "NewLimit", 38, 47, KindClass::kCommand},
    {0x02, "NewMarket", 29, 38, KindClass::kCommand},
    {0x03, "CancelByOrder", 16, 25, KindClass::kCommand},
    {0x04, "CancelByClient", 16, 25, KindClass::kCommand},
    {0x05, "Replace", 40, 49, KindClass::kCommand},
    {0x06, "MassCancel", 22, 31, KindClass::kCommand},
    {0x07, "Heartbeat", 8, 17, KindClass::kClientControl},
    {0x08, "Goodbye", 16, 25, KindClass::kCommand},
    {0x09, "OrderStatusRequest", 24, 33, KindClass::kCommand},
    {0x41, "Accepted", 46, 55, KindClass::kReport},
    {0x42, "Rejected", 27, 36, KindClass::kReport},
    {0x43, "Filled", 62, 71, KindClass::kReport},
    {0x44, "Cancelled", 37, 46, KindClass::kReport},
    {0x45, "Replaced", 41, 50, KindClass::kReport},
    {0x46, "SequenceGap", 8, 17, KindClass::kReport},
    {0x47, "ReportsGone", 16, 25, KindClass::kReport},
    {0x48, "Busy", 9, 18, KindClass::kReport},
    {0x49, "MassCancelDone", 26, 35, KindClass::kReport},
    {0x4A, "HeartbeatAck", 24, 33, KindClass::kReport},
    {0x4B, "SessionClosed", 21, 30, KindClass::kReport},
    {0x4C, "OrderStatus", 54, 63, KindClass::kReport},
}};

TEST(KindTableTest, HasExactlyTheProtocolKindsWithTheirSizesAndNames) {
  for (unsigned b = 0; b < 256; ++b) {
    SCOPED_TRACE(b);
    const KindInfo& info = kKindTable[b];
    const KindRow* expected = nullptr;
    for (const KindRow& k : kKindRows) {
      if (k.kind == b) expected = &k;
    }
    if (expected == nullptr) {
      EXPECT_EQ(info.frame_size, 0);
      EXPECT_EQ(info.body_size, 0);
      EXPECT_EQ(info.kind_class, KindClass::kUnknown);
      EXPECT_EQ(info.name, "");
      EXPECT_EQ(Name(static_cast<Kind>(b)), "");
      continue;
    }
    EXPECT_EQ(info.frame_size, expected->frame_size);
    EXPECT_EQ(info.body_size, expected->body_size);
    EXPECT_EQ(info.kind_class, expected->kind_class);
    EXPECT_EQ(info.name, expected->name);
    EXPECT_EQ(Name(static_cast<Kind>(b)), expected->name);
    EXPECT_EQ(&Info(static_cast<Kind>(b)), &info);
  }
}

TEST(KindTableTest, MaxFrameSizeIsTheFilledFrame) {
  EXPECT_EQ(kMaxFrameSize, 71u);
}

// Where each normalized Command field sits in each command frame:
// docs/PROTOCOL.md body offsets + 9 for the frame header; absent fields have
// offset 0 and a zero mask.
TEST(KindTableTest, CommandRecipesReadTheProtocolOffsets) {
  struct Slot {
    CommandSlot slot;
    std::uint8_t offset;  // frame offset; 0 = absent
  };
  struct Recipe {
    Kind kind;
    std::array<Slot, 8> slots;
  };
  constexpr std::uint8_t kAbsent = 0;
  const std::array<Recipe, 5> recipes = {{
      {Kind::kNewLimit,
       {{{CommandSlot::kAccountId, 9 + 0},
         {CommandSlot::kClientOrderId, 9 + 8},
         {CommandSlot::kOrderId, kAbsent},
         {CommandSlot::kInstrumentId, 9 + 16},
         {CommandSlot::kSide, 9 + 20},
         {CommandSlot::kTimeInForce, 9 + 21},
         {CommandSlot::kPrice, 9 + 22},
         {CommandSlot::kQuantity, 9 + 30}}}},
      {Kind::kNewMarket,
       {{{CommandSlot::kAccountId, 9 + 0},
         {CommandSlot::kClientOrderId, 9 + 8},
         {CommandSlot::kOrderId, kAbsent},
         {CommandSlot::kInstrumentId, 9 + 16},
         {CommandSlot::kSide, 9 + 20},
         {CommandSlot::kTimeInForce, kAbsent},
         {CommandSlot::kPrice, kAbsent},
         {CommandSlot::kQuantity, 9 + 21}}}},
      {Kind::kCancelByOrder,
       {{{CommandSlot::kAccountId, 9 + 0},
         {CommandSlot::kClientOrderId, kAbsent},
         {CommandSlot::kOrderId, 9 + 8},
         {CommandSlot::kInstrumentId, kAbsent},
         {CommandSlot::kSide, kAbsent},
         {CommandSlot::kTimeInForce, kAbsent},
         {CommandSlot::kPrice, kAbsent},
         {CommandSlot::kQuantity, kAbsent}}}},
      {Kind::kCancelByClient,
       {{{CommandSlot::kAccountId, 9 + 0},
         {CommandSlot::kClientOrderId, 9 + 8},
         {CommandSlot::kOrderId, kAbsent},
         {CommandSlot::kInstrumentId, kAbsent},
         {CommandSlot::kSide, kAbsent},
         {CommandSlot::kTimeInForce, kAbsent},
         {CommandSlot::kPrice, kAbsent},
         {CommandSlot::kQuantity, kAbsent}}}},
      {Kind::kReplace,
       {{{CommandSlot::kAccountId, 9 + 0},
         {CommandSlot::kClientOrderId, 9 + 16},  // new_client_order_id
         {CommandSlot::kOrderId, 9 + 8},
         {CommandSlot::kInstrumentId, kAbsent},
         {CommandSlot::kSide, kAbsent},
         {CommandSlot::kTimeInForce, kAbsent},
         {CommandSlot::kPrice, 9 + 24},
         {CommandSlot::kQuantity, 9 + 32}}}},
  }};
  for (const Recipe& r : recipes) {
    const CommandRecipe& recipe = Info(r.kind).recipe;
    for (const Slot& s : r.slots) {
      const auto i = static_cast<std::size_t>(s.slot) - 1;
      SCOPED_TRACE(::testing::Message()
                   << Name(r.kind) << " slot " << static_cast<int>(s.slot));
      EXPECT_EQ(recipe.offset[i], s.offset);
      EXPECT_EQ(recipe.mask[i], s.offset == kAbsent ? 0 : ~std::uint64_t{0});
    }
  }
}

TEST(KindTableTest, ReportAndUnknownKindsHaveNoRecipe) {
  for (unsigned b = 0; b < 256; ++b) {
    const KindInfo& info = kKindTable[b];
    if (info.kind_class == KindClass::kCommand) continue;
    for (std::size_t s = 0; s < kCommandSlotCount; ++s) {
      EXPECT_EQ(info.recipe.offset[s], 0) << b;
      EXPECT_EQ(info.recipe.mask[s], 0u) << b;
    }
  }
}

}  // namespace
}  // namespace orderwire::codec::test
