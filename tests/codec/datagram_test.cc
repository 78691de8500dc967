// DatagramView::Parse (every malformation, each with its exact error and
// byte offset), FrameIterator, and DatagramBuilder. Datagrams are built by
// hand from docs/PROTOCOL.md's header table so a builder bug cannot hide a
// parser bug.
#include "codec/datagram.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "tests/codec/golden.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

using Rng = ::orderwire::codec::testing::SplitMix64;

// docs/PROTOCOL.md "Datagram" offsets.
constexpr std::size_t kMagicAt = 0;
constexpr std::size_t kVersionAt = 2;
constexpr std::size_t kFlagsAt = 3;
constexpr std::size_t kSessionAt = 4;
constexpr std::size_t kCountAt = 8;
constexpr std::size_t kReservedAt = 10;
constexpr std::size_t kHeader = 12;
constexpr std::size_t kLimit = 1472;

// The golden datagram: frames of 47 and 25 bytes.
constexpr std::size_t kFirstFrameAt = kHeader;
constexpr std::size_t kSecondFrameAt = kHeader + 47;

std::vector<std::byte> Golden() { return FromHex(golden::kDatagramHex); }

// A datagram header, written field by field from docs/PROTOCOL.md.
std::vector<std::byte> Header(std::uint32_t session, std::uint16_t count) {
  std::vector<std::byte> out(kHeader, std::byte{0});
  out[0] = std::byte{'O'};
  out[1] = std::byte{'W'};
  out[2] = std::byte{1};
  for (int i = 0; i < 4; ++i) {
    out[kSessionAt + static_cast<std::size_t>(i)] =
        static_cast<std::byte>(session >> (8 * i));
  }
  out[kCountAt] = static_cast<std::byte>(count & 0xFF);
  out[kCountAt + 1] = static_cast<std::byte>(count >> 8);
  return out;
}

void SetCount(std::vector<std::byte>& datagram, std::uint16_t count) {
  datagram[kCountAt] = static_cast<std::byte>(count & 0xFF);
  datagram[kCountAt + 1] = static_cast<std::byte>(count >> 8);
}

template <typename Model>
void AppendEncoded(std::vector<std::byte>& out, std::uint64_t sequence,
                   const Model& model) {
  const Bytes frame = Frame(sequence, model);
  out.insert(out.end(), frame.begin(), frame.end());
}

struct ParseOutcome {
  CodecError error;
  std::size_t offset;
};

// Parses `bytes` from an exact-size heap block (so overreads are caught).
ParseOutcome ParseExact(std::span<const std::byte> bytes,
                        FrameFilter filter = FrameFilter::kAny) {
  const ExactBuffer exact(bytes);
  std::size_t offset = 12345;
  const Result<DatagramView> view =
      DatagramView::Parse(exact.span(), filter, &offset);
  if (view.ok()) return {CodecError::kOk, offset};
  return {view.error(), offset};
}

// Whether `bytes` is rejected with exactly `error` at exactly `offset`.
::testing::AssertionResult IsRejected(std::span<const std::byte> bytes,
                                      FrameFilter filter, CodecError error,
                                      std::size_t offset) {
  const ParseOutcome outcome = ParseExact(bytes, filter);
  if (outcome.error == error && outcome.offset == offset) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected " << Name(error) << " at offset " << offset << ", got "
         << Name(outcome.error) << " at offset " << outcome.offset;
}

TEST(DatagramParseTest, AcceptsTheGoldenDatagramUnderAnyAndCommandsFilters) {
  EXPECT_EQ(ParseExact(Golden(), FrameFilter::kAny).error, CodecError::kOk);
  EXPECT_EQ(ParseExact(Golden(), FrameFilter::kCommands).error,
            CodecError::kOk);
}

TEST(DatagramParseTest, RejectsABadMagicByteAtOffsetZero) {
  for (std::size_t at : {kMagicAt, kMagicAt + 1}) {
    for (unsigned b = 0; b < 256; ++b) {
      std::vector<std::byte> d = Golden();
      if (d[at] == std::byte(b)) continue;
      d[at] = std::byte(b);
      SCOPED_TRACE(::testing::Message() << "byte " << at << " = " << b);
      EXPECT_TRUE(IsRejected(d, FrameFilter::kAny, CodecError::kBadMagic, 0u));
    }
  }
  std::vector<std::byte> swapped = Golden();
  std::swap(swapped[0], swapped[1]);  // "WO"
  EXPECT_TRUE(
      IsRejected(swapped, FrameFilter::kAny, CodecError::kBadMagic, 0u));
}

