// The frames of wire protocol version 2: one Model and one Layout per kind.
//
// Frame (PROTOCOL.md "Frame"), little-endian, packed, no alignment:
//
//   0       8    9                                   9+n
//   +-------+----+-------------------------------------+
//   | seq   |kind| body: n bytes, n fixed by the kind  |
//   | u64   | u8 |                                     |
//   +-------+----+-------------------------------------+
//
// Each kind has a Model, an ordinary trivially-copyable struct used to build
// frames, in tests and for logging, and a `MessageTraits<Model>` that declares
// the body layout once: the fields in wire order with their PROTOCOL.md names.
// Every offset and size in orderwire is derived from these declarations; the
// static_asserts at the end pin the derived sizes to PROTOCOL.md.
#ifndef ORDERWIRE_CODEC_MESSAGES_H_
#define ORDERWIRE_CODEC_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "codec/layout.h"
#include "codec/types.h"

namespace orderwire::codec {

// ---------------------------------------------------------------------------
// Models. Field order and types follow PROTOCOL.md; the layouts below are what
// fixes the wire order.

struct FrameHeader {
  std::uint64_t sequence;
  Kind kind;
};

// Commands.
struct NewLimit {
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint32_t instrument_id;
  Side side;
  TimeInForce time_in_force;
  std::int64_t price;
  std::uint64_t quantity;
};

struct NewMarket {
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint32_t instrument_id;
  Side side;
  std::uint64_t quantity;
};

struct CancelByOrder {
  std::uint64_t account_id;
  std::uint64_t order_id;
};

struct CancelByClient {
  std::uint64_t account_id;
  std::uint64_t client_order_id;
};

struct Replace {
  std::uint64_t account_id;
  std::uint64_t order_id;
  std::uint64_t new_client_order_id;
  std::int64_t price;
  std::uint64_t quantity;
};

// Version 2 (docs/CONTROLS.md "Mass cancel"). `request_id` is carried in
// the command's client_order_id slot and `scope` in its time_in_force slot.
struct MassCancel {
  std::uint64_t account_id;
  std::uint64_t request_id;
  std::uint32_t instrument_id;  // 0 with scope Account
  MassCancelSide side;
  MassCancelScope scope;
};

// Version 2 (docs/CONTROLS.md "Heartbeats"): a control frame of the
// command direction, frame sequence 0; not a command (kIsCommand below).
struct Heartbeat {
  std::uint64_t nonce;
};

// Version 2 (docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect").
// `request_id` is carried in the command's client_order_id slot. The
// service journals a lapse as a Goodbye of sequence 0, account 0, request 0.
struct Goodbye {
  std::uint64_t account_id;
  std::uint64_t request_id;
};

// Version 2 (docs/CONTROLS.md "Order status"): by `order_id` when it is not
// 0, else by the session's `client_order_id` of the account.
struct OrderStatusRequest {
  std::uint64_t account_id;
  std::uint64_t order_id;
  std::uint64_t client_order_id;
};

// Reports.
struct Accepted {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint32_t instrument_id;
  Side side;
  TimeInForce time_in_force;
  std::int64_t price;  // 0 for a market order
  std::uint64_t quantity;
};

struct Rejected {
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint64_t order_id;  // 0 where none
  Kind command_kind;
  RejectReason reason;
};

struct Filled {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint64_t match_id;
  std::uint32_t instrument_id;
  Side side;
  Liquidity liquidity;
  std::int64_t price;
  std::uint64_t quantity;  // this fill
  std::uint64_t leaves_quantity;
};

struct Cancelled {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint32_t instrument_id;
  std::uint64_t cancelled_quantity;
  CancelReason reason;
};

struct Replaced {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;  // the new one
  std::int64_t price;
  std::uint64_t quantity;  // new leaves
  PriorityKept priority_kept;
};

struct SequenceGap {
  std::uint64_t expected_sequence;
};

// The reports before resend_from that the client lacks are gone; the
// commands before resend_command were applied (docs/PROTOCOL.md).
struct ReportsGone {
  std::uint64_t resend_command;
  std::uint64_t resend_from;
};

struct Busy {
  std::uint64_t expected_sequence;
  BusyCause cause;
};

// The answer to a Heartbeat (frame sequence 0): its nonce, the session's
// next command sequence and its next report's sequence.
struct HeartbeatAck {
  std::uint64_t nonce;
  std::uint64_t expected_sequence;
  std::uint64_t next_report;
};

// The end of a MassCancel's answer: its fields and how many orders went.
struct MassCancelDone {
  std::uint64_t account_id;
  std::uint64_t request_id;
  std::uint32_t instrument_id;
  MassCancelSide side;
  MassCancelScope scope;
  std::uint32_t cancelled_orders;
};

// The end of a Goodbye's answer, or a lapse's: how many orders went.
struct SessionClosed {
  std::uint64_t account_id;  // the Goodbye's; 0 for a lapse
  std::uint64_t request_id;  // the Goodbye's; 0 for a lapse
  SessionCloseReason reason;
  std::uint32_t cancelled_orders;
};

// The answer to an OrderStatusRequest: the order as it rests, or NotLive
// with the request's ids and every other field 0.
struct OrderStatus {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::uint32_t instrument_id;
  Side side;
  OrderState state;
  std::int64_t price;
  std::uint64_t leaves_quantity;
  std::uint64_t executed_quantity;
};

// ---------------------------------------------------------------------------
// Layouts: declared once per kind.

template <typename Model>
struct MessageTraits;  // Specialized for every frame body model below.

template <>
struct MessageTraits<FrameHeader> {
  static constexpr auto kLayout =
      MakeLayout(Field{"sequence", &FrameHeader::sequence},
                 Field{"kind", &FrameHeader::kind});
};

template <>
struct MessageTraits<NewLimit> {
  static constexpr Kind kKind = Kind::kNewLimit;
  static constexpr std::string_view kName = "NewLimit";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &NewLimit::account_id, CommandSlot::kAccountId},
      Field{"client_order_id", &NewLimit::client_order_id,
            CommandSlot::kClientOrderId},
      Field{"instrument_id", &NewLimit::instrument_id,
            CommandSlot::kInstrumentId},
      Field{"side", &NewLimit::side, CommandSlot::kSide},
      Field{"time_in_force", &NewLimit::time_in_force,
            CommandSlot::kTimeInForce},
      Field{"price", &NewLimit::price, CommandSlot::kPrice},
      Field{"quantity", &NewLimit::quantity, CommandSlot::kQuantity});
};

