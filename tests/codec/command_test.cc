// The normalized Command: DecodeCommand, DecodeCommands, EncodeCommand and
// Command::As / Command::From, over the command kinds. The expected
// Command of each model is typed out by hand below (which model field goes to
// which Command field, and which Command fields stay zero), independently of
// the slots declared in messages.h.
#include "codec/command.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

using Rng = ::orderwire::codec::testing::SplitMix64;

// The Command each command model must decode to (command.h's field comments).
Command Expected(std::uint64_t sequence, const NewLimit& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.client_order_id),
          .order_id = OrderId(0),
          .price = Price(m.price),
          .quantity = Quantity(m.quantity),
          .instrument_id = InstrumentId(m.instrument_id),
          .kind = Kind::kNewLimit,
          .side = m.side,
          .time_in_force = m.time_in_force};
}
Command Expected(std::uint64_t sequence, const NewMarket& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.client_order_id),
          .order_id = OrderId(0),
          .price = Price(0),
          .quantity = Quantity(m.quantity),
          .instrument_id = InstrumentId(m.instrument_id),
          .kind = Kind::kNewMarket,
          .side = m.side,
          .time_in_force = TimeInForce{0}};
}
Command Expected(std::uint64_t sequence, const CancelByOrder& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(0),
          .order_id = OrderId(m.order_id),
          .price = Price(0),
          .quantity = Quantity(0),
          .instrument_id = InstrumentId(0),
          .kind = Kind::kCancelByOrder,
          .side = Side{0},
          .time_in_force = TimeInForce{0}};
}
Command Expected(std::uint64_t sequence, const CancelByClient& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.client_order_id),
          .order_id = OrderId(0),
          .price = Price(0),
          .quantity = Quantity(0),
          .instrument_id = InstrumentId(0),
          .kind = Kind::kCancelByClient,
          .side = Side{0},
          .time_in_force = TimeInForce{0}};
}
Command Expected(std::uint64_t sequence, const Replace& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.new_client_order_id),
          .order_id = OrderId(m.order_id),
          .price = Price(m.price),
          .quantity = Quantity(m.quantity),
          .instrument_id = InstrumentId(0),
          .kind = Kind::kReplace,
          .side = Side{0},
          .time_in_force = TimeInForce{0}};
}

Command Expected(std::uint64_t sequence, const MassCancel& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.request_id),
          .order_id = OrderId(0),
          .price = Price(0),
          .quantity = Quantity(0),
          .instrument_id = InstrumentId(m.instrument_id),
          .kind = Kind::kMassCancel,
          .side = static_cast<Side>(m.side),
          .time_in_force = static_cast<TimeInForce>(m.scope)};
}

Command Expected(std::uint64_t sequence, const Goodbye& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.request_id),
          .order_id = OrderId(0),
          .price = Price(0),
          .quantity = Quantity(0),
          .instrument_id = InstrumentId(0),
          .kind = Kind::kGoodbye,
          .side = Side{0},
          .time_in_force = TimeInForce{0}};
}

Command Expected(std::uint64_t sequence, const OrderStatusRequest& m) {
  return {.sequence = sequence,
          .account_id = AccountId(m.account_id),
          .client_order_id = ClientOrderId(m.client_order_id),
          .order_id = OrderId(m.order_id),
          .price = Price(0),
          .quantity = Quantity(0),
          .instrument_id = InstrumentId(0),
          .kind = Kind::kOrderStatusRequest,
          .side = Side{0},
          .time_in_force = TimeInForce{0}};
}