TEST(DatagramParseTest, RejectsVersionsOtherThanOneAtOffsetTwo) {
  for (unsigned v : {0u, 2u, 255u}) {
    std::vector<std::byte> d = Golden();
    d[kVersionAt] = std::byte(v);
    SCOPED_TRACE(v);
    EXPECT_TRUE(
        IsRejected(d, FrameFilter::kAny, CodecError::kBadVersion, kVersionAt));
  }
}

TEST(DatagramParseTest, RejectsEachFlagBitButAuthenticatedAtOffsetThree) {
  for (unsigned bit = 1; bit < 8; ++bit) {
    std::vector<std::byte> d = Golden();
    d[kFlagsAt] = std::byte(1u << bit);
    SCOPED_TRACE(bit);
    EXPECT_TRUE(
        IsRejected(d, FrameFilter::kAny, CodecError::kBadFlags, kFlagsAt));
  }
}

// The golden datagram with the Authenticated flag and a 16-byte trailer
// (docs/PROTOCOL.md "Authenticated datagrams"): the codec does not check the
// MAC, only its place.
std::vector<std::byte> GoldenAuthenticated() {
  std::vector<std::byte> d = Golden();
  d[kFlagsAt] = std::byte{0x01};
  for (int i = 0; i < 16; ++i) d.push_back(std::byte(0xA0 + i));
  return d;
}

TEST(DatagramParseTest, AuthenticatedFlagPutsTheLast16BytesInTheTrailer) {
  const std::vector<std::byte> d = GoldenAuthenticated();
  const ExactBuffer exact(d);
  const Result<DatagramView> view =
      DatagramView::Parse(exact.span(), FrameFilter::kCommands);
  ASSERT_TRUE(view.ok()) << Name(view.error());
  EXPECT_TRUE(view->authenticated());
  EXPECT_EQ(view->frame_count(), 2u);
  EXPECT_EQ(view->bytes().size(), d.size());
  EXPECT_EQ(view->authenticated_bytes().size(), d.size() - 16);
  EXPECT_EQ(view->authenticated_bytes().data(), exact.span().data());
  ASSERT_EQ(view->mac().size(), kMacSize);
  EXPECT_EQ(view->mac().data(), exact.span().data() + d.size() - 16);
  EXPECT_EQ(view->mac()[0], std::byte{0xA0});
  EXPECT_EQ(view->frame_bytes().size(), d.size() - 16 - kHeader);
  std::size_t frames = 0;
  for (const FrameView frame : *view) {
    (void)frame;
    ++frames;
  }
  EXPECT_EQ(frames, 2u);
}

TEST(DatagramParseTest, DatagramWithoutTheFlagHasNoTrailer) {
  const std::vector<std::byte> d = Golden();
  const Result<DatagramView> view = DatagramView::Parse(d);
  ASSERT_TRUE(view.ok());
  EXPECT_FALSE(view->authenticated());
  EXPECT_TRUE(view->mac().empty());
  EXPECT_EQ(view->authenticated_bytes().size(), d.size());
}

TEST(DatagramParseTest, AuthenticatedFlagWithoutTrailerIsTruncatedOrWrong) {
  // The flag set on a datagram that has no trailer: the frames run into the
  // place of the trailer and the last one is cut off.
  std::vector<std::byte> d = Golden();
  d[kFlagsAt] = std::byte{0x01};
  EXPECT_TRUE(
      IsRejected(d, FrameFilter::kAny, CodecError::kTruncated, kSecondFrameAt));
  // Too short for a header and a trailer at all.
  std::vector<std::byte> tiny = Header(1, 1);
  tiny[kFlagsAt] = std::byte{0x01};
  for (int i = 0; i < 15; ++i) tiny.push_back(std::byte{0});
  EXPECT_TRUE(
      IsRejected(tiny, FrameFilter::kAny, CodecError::kTruncated, tiny.size()));
  // A trailer and no frame: the count names a frame that is not there.
  tiny.push_back(std::byte{0});
  EXPECT_TRUE(
      IsRejected(tiny, FrameFilter::kAny, CodecError::kCountMismatch, kHeader));
  // Bytes between the frames and the trailer.
  std::vector<std::byte> extra = Golden();
  extra[kFlagsAt] = std::byte{0x01};
  const std::size_t frames_end = extra.size();
  for (int i = 0; i < 17; ++i) extra.push_back(std::byte{0});
  EXPECT_TRUE(IsRejected(extra, FrameFilter::kAny, CodecError::kTrailingBytes,
                         frames_end));
}

