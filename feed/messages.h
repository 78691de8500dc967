// The messages of the market-data feed, version 1: one Model and one Layout
// per kind (docs/MARKETDATA.md "Messages").
//
// Message, little-endian, packed, no alignment; in a packet each message is
// the `length` bytes of a block (packet.h):
//
//   0    1            9                                  size
//   +----+------------+-------------------------------------+
//   |kind| timestamp  | body: fixed by the kind             |
//   | u8 |    u64     |                                     |
//   +----+------------+-------------------------------------+
//
// Each kind has a Model, a trivially-copyable struct whose first member is
// `timestamp`, and a `MessageTraits<Model>` that declares its layout once
// with codec/layout.h: the fields after the kind byte, in wire order, with
// their MARKETDATA.md names (`timestamp` first). Every offset and size of the
// feed is derived from these declarations; the static_asserts at the end pin
// each of them to MARKETDATA.md's tables. Everything here is constexpr.
#ifndef ORDERWIRE_FEED_MESSAGES_H_
#define ORDERWIRE_FEED_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "codec/layout.h"
#include "codec/types.h"
#include "feed/types.h"

namespace orderwire::feed {

using codec::Field;
using codec::MakeLayout;
using codec::Side;

// Which packet types may carry a kind (a bit set): MARKETDATA.md "Checks".
inline constexpr std::uint8_t kInData = 0x01;
inline constexpr std::uint8_t kInSnapshot = 0x02;
inline constexpr std::uint8_t kInDataAndSnapshot = kInData | kInSnapshot;

// ---------------------------------------------------------------------------
// Models. Field order and types follow MARKETDATA.md; the layouts below are
// what fixes the wire order.

// What every message starts with, of any kind present or future.
struct MessageHeader {
  MessageKind kind;
  std::uint64_t timestamp;
};

struct SystemEvent {
  std::uint64_t timestamp;
  SystemEventCode event;
};

struct InstrumentDirectory {
  std::uint64_t timestamp;
  std::uint32_t instrument_id;
  std::int64_t min_price;
  std::int64_t max_price;
  std::uint64_t min_quantity;
  std::uint64_t max_quantity;
};

struct TradingStatus {
  std::uint64_t timestamp;
  std::uint32_t instrument_id;
  TradingState state;
};

struct OrderAdded {
  std::uint64_t timestamp;
  std::uint64_t order_id;
  std::uint32_t instrument_id;
  Side side;
  std::int64_t price;
  std::uint64_t quantity;  // displayed: the leaves
};

struct OrderExecuted {
  std::uint64_t timestamp;
  std::uint64_t order_id;  // the resting order
  std::uint32_t instrument_id;
  Side side;  // the resting order's
  std::uint64_t match_id;
  std::int64_t price;
  std::uint64_t quantity;  // executed now
};

struct OrderReduced {
  std::uint64_t timestamp;
  std::uint64_t order_id;
  std::uint32_t instrument_id;
  std::uint64_t cancelled_quantity;
};

struct OrderDeleted {
  std::uint64_t timestamp;
  std::uint64_t order_id;
  std::uint32_t instrument_id;
};

struct OrderReplaced {
  std::uint64_t timestamp;
  std::uint64_t order_id;
  std::uint32_t instrument_id;
  std::int64_t price;      // new
  std::uint64_t quantity;  // new displayed quantity
};

struct SnapshotStart {
  std::uint64_t timestamp;
  std::uint64_t feed_sequence;
  std::uint32_t instrument_id;  // as requested, 0 for all
  std::uint32_t message_count;  // SnapshotStart and SnapshotEnd included
};

struct SnapshotEnd {
  std::uint64_t timestamp;
  std::uint64_t feed_sequence;
};

// ---------------------------------------------------------------------------
// Layouts: declared once per kind. kLayout covers the message after its kind
// byte; kCarriers says which packet types may carry the kind.

template <typename Model>
struct MessageTraits;  // Specialized for every message model below.

template <>
struct MessageTraits<MessageHeader> {
  static constexpr auto kLayout =
      MakeLayout(Field{"kind", &MessageHeader::kind},
                 Field{"timestamp", &MessageHeader::timestamp});
};

template <>
struct MessageTraits<SystemEvent> {
  static constexpr MessageKind kKind = MessageKind::kSystemEvent;
  static constexpr std::string_view kName = "SystemEvent";
  static constexpr std::uint8_t kCarriers = kInData;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &SystemEvent::timestamp},
                 Field{"event", &SystemEvent::event});
};

