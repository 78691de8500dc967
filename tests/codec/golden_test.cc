// The published vectors of docs/PROTOCOL-GOLDEN.md: every golden
// frame decodes to exactly the field values docs/PROTOCOL.md states for it, and
// encoding those values gives exactly its bytes, through every decoder and
// encoder the codec has. The values below are typed from the text of
// docs/PROTOCOL.md.
#include "tests/codec/golden.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

using golden::kFrames;

// A golden frame's stated values: its sequence and its model.
template <typename Model>
struct Stated {
  std::size_t golden_index;  // into golden::kFrames
  std::uint64_t sequence;
  Model model;
};

// docs/PROTOCOL-GOLDEN.md, one line each.
// NewLimit seq=1 account=7 client_order_id=1001 instrument=42 Buy GTC
// price=10050 qty=300
constexpr Stated<NewLimit> kNewLimitBuy{
    0, 1,
    NewLimit{.account_id = 7,
             .client_order_id = 1001,
             .instrument_id = 42,
             .side = Side::kBuy,
             .time_in_force = TimeInForce::kGoodTillCancel,
             .price = 10050,
             .quantity = 300}};
// NewLimit seq=2 account=7 client_order_id=1002 instrument=42 Sell IOC
// price=-5 qty=1
constexpr Stated<NewLimit> kNewLimitSell{
    1, 2,
    NewLimit{.account_id = 7,
             .client_order_id = 1002,
             .instrument_id = 42,
             .side = Side::kSell,
             .time_in_force = TimeInForce::kImmediateOrCancel,
             .price = -5,
             .quantity = 1}};
// NewMarket seq=3 account=9 client_order_id=77 instrument=42 Sell qty=250
constexpr Stated<NewMarket> kNewMarket{2, 3,
                                       NewMarket{.account_id = 9,
                                                 .client_order_id = 77,
                                                 .instrument_id = 42,
                                                 .side = Side::kSell,
                                                 .quantity = 250}};
// CancelByOrder seq=4 account=7 order_id=0x0102030405060708
constexpr Stated<CancelByOrder> kCancelByOrder{
    3, 4, CancelByOrder{.account_id = 7, .order_id = 0x0102030405060708}};
// CancelByClient seq=5 account=7 client_order_id=1001
constexpr Stated<CancelByClient> kCancelByClient{
    4, 5, CancelByClient{.account_id = 7, .client_order_id = 1001}};
// Replace seq=6 account=7 order_id=3 new_client_order_id=1003 price=10049
// qty=200
constexpr Stated<Replace> kReplace{5, 6,
                                   Replace{.account_id = 7,
                                           .order_id = 3,
                                           .new_client_order_id = 1003,
                                           .price = 10049,
                                           .quantity = 200}};
// Accepted seq=1 order_id=3 account=7 client_order_id=1001 instrument=42 Buy
// GTC price=10050 qty=300
constexpr Stated<Accepted> kAccepted{
    6, 1,
    Accepted{.order_id = 3,
             .account_id = 7,
             .client_order_id = 1001,
             .instrument_id = 42,
             .side = Side::kBuy,
             .time_in_force = TimeInForce::kGoodTillCancel,
             .price = 10050,
             .quantity = 300}};
// Rejected seq=2 account=7 client_order_id=1002 order_id=0 command_kind=0x01
// reason=4 InvalidPrice
constexpr Stated<Rejected> kRejected{
    7, 2,
    Rejected{.account_id = 7,
             .client_order_id = 1002,
             .order_id = 0,
             .command_kind = Kind::kNewLimit,
             .reason = RejectReason::kInvalidPrice}};
// Filled seq=3 order_id=3 account=7 client_order_id=1001 match_id=1
// instrument=42 Buy maker price=10050 qty=250 leaves=50
constexpr Stated<Filled> kFilled{8, 3,
                                 Filled{.order_id = 3,
                                        .account_id = 7,
                                        .client_order_id = 1001,
                                        .match_id = 1,
                                        .instrument_id = 42,
                                        .side = Side::kBuy,
                                        .liquidity = Liquidity::kMaker,
                                        .price = 10050,
                                        .quantity = 250,
                                        .leaves_quantity = 50}};