TEST(DatagramParseTest, RejectsEveryTruncatedAuthenticatedDatagram) {
  const std::vector<std::byte> d = GoldenAuthenticated();
  for (std::size_t n = 0; n < d.size(); ++n) {
    SCOPED_TRACE(n);
    const std::span<const std::byte> cut(d.data(), n);
    EXPECT_NE(ParseExact(cut).error, CodecError::kOk);
  }
  EXPECT_EQ(ParseExact(d).error, CodecError::kOk);
}

TEST(DatagramParseTest, AuthenticatedDatagramIsAtMost1472BytesWithItsTrailer) {
  // As many frames as fit with the trailer: accepted; a datagram of 1473
  // bytes is over the limit whatever it holds.
  std::vector<std::byte> d = Header(1, 0);
  d[kFlagsAt] = std::byte{0x01};
  std::uint16_t count = 0;
  while (d.size() + 17 + 16 <= kLimit) {
    AppendEncoded(d, 0, SequenceGap{1});
    ++count;
  }
  SetCount(d, count);
  for (int i = 0; i < 16; ++i) d.push_back(std::byte{0});
  ASSERT_LE(d.size(), kLimit);
  EXPECT_EQ(ParseExact(d).error, CodecError::kOk);
  d.resize(kLimit + 1, std::byte{0});
  EXPECT_TRUE(IsRejected(d, FrameFilter::kAny, CodecError::kOversize, kLimit));
}

TEST(DatagramParseTest, RejectsANonZeroReservedFieldAtOffsetTen) {
  for (std::size_t at : {kReservedAt, kReservedAt + 1}) {
    for (unsigned v : {1u, 0x80u, 0xFFu}) {
      std::vector<std::byte> d = Golden();
      d[at] = std::byte(v);
      EXPECT_TRUE(IsRejected(d, FrameFilter::kAny, CodecError::kBadReserved,
                             kReservedAt));
    }
  }
}

TEST(DatagramParseTest, RejectsAZeroFrameCountAtOffsetEight) {
  std::vector<std::byte> d = Golden();
  SetCount(d, 0);
  EXPECT_TRUE(
      IsRejected(d, FrameFilter::kAny, CodecError::kZeroFrameCount, kCountAt));
  // Even with no frames at all.
  EXPECT_TRUE(IsRejected(Header(1, 0), FrameFilter::kAny,
                         CodecError::kZeroFrameCount, kCountAt));
}

TEST(DatagramParseTest, RejectsACountLargerThanTheFramesAtTheEnd) {
  for (const std::uint16_t count :
       {std::uint16_t{3}, std::uint16_t{4}, std::uint16_t{0xFFFF}}) {
    std::vector<std::byte> d = Golden();
    SetCount(d, count);
    SCOPED_TRACE(count);
    EXPECT_TRUE(IsRejected(d, FrameFilter::kAny, CodecError::kCountMismatch,
                           golden::kDatagramSize));
  }
}

TEST(DatagramParseTest, RejectsACountSmallerThanTheFramesAsTrailingBytes) {
  std::vector<std::byte> d = Golden();
  SetCount(d, 1);
  EXPECT_TRUE(IsRejected(d, FrameFilter::kAny, CodecError::kTrailingBytes,
                         kSecondFrameAt));
  // Junk after the last counted frame, shorter than a frame header.
  std::vector<std::byte> junk = Golden();
  junk.push_back(std::byte{0});
  EXPECT_TRUE(IsRejected(junk, FrameFilter::kAny, CodecError::kTrailingBytes,
                         golden::kDatagramSize));
}