// Every field of two Commands, named in the failure.
::testing::AssertionResult CommandsEqual(const Command& expected,
                                         const Command& actual) {
  std::string diff;
  auto check = [&](const char* name, std::uint64_t e, std::uint64_t a) {
    if (e != a)
      absl::StrAppendFormat(&diff, " %s: expected %d, got %d;", name, e, a);
  };
  check("sequence", expected.sequence, actual.sequence);
  check("account_id", expected.account_id.value(), actual.account_id.value());
  check("client_order_id", expected.client_order_id.value(),
        actual.client_order_id.value());
  check("order_id", expected.order_id.value(), actual.order_id.value());
  check("price", Widen(expected.price.value()), Widen(actual.price.value()));
  check("quantity", expected.quantity.value(), actual.quantity.value());
  check("instrument_id", expected.instrument_id.value(),
        actual.instrument_id.value());
  check("kind", Widen(expected.kind), Widen(actual.kind));
  check("side", Widen(expected.side), Widen(actual.side));
  check("time_in_force", Widen(expected.time_in_force),
        Widen(actual.time_in_force));
  if (diff.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Command differs:" << diff;
}

// A Command whose every byte is 0xAB: a decoder must overwrite all of it.
Command Poisoned() {
  Command c;
  std::memset(&c, 0xAB, sizeof(c));
  return c;
}

template <typename Model>
class CommandKindTest : public ::testing::Test {};
TYPED_TEST_SUITE(CommandKindTest, CommandModels, ModelName);

TYPED_TEST(CommandKindTest,
           DecodeCommandFillsEveryFieldAndZeroesTheAbsentOnes) {
  using Model = TypeParam;
  Rng rng(100 + static_cast<std::uint8_t>(MessageTraits<Model>::kKind));
  for (int i = 0; i < 10000; ++i) {
    const bool extreme = (i % 2) == 1;
    const Model model = RandomModel<Model>(rng, extreme);
    const std::uint64_t sequence = RandomValue<std::uint64_t>(rng, extreme);
    const ExactBuffer bytes(Frame(sequence, model));
    Command command = Poisoned();
    const Result<std::size_t> read = DecodeCommand(bytes.span(), command);
    ASSERT_TRUE(read.ok()) << Name(read.error());
    ASSERT_EQ(*read, kFrameSize<Model>);
    ASSERT_TRUE(CommandsEqual(Expected(sequence, model), command))
        << "iteration " << i;
    ASSERT_TRUE(ModelsEqual(model, command.As<Model>()));
  }
}

TYPED_TEST(CommandKindTest, EncodeCommandReproducesTheFrameBytes) {
  using Model = TypeParam;
  Rng rng(200);
  for (int i = 0; i < 5000; ++i) {
    const Model model = RandomModel<Model>(rng, (i % 2) == 1);
    const std::uint64_t sequence = rng.Next();
    const std::vector<std::byte> frame = Frame(sequence, model);
    std::vector<std::byte> out(kFrameSize<Model>);
    const Result<std::size_t> written =
        EncodeCommand(Expected(sequence, model), out);
    ASSERT_TRUE(written.ok()) << Name(written.error());
    ASSERT_EQ(*written, frame.size());
    ASSERT_EQ(out, frame) << "iteration " << i;
  }
}

TYPED_TEST(CommandKindTest, FromAndAsRoundTripTheModel) {
  using Model = TypeParam;
  Rng rng(300);
  for (int i = 0; i < 5000; ++i) {
    const Model model = RandomModel<Model>(rng, (i % 2) == 1);
    const std::uint64_t sequence = rng.Next();
    const Command command = Command::From(sequence, model);
    ASSERT_TRUE(CommandsEqual(Expected(sequence, model), command));
    ASSERT_TRUE(ModelsEqual(model, command.As<Model>()));
  }
}

TYPED_TEST(CommandKindTest, RoundTripsEveryExtremeValueInEveryField) {
  using Model = TypeParam;
  ForEachFieldIndex<Model>([&](auto index) {
    constexpr auto kMember = kMemberAt<Model, decltype(index)::value>;
    using T = std::remove_cvref_t<decltype(Model{}.*kMember)>;
    for (T value : ExtremeValues<T>()) {
      Model model = PatternModel<Model>(0x1111111111111111);
      model.*kMember = value;
      Command command = Poisoned();
      const ExactBuffer bytes(Frame(5, model));
      ASSERT_TRUE(DecodeCommand(bytes.span(), command).ok());
      EXPECT_TRUE(CommandsEqual(Expected(5, model), command))
          << "field " << decltype(index)::value << " value " << Widen(value);
      std::vector<std::byte> out(kFrameSize<Model>);
      ASSERT_TRUE(EncodeCommand(command, out).ok());
      EXPECT_EQ(Hex(out), Hex(bytes.span()));
    }
  });
}

TYPED_TEST(CommandKindTest, RejectsEveryTruncatedLengthWithoutOverreading) {
  using Model = TypeParam;
  Rng rng(400);
  const std::vector<std::byte> bytes =
      Frame(rng.Next(), RandomModel<Model>(rng, false));
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    const ExactBuffer truncated(bytes, length);
    Command command{};
    const Result<std::size_t> read = DecodeCommand(truncated.span(), command);
    ASSERT_FALSE(read.ok()) << length;
    EXPECT_EQ(read.error(), CodecError::kTruncated) << length;
    std::array<Command, 4> out{};
    const DecodeBatch batch = DecodeCommands(truncated.span(), out);
    EXPECT_EQ(batch.frames, 0u);
    EXPECT_EQ(batch.bytes, 0u);
    EXPECT_EQ(batch.error,
              length == 0 ? CodecError::kOk : CodecError::kTruncated)
        << length;
  }
}