template <>
struct MessageTraits<NewMarket> {
  static constexpr Kind kKind = Kind::kNewMarket;
  static constexpr std::string_view kName = "NewMarket";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &NewMarket::account_id, CommandSlot::kAccountId},
      Field{"client_order_id", &NewMarket::client_order_id,
            CommandSlot::kClientOrderId},
      Field{"instrument_id", &NewMarket::instrument_id,
            CommandSlot::kInstrumentId},
      Field{"side", &NewMarket::side, CommandSlot::kSide},
      Field{"quantity", &NewMarket::quantity, CommandSlot::kQuantity});
};

template <>
struct MessageTraits<CancelByOrder> {
  static constexpr Kind kKind = Kind::kCancelByOrder;
  static constexpr std::string_view kName = "CancelByOrder";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &CancelByOrder::account_id, CommandSlot::kAccountId},
      Field{"order_id", &CancelByOrder::order_id, CommandSlot::kOrderId});
};

template <>
struct MessageTraits<CancelByClient> {
  static constexpr Kind kKind = Kind::kCancelByClient;
  static constexpr std::string_view kName = "CancelByClient";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &CancelByClient::account_id, CommandSlot::kAccountId},
      Field{"client_order_id", &CancelByClient::client_order_id,
            CommandSlot::kClientOrderId});
};