TEST(DatagramParseTest, RejectsATruncatedLastFrameAtItsOffset) {
  std::vector<std::byte> d = Golden();
  d.pop_back();
  EXPECT_TRUE(
      IsRejected(d, FrameFilter::kAny, CodecError::kTruncated, kSecondFrameAt));
}

TEST(DatagramParseTest, RejectsEveryPrefixOfTheGoldenDatagram) {
  const std::vector<std::byte> d = Golden();
  for (std::size_t length = 0; length < d.size(); ++length) {
    SCOPED_TRACE(length);
    const std::span<const std::byte> prefix = std::span(d).first(length);
    if (length < kHeader) {
      // Too short for a header: the offset is where the bytes end.
      EXPECT_TRUE(IsRejected(prefix, FrameFilter::kAny, CodecError::kTruncated,
                             length));
    } else if (length == kFirstFrameAt || length == kSecondFrameAt) {
      // Ends on a frame boundary before frame_count frames.
      EXPECT_TRUE(IsRejected(prefix, FrameFilter::kAny,
                             CodecError::kCountMismatch, length));
    } else if (length < kSecondFrameAt) {
      EXPECT_TRUE(IsRejected(prefix, FrameFilter::kAny, CodecError::kTruncated,
                             kFirstFrameAt));
    } else {
      EXPECT_TRUE(IsRejected(prefix, FrameFilter::kAny, CodecError::kTruncated,
                             kSecondFrameAt));
    }
  }
}

TEST(DatagramParseTest, RejectsAnUnknownKindInsideAtThatFramesOffset) {
  for (unsigned kind : {0x00u, 0x0Au, 0x40u, 0x4Du, 0x7Fu, 0xFFu}) {
    std::vector<std::byte> d = Golden();
    d[kSecondFrameAt + 8] = std::byte(kind);
    SCOPED_TRACE(kind);
    EXPECT_TRUE(IsRejected(d, FrameFilter::kAny, CodecError::kUnknownKind,
                           kSecondFrameAt));
    std::vector<std::byte> first = Golden();
    first[kFirstFrameAt + 8] = std::byte(kind);
    EXPECT_TRUE(IsRejected(first, FrameFilter::kAny, CodecError::kUnknownKind,
                           kFirstFrameAt));
  }
}

TEST(DatagramParseTest, RejectsMoreThan1472BytesAsOversize) {
  // 80 SequenceGaps (17) + 4 CancelByOrders (25) = 1460 bytes of frames:
  // exactly 1472 bytes in all, which is allowed.
  std::vector<std::byte> max = Header(9, 84);
  for (int i = 0; i < 80; ++i) AppendEncoded(max, 0, SequenceGap{1});
  for (int i = 0; i < 4; ++i) AppendEncoded(max, 1, CancelByOrder{1, 2});
  ASSERT_EQ(max.size(), kLimit);
  EXPECT_EQ(ParseExact(max).error, CodecError::kOk);
  // 83 SequenceGaps + 2 CancelByOrders = 1461: 1473 bytes, well-formed but
  // one byte too long.
  std::vector<std::byte> over = Header(9, 85);
  for (int i = 0; i < 83; ++i) AppendEncoded(over, 0, SequenceGap{1});
  for (int i = 0; i < 2; ++i) AppendEncoded(over, 1, CancelByOrder{1, 2});
  ASSERT_EQ(over.size(), kLimit + 1);
  EXPECT_TRUE(
      IsRejected(over, FrameFilter::kAny, CodecError::kOversize, kLimit));
  // Oversize is found before anything else.
  std::vector<std::byte> junk(5000, std::byte{0});
  EXPECT_TRUE(
      IsRejected(junk, FrameFilter::kAny, CodecError::kOversize, kLimit));
}

TEST(DatagramParseTest, CommandsFilterRejectsAReportInside) {
  std::vector<std::byte> d = Header(3, 3);
  AppendEncoded(d, 1, CancelByClient{7, 1001});
  AppendEncoded(d, 2, SequenceGap{5});
  AppendEncoded(d, 3, CancelByOrder{7, 1});
  EXPECT_TRUE(IsRejected(d, FrameFilter::kCommands, CodecError::kNotACommand,
                         kHeader + 25));
  EXPECT_EQ(ParseExact(d, FrameFilter::kAny).error, CodecError::kOk);
}