TYPED_TEST(CommandKindTest, EncodeCommandRejectsAShortBufferAndWritesNothing) {
  using Model = TypeParam;
  Rng rng(500);
  const Command command = Command::From(1, RandomModel<Model>(rng, false));
  for (std::size_t length = 0; length < kFrameSize<Model>; ++length) {
    std::vector<std::byte> out(kFrameSize<Model>, std::byte{0xCC});
    const Result<std::size_t> written =
        EncodeCommand(command, std::span(out).first(length));
    ASSERT_FALSE(written.ok());
    EXPECT_EQ(written.error(), CodecError::kBufferTooSmall);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                            [](std::byte b) { return b == std::byte{0xCC}; }));
  }
}

// A random stream of every command kind, with the Command each frame must
// decode to.
struct Stream {
  std::vector<std::byte> bytes;
  std::vector<Command> expected;
  std::vector<std::size_t> offsets;  // of each frame
};

Stream RandomStream(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  Stream stream;
  for (std::size_t i = 0; i < count; ++i) {
    const bool extreme = rng.Below(2) == 1;
    const std::uint64_t sequence = i + 1;
    std::vector<std::byte> frame;
    auto add = [&](const auto& model) {
      frame = Frame(sequence, model);
      stream.expected.push_back(Expected(sequence, model));
    };
    switch (rng.Below(8)) {
      case 0:
        add(RandomModel<NewLimit>(rng, extreme));
        break;
      case 1:
        add(RandomModel<NewMarket>(rng, extreme));
        break;
      case 2:
        add(RandomModel<CancelByOrder>(rng, extreme));
        break;
      case 3:
        add(RandomModel<CancelByClient>(rng, extreme));
        break;
      case 4:
        add(RandomModel<Replace>(rng, extreme));
        break;
      case 5:  // not a pair-step kind: the batch decoders' fallback
        add(RandomModel<MassCancel>(rng, extreme));
        break;
      case 6:  // not a pair-step kind either
        add(RandomModel<Goodbye>(rng, extreme));
        break;
      default:  // nor this
        add(RandomModel<OrderStatusRequest>(rng, extreme));
        break;
    }
    stream.offsets.push_back(stream.bytes.size());
    stream.bytes.insert(stream.bytes.end(), frame.begin(), frame.end());
  }
  return stream;
}

TEST(DecodeCommandsTest, DecodesAMixedStreamFrameByFrame) {
  const Stream stream = RandomStream(3000, 1);
  const ExactBuffer bytes(stream.bytes);
  std::vector<Command> out(stream.expected.size() + 5, Poisoned());
  const DecodeBatch batch = DecodeCommands(bytes.span(), out);
  EXPECT_EQ(batch.error, CodecError::kOk);
  ASSERT_EQ(batch.frames, stream.expected.size());
  EXPECT_EQ(batch.bytes, stream.bytes.size());
  for (std::size_t i = 0; i < batch.frames; ++i) {
    ASSERT_TRUE(CommandsEqual(stream.expected[i], out[i])) << "frame " << i;
  }
}

