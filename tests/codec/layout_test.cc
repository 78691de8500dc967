// Layout: offsets are prefix sums of the declared field sizes, in declaration
// order, with no padding, whatever the model struct's own layout.
#include "codec/layout.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "codec/messages.h"
#include "gtest/gtest.h"

namespace orderwire::codec::test {
namespace {

// A struct whose C++ layout has padding and a different member order.
struct Sample {
  std::uint8_t a;
  std::uint64_t b;
  std::uint16_t c;
  std::int32_t d;
};

constexpr auto kSampleLayout = MakeLayout(
    Field{"d", &Sample::d}, Field{"a", &Sample::a},
    Field{"b", &Sample::b, CommandSlot::kOrderId}, Field{"c", &Sample::c});

TEST(LayoutTest, OffsetsArePackedPrefixSumsInDeclarationOrder) {
  static_assert(kSampleLayout.kSize == 4 + 1 + 8 + 2);
  static_assert(kSampleLayout.kFieldCount == 4);
  static_assert(OffsetOf<kSampleLayout, &Sample::d>() == 0);
  static_assert(OffsetOf<kSampleLayout, &Sample::a>() == 4);
  static_assert(OffsetOf<kSampleLayout, &Sample::b>() == 5);
  static_assert(OffsetOf<kSampleLayout, &Sample::c>() == 13);
  static_assert(IndexOf<kSampleLayout, &Sample::c>() == 3);
  SUCCEED();
}

TEST(LayoutTest, ForEachVisitsFieldsInWireOrderWithOffsetsAndSlots) {
  std::vector<std::string_view> names;
  std::vector<std::size_t> offsets;
  std::vector<CommandSlot> slots;
  kSampleLayout.ForEach([&](const auto& field, std::size_t offset) {
    names.push_back(field.name);
    offsets.push_back(offset);
    slots.push_back(field.slot);
  });
  EXPECT_EQ(names, (std::vector<std::string_view>{"d", "a", "b", "c"}));
  EXPECT_EQ(offsets, (std::vector<std::size_t>{0, 4, 5, 13}));
  EXPECT_EQ(slots, (std::vector<CommandSlot>{
                       CommandSlot::kNone, CommandSlot::kNone,
                       CommandSlot::kOrderId, CommandSlot::kNone}));
}

// The frame header and a sample of docs/PROTOCOL.md body offsets, as the views
// see them (FrameOffsetOf includes the 9-byte header).
TEST(LayoutTest, FrameOffsetsMatchProtocolForEveryCommandField) {
  static_assert(kFrameHeaderSize == 9);
  static_assert(FrameOffsetOf<&NewLimit::account_id>() == 9 + 0);
  static_assert(FrameOffsetOf<&NewLimit::client_order_id>() == 9 + 8);
  static_assert(FrameOffsetOf<&NewLimit::instrument_id>() == 9 + 16);
  static_assert(FrameOffsetOf<&NewLimit::side>() == 9 + 20);
  static_assert(FrameOffsetOf<&NewLimit::time_in_force>() == 9 + 21);
  static_assert(FrameOffsetOf<&NewLimit::quantity>() == 9 + 30);
  static_assert(FrameOffsetOf<&NewMarket::side>() == 9 + 20);
  static_assert(FrameOffsetOf<&CancelByOrder::order_id>() == 9 + 8);
  static_assert(FrameOffsetOf<&CancelByClient::client_order_id>() == 9 + 8);
  static_assert(FrameOffsetOf<&Replace::order_id>() == 9 + 8);
  static_assert(FrameOffsetOf<&Replace::new_client_order_id>() == 9 + 16);
  static_assert(FrameOffsetOf<&Replace::price>() == 9 + 24);
  static_assert(FrameOffsetOf<&Accepted::price>() == 9 + 30);
  static_assert(FrameOffsetOf<&Accepted::quantity>() == 9 + 38);
  static_assert(FrameOffsetOf<&Rejected::command_kind>() == 9 + 24);
  static_assert(FrameOffsetOf<&Filled::match_id>() == 9 + 24);
  static_assert(FrameOffsetOf<&Filled::liquidity>() == 9 + 37);
  static_assert(FrameOffsetOf<&Filled::price>() == 9 + 38);
  static_assert(FrameOffsetOf<&Filled::quantity>() == 9 + 46);
  static_assert(FrameOffsetOf<&Cancelled::cancelled_quantity>() == 9 + 28);
  static_assert(FrameOffsetOf<&Replaced::quantity>() == 9 + 32);
  static_assert(FrameOffsetOf<&SequenceGap::expected_sequence>() == 9 + 0);
  SUCCEED();
}

}  // namespace
}  // namespace orderwire::codec::test
