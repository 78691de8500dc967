// The implementations behind DecodeCommands, forced one by one, against the
// one-frame-at-a-time DecodeCommand: the portable path (what a CPU without
// AVX-512 VBMI runs), the VBMI path (where this CPU has it), the pair-step
// baselines and the block scan (a benchmark baseline, bench/baselines/). On the
// golden frames of docs/PROTOCOL-GOLDEN.md, on the golden datagram, and on
// malformed input (a stream cut at every byte, a bad kind byte in every frame,
// trailing bytes, every output size) each must give the same DecodeBatch
// (frames, byte offset, error) and the same Commands as the reference.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/baselines/decode_block_scan.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/error.h"
#include "codec/kind_table.h"
#include "codec/testing/random_commands.h"
#include "gtest/gtest.h"
#include "tests/codec/golden.h"
#include "tests/codec/test_support.h"

namespace orderwire::codec::test {
namespace {

using Decoder = DecodeBatch (*)(std::span<const std::byte>,
                                std::span<Command>) noexcept;

struct Path {
  const char* name;
  Decoder decode;
};

// Every implementation; on a CPU without VBMI the VBMI ones run the portable
// code (HaveSimdDecoder says which), so each path is still run.
constexpr Path kPaths[] = {
    {"scalar (forced)", internal::DecodeCommandsScalar},
    {"simd (VBMI where the CPU has it)", internal::DecodeCommandsSimd},
    {"DecodeCommands", DecodeCommands},
    {"pair step (baseline)", internal::DecodeCommandsPairStep},
    {"pair step, scalar body (baseline)",
     internal::DecodeCommandsPairStepScalar},
    {"block scan (bench/baselines)", bench::DecodeCommandsBlockScan},
};

// DecodeCommand one frame at a time: the reference.
DecodeBatch Reference(std::span<const std::byte> bytes,
                      std::span<Command> out) {
  DecodeBatch batch{0, 0, CodecError::kOk};
  while (batch.frames < out.size() && batch.bytes < bytes.size()) {
    const Result<std::size_t> size =
        DecodeCommand(bytes.subspan(batch.bytes), out[batch.frames]);
    if (!size.ok()) {
      batch.error = size.error();
      break;
    }
    batch.bytes += *size;
    ++batch.frames;
  }
  return batch;
}

std::string Describe(const DecodeBatch& b) {
  return std::to_string(b.frames) + " frames, " + std::to_string(b.bytes) +
         " bytes, error " + std::string(Name(b.error));
}

bool SameCommand(const Command& a, const Command& b) {
  return a.sequence == b.sequence && a.account_id == b.account_id &&
         a.client_order_id == b.client_order_id && a.order_id == b.order_id &&
         a.price == b.price && a.quantity == b.quantity &&
         a.instrument_id == b.instrument_id && a.kind == b.kind &&
         a.side == b.side && a.time_in_force == b.time_in_force;
}

// Every path on `bytes` (copied into a buffer of exactly its size, so that
// AddressSanitizer sees any read past it) with room for `capacity` Commands
// gives what the reference gives.
::testing::AssertionResult AllPathsAgree(std::span<const std::byte> bytes,
                                         std::size_t capacity) {
  const ExactBuffer exact(bytes);
  std::vector<Command> expected(capacity);
  const DecodeBatch want = Reference(exact.span(), expected);
  for (const Path& path : kPaths) {
    std::vector<Command> out(capacity);
    const DecodeBatch got = path.decode(exact.span(), out);
    if (got.frames != want.frames || got.bytes != want.bytes ||
        got.error != want.error) {
      return ::testing::AssertionFailure()
             << path.name << " on " << bytes.size() << " bytes, room for "
             << capacity << ": " << Describe(got) << "; reference "
             << Describe(want);
    }
    for (std::size_t i = 0; i < want.frames; ++i) {
      if (!SameCommand(out[i], expected[i])) {
        return ::testing::AssertionFailure()
               << path.name << ": Command " << i << " differs";
      }
    }
  }
  return ::testing::AssertionSuccess() << Describe(want);
}

std::vector<std::byte> Golden(std::string_view name) {
  for (const golden::GoldenFrame& frame : golden::kFrames) {
    if (frame.name == name) return FromHex(frame.hex);
  }
  ADD_FAILURE() << "no golden frame " << name;
  return {};
}

// The order kinds, and the commands the pair step does not take (decoded
// one at a time by every path's fallback).
constexpr std::string_view kGoldenCommands[] = {
    "NewLimitBuy",   "NewLimitSell",   "NewMarket",
    "CancelByOrder", "CancelByClient", "Replace",
    "MassCancel",    "Goodbye",        "OrderStatusRequest"};

// The golden command frames over and over in a mixed order, `frames` of
// them (long enough for the block scan's 64-byte blocks), and their offsets.
std::vector<std::byte> GoldenStream(std::size_t frames,
                                    std::vector<std::size_t>* offsets) {
  std::vector<std::byte> bytes;
  testing::SplitMix64 rng(12);
  for (std::size_t i = 0; i < frames; ++i) {
    if (offsets != nullptr) offsets->push_back(bytes.size());
    const std::vector<std::byte> frame =
        Golden(kGoldenCommands[rng.Below(std::size(kGoldenCommands))]);
    bytes.insert(bytes.end(), frame.begin(), frame.end());
  }
  return bytes;
}

TEST(DecodePathsTest, TheSimdPathIsTakenWhereTheCpuHasAvx512Vbmi) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool vbmi = __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vbmi");
  EXPECT_EQ(internal::HaveSimdDecoder(), vbmi);
  if (!vbmi) {
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI: the SIMD path runs the "
                    "portable code here, and the other tests cover it";
  }
#else
  EXPECT_FALSE(internal::HaveSimdDecoder());
  GTEST_SKIP() << "not an x86-64 build: there is no AVX-512 VBMI path";
#endif
}

TEST(DecodePathsTest, EveryGoldenFrameAloneDecodesTheSameOnEveryPath) {
  for (const golden::GoldenFrame& frame : golden::kFrames) {
    SCOPED_TRACE(std::string(frame.name));
    const std::vector<std::byte> bytes = FromHex(frame.hex);
    EXPECT_TRUE(AllPathsAgree(bytes, 4));
  }
}

TEST(DecodePathsTest, StreamsOfGoldenCommandFramesDecodeTheSameOnEveryPath) {
  std::vector<std::size_t> offsets;
  const std::vector<std::byte> bytes = GoldenStream(400, &offsets);
  for (const std::size_t capacity : {1u, 2u, 3u, 4u, 5u, 64u, 256u, 400u}) {
    SCOPED_TRACE(capacity);
    EXPECT_TRUE(AllPathsAgree(bytes, capacity));
  }
  // And from every starting frame of the first 100 (each alignment of the
  // blocks against the frames).
  for (std::size_t i = 0; i < 100; ++i) {
    EXPECT_TRUE(AllPathsAgree(std::span(bytes).subspan(offsets[i]), 300))
        << "from frame " << i;
  }
}

// A report frame is not a command: every path stops at it, wherever it is.
TEST(DecodePathsTest, AGoldenReportFrameStopsEveryPathAtItsOffset) {
  std::vector<std::size_t> offsets;
  const std::vector<std::byte> commands = GoldenStream(60, &offsets);
  for (const golden::GoldenFrame& report : golden::kFrames) {
    if (Info(report.kind).kind_class != KindClass::kReport) continue;
    for (std::size_t at = 0; at < offsets.size(); ++at) {
      std::vector<std::byte> bytes(
          commands.begin(),
          commands.begin() + static_cast<std::ptrdiff_t>(offsets[at]));
      const std::vector<std::byte> frame = FromHex(report.hex);
      bytes.insert(bytes.end(), frame.begin(), frame.end());
      bytes.insert(bytes.end(),
                   commands.begin() + static_cast<std::ptrdiff_t>(offsets[at]),
                   commands.end());
      const ::testing::AssertionResult agree = AllPathsAgree(bytes, 100);
      ASSERT_TRUE(agree) << report.name << " at frame " << at;
      // The reference itself says: `at` frames, then NotACommand there.
      std::vector<Command> out(100);
      const DecodeBatch batch = Reference(bytes, out);
      EXPECT_EQ(batch.frames, at);
      EXPECT_EQ(batch.bytes, offsets[at]);
      EXPECT_EQ(batch.error, CodecError::kNotACommand);
    }
  }
}

// The golden datagram's frames, and the same frames behind a datagram
// header cut at every length: DatagramView::Parse's frame rule (a frame cut
// short is kTruncated at its offset) holds on every path.
TEST(DecodePathsTest, TheGoldenDatagramsFramesDecodeTheSameOnEveryPath) {
  const std::vector<std::byte> datagram = FromHex(golden::kDatagramHex);
  ASSERT_EQ(datagram.size(), golden::kDatagramSize);
  const std::span<const std::byte> frames =
      std::span(datagram).subspan(kDatagramHeaderSize);
  EXPECT_TRUE(AllPathsAgree(frames, 2));
  for (std::size_t cut = 0; cut <= frames.size(); ++cut) {
    ASSERT_TRUE(AllPathsAgree(frames.first(cut), 2)) << "cut at " << cut;
  }
}

// Malformed datagrams: where DatagramView::Parse (kCommands) refuses a
// datagram for one of its frames, every path stops at that frame's offset
// (less the header) with the same error; where it refuses trailing bytes,
// every path given room for frame_count Commands stops exactly there.
TEST(DecodePathsTest, MalformedDatagramsStopEveryPathWhereTheParserStops) {
  testing::SplitMix64 rng(31);
  std::size_t checked = 0;
  for (int round = 0; round < 400; ++round) {
    // A datagram of golden command frames...
    std::vector<std::size_t> offsets;
    const std::size_t count = 1 + rng.Below(30);
    std::vector<std::byte> frames = GoldenStream(count, &offsets);
    // ...damaged: a bad kind byte, a cut, or trailing bytes.
    const std::size_t victim = rng.Below(count);
    switch (round % 3) {
      case 0: {
        const std::uint8_t bad[] = {0x00, 0x07, 0x0A, 0x3F, 0x40, 0x41, 0x43,
                                    0x4B, 0x4C, 0x7F, 0x80, 0xC1, 0xFF};
        frames[offsets[victim] + kKindOffset] =
            std::byte{bad[rng.Below(std::size(bad))]};
        break;
      }
      case 1:
        frames.resize(offsets[victim] +
                      rng.Below(frames.size() - offsets[victim]));
        break;
      default:
        for (std::size_t i = 1 + rng.Below(60); i > 0; --i) {
          frames.push_back(static_cast<std::byte>(rng.Below(256)));
        }
        break;
    }
    std::vector<std::byte> datagram = FromHex(golden::kDatagramHex);
    datagram.resize(kDatagramHeaderSize);
    StoreLE(datagram.data() + 8, static_cast<std::uint16_t>(count));
    datagram.insert(datagram.end(), frames.begin(), frames.end());
    if (datagram.size() > kMaxDatagramSize) continue;
    std::size_t error_offset = 0;
    const Result<DatagramView> parsed =
        DatagramView::Parse(datagram, FrameFilter::kCommands, &error_offset);
    ASSERT_TRUE(AllPathsAgree(frames, count + 40)) << "round " << round;
    ASSERT_TRUE(AllPathsAgree(frames, count)) << "round " << round;
    if (parsed.ok()) continue;
    const CodecError error = parsed.error();
    std::vector<Command> out(count);
    const DecodeBatch batch = Reference(frames, out);
    ASSERT_GE(error_offset, kDatagramHeaderSize) << Name(error);
    const std::size_t at = error_offset - kDatagramHeaderSize;
    // A Heartbeat is a frame of a datagram to the service, not a command:
    // a command decoder stops at it (kNotACommand) where the parser goes on.
    if (batch.error == CodecError::kNotACommand && batch.bytes < at &&
        kKindTable[static_cast<std::uint8_t>(frames[batch.bytes + kKindOffset])]
                .kind_class == KindClass::kClientControl) {
      // The whole Heartbeat lies before where the parser stopped.
      EXPECT_LE(batch.bytes + kFrameSize<Heartbeat>, at) << "round " << round;
      ++checked;
      continue;
    }
    if (error == CodecError::kTrailingBytes) {
      EXPECT_EQ(batch.frames, count);
      EXPECT_EQ(batch.bytes, at);
      EXPECT_EQ(batch.error, CodecError::kOk);
    } else if (error == CodecError::kCountMismatch) {
      EXPECT_LT(batch.frames, count);
      EXPECT_EQ(batch.bytes, at);
    } else {
      EXPECT_EQ(batch.bytes, at) << Name(error);
      // The one difference between the two rules: a report frame cut short
      // is kTruncated to the parser (the frame is checked whole before its
      // class) and kNotACommand to a command decoder (which never needs a
      // report's length).
      const bool cut_report =
          error == CodecError::kTruncated &&
          batch.error == CodecError::kNotACommand &&
          at + kKindOffset < frames.size() &&
          kKindTable[static_cast<std::uint8_t>(frames[at + kKindOffset])]
                  .kind_class == KindClass::kReport;
      if (!cut_report) {
        EXPECT_EQ(batch.error, error) << "round " << round;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 300u);
}

// A random mixed stream cut at every byte, and with a bad kind byte in each
// of its frames: every path agrees with the reference every time.
TEST(DecodePathsTest, EveryCutAndEveryBadKindDecodesTheSameOnEveryPath) {
  std::vector<Kind> kinds;
  const std::vector<std::byte> stream =
      testing::EncodeRandomStream(80, 7, testing::kDecodeBenchMix, &kinds);
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    ASSERT_TRUE(AllPathsAgree(std::span(stream).first(cut), 100))
        << "cut at " << cut;
  }
  std::size_t offset = 0;
  for (const Kind kind : kinds) {
    for (const int bad :
         {0x00, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x40, 0x44, 0x85, 0xFF}) {
      std::vector<std::byte> damaged = stream;
      damaged[offset + kKindOffset] = static_cast<std::byte>(bad);
      ASSERT_TRUE(AllPathsAgree(damaged, 100))
          << "kind " << bad << " at " << offset;
    }
    offset += Info(kind).frame_size;
  }
}

// Arbitrary bytes, and arbitrary bytes that mostly look like command kinds.
TEST(DecodePathsTest, RandomBytesDecodeTheSameOnEveryPath) {
  testing::SplitMix64 rng(4242);
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::byte> bytes(rng.Below(700));
    for (std::byte& b : bytes) {
      b = round % 2 == 0 ? static_cast<std::byte>(rng.Below(256))
                         : static_cast<std::byte>(rng.Below(10));
    }
    ASSERT_TRUE(AllPathsAgree(bytes, 1 + rng.Below(40))) << "round " << round;
  }
}

}  // namespace
}  // namespace orderwire::codec::test
