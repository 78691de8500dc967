// FrameView, View<Model> and EncodeFrame over all 12 kinds: round trips of
// random and extreme values, the truncation sweep, all 256 kind bytes,
// unaligned buffers and the encoder's buffer check.
#include "codec/frame.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

using Rng = ::orderwire::codec::testing::SplitMix64;

// docs/PROTOCOL.md's kind tables: kind byte and frame size (version 2). A
// Heartbeat (0x07) goes to the service but is not a command.
struct ProtocolKind {
  std::uint8_t kind;
  std::size_t frame_size;
  bool is_command;
};
constexpr std::array<ProtocolKind, 21> kProtocolKinds = {{
    {0x01, 47, true},  {0x02, 38, true},  {0x03, 25, true},  {0x04, 25, true},
    {0x05, 49, true},  {0x06, 31, true},  {0x07, 17, false}, {0x08, 25, true},
    {0x09, 33, true},  {0x41, 55, false}, {0x42, 36, false}, {0x43, 71, false},
    {0x44, 46, false}, {0x45, 50, false}, {0x46, 17, false}, {0x47, 25, false},
    {0x48, 18, false}, {0x49, 35, false}, {0x4A, 33, false}, {0x4B, 30, false},
    {0x4C, 63, false},
}};

const ProtocolKind* FindProtocolKind(std::uint8_t kind) {
  for (const ProtocolKind& k : kProtocolKinds) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

// Decodes `bytes` every way a typed frame can be decoded and checks each gives
// back `sequence` and `model`.
template <typename Model>
::testing::AssertionResult DecodesTo(std::span<const std::byte> bytes,
                                     std::uint64_t sequence,
                                     const Model& model) {
  const Result<FrameView> frame = FrameView::Parse(bytes);
  if (!frame.ok()) {
    return ::testing::AssertionFailure()
           << "FrameView::Parse: " << Name(frame.error());
  }
  if (frame->kind() != MessageTraits<Model>::kKind ||
      frame->sequence() != sequence || frame->size() != kFrameSize<Model> ||
      frame->bytes().data() != bytes.data()) {
    return ::testing::AssertionFailure() << "FrameView header differs";
  }
  const Result<View<Model>> view = View<Model>::Parse(bytes);
  if (!view.ok()) {
    return ::testing::AssertionFailure()
           << "View::Parse: " << Name(view.error());
  }
  if (view->sequence() != sequence) {
    return ::testing::AssertionFailure() << "View sequence differs";
  }
  if (::testing::AssertionResult r = ModelsEqual(model, view->ToModel()); !r) {
    return r << " (ToModel)";
  }
  std::string get_diff;
  ForEachFieldIndex<Model>([&](auto index) {
    constexpr std::size_t kIndex = decltype(index)::value;
    constexpr auto kMember = kMemberAt<Model, kIndex>;
    if (view->template Get<kMember>() != model.*kMember) {
      absl::StrAppendFormat(
          &get_diff, " %s",
          std::get<kIndex>(MessageTraits<Model>::kLayout.fields).name);
    }
  });
  if (!get_diff.empty()) {
    return ::testing::AssertionFailure() << "Get<> differs for" << get_diff;
  }
  return ::testing::AssertionSuccess();
}

template <typename Model>
class FrameKindTest : public ::testing::Test {};
TYPED_TEST_SUITE(FrameKindTest, AllModels, ModelName);

TYPED_TEST(FrameKindTest, RoundTripsRandomValues) {
  using Model = TypeParam;
  Rng rng(0x5EED0000 + static_cast<std::uint8_t>(MessageTraits<Model>::kKind));
  for (int i = 0; i < 5000; ++i) {
    const bool extreme = (i % 2) == 1;
    const Model model = RandomModel<Model>(rng, extreme);
    const std::uint64_t sequence = RandomValue<std::uint64_t>(rng, extreme);
    const std::vector<std::byte> bytes = Frame(sequence, model);
    const ExactBuffer exact(bytes);
    ASSERT_TRUE(DecodesTo(exact.span(), sequence, model)) << "iteration " << i;
  }
}

TYPED_TEST(FrameKindTest, RoundTripsEveryExtremeValueInEveryField) {
  using Model = TypeParam;
  // All fields at once at 0, 1, max-1, max, and the sign bit alone.
  for (std::uint64_t raw : ExtremeValues<std::uint64_t>()) {
    SCOPED_TRACE(raw);
    // Truncating the 64-bit pattern gives, per width: 0, 1, max-1, max; the
    // sign bit of each width is set below field by field.
    const Model model = PatternModel<Model>(raw);
    const std::vector<std::byte> bytes = Frame(raw, model);
    EXPECT_TRUE(DecodesTo(ExactBuffer(bytes).span(), raw, model));
  }
  // Each field in turn takes each extreme of its own width (sign bit of that
  // width included) while the others hold a distinct marker.
  ForEachFieldIndex<Model>([&](auto index) {
    constexpr auto kMember = kMemberAt<Model, decltype(index)::value>;
    using T = std::remove_cvref_t<decltype(Model{}.*kMember)>;
    for (T value : ExtremeValues<T>()) {
      Model model = PatternModel<Model>(0x5A5A5A5A5A5A5A5A);
      model.*kMember = value;
      const std::vector<std::byte> bytes = Frame(7, model);
      EXPECT_TRUE(DecodesTo(ExactBuffer(bytes).span(), 7, model))
          << "field " << decltype(index)::value << " value " << Widen(value);
    }
  });
}

TYPED_TEST(FrameKindTest, RoundTripsEveryByteOfEveryOneByteField) {
  using Model = TypeParam;
  ForEachFieldIndex<Model>([&](auto index) {
    constexpr auto kMember = kMemberAt<Model, decltype(index)::value>;
    using T = std::remove_cvref_t<decltype(Model{}.*kMember)>;
    if constexpr (sizeof(T) == 1) {
      for (unsigned b = 0; b < 256; ++b) {
        Model model = PatternModel<Model>(0x0102030405060708);
        model.*kMember = static_cast<T>(b);
        const std::vector<std::byte> bytes = Frame(b, model);
        EXPECT_TRUE(DecodesTo(ExactBuffer(bytes).span(), b, model))
            << "byte " << b;
      }
    }
  });
}

// docs/PROTOCOL.md: "No reader may assume any alignment of a buffer."
TYPED_TEST(FrameKindTest, EncodesAndDecodesAtEveryAlignment) {
  using Model = TypeParam;
  Rng rng(42);
  for (std::size_t shift = 0; shift < 16; ++shift) {
    const Model model = RandomModel<Model>(rng, false);
    std::vector<std::byte> buffer(shift + kFrameSize<Model>);
    const std::span<std::byte> at = std::span(buffer).subspan(shift);
    const Result<std::size_t> written = EncodeFrame(shift + 1, model, at);
    ASSERT_TRUE(written.ok());
    EXPECT_EQ(Hex(at), Hex(Frame(shift + 1, model)));
    EXPECT_TRUE(DecodesTo<Model>(at, shift + 1, model)) << "shift " << shift;
  }
}

// The SBE BoundsCheckTest habit: every length 0..size-1 fails, and the bytes
// sit at the end of a heap block of exactly that length, so an overread is a
// heap-buffer-overflow under AddressSanitizer.
TYPED_TEST(FrameKindTest, RejectsEveryTruncatedLengthWithoutOverreading) {
  using Model = TypeParam;
  Rng rng(7);
  const std::vector<std::byte> bytes =
      Frame(rng.Next(), RandomModel<Model>(rng, false));
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE(length);
    const ExactBuffer truncated(bytes, length);
    const Result<FrameView> frame = FrameView::Parse(truncated.span());
    ASSERT_FALSE(frame.ok());
    EXPECT_EQ(frame.error(), CodecError::kTruncated);
    const Result<View<Model>> view = View<Model>::Parse(truncated.span());
    ASSERT_FALSE(view.ok());
    EXPECT_EQ(view.error(), CodecError::kTruncated);
    Command command{};
    const Result<std::size_t> decoded =
        DecodeCommand(truncated.span(), command);
    ASSERT_FALSE(decoded.ok());
    if (kIsCommand<Model> || length < kFrameHeaderSize) {
      EXPECT_EQ(decoded.error(), CodecError::kTruncated);
    } else {
      // A report is not a command, whatever its length.
      EXPECT_EQ(decoded.error(), CodecError::kNotACommand);
    }
  }
  // And the whole frame at the end of an exact block parses.
  EXPECT_TRUE(FrameView::Parse(ExactBuffer(bytes).span()).ok());
}