// Cancelled seq=4 order_id=3 account=7 client_order_id=1001 instrument=42
// cancelled=50 reason=1 Requested
constexpr Stated<Cancelled> kCancelled{
    9, 4,
    Cancelled{.order_id = 3,
              .account_id = 7,
              .client_order_id = 1001,
              .instrument_id = 42,
              .cancelled_quantity = 50,
              .reason = CancelReason::kRequested}};
// Replaced seq=5 order_id=3 account=7 client_order_id=1003 price=10049
// qty=200 priority_kept=2
constexpr Stated<Replaced> kReplaced{
    10, 5,
    Replaced{.order_id = 3,
             .account_id = 7,
             .client_order_id = 1003,
             .price = 10049,
             .quantity = 200,
             .priority_kept = PriorityKept::kNo}};
// SequenceGap seq=0 expected_sequence=17
constexpr Stated<SequenceGap> kSequenceGap{
    11, 0, SequenceGap{.expected_sequence = 17}};
// ReportsGone seq=0 resend_command=5 resend_from=9
constexpr Stated<ReportsGone> kReportsGone{
    12, 0, ReportsGone{.resend_command = 5, .resend_from = 9}};
// Busy seq=0 expected_sequence=17 cause=1 JournalFull
constexpr Stated<Busy> kBusy{
    13, 0, Busy{.expected_sequence = 17, .cause = BusyCause::kJournalFull}};
// MassCancel seq=7 account=7 request_id=42 instrument=0 side=3 Both
// scope=1 Account
constexpr Stated<MassCancel> kMassCancel{
    14, 7,
    MassCancel{.account_id = 7,
               .request_id = 42,
               .instrument_id = 0,
               .side = MassCancelSide::kBoth,
               .scope = MassCancelScope::kAccount}};
// Heartbeat seq=0 nonce=0x0102030405060708
constexpr Stated<Heartbeat> kHeartbeat{16, 0,
                                       Heartbeat{.nonce = 0x0102030405060708}};
// HeartbeatAck seq=0 nonce=0x0102030405060708 expected_sequence=8
// next_report=12
constexpr Stated<HeartbeatAck> kHeartbeatAck{
    17, 0,
    HeartbeatAck{.nonce = 0x0102030405060708,
                 .expected_sequence = 8,
                 .next_report = 12}};
// MassCancelDone seq=6 account=7 request_id=42 instrument=0 side=3 Both
// scope=1 Account cancelled_orders=2
constexpr Stated<MassCancelDone> kMassCancelDone{
    15, 6,
    MassCancelDone{.account_id = 7,
                   .request_id = 42,
                   .instrument_id = 0,
                   .side = MassCancelSide::kBoth,
                   .scope = MassCancelScope::kAccount,
                   .cancelled_orders = 2}};
// Goodbye seq=8 account=7 request_id=43
constexpr Stated<Goodbye> kGoodbye{18, 8,
                                   Goodbye{.account_id = 7, .request_id = 43}};
// SessionClosed seq=7 account=7 request_id=43 reason=1 Goodbye
// cancelled_orders=2
constexpr Stated<SessionClosed> kSessionClosed{
    19, 7,
    SessionClosed{.account_id = 7,
                  .request_id = 43,
                  .reason = SessionCloseReason::kGoodbye,
                  .cancelled_orders = 2}};
// OrderStatusRequest seq=9 account=7 order_id=3 client_order_id=1003
constexpr Stated<OrderStatusRequest> kOrderStatusRequest{
    20, 9,
    OrderStatusRequest{
        .account_id = 7, .order_id = 3, .client_order_id = 1003}};
// OrderStatus seq=8 order_id=3 account=7 client_order_id=1003 instrument=42
// side=1 Buy state=1 Live price=10049 leaves_quantity=200
// executed_quantity=100
constexpr Stated<OrderStatus> kOrderStatus{
    21, 8,
    OrderStatus{.order_id = 3,
                .account_id = 7,
                .client_order_id = 1003,
                .instrument_id = 42,
                .side = Side::kBuy,
                .state = OrderState::kLive,
                .price = 10049,
                .leaves_quantity = 200,
                .executed_quantity = 100}};

