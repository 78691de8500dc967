// The block scan; see decode_block_scan.h.
//
// Frames are back to back and a frame's length is known only from its kind
// byte, so the codec's decoders follow a chain of (load kind, look up size,
// add) per frame. With VBMI the chain can leave the frames: from the 64 kind
// bytes that a frame starting at each byte j of a 64-byte block would have,
// one vpermb of a 64-entry kind -> size table gives next1[j] = j + size, and
// two more (pointer jumping) give next2 and next3, the start two and three
// frames later. None of that depends on where frames really start, so it runs
// ahead of the chain. A block holds 1 to 3 starts (the smallest frame is 25
// bytes), so the chain becomes one byte load per 64 bytes: the next block's
// entry is next3[entry] - 64; a bad kind has size 0, is its own successor,
// and so shows as next3[entry] < 64. Three frame bodies are decoded per block
// whatever it holds, into slots the count then keeps or not.
//
// The chain alone is faster than the pair step's; with the bodies added the
// whole is slower (docs/BENCHMARKS.md "Codec"): positions handed from the
// vector unit to the loads of the bodies, and output slots that depend on
// each block's frame count, cost more than the chain saves.
//
// A frame body is decoded as the codec's VBMI path decodes it (one 64-byte
// load, one vpermb with the kind's index vector and zero mask, one masked
// store), from a permutation built here from the kind table (codec/
// kind_table.h), not from the codec's own: the differential checks compare
// two derivations of the same recipes.
#include "bench/baselines/decode_block_scan.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "codec/error.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/result.h"
#include "codec/wire.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace orderwire::bench {
namespace {

using codec::CodecError;
using codec::Command;
using codec::CommandSlot;
using codec::DecodeBatch;

// Continues `batch` one frame at a time with codec::DecodeCommand: the tail
// of the block loop, and the diagnosis of the frame that stopped it.
DecodeBatch DecodeRest(std::span<const std::byte> bytes, std::span<Command> out,
                       DecodeBatch batch) noexcept {
  while (batch.frames < out.size() && batch.bytes < bytes.size()) {
    const codec::Result<std::size_t> size =
        codec::DecodeCommand(bytes.subspan(batch.bytes), out[batch.frames]);
    if (!size.ok()) {
      batch.error = size.error();
      break;
    }
    batch.bytes += *size;
    ++batch.frames;
  }
  return batch;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ORDERWIRE_HAVE_VBMI_BLOCK_SCAN 1

// The byte permutation that turns a frame of one kind into a Command: for
// each byte of the Command, the frame byte it comes from, and whether it is
// kept (bytes of fields the kind lacks, and padding, are zeroed).
struct PermuteRecipe {
  alignas(64) std::uint8_t index[64];
  std::uint64_t keep;
};

struct SlotPlacement {
  CommandSlot slot;
  std::size_t command_offset;
  std::size_t width;
};

constexpr SlotPlacement kSlotPlacements[] = {
    {CommandSlot::kAccountId, offsetof(Command, account_id), 8},
    {CommandSlot::kClientOrderId, offsetof(Command, client_order_id), 8},
    {CommandSlot::kOrderId, offsetof(Command, order_id), 8},
    {CommandSlot::kPrice, offsetof(Command, price), 8},
    {CommandSlot::kQuantity, offsetof(Command, quantity), 8},
    {CommandSlot::kInstrumentId, offsetof(Command, instrument_id), 4},
    {CommandSlot::kSide, offsetof(Command, side), 1},
    {CommandSlot::kTimeInForce, offsetof(Command, time_in_force), 1},
};
static_assert(std::is_standard_layout_v<Command> && sizeof(Command) <= 64);

// Indexed by `kind & (kRecipeKinds - 1)`, as the codec's own (codec/
// command.cc): every command kind must be below kRecipeKinds, or a kind
// would be decoded with another's recipe.
constexpr std::size_t kRecipeKinds = 16;
constexpr unsigned kRecipeMask = kRecipeKinds - 1;
static_assert([] {
  for (std::size_t k = kRecipeKinds; k < 256; ++k) {
    if (codec::kCommandFrameSize[k] != 0) return false;
  }
  return true;
}());

constexpr std::array<PermuteRecipe, kRecipeKinds> kPermuteRecipes = [] {
  std::array<PermuteRecipe, kRecipeKinds> recipes{};
  for (std::size_t kind = 0; kind < recipes.size(); ++kind) {
    if (codec::kCommandFrameSize[kind] == 0) continue;
    PermuteRecipe& r = recipes[kind];
    const codec::CommandRecipe& scalar = codec::kKindTable[kind].recipe;
    const auto place = [&](std::size_t at, std::size_t from) {
      r.index[at] = static_cast<std::uint8_t>(from);
      r.keep |= std::uint64_t{1} << at;
    };
    for (std::size_t b = 0; b < 8; ++b) {
      place(offsetof(Command, sequence) + b, codec::kSequenceOffset + b);
    }
    place(offsetof(Command, kind), codec::kKindOffset);
    for (const SlotPlacement& s : kSlotPlacements) {
      const std::size_t i = static_cast<std::size_t>(s.slot) - 1;
      if (scalar.mask[i] == 0) continue;
      for (std::size_t b = 0; b < s.width; ++b) {
        place(s.command_offset + b, scalar.offset[i] + b);
      }
    }
  }
  return recipes;
}();

constexpr std::uint64_t kCommandStoreMask =
    (std::uint64_t{1} << sizeof(Command)) - 1;

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline void
DecodeOneVbmi(const std::byte* p, Command* out) noexcept {
  const std::uint8_t kind = codec::LoadLE<std::uint8_t>(p + codec::kKindOffset);
  const PermuteRecipe& r = kPermuteRecipes[kind & kRecipeMask];
  const __m512i frame = _mm512_loadu_si512(p);
  const __m512i index = _mm512_load_si512(r.index);
  const __m512i command = _mm512_maskz_permutexvar_epi8(r.keep, index, frame);
  _mm512_mask_storeu_epi8(out, kCommandStoreMask, command);
}

constexpr std::size_t kScanBlock = 64;
// Bytes a block reads from its first byte: kind bytes of starts 0..63 (up to
// byte 72), and the 64-byte load of a frame body at a start up to 63.
constexpr std::size_t kScanReach = 2 * kScanBlock;
// At most this many frames start in one block (the smallest frame is 25).
constexpr std::size_t kScanMaxFrames = 3;
static_assert(codec::kMinCommandFrameSize * kScanMaxFrames >= kScanBlock &&
                  codec::kMinCommandFrameSize * (kScanMaxFrames - 1) <
                      kScanBlock,
              "a block holds 1 to kScanMaxFrames frame starts");
static_assert(kScanBlock - 1 + codec::kMaxCommandFrameSize < 2 * kScanBlock,
              "the first start after a block lies in the next block");
static_assert(kScanBlock + codec::kKindOffset <= kScanReach &&
              kScanBlock - 1 + 64 <= kScanReach);
// How far ahead the block loop prefetches (not tuned).
constexpr std::size_t kScanPrefetchAhead = 512;

// sizes[k] is the frame size of kind k below 64 (0 unless k is a command
// kind); vpermb indexes it with the low 6 bits of a kind byte, so the sizes
// of kind bytes of 64 and above are zeroed by a mask first.
struct alignas(64) ScanTables {
  std::uint8_t sizes[64];
  std::uint8_t iota[64];
};
constexpr ScanTables kScanTables = [] {
  ScanTables t{};
  for (std::size_t i = 0; i < 64; ++i) {
    t.sizes[i] = codec::kCommandFrameSize[i];
    t.iota[i] = static_cast<std::uint8_t>(i);
  }
  return t;
}();
static_assert(
    [] {
      for (std::size_t k = 64; k < 256; ++k) {
        if (codec::kCommandFrameSize[k] != 0) return false;
      }
      return true;
    }(),
    "every command kind is below 64, so the 64-entry table holds them all");

// One block's successors, written by the vector unit and read by the
// scalar chain: for each start j in the block, the start 1, 2 and 3 frames
// later, relative to the block (>= 64: in the next block). A start whose
// kind byte is not a command kind is its own successor (size 0), so every
// chain through a bad frame stays below 64.
struct alignas(64) ScanSuccessors {
  std::uint8_t next1[64];
  std::uint8_t next2[64];
  std::uint8_t next3[64];
};

__attribute__((target("avx512f,avx512bw,avx512vbmi"), flatten)) DecodeBatch
DecodeCommandsBlockScanVbmi(std::span<const std::byte> bytes,
                            std::span<Command> out) noexcept {
  const std::byte* const begin = bytes.data();
  const std::byte* const end = begin + bytes.size();
  const __m512i sizes_table = _mm512_load_si512(kScanTables.sizes);
  const __m512i iota = _mm512_load_si512(kScanTables.iota);
  const __m512i block_size = _mm512_set1_epi8(kScanBlock);
  const __m512i kind_limit = _mm512_set1_epi8(64);
  ScanSuccessors scan;
  const std::byte* base = begin;
  std::size_t first = 0;  // where the first frame starts in the block at base
  std::size_t n = 0;
  while (static_cast<std::size_t>(end - base) >= kScanReach &&
         out.size() - n >= kScanMaxFrames) {
    // A hint never faults, but a pointer may not go past the end of `bytes`.
    __builtin_prefetch(base + std::min(kScanPrefetchAhead,
                                       static_cast<std::size_t>(end - base)));
    // The vector part depends only on base, not on where frames start: the
    // core can run it ahead, off the chain.
    const __m512i kinds = _mm512_loadu_si512(base + codec::kKindOffset);
    const __mmask64 small = _mm512_cmplt_epu8_mask(kinds, kind_limit);
    const __m512i size =
        _mm512_maskz_permutexvar_epi8(small, kinds, sizes_table);
    const __m512i next1 = _mm512_add_epi8(iota, size);
    const __m512i next2 = _mm512_mask_permutexvar_epi8(
        next1, _mm512_cmplt_epu8_mask(next1, block_size), next1, next1);
    const __m512i next3 = _mm512_mask_permutexvar_epi8(
        next2, _mm512_cmplt_epu8_mask(next2, block_size), next2, next1);
    _mm512_store_si512(scan.next1, next1);
    _mm512_store_si512(scan.next2, next2);
    _mm512_store_si512(scan.next3, next3);
    // The chain: one byte load per block.
    const std::size_t after = scan.next3[first];
    if (after < kScanBlock) [[unlikely]]
      break;  // a bad frame among this block's: DecodeRest diagnoses it
    const std::size_t s1 = scan.next1[first];
    const std::size_t s2 = scan.next2[first];
    const bool has1 = s1 < kScanBlock;
    const bool has2 = s2 < kScanBlock;
    // Always three decodes, no branch on how many frames the block holds: a
    // start past the block is decoded from a harmless place inside the
    // reach, into a Command slot that the count below does not include.
    DecodeOneVbmi(base + first, &out[n]);
    DecodeOneVbmi(base + (s1 % kScanBlock), &out[n + 1]);
    DecodeOneVbmi(base + (s2 % kScanBlock),
                  &out[n + 1 + static_cast<std::size_t>(has1)]);
    n += 1 + static_cast<std::size_t>(has1) + static_cast<std::size_t>(has2);
    first = after - kScanBlock;
    base += kScanBlock;
  }
  return DecodeRest(
      bytes, out,
      {n, static_cast<std::size_t>(base + first - begin), CodecError::kOk});
}
#endif

}  // namespace

DecodeBatch DecodeCommandsBlockScan(std::span<const std::byte> bytes,
                                    std::span<Command> out) noexcept {
#ifdef ORDERWIRE_HAVE_VBMI_BLOCK_SCAN
  // HaveSimdDecoder: the codec's run-time check for AVX-512 F, BW and VBMI.
  if (codec::internal::HaveSimdDecoder()) {
    return DecodeCommandsBlockScanVbmi(bytes, out);
  }
#endif
  return codec::internal::DecodeCommandsScalar(bytes, out);
}

}  // namespace orderwire::bench