TEST(DecodeCommandsTest, StopsWhenTheOutputIsFull) {
  const Stream stream = RandomStream(50, 2);
  std::vector<Command> out(20);
  const DecodeBatch batch = DecodeCommands(stream.bytes, out);
  EXPECT_EQ(batch.error, CodecError::kOk);
  EXPECT_EQ(batch.frames, 20u);
  EXPECT_EQ(batch.bytes, stream.offsets[20]);
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(CommandsEqual(stream.expected[i], out[i]));
  }
  // Resuming where it stopped decodes the rest.
  std::vector<Command> rest(30);
  const DecodeBatch second = DecodeCommands(
      std::span<const std::byte>(stream.bytes).subspan(batch.bytes), rest);
  EXPECT_EQ(second.error, CodecError::kOk);
  EXPECT_EQ(second.frames, 30u);
  EXPECT_EQ(batch.bytes + second.bytes, stream.bytes.size());
  EXPECT_TRUE(CommandsEqual(stream.expected[49], rest[29]));
}

TEST(DecodeCommandsTest, EmptyInputOrOutputDecodesNothing) {
  const Stream stream = RandomStream(3, 3);
  std::vector<Command> out(3);
  DecodeBatch batch = DecodeCommands({}, out);
  EXPECT_EQ(batch.frames, 0u);
  EXPECT_EQ(batch.bytes, 0u);
  EXPECT_EQ(batch.error, CodecError::kOk);
  batch = DecodeCommands(stream.bytes, {});
  EXPECT_EQ(batch.frames, 0u);
  EXPECT_EQ(batch.bytes, 0u);
  EXPECT_EQ(batch.error, CodecError::kOk);
}

TEST(DecodeCommandsTest, StopsAtABadFrameAndReportsItsOffset) {
  const Stream stream = RandomStream(10, 4);
  const std::size_t bad = 6;
  struct Case {
    const char* what;
    std::uint8_t kind;
    CodecError error;
  };
  const Case cases[] = {
      {"a report kind", 0x43, CodecError::kNotACommand},
      {"an unknown kind", 0x00, CodecError::kUnknownKind},
      {"an unknown kind", 0x99, CodecError::kUnknownKind},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<std::byte> bytes = stream.bytes;
    bytes[stream.offsets[bad] + kKindOffset] = std::byte{c.kind};
    std::vector<Command> out(20);
    const DecodeBatch batch = DecodeCommands(ExactBuffer(bytes).span(), out);
    EXPECT_EQ(batch.error, c.error);
    EXPECT_EQ(batch.frames, bad);
    EXPECT_EQ(batch.bytes, stream.offsets[bad]);
  }
  // A stream cut inside its last frame.
  std::vector<std::byte> cut = stream.bytes;
  cut.pop_back();
  std::vector<Command> out(20);
  const DecodeBatch batch = DecodeCommands(ExactBuffer(cut).span(), out);
  EXPECT_EQ(batch.error, CodecError::kTruncated);
  EXPECT_EQ(batch.frames, 9u);
  EXPECT_EQ(batch.bytes, stream.offsets[9]);
}

TEST(CommandTest, DecodeCommandRejectsEveryReportKindAsNotACommand) {
  Rng rng(600);
  ForEachMessage([&](auto type) {
    using Model = typename decltype(type)::type;
    if constexpr (!kIsCommand<Model>) {
      const ExactBuffer bytes(Frame(1, RandomModel<Model>(rng, false)));
      Command command{};
      const Result<std::size_t> read = DecodeCommand(bytes.span(), command);
      ASSERT_FALSE(read.ok());
      EXPECT_EQ(read.error(), CodecError::kNotACommand)
          << MessageTraits<Model>::kName;
    }
  });
}

TEST(CommandTest, EncodeCommandRejectsAReportOrUnknownKind) {
  for (unsigned b = 0; b < 256; ++b) {
    // docs/PROTOCOL.md; a Heartbeat (0x07) is never a command.
    const bool is_command = (b >= 0x01 && b <= 0x06) || b == 0x08 || b == 0x09;
    if (is_command) continue;
    Command command{};
    command.kind = static_cast<Kind>(b);
    command.account_id = AccountId(1);
    std::array<std::byte, kMaxFrameSize> out;
    out.fill(std::byte{0xCC});
    const Result<std::size_t> written = EncodeCommand(command, out);
    ASSERT_FALSE(written.ok()) << b;
    EXPECT_EQ(written.error(), CodecError::kNotACommand) << b;
    EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                            [](std::byte x) { return x == std::byte{0xCC}; }));
  }
}