template <>
struct MessageTraits<Replace> {
  static constexpr Kind kKind = Kind::kReplace;
  static constexpr std::string_view kName = "Replace";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &Replace::account_id, CommandSlot::kAccountId},
      Field{"order_id", &Replace::order_id, CommandSlot::kOrderId},
      Field{"new_client_order_id", &Replace::new_client_order_id,
            CommandSlot::kClientOrderId},
      Field{"price", &Replace::price, CommandSlot::kPrice},
      Field{"quantity", &Replace::quantity, CommandSlot::kQuantity});
};

template <>
struct MessageTraits<MassCancel> {
  static constexpr Kind kKind = Kind::kMassCancel;
  static constexpr std::string_view kName = "MassCancel";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &MassCancel::account_id, CommandSlot::kAccountId},
      Field{"request_id", &MassCancel::request_id, CommandSlot::kClientOrderId},
      Field{"instrument_id", &MassCancel::instrument_id,
            CommandSlot::kInstrumentId},
      Field{"side", &MassCancel::side, CommandSlot::kSide},
      Field{"scope", &MassCancel::scope, CommandSlot::kTimeInForce});
};

template <>
struct MessageTraits<Heartbeat> {
  static constexpr Kind kKind = Kind::kHeartbeat;
  static constexpr std::string_view kName = "Heartbeat";
  static constexpr auto kLayout = MakeLayout(Field{"nonce", &Heartbeat::nonce});
};

template <>
struct MessageTraits<Goodbye> {
  static constexpr Kind kKind = Kind::kGoodbye;
  static constexpr std::string_view kName = "Goodbye";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &Goodbye::account_id, CommandSlot::kAccountId},
      Field{"request_id", &Goodbye::request_id, CommandSlot::kClientOrderId});
};

template <>
struct MessageTraits<OrderStatusRequest> {
  static constexpr Kind kKind = Kind::kOrderStatusRequest;
  static constexpr std::string_view kName = "OrderStatusRequest";
  static constexpr auto kLayout = MakeLayout(
      Field{"account_id", &OrderStatusRequest::account_id,
            CommandSlot::kAccountId},
      Field{"order_id", &OrderStatusRequest::order_id, CommandSlot::kOrderId},
      Field{"client_order_id", &OrderStatusRequest::client_order_id,
            CommandSlot::kClientOrderId});
};

template <>
struct MessageTraits<Accepted> {
  static constexpr Kind kKind = Kind::kAccepted;
  static constexpr std::string_view kName = "Accepted";
  static constexpr auto kLayout = MakeLayout(
      Field{"order_id", &Accepted::order_id},
      Field{"account_id", &Accepted::account_id},
      Field{"client_order_id", &Accepted::client_order_id},
      Field{"instrument_id", &Accepted::instrument_id},
      Field{"side", &Accepted::side},
      Field{"time_in_force", &Accepted::time_in_force},
      Field{"price", &Accepted::price}, Field{"quantity", &Accepted::quantity});
};

template <>
struct MessageTraits<Rejected> {
  static constexpr Kind kKind = Kind::kRejected;
  static constexpr std::string_view kName = "Rejected";
  static constexpr auto kLayout =
      MakeLayout(Field{"account_id", &Rejected::account_id},
                 Field{"client_order_id", &Rejected::client_order_id},
                 Field{"order_id", &Rejected::order_id},
                 Field{"command_kind", &Rejected::command_kind},
                 Field{"reason", &Rejected::reason});
};

template <>
struct MessageTraits<Filled> {
  static constexpr Kind kKind = Kind::kFilled;
  static constexpr std::string_view kName = "Filled";
  static constexpr auto kLayout = MakeLayout(
      Field{"order_id", &Filled::order_id},
      Field{"account_id", &Filled::account_id},
      Field{"client_order_id", &Filled::client_order_id},
      Field{"match_id", &Filled::match_id},
      Field{"instrument_id", &Filled::instrument_id},
      Field{"side", &Filled::side}, Field{"liquidity", &Filled::liquidity},
      Field{"price", &Filled::price}, Field{"quantity", &Filled::quantity},
      Field{"leaves_quantity", &Filled::leaves_quantity});
};