// Every field of the Command each golden command frame decodes to, typed
// out, including the zeros of the fields each kind lacks, Replace's
// new_client_order_id in client_order_id, and MassCancel's and Goodbye's
// request_id in client_order_id (MassCancel's side in side, its scope in
// time_in_force); an OrderStatusRequest fills order_id and client_order_id
// both.
struct ExpectedCommand {
  std::size_t golden_index;  // into golden::kFrames
  Command command;
};
constexpr std::array<ExpectedCommand, 9> kExpectedCommands = {{
    {0,
     {.sequence = 1,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(1001),
      .order_id = OrderId(0),
      .price = Price(10050),
      .quantity = Quantity(300),
      .instrument_id = InstrumentId(42),
      .kind = Kind::kNewLimit,
      .side = Side::kBuy,
      .time_in_force = TimeInForce::kGoodTillCancel}},
    {1,
     {.sequence = 2,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(1002),
      .order_id = OrderId(0),
      .price = Price(-5),
      .quantity = Quantity(1),
      .instrument_id = InstrumentId(42),
      .kind = Kind::kNewLimit,
      .side = Side::kSell,
      .time_in_force = TimeInForce::kImmediateOrCancel}},
    {2,
     {.sequence = 3,
      .account_id = AccountId(9),
      .client_order_id = ClientOrderId(77),
      .order_id = OrderId(0),
      .price = Price(0),
      .quantity = Quantity(250),
      .instrument_id = InstrumentId(42),
      .kind = Kind::kNewMarket,
      .side = Side::kSell,
      .time_in_force = TimeInForce{0}}},
    {3,
     {.sequence = 4,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(0),
      .order_id = OrderId(0x0102030405060708),
      .price = Price(0),
      .quantity = Quantity(0),
      .instrument_id = InstrumentId(0),
      .kind = Kind::kCancelByOrder,
      .side = Side{0},
      .time_in_force = TimeInForce{0}}},
    {4,
     {.sequence = 5,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(1001),
      .order_id = OrderId(0),
      .price = Price(0),
      .quantity = Quantity(0),
      .instrument_id = InstrumentId(0),
      .kind = Kind::kCancelByClient,
      .side = Side{0},
      .time_in_force = TimeInForce{0}}},
    {5,
     {.sequence = 6,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(1003),
      .order_id = OrderId(3),
      .price = Price(10049),
      .quantity = Quantity(200),
      .instrument_id = InstrumentId(0),
      .kind = Kind::kReplace,
      .side = Side{0},
      .time_in_force = TimeInForce{0}}},
    {14,
     {.sequence = 7,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(42),  // request_id
      .order_id = OrderId(0),
      .price = Price(0),
      .quantity = Quantity(0),
      .instrument_id = InstrumentId(0),
      .kind = Kind::kMassCancel,
      .side = Side{3},                    // Both
      .time_in_force = TimeInForce{1}}},  // scope Account
    {18,
     {.sequence = 8,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(43),  // request_id
      .order_id = OrderId(0),
      .price = Price(0),
      .quantity = Quantity(0),
      .instrument_id = InstrumentId(0),
      .kind = Kind::kGoodbye,
      .side = Side{0},
      .time_in_force = TimeInForce{0}}},
    {20,
     {.sequence = 9,
      .account_id = AccountId(7),
      .client_order_id = ClientOrderId(1003),
      .order_id = OrderId(3),
      .price = Price(0),
      .quantity = Quantity(0),
      .instrument_id = InstrumentId(0),
      .kind = Kind::kOrderStatusRequest,
      .side = Side{0},
      .time_in_force = TimeInForce{0}}},
}};

std::vector<std::byte> GoldenBytes(std::size_t index) {
  return FromHex(kFrames[index].hex);
}

// Decoding: FrameView, View<Model>::Parse, ToModel and every Get<>.
template <typename Model>
void ExpectDecodes(const Stated<Model>& stated) {
  SCOPED_TRACE(kFrames[stated.golden_index].name);
  const std::vector<std::byte> bytes = GoldenBytes(stated.golden_index);
  ASSERT_EQ(bytes.size(), kFrames[stated.golden_index].size);
  const ExactBuffer exact(bytes);

  const Result<FrameView> frame = FrameView::Parse(exact.span());
  ASSERT_TRUE(frame.ok()) << Name(frame.error());
  EXPECT_EQ(frame->kind(), MessageTraits<Model>::kKind);
  EXPECT_EQ(frame->sequence(), stated.sequence);
  EXPECT_EQ(frame->size(), bytes.size());
  EXPECT_EQ(frame->is_command(), kIsCommand<Model>);

  const Result<View<Model>> view = View<Model>::Parse(exact.span());
  ASSERT_TRUE(view.ok()) << Name(view.error());
  EXPECT_EQ(view->sequence(), stated.sequence);
  EXPECT_TRUE(ModelsEqual(stated.model, view->ToModel()));
  ForEachFieldIndex<Model>([&](auto index) {
    constexpr auto kMember = kMemberAt<Model, decltype(index)::value>;
    EXPECT_EQ(view->template Get<kMember>(), stated.model.*kMember)
        << std::get<decltype(index)::value>(
               MessageTraits<Model>::kLayout.fields)
               .name;
  });
}