TEST(DatagramParseTest, ReportsFilterRejectsACommandInside) {
  std::vector<std::byte> d = Header(3, 2);
  AppendEncoded(d, 1, SequenceGap{5});
  AppendEncoded(d, 2, CancelByClient{7, 1001});
  EXPECT_TRUE(IsRejected(d, FrameFilter::kReports, CodecError::kNotAReport,
                         kHeader + 17));
  // The golden datagram holds commands only.
  EXPECT_TRUE(IsRejected(Golden(), FrameFilter::kReports,
                         CodecError::kNotAReport, kFirstFrameAt));
}

TEST(DatagramParseTest, ReportsFilterAcceptsADatagramOfReports) {
  std::vector<std::byte> d = Header(0xFFFFFFFF, 2);
  Rng rng(1);
  AppendEncoded(d, 1, RandomModel<Filled>(rng, true));
  AppendEncoded(d, 2, RandomModel<Rejected>(rng, true));
  const ExactBuffer exact(d);
  const Result<DatagramView> view =
      DatagramView::Parse(exact.span(), FrameFilter::kReports);
  ASSERT_TRUE(view.ok()) << Name(view.error());
  EXPECT_EQ(view->session_id(), 0xFFFFFFFFu);
}

TEST(DatagramParseTest, ANullErrorOffsetIsAllowed) {
  std::vector<std::byte> d = Golden();
  d[kVersionAt] = std::byte{2};
  const Result<DatagramView> view = DatagramView::Parse(d);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.error(), CodecError::kBadVersion);
}

TEST(FrameIteratorTest, YieldsExactlyTheFramesOfAValidDatagram) {
  Rng rng(2);
  std::vector<std::byte> d = Header(77, 0);
  std::vector<std::vector<std::byte>> frames;
  std::vector<std::size_t> offsets;
  std::uint16_t count = 0;
  // Random frames of every kind until the next one might not fit.
  std::uint64_t kinds = 0;
  ForEachMessage([&](auto) { ++kinds; });
  while (d.size() + kMaxFrameSize <= kLimit) {
    std::vector<std::byte> frame;
    const std::uint64_t pick = rng.Below(kinds);
    std::uint64_t index = 0;
    ForEachMessage([&](auto type) {
      using Model = typename decltype(type)::type;
      if (index++ != pick) return;
      frame.resize(kFrameSize<Model>);
      if (!EncodeFrame(count + 1u, RandomModel<Model>(rng, true), frame).ok()) {
        std::abort();
      }
    });
    offsets.push_back(d.size());
    d.insert(d.end(), frame.begin(), frame.end());
    frames.push_back(std::move(frame));
    ++count;
  }
  SetCount(d, count);
  const ExactBuffer exact(d);
  const Result<DatagramView> view = DatagramView::Parse(exact.span());
  ASSERT_TRUE(view.ok()) << Name(view.error());
  EXPECT_EQ(view->frame_count(), count);
  std::size_t i = 0;
  for (auto it = view->begin(); it != view->end(); ++it, ++i) {
    ASSERT_LT(i, frames.size());
    const FrameView frame = *it;
    EXPECT_EQ(it.OffsetFrom(exact.span().data()), offsets[i]);
    EXPECT_EQ(frame.bytes().data(), exact.span().data() + offsets[i]);
    EXPECT_EQ(Hex(frame.bytes()), Hex(frames[i]));
    EXPECT_EQ(frame.sequence(), i + 1);
  }
  EXPECT_EQ(i, frames.size());
  // Post-increment returns the position before the step.
  auto it = view->begin();
  const auto before = it++;
  EXPECT_EQ(before, view->begin());
  EXPECT_EQ(it.OffsetFrom(exact.span().data()), offsets[1]);
}

// --- DatagramBuilder --------------------------------------------------------

TEST(DatagramBuilderTest, WritesTheHeaderAtOnce) {
  std::array<std::byte, 64> buffer;
  buffer.fill(std::byte{0xEE});
  DatagramBuilder builder(buffer, 0x01020304);
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.size(), kHeader);
  EXPECT_EQ(builder.frame_count(), 0u);
  EXPECT_EQ(Hex(builder.bytes()),
            "4f570100040302010000"
            "0000");
  EXPECT_EQ(buffer[kHeader], std::byte{0xEE});
}