TYPED_TEST(FrameKindTest, FrameViewCoversOnlyTheFrameWhenMoreBytesFollow) {
  using Model = TypeParam;
  Rng rng(9);
  std::vector<std::byte> bytes = Frame(3, RandomModel<Model>(rng, false));
  const std::size_t frame_size = bytes.size();
  bytes.resize(frame_size + 100, std::byte{0xEE});
  const Result<FrameView> frame = FrameView::Parse(bytes);
  ASSERT_TRUE(frame.ok());
  EXPECT_EQ(frame->size(), frame_size);
  EXPECT_EQ(frame->bytes().size(), frame_size);
  const Result<View<Model>> view = View<Model>::Parse(bytes);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->bytes().size(), frame_size);
}

TYPED_TEST(FrameKindTest, EncodeFrameRejectsEveryShortBufferAndWritesNothing) {
  using Model = TypeParam;
  Rng rng(11);
  const Model model = RandomModel<Model>(rng, false);
  for (std::size_t length = 0; length < kFrameSize<Model>; ++length) {
    std::vector<std::byte> out(kFrameSize<Model>, std::byte{0xCC});
    const Result<std::size_t> written =
        EncodeFrame(1, model, std::span(out).first(length));
    ASSERT_FALSE(written.ok());
    EXPECT_EQ(written.error(), CodecError::kBufferTooSmall);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                            [](std::byte b) { return b == std::byte{0xCC}; }))
        << "length " << length;
  }
}

