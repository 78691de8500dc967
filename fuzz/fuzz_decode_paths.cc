// Fuzz target: the DecodeCommands implementations against each other over
// arbitrary bytes (differential).
//
// The first input byte picks how many Commands the output has room for (1..64);
// the rest is the stream. The portable path, the AVX-512 VBMI path (the
// portable code again on a CPU without VBMI), the pair-step baselines and the
// block scan (bench/baselines/) must each give the DecodeBatch of DecodeCommand
// applied frame by frame (frames, byte offset, error) and the same Commands,
// and none may read past the input (libFuzzer hands over a heap block of
// exactly `size` bytes, so AddressSanitizer sees any overread).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "bench/baselines/decode_block_scan.h"
#include "codec/command.h"
#include "codec/error.h"
#include "fuzz/fuzz_check.h"

namespace orderwire::codec {
namespace {

using Decoder = DecodeBatch (*)(std::span<const std::byte>,
                                std::span<Command>) noexcept;

constexpr Decoder kDecoders[] = {
    internal::DecodeCommandsScalar,
    internal::DecodeCommandsSimd,
    DecodeCommands,
    internal::DecodeCommandsPairStep,
    internal::DecodeCommandsPairStepScalar,
    bench::DecodeCommandsBlockScan,
};

constexpr std::size_t kMaxOut = 64;

bool SameCommand(const Command& a, const Command& b) {
  return a.sequence == b.sequence && a.account_id == b.account_id &&
         a.client_order_id == b.client_order_id && a.order_id == b.order_id &&
         a.price == b.price && a.quantity == b.quantity &&
         a.instrument_id == b.instrument_id && a.kind == b.kind &&
         a.side == b.side && a.time_in_force == b.time_in_force;
}

void CheckPaths(std::size_t room, std::span<const std::byte> bytes) {
  // The reference: DecodeCommand one frame at a time.
  std::array<Command, kMaxOut> expected{};
  DecodeBatch want{0, 0, CodecError::kOk};
  while (want.frames < room && want.bytes < bytes.size()) {
    const Result<std::size_t> size =
        DecodeCommand(bytes.subspan(want.bytes), expected[want.frames]);
    if (!size.ok()) {
      want.error = size.error();
      break;
    }
    want.bytes += *size;
    ++want.frames;
  }
  for (const Decoder decode : kDecoders) {
    std::array<Command, kMaxOut> out{};
    const DecodeBatch got = decode(bytes, std::span<Command>(out).first(room));
    FUZZ_CHECK(got.frames == want.frames);
    FUZZ_CHECK(got.bytes == want.bytes);
    FUZZ_CHECK(got.error == want.error);
    for (std::size_t i = 0; i < want.frames; ++i) {
      FUZZ_CHECK(SameCommand(out[i], expected[i]));
    }
  }
}

}  // namespace
}  // namespace orderwire::codec

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0) return 0;
  const std::size_t room = 1 + data[0] % orderwire::codec::kMaxOut;
  const std::span<const std::byte> bytes(
      reinterpret_cast<const std::byte*>(data + 1), size - 1);
  orderwire::codec::CheckPaths(room, bytes);
  return 0;
}