TEST(DatagramBuilderTest, AuthenticatedBuilderSetsTheFlagAndSealsTheTrailer) {
  std::array<std::byte, kLimit> buffer{};
  DatagramBuilder builder(buffer, 0xCAFE, /*authenticated=*/true);
  EXPECT_TRUE(builder.authenticated());
  EXPECT_EQ(builder.bytes()[kFlagsAt], std::byte{0x01});
  ASSERT_EQ(builder.Append(1, CancelByOrder{7, 42}), CodecError::kOk);
  std::array<std::byte, kMacSize> mac;
  for (std::size_t i = 0; i < mac.size(); ++i) mac[i] = std::byte(0x30 + i);
  const std::span<const std::byte> whole = builder.Seal(mac);
  ASSERT_EQ(whole.size(), kHeader + 25 + kMacSize);
  const Result<DatagramView> view = DatagramView::Parse(whole);
  ASSERT_TRUE(view.ok()) << Name(view.error());
  EXPECT_TRUE(view->authenticated());
  EXPECT_EQ(Hex(view->mac()), Hex(mac));
  EXPECT_EQ(Hex(view->authenticated_bytes()), Hex(builder.bytes()));
  // Reset keeps the flag.
  builder.Reset(3);
  EXPECT_EQ(builder.bytes()[kFlagsAt], std::byte{0x01});
}

TEST(DatagramBuilderTest, AuthenticatedBuilderLeavesRoomForTheTrailer) {
  std::vector<std::byte> buffer(4000);
  DatagramBuilder builder(buffer, 1, /*authenticated=*/true);
  while (builder.Fits(17)) {
    ASSERT_EQ(builder.Append(0, SequenceGap{1}), CodecError::kOk);
  }
  EXPECT_LE(builder.size() + kMacSize, kLimit);
  EXPECT_GT(builder.size() + 17 + kMacSize, kLimit);
  EXPECT_EQ(builder.Append(0, SequenceGap{1}), CodecError::kBufferTooSmall);
  const std::array<std::byte, kMacSize> mac{};
  EXPECT_EQ(ParseExact(builder.Seal(mac)).error, CodecError::kOk);
}

TEST(DatagramBuilderTest, CountsFramesInTheHeaderAsTheyAreAppended) {
  std::array<std::byte, kLimit> buffer{};
  DatagramBuilder builder(buffer, 5);
  for (std::uint16_t i = 1; i <= 10; ++i) {
    ASSERT_EQ(builder.Append(i, CancelByOrder{1, i}), CodecError::kOk);
    EXPECT_EQ(builder.frame_count(), i);
    const ParseOutcome outcome = ParseExact(builder.bytes());
    EXPECT_EQ(outcome.error, CodecError::kOk) << "after " << i << " frames";
    EXPECT_EQ(static_cast<unsigned>(builder.bytes()[kCountAt]), i);
  }
  EXPECT_FALSE(builder.empty());
  EXPECT_EQ(builder.size(), kHeader + 10 * 25);
}

TEST(DatagramBuilderTest, PacksFramesUpTo1472BytesAndNoFurther) {
  std::vector<std::byte> buffer(4000, std::byte{0xEE});
  DatagramBuilder builder(buffer, 1);
  // 80 SequenceGaps + 4 CancelByOrders fill exactly 1472 bytes.
  for (int i = 0; i < 80; ++i) {
    ASSERT_EQ(builder.Append(0, SequenceGap{1}), CodecError::kOk);
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(builder.Fits(25));
    ASSERT_EQ(builder.Append(1, CancelByOrder{1, 2}), CodecError::kOk);
  }
  EXPECT_EQ(builder.size(), kLimit);
  EXPECT_FALSE(builder.Fits(1));
  EXPECT_TRUE(builder.Fits(0));
  const std::vector<std::byte> full(builder.bytes().begin(),
                                    builder.bytes().end());
  // Nothing more fits, even the smallest frame; nothing is written.
  EXPECT_EQ(builder.Append(0, SequenceGap{1}), CodecError::kBufferTooSmall);
  const std::vector<std::byte> gap = FromHex(golden::kFrames[11].hex);
  EXPECT_EQ(builder.AppendFrame(gap), CodecError::kBufferTooSmall);
  EXPECT_EQ(builder.size(), kLimit);
  EXPECT_EQ(builder.frame_count(), 84u);
  EXPECT_EQ(Hex(builder.bytes()), Hex(full));
  for (std::size_t i = kLimit; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], std::byte{0xEE}) << i;
  }
  EXPECT_EQ(ParseExact(builder.bytes()).error, CodecError::kOk);
}