TYPED_TEST(FrameKindTest, EncodeFrameWritesOnlyTheFrameIntoALargerBuffer) {
  using Model = TypeParam;
  Rng rng(12);
  std::vector<std::byte> out(kFrameSize<Model> + 10, std::byte{0xCC});
  const Result<std::size_t> written =
      EncodeFrame(1, RandomModel<Model>(rng, false), out);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, kFrameSize<Model>);
  for (std::size_t i = kFrameSize<Model>; i < out.size(); ++i) {
    EXPECT_EQ(out[i], std::byte{0xCC}) << i;
  }
}

TYPED_TEST(FrameKindTest, TypedViewRejectsEveryOtherKind) {
  using Model = TypeParam;
  Rng rng(13);
  ForEachMessage([&](auto other) {
    using Other = typename decltype(other)::type;
    const std::vector<std::byte> bytes =
        Frame(1, RandomModel<Other>(rng, false));
    const Result<View<Model>> view = View<Model>::Parse(bytes);
    const Result<FrameView> frame = FrameView::Parse(bytes);
    ASSERT_TRUE(frame.ok());
    const Result<View<Model>> from_frame = View<Model>::FromFrame(*frame);
    if constexpr (std::is_same_v<Model, Other>) {
      EXPECT_TRUE(view.ok());
      EXPECT_TRUE(from_frame.ok());
    } else {
      ASSERT_FALSE(view.ok());
      EXPECT_EQ(view.error(), CodecError::kWrongKind)
          << MessageTraits<Other>::kName;
      ASSERT_FALSE(from_frame.ok());
      EXPECT_EQ(from_frame.error(), CodecError::kWrongKind);
    }
  });
}

TYPED_TEST(FrameKindTest, VisitFrameCallsBackOnceWithTheViewOfItsKind) {
  using Model = TypeParam;
  Rng rng(14);
  const Model model = RandomModel<Model>(rng, true);
  const std::vector<std::byte> bytes = Frame(77, model);
  int calls = 0;
  VisitFrame(*FrameView::Parse(bytes), [&](const auto& view) {
    ++calls;
    using Seen = std::remove_cvref_t<decltype(view)>;
    EXPECT_TRUE((std::is_same_v<Seen, View<Model>>));
    if constexpr (std::is_same_v<Seen, View<Model>>) {
      EXPECT_TRUE(ModelsEqual(model, view.ToModel()));
      EXPECT_EQ(view.sequence(), 77u);
    }
  });
  EXPECT_EQ(calls, 1);
}

TEST(FrameTest, ExactlyTheProtocolKindsParse) {
  int known = 0;
  for (unsigned b = 0; b < 256; ++b) {
    SCOPED_TRACE(b);
    const std::uint8_t kind = static_cast<std::uint8_t>(b);
    std::vector<std::byte> source(kMaxFrameSize, std::byte{0});
    source[8] = std::byte{kind};
    const ProtocolKind* expected = FindProtocolKind(kind);
    // The largest frame's worth of bytes, and the header alone.
    const ExactBuffer whole(source);
    const ExactBuffer header_only(source, kFrameHeaderSize);
    const Result<FrameView> frame = FrameView::Parse(whole.span());
    const Result<FrameView> header = FrameView::Parse(header_only.span());
    Command command{};
    const Result<std::size_t> decoded = DecodeCommand(whole.span(), command);
    if (expected == nullptr) {
      ASSERT_FALSE(frame.ok());
      EXPECT_EQ(frame.error(), CodecError::kUnknownKind);
      ASSERT_FALSE(header.ok());
      EXPECT_EQ(header.error(), CodecError::kUnknownKind);
      ASSERT_FALSE(decoded.ok());
      EXPECT_EQ(decoded.error(), CodecError::kUnknownKind);
      continue;
    }
    ++known;
    ASSERT_TRUE(frame.ok()) << Name(frame.error());
    EXPECT_EQ(frame->size(), expected->frame_size);
    EXPECT_EQ(static_cast<std::uint8_t>(frame->kind()), kind);
    EXPECT_EQ(frame->is_command(), expected->is_command);
    ASSERT_FALSE(header.ok());
    EXPECT_EQ(header.error(), CodecError::kTruncated);
    if (expected->is_command) {
      ASSERT_TRUE(decoded.ok()) << Name(decoded.error());
      EXPECT_EQ(*decoded, expected->frame_size);
      EXPECT_EQ(static_cast<std::uint8_t>(command.kind), kind);
    } else {
      ASSERT_FALSE(decoded.ok());
      EXPECT_EQ(decoded.error(), CodecError::kNotACommand);
    }
  }
  EXPECT_EQ(known, static_cast<int>(kProtocolKinds.size()));
}

}  // namespace
}  // namespace orderwire::codec::test