template <>
struct MessageTraits<Cancelled> {
  static constexpr Kind kKind = Kind::kCancelled;
  static constexpr std::string_view kName = "Cancelled";
  static constexpr auto kLayout =
      MakeLayout(Field{"order_id", &Cancelled::order_id},
                 Field{"account_id", &Cancelled::account_id},
                 Field{"client_order_id", &Cancelled::client_order_id},
                 Field{"instrument_id", &Cancelled::instrument_id},
                 Field{"cancelled_quantity", &Cancelled::cancelled_quantity},
                 Field{"reason", &Cancelled::reason});
};

template <>
struct MessageTraits<Replaced> {
  static constexpr Kind kKind = Kind::kReplaced;
  static constexpr std::string_view kName = "Replaced";
  static constexpr auto kLayout = MakeLayout(
      Field{"order_id", &Replaced::order_id},
      Field{"account_id", &Replaced::account_id},
      Field{"client_order_id", &Replaced::client_order_id},
      Field{"price", &Replaced::price}, Field{"quantity", &Replaced::quantity},
      Field{"priority_kept", &Replaced::priority_kept});
};

template <>
struct MessageTraits<SequenceGap> {
  static constexpr Kind kKind = Kind::kSequenceGap;
  static constexpr std::string_view kName = "SequenceGap";
  static constexpr auto kLayout =
      MakeLayout(Field{"expected_sequence", &SequenceGap::expected_sequence});
};

template <>
struct MessageTraits<ReportsGone> {
  static constexpr Kind kKind = Kind::kReportsGone;
  static constexpr std::string_view kName = "ReportsGone";
  static constexpr auto kLayout =
      MakeLayout(Field{"resend_command", &ReportsGone::resend_command},
                 Field{"resend_from", &ReportsGone::resend_from});
};

template <>
struct MessageTraits<Busy> {
  static constexpr Kind kKind = Kind::kBusy;
  static constexpr std::string_view kName = "Busy";
  static constexpr auto kLayout =
      MakeLayout(Field{"expected_sequence", &Busy::expected_sequence},
                 Field{"cause", &Busy::cause});
};

template <>
struct MessageTraits<MassCancelDone> {
  static constexpr Kind kKind = Kind::kMassCancelDone;
  static constexpr std::string_view kName = "MassCancelDone";
  static constexpr auto kLayout =
      MakeLayout(Field{"account_id", &MassCancelDone::account_id},
                 Field{"request_id", &MassCancelDone::request_id},
                 Field{"instrument_id", &MassCancelDone::instrument_id},
                 Field{"side", &MassCancelDone::side},
                 Field{"scope", &MassCancelDone::scope},
                 Field{"cancelled_orders", &MassCancelDone::cancelled_orders});
};

template <>
struct MessageTraits<HeartbeatAck> {
  static constexpr Kind kKind = Kind::kHeartbeatAck;
  static constexpr std::string_view kName = "HeartbeatAck";
  static constexpr auto kLayout =
      MakeLayout(Field{"nonce", &HeartbeatAck::nonce},
                 Field{"expected_sequence", &HeartbeatAck::expected_sequence},
                 Field{"next_report", &HeartbeatAck::next_report});
};

template <>
struct MessageTraits<SessionClosed> {
  static constexpr Kind kKind = Kind::kSessionClosed;
  static constexpr std::string_view kName = "SessionClosed";
  static constexpr auto kLayout =
      MakeLayout(Field{"account_id", &SessionClosed::account_id},
                 Field{"request_id", &SessionClosed::request_id},
                 Field{"reason", &SessionClosed::reason},
                 Field{"cancelled_orders", &SessionClosed::cancelled_orders});
};

template <>
struct MessageTraits<OrderStatus> {
  static constexpr Kind kKind = Kind::kOrderStatus;
  static constexpr std::string_view kName = "OrderStatus";
  static constexpr auto kLayout = MakeLayout(
      Field{"order_id", &OrderStatus::order_id},
      Field{"account_id", &OrderStatus::account_id},
      Field{"client_order_id", &OrderStatus::client_order_id},
      Field{"instrument_id", &OrderStatus::instrument_id},
      Field{"side", &OrderStatus::side}, Field{"state", &OrderStatus::state},
      Field{"price", &OrderStatus::price},
      Field{"leaves_quantity", &OrderStatus::leaves_quantity},
      Field{"executed_quantity", &OrderStatus::executed_quantity});
};