template <>
struct MessageTraits<InstrumentDirectory> {
  static constexpr MessageKind kKind = MessageKind::kInstrumentDirectory;
  static constexpr std::string_view kName = "InstrumentDirectory";
  static constexpr std::uint8_t kCarriers = kInDataAndSnapshot;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &InstrumentDirectory::timestamp},
                 Field{"instrument_id", &InstrumentDirectory::instrument_id},
                 Field{"min_price", &InstrumentDirectory::min_price},
                 Field{"max_price", &InstrumentDirectory::max_price},
                 Field{"min_quantity", &InstrumentDirectory::min_quantity},
                 Field{"max_quantity", &InstrumentDirectory::max_quantity});
};

template <>
struct MessageTraits<TradingStatus> {
  static constexpr MessageKind kKind = MessageKind::kTradingStatus;
  static constexpr std::string_view kName = "TradingStatus";
  static constexpr std::uint8_t kCarriers = kInDataAndSnapshot;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &TradingStatus::timestamp},
                 Field{"instrument_id", &TradingStatus::instrument_id},
                 Field{"state", &TradingStatus::state});
};

template <>
struct MessageTraits<OrderAdded> {
  static constexpr MessageKind kKind = MessageKind::kOrderAdded;
  static constexpr std::string_view kName = "OrderAdded";
  static constexpr std::uint8_t kCarriers = kInDataAndSnapshot;
  static constexpr auto kLayout = MakeLayout(
      Field{"timestamp", &OrderAdded::timestamp},
      Field{"order_id", &OrderAdded::order_id},
      Field{"instrument_id", &OrderAdded::instrument_id},
      Field{"side", &OrderAdded::side}, Field{"price", &OrderAdded::price},
      Field{"quantity", &OrderAdded::quantity});
};

template <>
struct MessageTraits<OrderExecuted> {
  static constexpr MessageKind kKind = MessageKind::kOrderExecuted;
  static constexpr std::string_view kName = "OrderExecuted";
  static constexpr std::uint8_t kCarriers = kInData;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &OrderExecuted::timestamp},
                 Field{"order_id", &OrderExecuted::order_id},
                 Field{"instrument_id", &OrderExecuted::instrument_id},
                 Field{"side", &OrderExecuted::side},
                 Field{"match_id", &OrderExecuted::match_id},
                 Field{"price", &OrderExecuted::price},
                 Field{"quantity", &OrderExecuted::quantity});
};

template <>
struct MessageTraits<OrderReduced> {
  static constexpr MessageKind kKind = MessageKind::kOrderReduced;
  static constexpr std::string_view kName = "OrderReduced";
  static constexpr std::uint8_t kCarriers = kInData;
  static constexpr auto kLayout = MakeLayout(
      Field{"timestamp", &OrderReduced::timestamp},
      Field{"order_id", &OrderReduced::order_id},
      Field{"instrument_id", &OrderReduced::instrument_id},
      Field{"cancelled_quantity", &OrderReduced::cancelled_quantity});
};

template <>
struct MessageTraits<OrderDeleted> {
  static constexpr MessageKind kKind = MessageKind::kOrderDeleted;
  static constexpr std::string_view kName = "OrderDeleted";
  static constexpr std::uint8_t kCarriers = kInData;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &OrderDeleted::timestamp},
                 Field{"order_id", &OrderDeleted::order_id},
                 Field{"instrument_id", &OrderDeleted::instrument_id});
};