// Encoding the stated values with EncodeFrame gives the golden bytes.
template <typename Model>
void ExpectEncodes(const Stated<Model>& stated) {
  SCOPED_TRACE(kFrames[stated.golden_index].name);
  const std::vector<std::byte> golden_bytes = GoldenBytes(stated.golden_index);
  std::vector<std::byte> out(golden_bytes.size());
  const Result<std::size_t> written =
      EncodeFrame(stated.sequence, stated.model, out);
  ASSERT_TRUE(written.ok()) << Name(written.error());
  EXPECT_EQ(*written, golden_bytes.size());
  EXPECT_EQ(Hex(out), kFrames[stated.golden_index].hex);
}

// The same through the normalized Command: DecodeCommand gives the stated
// values; Command::From + EncodeCommand gives the golden bytes.
template <typename Model>
void ExpectCommandRoundTrip(const Stated<Model>& stated) {
  SCOPED_TRACE(kFrames[stated.golden_index].name);
  const std::vector<std::byte> golden_bytes = GoldenBytes(stated.golden_index);
  const ExactBuffer exact(golden_bytes);
  Command command{};
  const Result<std::size_t> read = DecodeCommand(exact.span(), command);
  ASSERT_TRUE(read.ok()) << Name(read.error());
  EXPECT_EQ(*read, golden_bytes.size());
  EXPECT_EQ(command.sequence, stated.sequence);
  EXPECT_EQ(command.kind, MessageTraits<Model>::kKind);
  EXPECT_TRUE(ModelsEqual(stated.model, command.As<Model>()));

  std::vector<std::byte> out(golden_bytes.size());
  const Result<std::size_t> written =
      EncodeCommand(Command::From(stated.sequence, stated.model), out);
  ASSERT_TRUE(written.ok()) << Name(written.error());
  EXPECT_EQ(*written, golden_bytes.size());
  EXPECT_EQ(Hex(out), kFrames[stated.golden_index].hex);
}

TEST(GoldenFrameTest, EveryGoldenFrameHasItsStatedSizeAndKindByte) {
  for (const golden::GoldenFrame& g : kFrames) {
    SCOPED_TRACE(g.name);
    const std::vector<std::byte> bytes = FromHex(g.hex);
    ASSERT_EQ(bytes.size(), g.size);
    EXPECT_EQ(static_cast<std::uint8_t>(bytes[8]),
              static_cast<std::uint8_t>(g.kind));
  }
}

TEST(GoldenFrameTest, NewLimitFramesDecodeToTheirStatedValues) {
  ExpectDecodes(kNewLimitBuy);
  ExpectDecodes(kNewLimitSell);
}

TEST(GoldenFrameTest, NewLimitFramesEncodeToTheirGoldenBytes) {
  ExpectEncodes(kNewLimitBuy);
  ExpectEncodes(kNewLimitSell);
}

TEST(GoldenFrameTest, NewMarketRoundTripsTheGoldenBytes) {
  ExpectDecodes(kNewMarket);
  ExpectEncodes(kNewMarket);
}

TEST(GoldenFrameTest, CancelByOrderRoundTripsTheGoldenBytes) {
  ExpectDecodes(kCancelByOrder);
  ExpectEncodes(kCancelByOrder);
}

TEST(GoldenFrameTest, CancelByClientRoundTripsTheGoldenBytes) {
  ExpectDecodes(kCancelByClient);
  ExpectEncodes(kCancelByClient);
}

TEST(GoldenFrameTest, ReplaceRoundTripsTheGoldenBytes) {
  ExpectDecodes(kReplace);
  ExpectEncodes(kReplace);
}

TEST(GoldenFrameTest, AcceptedRoundTripsTheGoldenBytes) {
  ExpectDecodes(kAccepted);
  ExpectEncodes(kAccepted);
}