// ---------------------------------------------------------------------------
// Derived sizes.

inline constexpr std::size_t kFrameHeaderSize =
    MessageTraits<FrameHeader>::kLayout.kSize;
inline constexpr std::size_t kSequenceOffset =
    OffsetOf<MessageTraits<FrameHeader>::kLayout, &FrameHeader::sequence>();
inline constexpr std::size_t kKindOffset =
    OffsetOf<MessageTraits<FrameHeader>::kLayout, &FrameHeader::kind>();

template <typename Model>
inline constexpr std::size_t kBodySize = MessageTraits<Model>::kLayout.kSize;

template <typename Model>
inline constexpr std::size_t kFrameSize = kFrameHeaderSize + kBodySize<Model>;

// Offset of `Member` from the start of its frame (header included).
template <auto Member>
consteval std::size_t FrameOffsetOf() {
  using Model =
      typename internal::MemberPointerTraits<decltype(Member)>::ModelType;
  return kFrameHeaderSize + OffsetOf<MessageTraits<Model>::kLayout, Member>();
}

// Pinned to PROTOCOL.md.
static_assert(kFrameHeaderSize == 9 && kSequenceOffset == 0 &&
              kKindOffset == 8);
static_assert(kBodySize<NewLimit> == 38 && kFrameSize<NewLimit> == 47);
static_assert(kBodySize<NewMarket> == 29 && kFrameSize<NewMarket> == 38);
static_assert(kBodySize<CancelByOrder> == 16 &&
              kFrameSize<CancelByOrder> == 25);
static_assert(kBodySize<CancelByClient> == 16 &&
              kFrameSize<CancelByClient> == 25);
static_assert(kBodySize<Replace> == 40 && kFrameSize<Replace> == 49);
static_assert(kBodySize<Accepted> == 46 && kFrameSize<Accepted> == 55);
static_assert(kBodySize<Rejected> == 27 && kFrameSize<Rejected> == 36);
static_assert(kBodySize<Filled> == 62 && kFrameSize<Filled> == 71);
static_assert(kBodySize<Cancelled> == 37 && kFrameSize<Cancelled> == 46);
static_assert(kBodySize<Replaced> == 41 && kFrameSize<Replaced> == 50);
static_assert(kBodySize<SequenceGap> == 8 && kFrameSize<SequenceGap> == 17);
static_assert(kBodySize<ReportsGone> == 16 && kFrameSize<ReportsGone> == 25);
static_assert(kBodySize<Busy> == 9 && kFrameSize<Busy> == 18);
static_assert(kBodySize<MassCancel> == 22 && kFrameSize<MassCancel> == 31);
static_assert(kBodySize<MassCancelDone> == 26 &&
              kFrameSize<MassCancelDone> == 35);
static_assert(kBodySize<Heartbeat> == 8 && kFrameSize<Heartbeat> == 17);
static_assert(kBodySize<HeartbeatAck> == 24 && kFrameSize<HeartbeatAck> == 33);
static_assert(kBodySize<Goodbye> == 16 && kFrameSize<Goodbye> == 25);
static_assert(kBodySize<OrderStatusRequest> == 24 &&
              kFrameSize<OrderStatusRequest> == 33);
static_assert(kBodySize<OrderStatus> == 54 && kFrameSize<OrderStatus> == 63);
static_assert(kBodySize<SessionClosed> == 21 &&
              kFrameSize<SessionClosed> == 30);