TEST(DatagramBuilderTest, RefusesAFrameThatDoesNotFitWithoutWriting) {
  std::vector<std::byte> buffer(kLimit, std::byte{0xEE});
  DatagramBuilder builder(buffer, 1);
  Rng rng(3);
  // Filled frames (71 bytes): 20 fit (12 + 1420 = 1432), the 21st does not.
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(builder.Append(1, RandomModel<Filled>(rng, false)),
              CodecError::kOk);
  }
  EXPECT_FALSE(builder.Fits(71));
  const std::vector<std::byte> before(buffer);
  EXPECT_EQ(builder.Append(1, RandomModel<Filled>(rng, false)),
            CodecError::kBufferTooSmall);
  EXPECT_EQ(buffer, before);
  EXPECT_EQ(builder.frame_count(), 20u);
  EXPECT_EQ(builder.size(), 1432u);
  // A smaller frame still fits after the refusal.
  EXPECT_TRUE(builder.Fits(25));
  EXPECT_EQ(builder.Append(1, CancelByOrder{1, 2}), CodecError::kOk);
  EXPECT_EQ(builder.size(), 1457u);
  EXPECT_EQ(ParseExact(builder.bytes()).error, CodecError::kOk);
}

TEST(DatagramBuilderTest, ASmallBufferLimitsTheDatagram) {
  std::vector<std::byte> buffer(kHeader + 30);
  DatagramBuilder builder(buffer, 1);
  EXPECT_EQ(builder.Append(1, CancelByOrder{1, 2}), CodecError::kOk);
  EXPECT_EQ(builder.Append(2, CancelByOrder{1, 2}),
            CodecError::kBufferTooSmall);
  EXPECT_EQ(builder.frame_count(), 1u);
}

TEST(DatagramBuilderTest, AppendFrameRejectsAnythingButOneWholeKnownFrame) {
  std::array<std::byte, kLimit> buffer{};
  DatagramBuilder builder(buffer, 1);
  const std::vector<std::byte> frame = FromHex(golden::kFrames[3].hex);
  std::vector<std::byte> longer = frame;
  longer.push_back(std::byte{0});
  std::vector<std::byte> unknown = frame;
  unknown[8] = std::byte{0x7F};

  EXPECT_EQ(builder.AppendFrame({}), CodecError::kTruncated);
  EXPECT_EQ(builder.AppendFrame(std::span(frame).first(8)),
            CodecError::kTruncated);
  EXPECT_EQ(builder.AppendFrame(std::span(frame).first(frame.size() - 1)),
            CodecError::kTruncated);
  EXPECT_EQ(builder.AppendFrame(longer), CodecError::kTrailingBytes);
  EXPECT_EQ(builder.AppendFrame(unknown), CodecError::kUnknownKind);
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.size(), kHeader);
  EXPECT_EQ(builder.AppendFrame(frame), CodecError::kOk);
  EXPECT_EQ(builder.frame_count(), 1u);
}

TEST(DatagramBuilderTest, ResetStartsANewDatagramInTheSameBuffer) {
  std::array<std::byte, kLimit> buffer{};
  DatagramBuilder builder(buffer, 1);
  ASSERT_EQ(builder.Append(1, CancelByOrder{1, 2}), CodecError::kOk);
  builder.Reset(golden::kDatagramSessionId);
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.size(), kHeader);
  ASSERT_EQ(builder.AppendFrame(FromHex(golden::kFrames[0].hex)),
            CodecError::kOk);
  ASSERT_EQ(builder.Append(2, CancelByClient{7, 1001}), CodecError::kOk);
  EXPECT_EQ(Hex(builder.bytes()), golden::kDatagramHex);
}

}  // namespace
}  // namespace orderwire::codec::test