template <>
struct MessageTraits<OrderReplaced> {
  static constexpr MessageKind kKind = MessageKind::kOrderReplaced;
  static constexpr std::string_view kName = "OrderReplaced";
  static constexpr std::uint8_t kCarriers = kInData;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &OrderReplaced::timestamp},
                 Field{"order_id", &OrderReplaced::order_id},
                 Field{"instrument_id", &OrderReplaced::instrument_id},
                 Field{"price", &OrderReplaced::price},
                 Field{"quantity", &OrderReplaced::quantity});
};

template <>
struct MessageTraits<SnapshotStart> {
  static constexpr MessageKind kKind = MessageKind::kSnapshotStart;
  static constexpr std::string_view kName = "SnapshotStart";
  static constexpr std::uint8_t kCarriers = kInSnapshot;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &SnapshotStart::timestamp},
                 Field{"feed_sequence", &SnapshotStart::feed_sequence},
                 Field{"instrument_id", &SnapshotStart::instrument_id},
                 Field{"message_count", &SnapshotStart::message_count});
};

template <>
struct MessageTraits<SnapshotEnd> {
  static constexpr MessageKind kKind = MessageKind::kSnapshotEnd;
  static constexpr std::string_view kName = "SnapshotEnd";
  static constexpr std::uint8_t kCarriers = kInSnapshot;
  static constexpr auto kLayout =
      MakeLayout(Field{"timestamp", &SnapshotEnd::timestamp},
                 Field{"feed_sequence", &SnapshotEnd::feed_sequence});
};

// ---------------------------------------------------------------------------
// Derived sizes and offsets.

inline constexpr std::size_t kMessageHeaderSize =
    MessageTraits<MessageHeader>::kLayout.kSize;
inline constexpr std::size_t kMessageKindOffset =
    codec::OffsetOf<MessageTraits<MessageHeader>::kLayout,
                    &MessageHeader::kind>();
inline constexpr std::size_t kTimestampOffset =
    codec::OffsetOf<MessageTraits<MessageHeader>::kLayout,
                    &MessageHeader::timestamp>();
// Where a model's layout starts in its message: after the kind byte.
inline constexpr std::size_t kModelOffset = kTimestampOffset;

// A message's size: the kind byte and the layout.
template <typename Model>
inline constexpr std::size_t kMessageSize =
    kModelOffset + MessageTraits<Model>::kLayout.kSize;

// Offset of `Member` from the start of its message (kind byte included).
template <auto Member>
consteval std::size_t MessageOffsetOf() {
  using Model = typename codec::internal::MemberPointerTraits<
      decltype(Member)>::ModelType;
  return kModelOffset +
         codec::OffsetOf<MessageTraits<Model>::kLayout, Member>();
}

// Calls `fn(std::type_identity<Model>{})` for every message model, in
// MARKETDATA.md's order. The one list of kinds the rest of feed/ iterates.
template <typename Fn>
constexpr void ForEachMessage(Fn&& fn) {
  fn(std::type_identity<SystemEvent>{});
  fn(std::type_identity<InstrumentDirectory>{});
  fn(std::type_identity<TradingStatus>{});
  fn(std::type_identity<OrderAdded>{});
  fn(std::type_identity<OrderExecuted>{});
  fn(std::type_identity<OrderReduced>{});
  fn(std::type_identity<OrderDeleted>{});
  fn(std::type_identity<OrderReplaced>{});
  fn(std::type_identity<SnapshotStart>{});
  fn(std::type_identity<SnapshotEnd>{});
}

// Every model's layout starts with `timestamp`, where the header has it, and
// every model is a plain value.
template <typename Model>
consteval bool StartsWithTimestamp() {
  return MessageOffsetOf<&Model::timestamp>() == kTimestampOffset &&
         std::is_trivially_copyable_v<Model>;
}

// Pinned to MARKETDATA.md "Messages": sizes, then every offset of the field
// table, as a cross-check of the declarations (the layouts, not these lines,
// are what the code uses).
static_assert(kMessageHeaderSize == 9 && kMessageKindOffset == 0 &&
              kTimestampOffset == 1);