// A few offsets PROTOCOL.md states outright, as a cross-check of the
// declarations (the layouts, not these lines, are what the code uses).
static_assert(FrameOffsetOf<&NewLimit::price>() == 9 + 22);
static_assert(FrameOffsetOf<&NewMarket::quantity>() == 9 + 21);
static_assert(FrameOffsetOf<&Replace::quantity>() == 9 + 32);
static_assert(FrameOffsetOf<&Rejected::reason>() == 9 + 25);
static_assert(FrameOffsetOf<&Filled::leaves_quantity>() == 9 + 54);
static_assert(FrameOffsetOf<&Cancelled::reason>() == 9 + 36);
static_assert(FrameOffsetOf<&Replaced::priority_kept>() == 9 + 40);
static_assert(FrameOffsetOf<&MassCancel::scope>() == 9 + 21);
static_assert(FrameOffsetOf<&MassCancelDone::cancelled_orders>() == 9 + 22);
static_assert(FrameOffsetOf<&SessionClosed::cancelled_orders>() == 9 + 17);
static_assert(FrameOffsetOf<&OrderStatus::executed_quantity>() == 9 + 46);

// Models are plain values.
static_assert(std::is_trivially_copyable_v<NewLimit>);
static_assert(std::is_trivially_copyable_v<NewMarket>);
static_assert(std::is_trivially_copyable_v<CancelByOrder>);
static_assert(std::is_trivially_copyable_v<CancelByClient>);
static_assert(std::is_trivially_copyable_v<Replace>);
static_assert(std::is_trivially_copyable_v<Accepted>);
static_assert(std::is_trivially_copyable_v<Rejected>);
static_assert(std::is_trivially_copyable_v<Filled>);
static_assert(std::is_trivially_copyable_v<Cancelled>);
static_assert(std::is_trivially_copyable_v<Replaced>);
static_assert(std::is_trivially_copyable_v<SequenceGap>);
static_assert(std::is_trivially_copyable_v<ReportsGone>);
static_assert(std::is_trivially_copyable_v<Busy>);
static_assert(std::is_trivially_copyable_v<MassCancel>);
static_assert(std::is_trivially_copyable_v<MassCancelDone>);
static_assert(std::is_trivially_copyable_v<Heartbeat>);
static_assert(std::is_trivially_copyable_v<HeartbeatAck>);
static_assert(std::is_trivially_copyable_v<Goodbye>);
static_assert(std::is_trivially_copyable_v<SessionClosed>);
static_assert(std::is_trivially_copyable_v<OrderStatusRequest>);
static_assert(std::is_trivially_copyable_v<OrderStatus>);

// Calls `fn(std::type_identity<Model>{})` for every frame body model, commands
// first, in kind order. The one list of kinds the rest of the codec iterates.
template <typename Fn>
constexpr void ForEachMessage(Fn&& fn) {
  fn(std::type_identity<NewLimit>{});
  fn(std::type_identity<NewMarket>{});
  fn(std::type_identity<CancelByOrder>{});
  fn(std::type_identity<CancelByClient>{});
  fn(std::type_identity<Replace>{});
  fn(std::type_identity<MassCancel>{});
  fn(std::type_identity<Heartbeat>{});
  fn(std::type_identity<Goodbye>{});
  fn(std::type_identity<OrderStatusRequest>{});
  fn(std::type_identity<Accepted>{});
  fn(std::type_identity<Rejected>{});
  fn(std::type_identity<Filled>{});
  fn(std::type_identity<Cancelled>{});
  fn(std::type_identity<Replaced>{});
  fn(std::type_identity<SequenceGap>{});
  fn(std::type_identity<ReportsGone>{});
  fn(std::type_identity<Busy>{});
  fn(std::type_identity<MassCancelDone>{});
  fn(std::type_identity<HeartbeatAck>{});
  fn(std::type_identity<SessionClosed>{});
  fn(std::type_identity<OrderStatus>{});
}

// A control frame of the command direction (Heartbeat): it goes to the
// service with commands but is never journaled or applied.
template <typename Model>
inline constexpr bool kIsClientControl = false;
template <>
inline constexpr bool kIsClientControl<Heartbeat> = true;

// Kinds 0x01-0x3F go to the service, 0x41-0x7F to a client.
template <typename Model>
inline constexpr bool kIsCommand =
    static_cast<std::uint8_t>(MessageTraits<Model>::kKind) < 0x40 &&
    !kIsClientControl<Model>;

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_MESSAGES_H_