TEST(CommandTest, SlotAndSetSlotReachTheNamedFields) {
  Command c{};
  c.SetSlot(CommandSlot::kAccountId, 1);
  c.SetSlot(CommandSlot::kClientOrderId, 2);
  c.SetSlot(CommandSlot::kOrderId, 3);
  c.SetSlot(CommandSlot::kInstrumentId, 0x1'0000'0004);  // narrowed to u32
  c.SetSlot(CommandSlot::kSide, 0x105);                  // narrowed to u8
  c.SetSlot(CommandSlot::kTimeInForce, 6);
  c.SetSlot(CommandSlot::kPrice, static_cast<std::uint64_t>(-7));
  c.SetSlot(CommandSlot::kQuantity, 8);
  c.SetSlot(CommandSlot::kNone, 99);  // ignored
  EXPECT_EQ(c.account_id.value(), 1u);
  EXPECT_EQ(c.client_order_id.value(), 2u);
  EXPECT_EQ(c.order_id.value(), 3u);
  EXPECT_EQ(c.instrument_id.value(), 4u);
  EXPECT_EQ(static_cast<int>(c.side), 5);
  EXPECT_EQ(static_cast<int>(c.time_in_force), 6);
  EXPECT_EQ(c.price.value(), -7);
  EXPECT_EQ(c.quantity.value(), 8u);
  EXPECT_EQ(c.Slot(CommandSlot::kPrice), static_cast<std::uint64_t>(-7));
  EXPECT_EQ(c.Slot(CommandSlot::kSide), 5u);
  EXPECT_EQ(c.Slot(CommandSlot::kNone), 0u);
}

}  // namespace
}  // namespace orderwire::codec::test

namespace orderwire::codec::test {
namespace {

// The batch decoder has two bodies (AVX-512 VBMI where the CPU has it, and
// the portable one) and two loops (runs of one kind, pairs of frames). Each
// must give exactly the frame-by-frame result, on mixes, on runs, on runs
// that change kind, and when it stops at a bad frame anywhere.
TEST(DecodeCommandsTest, BothImplementationsMatchFrameByFrameDecoding) {
  using Impl = DecodeBatch (*)(std::span<const std::byte>, std::span<Command>);
  const Impl impls[] = {internal::DecodeCommandsScalar,
                        internal::DecodeCommandsSimd};
  Rng rng(99);
  for (int round = 0; round < 300; ++round) {
    const std::size_t count = 1 + rng.Below(120);
    Stream stream =
        RandomStream(count, 1000 + static_cast<std::uint64_t>(round));
    if (round % 3 == 1) {
      // Runs of one kind: re-encode every frame as the first frame's kind.
      stream = RandomStream(1, 77);
      const std::vector<std::byte> one = stream.bytes;
      for (std::size_t i = 1; i < count; ++i) {
        stream.offsets.push_back(stream.bytes.size());
        stream.bytes.insert(stream.bytes.end(), one.begin(), one.end());
        stream.expected.push_back(stream.expected[0]);
      }
    }
    std::size_t bad = count;  // no bad frame
    if (round % 4 == 0) {
      bad = rng.Below(count);
      stream.bytes[stream.offsets[bad] + kKindOffset] = std::byte{0x44};
    }
    const ExactBuffer bytes(stream.bytes);
    for (Impl impl : impls) {
      std::vector<Command> out(count + 3, Poisoned());
      const DecodeBatch batch = impl(bytes.span(), out);
      ASSERT_EQ(batch.frames, bad) << "round " << round;
      EXPECT_EQ(batch.error,
                bad == count ? CodecError::kOk : CodecError::kNotACommand);
      EXPECT_EQ(batch.bytes,
                bad == count ? stream.bytes.size() : stream.offsets[bad]);
      for (std::size_t i = 0; i < batch.frames; ++i) {
        ASSERT_TRUE(CommandsEqual(stream.expected[i], out[i]))
            << "round " << round << " frame " << i;
      }
    }
  }
}

TEST(EncodeCommandTest, MatchesThePortableEncoderByteForByte) {
  Rng rng(5);
  for (int i = 0; i < 20000; ++i) {
    const Kind kinds[] = {Kind::kNewLimit,      Kind::kNewMarket,
                          Kind::kCancelByOrder, Kind::kCancelByClient,
                          Kind::kReplace,       Kind::kMassCancel,
                          Kind::kGoodbye,       Kind::kOrderStatusRequest};
    const Command command = testing::RandomCommand(
        rng, kinds[rng.Below(std::size(kinds))], i % 2 == 0);
    std::array<std::byte, 64> fast{};
    std::array<std::byte, 64> portable{};
    fast.fill(std::byte{0xAA});
    portable.fill(std::byte{0xAA});
    const Result<std::size_t> a = EncodeCommand(command, fast);
    const Result<std::size_t> b =
        internal::EncodeCommandPortable(command, portable);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(b.ok());
    ASSERT_EQ(*a, *b);
    // Same bytes, and nothing written past the frame.
    ASSERT_EQ(fast, portable) << "command " << i;
  }
}

TEST(EncodeCommandTest, WritesNothingWhenTheBufferIsTooSmall) {
  Rng rng(6);
  const Command command = testing::RandomCommand(rng, Kind::kReplace, false);
  std::array<std::byte, 64> out{};
  out.fill(std::byte{0x5A});
  const Result<std::size_t> r =
      EncodeCommand(command, std::span<std::byte>(out).first(48));
  EXPECT_EQ(r.error(), CodecError::kBufferTooSmall);
  for (std::byte b : out) EXPECT_EQ(b, std::byte{0x5A});
}

}  // namespace
}  // namespace orderwire::codec::test