static_assert(StartsWithTimestamp<SystemEvent>() &&
              StartsWithTimestamp<InstrumentDirectory>() &&
              StartsWithTimestamp<TradingStatus>() &&
              StartsWithTimestamp<OrderAdded>() &&
              StartsWithTimestamp<OrderExecuted>() &&
              StartsWithTimestamp<OrderReduced>() &&
              StartsWithTimestamp<OrderDeleted>() &&
              StartsWithTimestamp<OrderReplaced>() &&
              StartsWithTimestamp<SnapshotStart>() &&
              StartsWithTimestamp<SnapshotEnd>());
static_assert(kMessageSize<SystemEvent> == 10);
static_assert(kMessageSize<InstrumentDirectory> == 45);
static_assert(kMessageSize<TradingStatus> == 14);
static_assert(kMessageSize<OrderAdded> == 38);
static_assert(kMessageSize<OrderExecuted> == 46);
static_assert(kMessageSize<OrderReduced> == 29);
static_assert(kMessageSize<OrderDeleted> == 21);
static_assert(kMessageSize<OrderReplaced> == 37);
static_assert(kMessageSize<SnapshotStart> == 25);
static_assert(kMessageSize<SnapshotEnd> == 17);

static_assert(MessageOffsetOf<&SystemEvent::event>() == 9);
static_assert(MessageOffsetOf<&InstrumentDirectory::instrument_id>() == 9 &&
              MessageOffsetOf<&InstrumentDirectory::min_price>() == 13 &&
              MessageOffsetOf<&InstrumentDirectory::max_price>() == 21 &&
              MessageOffsetOf<&InstrumentDirectory::min_quantity>() == 29 &&
              MessageOffsetOf<&InstrumentDirectory::max_quantity>() == 37);
static_assert(MessageOffsetOf<&TradingStatus::instrument_id>() == 9 &&
              MessageOffsetOf<&TradingStatus::state>() == 13);
static_assert(MessageOffsetOf<&OrderAdded::order_id>() == 9 &&
              MessageOffsetOf<&OrderAdded::instrument_id>() == 17 &&
              MessageOffsetOf<&OrderAdded::side>() == 21 &&
              MessageOffsetOf<&OrderAdded::price>() == 22 &&
              MessageOffsetOf<&OrderAdded::quantity>() == 30);
static_assert(MessageOffsetOf<&OrderExecuted::order_id>() == 9 &&
              MessageOffsetOf<&OrderExecuted::instrument_id>() == 17 &&
              MessageOffsetOf<&OrderExecuted::side>() == 21 &&
              MessageOffsetOf<&OrderExecuted::match_id>() == 22 &&
              MessageOffsetOf<&OrderExecuted::price>() == 30 &&
              MessageOffsetOf<&OrderExecuted::quantity>() == 38);
static_assert(MessageOffsetOf<&OrderReduced::order_id>() == 9 &&
              MessageOffsetOf<&OrderReduced::instrument_id>() == 17 &&
              MessageOffsetOf<&OrderReduced::cancelled_quantity>() == 21);
static_assert(MessageOffsetOf<&OrderDeleted::order_id>() == 9 &&
              MessageOffsetOf<&OrderDeleted::instrument_id>() == 17);
static_assert(MessageOffsetOf<&OrderReplaced::order_id>() == 9 &&
              MessageOffsetOf<&OrderReplaced::instrument_id>() == 17 &&
              MessageOffsetOf<&OrderReplaced::price>() == 21 &&
              MessageOffsetOf<&OrderReplaced::quantity>() == 29);
static_assert(MessageOffsetOf<&SnapshotStart::feed_sequence>() == 9 &&
              MessageOffsetOf<&SnapshotStart::instrument_id>() == 17 &&
              MessageOffsetOf<&SnapshotStart::message_count>() == 21);
static_assert(MessageOffsetOf<&SnapshotEnd::feed_sequence>() == 9);

}  // namespace orderwire::feed

#endif  // ORDERWIRE_FEED_MESSAGES_H_