TEST(GoldenFrameTest, RejectedRoundTripsTheGoldenBytes) {
  ExpectDecodes(kRejected);
  ExpectEncodes(kRejected);
}

TEST(GoldenFrameTest, FilledRoundTripsTheGoldenBytes) {
  ExpectDecodes(kFilled);
  ExpectEncodes(kFilled);
}

TEST(GoldenFrameTest, CancelledRoundTripsTheGoldenBytes) {
  ExpectDecodes(kCancelled);
  ExpectEncodes(kCancelled);
}

TEST(GoldenFrameTest, ReplacedRoundTripsTheGoldenBytes) {
  ExpectDecodes(kReplaced);
  ExpectEncodes(kReplaced);
}

TEST(GoldenFrameTest, SequenceGapRoundTripsTheGoldenBytes) {
  ExpectDecodes(kSequenceGap);
  ExpectEncodes(kSequenceGap);
}

TEST(GoldenFrameTest, ReportsGoneRoundTripsTheGoldenBytes) {
  ExpectDecodes(kReportsGone);
  ExpectEncodes(kReportsGone);
}

TEST(GoldenFrameTest, BusyRoundTripsTheGoldenBytes) {
  ExpectDecodes(kBusy);
  ExpectEncodes(kBusy);
}

TEST(GoldenFrameTest, HeartbeatRoundTripsTheGoldenBytes) {
  ExpectDecodes(kHeartbeat);
  ExpectEncodes(kHeartbeat);
}

TEST(GoldenFrameTest, HeartbeatAckRoundTripsTheGoldenBytes) {
  ExpectDecodes(kHeartbeatAck);
  ExpectEncodes(kHeartbeatAck);
}

TEST(GoldenFrameTest, MassCancelRoundTripsTheGoldenBytes) {
  ExpectDecodes(kMassCancel);
  ExpectEncodes(kMassCancel);
}

TEST(GoldenFrameTest, MassCancelDoneRoundTripsTheGoldenBytes) {
  ExpectDecodes(kMassCancelDone);
  ExpectEncodes(kMassCancelDone);
}

TEST(GoldenFrameTest, GoodbyeRoundTripsTheGoldenBytes) {
  ExpectDecodes(kGoodbye);
  ExpectEncodes(kGoodbye);
}

TEST(GoldenFrameTest, SessionClosedRoundTripsTheGoldenBytes) {
  ExpectDecodes(kSessionClosed);
  ExpectEncodes(kSessionClosed);
}

TEST(GoldenFrameTest, OrderStatusRequestRoundTripsTheGoldenBytes) {
  ExpectDecodes(kOrderStatusRequest);
  ExpectEncodes(kOrderStatusRequest);
}

TEST(GoldenFrameTest, OrderStatusRoundTripsTheGoldenBytes) {
  ExpectDecodes(kOrderStatus);
  ExpectEncodes(kOrderStatus);
}

TEST(GoldenFrameTest, CommandFramesRoundTripThroughTheNormalizedCommand) {
  ExpectCommandRoundTrip(kNewLimitBuy);
  ExpectCommandRoundTrip(kNewLimitSell);
  ExpectCommandRoundTrip(kNewMarket);
  ExpectCommandRoundTrip(kCancelByOrder);
  ExpectCommandRoundTrip(kCancelByClient);
  ExpectCommandRoundTrip(kReplace);
  ExpectCommandRoundTrip(kMassCancel);
  ExpectCommandRoundTrip(kGoodbye);
  ExpectCommandRoundTrip(kOrderStatusRequest);
}

// Every field of the decoded Command against kExpectedCommands; the decoder
// must overwrite every field of a poisoned Command.
TEST(GoldenFrameTest, DecodeCommandFillsEveryNormalizedFieldOfTheGoldenFrames) {
  for (const ExpectedCommand& e : kExpectedCommands) {
    SCOPED_TRACE(kFrames[e.golden_index].name);
    const std::vector<std::byte> bytes = GoldenBytes(e.golden_index);
    Command c;
    std::memset(&c, 0xAB, sizeof(c));  // every field must be overwritten
    ASSERT_TRUE(DecodeCommand(bytes, c).ok());
    EXPECT_EQ(c.sequence, e.command.sequence);
    EXPECT_EQ(c.account_id, e.command.account_id);
    EXPECT_EQ(c.client_order_id, e.command.client_order_id);
    EXPECT_EQ(c.order_id, e.command.order_id);
    EXPECT_EQ(c.price, e.command.price);
    EXPECT_EQ(c.quantity, e.command.quantity);
    EXPECT_EQ(c.instrument_id, e.command.instrument_id);
    EXPECT_EQ(c.kind, e.command.kind);
    EXPECT_EQ(c.side, e.command.side);
    EXPECT_EQ(c.time_in_force, e.command.time_in_force);
  }
}