namespace orderwire::codec::test {
namespace {

TEST(EncodeCommandsTest, EncodesABatchLikeOneCallPerCommand) {
  Rng rng(8);
  std::vector<Command> commands;
  const Kind kinds[] = {Kind::kNewLimit,      Kind::kNewMarket,
                        Kind::kCancelByOrder, Kind::kCancelByClient,
                        Kind::kReplace,       Kind::kMassCancel,
                        Kind::kGoodbye,       Kind::kOrderStatusRequest};
  for (int i = 0; i < 500; ++i) {
    commands.push_back(testing::RandomCommand(
        rng, kinds[rng.Below(std::size(kinds))], i % 3 == 0));
  }
  std::vector<std::byte> one_by_one;
  for (const Command& command : commands) {
    std::array<std::byte, 64> frame{};
    const Result<std::size_t> size =
        internal::EncodeCommandPortable(command, frame);
    ASSERT_TRUE(size.ok());
    one_by_one.insert(one_by_one.end(), frame.begin(), frame.begin() + *size);
  }
  std::vector<std::byte> batch_out(one_by_one.size());
  const EncodeBatch batch = EncodeCommands(commands, batch_out);
  EXPECT_EQ(batch.error, CodecError::kOk);
  EXPECT_EQ(batch.commands, commands.size());
  EXPECT_EQ(batch.bytes, one_by_one.size());
  EXPECT_EQ(batch_out, one_by_one);

  // Too small by one byte: stops before the last command, writing nothing
  // of it.
  std::vector<std::byte> short_out(one_by_one.size() - 1, std::byte{0x77});
  const EncodeBatch partial = EncodeCommands(commands, short_out);
  EXPECT_EQ(partial.error, CodecError::kBufferTooSmall);
  EXPECT_EQ(partial.commands, commands.size() - 1);
  for (std::size_t i = partial.bytes; i < short_out.size(); ++i) {
    EXPECT_EQ(short_out[i], std::byte{0x77});
  }

  // A report kind stops the batch with kNotACommand.
  commands[10].kind = Kind::kFilled;
  const EncodeBatch bad = EncodeCommands(commands, batch_out);
  EXPECT_EQ(bad.error, CodecError::kNotACommand);
  EXPECT_EQ(bad.commands, 10u);
}

}  // namespace
}  // namespace orderwire::codec::test