TEST(GoldenDatagramTest, ParsesToItsStatedHeaderAndFrames) {
  const std::vector<std::byte> bytes = FromHex(golden::kDatagramHex);
  ASSERT_EQ(bytes.size(), golden::kDatagramSize);
  const ExactBuffer exact(bytes);
  std::size_t error_offset = 999;
  const Result<DatagramView> datagram =
      DatagramView::Parse(exact.span(), FrameFilter::kCommands, &error_offset);
  ASSERT_TRUE(datagram.ok()) << Name(datagram.error());
  EXPECT_EQ(error_offset, 999u) << "success must not write error_offset";
  EXPECT_EQ(datagram->session_id(), golden::kDatagramSessionId);
  EXPECT_EQ(datagram->frame_count(), 2);
  const DatagramHeader header = datagram->header();
  EXPECT_EQ(header.magic, 0x574F);
  EXPECT_EQ(header.version, 1);
  EXPECT_EQ(header.flags, 0);
  EXPECT_EQ(header.session_id, 0xCAFEu);
  EXPECT_EQ(header.frame_count, 2);
  EXPECT_EQ(header.reserved, 0);
  EXPECT_EQ(datagram->bytes().size(), golden::kDatagramSize);
  EXPECT_EQ(datagram->frame_bytes().size(), golden::kDatagramSize - 12);

  std::vector<Command> commands;
  for (FrameView frame : *datagram) {
    Command c{};
    ASSERT_TRUE(DecodeCommand(frame.bytes(), c).ok());
    commands.push_back(c);
  }
  ASSERT_EQ(commands.size(), 2u);
  // The first NewLimit above, sequence 1.
  EXPECT_EQ(commands[0].kind, Kind::kNewLimit);
  EXPECT_TRUE(ModelsEqual(kNewLimitBuy.model, commands[0].As<NewLimit>()));
  EXPECT_EQ(commands[0].sequence, 1u);
  // CancelByClient of account 7, client_order_id 1001, sequence 2.
  EXPECT_EQ(commands[1].kind, Kind::kCancelByClient);
  EXPECT_EQ(commands[1].sequence, 2u);
  EXPECT_EQ(commands[1].account_id.value(), 7u);
  EXPECT_EQ(commands[1].client_order_id.value(), 1001u);
}

TEST(GoldenDatagramTest, DatagramBuilderAppendProducesTheGoldenBytes) {
  std::array<std::byte, kMaxDatagramSize> buffer{};
  DatagramBuilder builder(buffer, golden::kDatagramSessionId);
  ASSERT_EQ(builder.Append(1, kNewLimitBuy.model), CodecError::kOk);
  ASSERT_EQ(builder.Append(
                2, CancelByClient{.account_id = 7, .client_order_id = 1001}),
            CodecError::kOk);
  EXPECT_EQ(builder.frame_count(), 2u);
  EXPECT_EQ(builder.size(), golden::kDatagramSize);
  EXPECT_EQ(Hex(builder.bytes()), golden::kDatagramHex);
}

TEST(GoldenDatagramTest, DatagramBuilderAppendFrameProducesTheGoldenBytes) {
  std::array<std::byte, kMaxDatagramSize> buffer{};
  DatagramBuilder builder(buffer, golden::kDatagramSessionId);
  const std::vector<std::byte> first = GoldenBytes(0);
  const std::vector<std::byte> second =
      FromHex("0200000000000000040700000000000000e903000000000000");  // seq 2
  ASSERT_EQ(builder.AppendFrame(first), CodecError::kOk);
  ASSERT_EQ(builder.AppendFrame(second), CodecError::kOk);
  EXPECT_EQ(Hex(builder.bytes()), golden::kDatagramHex);
}

}  // namespace
}  // namespace orderwire::codec::test
