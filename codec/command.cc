// Command batch decoding and encoding; see command.h.
//
// Why the batch decoder looks the way it does
// -------------------------------------------
// Frames are back to back and a frame's length is known only from its kind
// byte, so the position of frame i+1 depends on a load from frame i: a chain
// of (load kind, look up size, add) per frame that no out-of-order core can
// overlap. That chain is a floor under any such decoder (codec_bench
// BM_FrameWalk measures it alone; docs/BENCHMARKS.md "Codec").
//
// The loop below steps two frames at a time. From the current position p it
// loads, in parallel with frame 1's kind, the byte where frame 2's kind would
// be for each of the possible command frame sizes (25, 38, 47, 49). When frame
// 1's kind arrives, three conditional moves pick the right candidate's pair
// length, so one chain step (one load latency plus a few ALU ops) covers two
// frames. Kinds are still checked against a table of the five pair-step kinds
// for every frame (a branch that is always predicted on good input), and any
// other frame (a MassCancel, a Goodbye, or a bad one) falls back to the
// one-frame decoder, which decodes or diagnoses it.
//
// Decoding a frame's body is a byte permutation: every Command field comes
// from a fixed frame offset per kind (zero where the kind lacks it). With
// AVX-512 VBMI that is one 64-byte load, one vpermb with the kind's index
// vector and zero mask, and one masked store; without it, the scalar recipe
// decoder of command.h. Both are branch-free in the kind and give identical
// Commands (tests check both against each other).
//
// One exception to "no branch on the kind": a batch that starts with two
// frames of the same kind is decoded by a loop that predicts the kind
// repeats (see PairStepLoop). On a run of one kind that removes the chain
// altogether; on a random mix it costs at most one misprediction per call.
//
// On long inputs the VBMI pair loop prefetches kVbmiPrefetchAhead bytes
// ahead (measured: docs/BENCHMARKS.md, Codec).
//
// A block scan, which takes the chain off the frames with VBMI, was measured
// beside the pair step and not chosen; it is kept as a benchmark baseline
// (bench/baselines/decode_block_scan.cc).
#include "codec/command.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace orderwire::codec {
namespace {

// The pair-step selects among the five command kinds by their values 1..5,
// and looks sizes up in a 64-bit register (8 bits per kind 0..7).
static_assert(static_cast<int>(Kind::kNewLimit) == 1 &&
              static_cast<int>(Kind::kReplace) == 5);
constexpr std::uint8_t kSizeNewLimit = kFrameSize<NewLimit>;
constexpr std::uint8_t kSizeNewMarket = kFrameSize<NewMarket>;
constexpr std::uint8_t kSizeCancelByOrder = kFrameSize<CancelByOrder>;
constexpr std::uint8_t kSizeCancelByClient = kFrameSize<CancelByClient>;
constexpr std::uint8_t kSizeReplace = kFrameSize<Replace>;
static_assert(kSizeCancelByOrder == kSizeCancelByClient,
              "the pair step shares one candidate for kinds 3 and 4");

// The frame size of the kinds the pair step selects among (1..5), 0 for
// every other byte: a frame of another kind (a control command: MassCancel,
// Goodbye, OrderStatusRequest, which a stream rarely holds) stops the pair
// and run loops, and DecodeRest decodes it through the kind table. Same
// cost as kCommandFrameSize: one load.
constexpr std::array<std::uint8_t, 256> kPairStepFrameSize = [] {
  std::array<std::uint8_t, 256> sizes{};
  for (std::size_t k = 1; k <= 5; ++k) sizes[k] = kCommandFrameSize[k];
  return sizes;
}();

// The VBMI recipes are indexed by `kind & (kRecipeKinds - 1)`: every command
// kind must be below kRecipeKinds.
constexpr std::size_t kRecipeKinds = 16;
constexpr unsigned kRecipeMask = kRecipeKinds - 1;
static_assert([] {
  for (std::size_t k = kRecipeKinds; k < 256; ++k) {
    if (kCommandFrameSize[k] != 0) return false;
  }
  return true;
}());

// Sizes of kinds 0..7 packed one per byte, plus `bias` in every byte.
constexpr std::uint64_t PackedSizes(std::uint64_t bias) {
  std::uint64_t packed = 0;
  for (unsigned k = 0; k < 8; ++k) {
    packed |= (kCommandFrameSize[k] + bias) << (8 * k);
  }
  return packed;
}

// bias + size of kind `kind & 7`; only meaningful for a kind the pair step
// takes (1..5: kPairStepFrameSize).
template <std::uint64_t kBias>
[[gnu::always_inline]] inline std::uint64_t BiasedSize(std::uint8_t kind) {
  constexpr std::uint64_t kPacked = PackedSizes(kBias);
  return (kPacked >> ((kind & 7u) * 8u)) & 0xFFu;
}

// `cond ? a : b` as a conditional move: the compiler would otherwise turn the
// select into a branch that a random mix of kinds mispredicts half the time.
[[gnu::always_inline]] inline std::uint64_t Select(bool cond, std::uint64_t a,
                                                   std::uint64_t b) {
#if defined(__x86_64__)
  asm("test %b1, %b1\n\tcmovnz %2, %0" : "+r"(b) : "q"(cond), "r"(a) : "cc");
  return b;
#else
  const std::uint64_t mask = 0 - static_cast<std::uint64_t>(cond);
  return (a & mask) | (b & ~mask);
#endif
}

// Hints the line `ahead` bytes after `p` into the cache, or the end of the
// input if that is nearer (a pointer may not go past it; the clamp is off
// the length chain).
[[gnu::always_inline]] inline void PrefetchAt(const std::byte* p,
                                              const std::byte* end,
                                              std::size_t ahead) noexcept {
  __builtin_prefetch(p + std::min(ahead, static_cast<std::size_t>(end - p)));
}

// Continues `batch` one frame at a time with DecodeCommand: the tail of every
// batch loop, and the diagnosis of the frame that stopped it.
[[gnu::always_inline]] inline DecodeBatch DecodeRest(
    std::span<const std::byte> bytes, std::span<Command> out,
    DecodeBatch batch) noexcept {
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

// Decodes frames two at a time while at least kLookahead bytes remain and
// two Commands fit, then one at a time. `decode_one(p, kind, out)` decodes
// the valid command frame at p; it may read up to 64 bytes from p. With
// kPrefetchAhead > 0, each pair step prefetches the line that many bytes
// ahead (a hint: it never faults, even past the end of `bytes`).
template <std::size_t kPrefetchAhead, typename DecodeOne>
[[gnu::always_inline]] inline DecodeBatch PairStepLoop(
    std::span<const std::byte> bytes, std::span<Command> out,
    DecodeOne decode_one) noexcept {
  constexpr std::size_t kLookahead = 2 * kMaxCommandFrameSize + 64;
  const std::byte* const begin = bytes.data();
  const std::byte* const end = begin + bytes.size();
  const std::byte* p = begin;
  std::size_t n = 0;
  const auto kind_at = [](const std::byte* at) {
    return LoadLE<std::uint8_t>(at + kKindOffset);
  };
  // A run of one kind (a stream of cancels, a quoter's replaces): while the
  // kind repeats, the branch below is predicted and the next position is
  // p + a size held in a register, so the chain has no load in it at all.
  // The first different kind costs one misprediction and hands over to the
  // pair loop, which needs no prediction.
  if (static_cast<std::size_t>(end - p) >= kLookahead) {
    const std::uint8_t run_kind = kind_at(p);
    const std::size_t run_size = kPairStepFrameSize[run_kind];
    if (run_size != 0 && kind_at(p + run_size) == run_kind) {
      while (static_cast<std::size_t>(end - p) >= 64 + run_size &&
             n < out.size() && kind_at(p) == run_kind) {
        decode_one(p, run_kind, &out[n]);
        ++n;
        p += run_size;
      }
    }
  }
  while (static_cast<std::size_t>(end - p) >= kLookahead &&
         out.size() - n >= 2) {
    if constexpr (kPrefetchAhead > 0) PrefetchAt(p, end, kPrefetchAhead);
    const std::uint8_t k1 = kind_at(p);
    // Candidate pair lengths: frame 1's size plus the size of the kind byte
    // found where frame 2 starts if frame 1 has that size.
    const std::uint64_t pair_limit =
        BiasedSize<kSizeNewLimit>(kind_at(p + kSizeNewLimit));
    const std::uint64_t pair_market =
        BiasedSize<kSizeNewMarket>(kind_at(p + kSizeNewMarket));
    const std::uint64_t pair_cancel =
        BiasedSize<kSizeCancelByOrder>(kind_at(p + kSizeCancelByOrder));
    const std::uint64_t pair_replace =
        BiasedSize<kSizeReplace>(kind_at(p + kSizeReplace));
    const std::uint64_t low = Select(k1 == 1, pair_limit, pair_market);
    const std::uint64_t high = Select(k1 == 5, pair_replace, pair_cancel);
    const std::uint64_t pair = Select(k1 <= 2, low, high);

    const std::size_t s1 = kPairStepFrameSize[k1];
    if (s1 == 0) [[unlikely]]
      break;
    const std::byte* const p2 = p + s1;
    const std::uint8_t k2 = kind_at(p2);
    if (kPairStepFrameSize[k2] == 0) [[unlikely]]
      break;
    decode_one(p, k1, &out[n]);
    decode_one(p2, k2, &out[n + 1]);
    n += 2;
    p += pair;
  }
  // The tail, and whatever stopped the pair loop: one frame at a time.
  return DecodeRest(bytes, out,
                    {n, static_cast<std::size_t>(p - begin), CodecError::kOk});
}

// How far ahead the pair loop prefetches (0: not at all), chosen with
// codec_bench (docs/BENCHMARKS.md "Codec"): the VBMI path gains on the
// streamed mix; the scalar path gains nothing measurable and runs 2 more
// instructions per frame, so it does not prefetch (and stays the pair-step
// baseline exactly).
constexpr std::size_t kScalarPrefetchAhead = 0;
constexpr std::size_t kVbmiPrefetchAhead = 2048;

// The scalar body decoder: the recipe loads of DecodeCommand without checks.
[[gnu::always_inline]] inline void DecodeOneScalar(const std::byte* p,
                                                   std::uint8_t kind,
                                                   Command* out) noexcept {
  const CommandRecipe& r = kKindTable[kind].recipe;
  using internal::LoadSlot;
  out->sequence = LoadLE<std::uint64_t>(p + kSequenceOffset);
  out->account_id = LoadSlot<CommandSlot::kAccountId, AccountId>(p, r);
  out->client_order_id =
      LoadSlot<CommandSlot::kClientOrderId, ClientOrderId>(p, r);
  out->order_id = LoadSlot<CommandSlot::kOrderId, OrderId>(p, r);
  out->price = LoadSlot<CommandSlot::kPrice, Price>(p, r);
  out->quantity = LoadSlot<CommandSlot::kQuantity, Quantity>(p, r);
  out->instrument_id = LoadSlot<CommandSlot::kInstrumentId, InstrumentId>(p, r);
  out->kind = static_cast<Kind>(kind);
  out->side = LoadSlot<CommandSlot::kSide, Side>(p, r);
  out->time_in_force = LoadSlot<CommandSlot::kTimeInForce, TimeInForce>(p, r);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ORDERWIRE_HAVE_VBMI_DECODER 1

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

// Where each slot lives in a Command (offsetof: Command is standard-layout).
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

constexpr std::array<PermuteRecipe, kRecipeKinds> kPermuteRecipes = [] {
  std::array<PermuteRecipe, kRecipeKinds> recipes{};
  for (std::size_t kind = 0; kind < recipes.size(); ++kind) {
    if (kCommandFrameSize[kind] == 0) continue;
    PermuteRecipe& r = recipes[kind];
    const CommandRecipe& scalar = kKindTable[kind].recipe;
    const auto place = [&](std::size_t at, std::size_t from) {
      r.index[at] = static_cast<std::uint8_t>(from);
      r.keep |= std::uint64_t{1} << at;
    };
    for (std::size_t b = 0; b < 8; ++b) {
      place(offsetof(Command, sequence) + b, kSequenceOffset + b);
    }
    place(offsetof(Command, kind), kKindOffset);
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

// The inverse permutation: for each byte of a frame of the kind, the byte of
// the Command it comes from. Every frame byte has a source (sequence, kind
// and the kind's fields cover the frame exactly; checked below).
struct EncodeRecipe {
  alignas(64) std::uint8_t index[64];
  std::uint64_t store_mask;  // the frame's bytes
};

constexpr std::array<EncodeRecipe, kRecipeKinds> kEncodeRecipes = [] {
  std::array<EncodeRecipe, kRecipeKinds> recipes{};
  for (std::size_t kind = 0; kind < recipes.size(); ++kind) {
    const std::size_t size = kCommandFrameSize[kind];
    if (size == 0) continue;
    EncodeRecipe& r = recipes[kind];
    std::uint64_t covered = 0;
    for (std::size_t at = 0; at < 64; ++at) {
      if ((kPermuteRecipes[kind].keep >> at & 1) == 0) continue;
      const std::size_t from = kPermuteRecipes[kind].index[at];
      r.index[from] = static_cast<std::uint8_t>(at);
      covered |= std::uint64_t{1} << from;
    }
    r.store_mask = (std::uint64_t{1} << size) - 1;
    if (covered != r.store_mask) throw "a frame byte has no Command source";
  }
  return recipes;
}();

constexpr std::uint64_t kCommandLoadMask =
    (std::uint64_t{1} << sizeof(Command)) - 1;

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void EncodeOneVbmi(
    const Command& command, std::byte* out) noexcept {
  const EncodeRecipe& r =
      kEncodeRecipes[static_cast<std::uint8_t>(command.kind) & kRecipeMask];
  const __m512i value = _mm512_maskz_loadu_epi8(kCommandLoadMask, &command);
  const __m512i index = _mm512_load_si512(r.index);
  const __m512i frame =
      _mm512_maskz_permutexvar_epi8(r.store_mask, index, value);
  _mm512_mask_storeu_epi8(out, r.store_mask, frame);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void DecodeOneVbmi(
    const std::byte* p, std::uint8_t kind, Command* out) noexcept {
  const PermuteRecipe& r = kPermuteRecipes[kind & kRecipeMask];
  const __m512i frame = _mm512_loadu_si512(p);
  const __m512i index = _mm512_load_si512(r.index);
  const __m512i command = _mm512_maskz_permutexvar_epi8(r.keep, index, frame);
  _mm512_mask_storeu_epi8(out, kCommandStoreMask, command);
}

// The VBMI path of DecodeCommands: the pair step with the VBMI body,
// prefetching ahead on long inputs.
__attribute__((target("avx512f,avx512bw,avx512vbmi"), flatten)) DecodeBatch
DecodeCommandsVbmi(std::span<const std::byte> bytes,
                   std::span<Command> out) noexcept {
  return PairStepLoop<kVbmiPrefetchAhead>(
      bytes, out, [](const std::byte* p, std::uint8_t kind, Command* c) {
        DecodeOneVbmi(p, kind, c);
      });
}

// The pair step with the VBMI body and no prefetch: the baseline codec_bench
// measures the VBMI path's prefetch against.
__attribute__((target("avx512f,avx512bw,avx512vbmi"), flatten)) DecodeBatch
DecodeCommandsPairStepVbmi(std::span<const std::byte> bytes,
                           std::span<Command> out) noexcept {
  return PairStepLoop<0>(bytes, out,
                         [](const std::byte* p, std::uint8_t kind, Command* c) {
                           DecodeOneVbmi(p, kind, c);
                         });
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"), flatten)) EncodeBatch
EncodeCommandsVbmi(std::span<const Command> commands,
                   std::span<std::byte> out) noexcept {
  EncodeBatch batch{0, 0, CodecError::kOk};
  for (const Command& command : commands) {
    const std::size_t size =
        kCommandFrameSize[static_cast<std::uint8_t>(command.kind)];
    if (size == 0 || out.size() - batch.bytes < size) [[unlikely]] {
      batch.error =
          size == 0 ? CodecError::kNotACommand : CodecError::kBufferTooSmall;
      break;
    }
    EncodeOneVbmi(command, out.data() + batch.bytes);
    batch.bytes += size;
    ++batch.commands;
  }
  return batch;
}

bool CpuHasVbmi() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vbmi");
}
#endif

}  // namespace

namespace internal {

DecodeBatch DecodeCommandsScalar(std::span<const std::byte> bytes,
                                 std::span<Command> out) noexcept {
  return PairStepLoop<kScalarPrefetchAhead>(
      bytes, out, [](const std::byte* p, std::uint8_t kind, Command* c) {
        DecodeOneScalar(p, kind, c);
      });
}

DecodeBatch DecodeCommandsPairStepScalar(std::span<const std::byte> bytes,
                                         std::span<Command> out) noexcept {
  return PairStepLoop<0>(bytes, out,
                         [](const std::byte* p, std::uint8_t kind, Command* c) {
                           DecodeOneScalar(p, kind, c);
                         });
}

DecodeBatch DecodeCommandsPairStep(std::span<const std::byte> bytes,
                                   std::span<Command> out) noexcept {
#ifdef ORDERWIRE_HAVE_VBMI_DECODER
  if (HaveSimdDecoder()) return DecodeCommandsPairStepVbmi(bytes, out);
#endif
  return DecodeCommandsPairStepScalar(bytes, out);
}

bool HaveSimdDecoder() noexcept {
#ifdef ORDERWIRE_HAVE_VBMI_DECODER
  static const bool have = CpuHasVbmi();
  return have;
#else
  return false;
#endif
}

DecodeBatch DecodeCommandsSimd(std::span<const std::byte> bytes,
                               std::span<Command> out) noexcept {
#ifdef ORDERWIRE_HAVE_VBMI_DECODER
  if (HaveSimdDecoder()) return DecodeCommandsVbmi(bytes, out);
#endif
  return DecodeCommandsScalar(bytes, out);
}

}  // namespace internal

DecodeBatch DecodeCommands(std::span<const std::byte> bytes,
                           std::span<Command> out) noexcept {
  return internal::DecodeCommandsSimd(bytes, out);
}

namespace {

// Encodes one command by its kind's Model (the portable path).
Result<std::size_t> EncodeCommandScalar(const Command& command,
                                        std::span<std::byte> out) noexcept {
  switch (command.kind) {
    case Kind::kNewLimit:
      return EncodeFrame(command.sequence, command.As<NewLimit>(), out);
    case Kind::kNewMarket:
      return EncodeFrame(command.sequence, command.As<NewMarket>(), out);
    case Kind::kCancelByOrder:
      return EncodeFrame(command.sequence, command.As<CancelByOrder>(), out);
    case Kind::kCancelByClient:
      return EncodeFrame(command.sequence, command.As<CancelByClient>(), out);
    case Kind::kReplace:
      return EncodeFrame(command.sequence, command.As<Replace>(), out);
    case Kind::kMassCancel:
      return EncodeFrame(command.sequence, command.As<MassCancel>(), out);
    case Kind::kGoodbye:
      return EncodeFrame(command.sequence, command.As<Goodbye>(), out);
    case Kind::kOrderStatusRequest:
      return EncodeFrame(command.sequence, command.As<OrderStatusRequest>(),
                         out);
    default:
      return CodecError::kNotACommand;
  }
}

}  // namespace

namespace internal {

Result<std::size_t> EncodeCommandPortable(const Command& command,
                                          std::span<std::byte> out) noexcept {
  return EncodeCommandScalar(command, out);
}

}  // namespace internal

EncodeBatch EncodeCommands(std::span<const Command> commands,
                           std::span<std::byte> out) noexcept {
#ifdef ORDERWIRE_HAVE_VBMI_DECODER
  if (internal::HaveSimdDecoder()) return EncodeCommandsVbmi(commands, out);
#endif
  EncodeBatch batch{0, 0, CodecError::kOk};
  for (const Command& command : commands) {
    const Result<std::size_t> size =
        EncodeCommandScalar(command, out.subspan(batch.bytes));
    if (!size.ok()) {
      batch.error = size.error();
      break;
    }
    batch.bytes += *size;
    ++batch.commands;
  }
  return batch;
}

Result<std::size_t> EncodeCommand(const Command& command,
                                  std::span<std::byte> out) noexcept {
  const std::size_t size =
      kCommandFrameSize[static_cast<std::uint8_t>(command.kind)];
  if (size == 0) [[unlikely]]
    return CodecError::kNotACommand;
  if (out.size() < size) [[unlikely]]
    return CodecError::kBufferTooSmall;
#ifdef ORDERWIRE_HAVE_VBMI_DECODER
  // One permutation whatever the kind: no branch for a mix to mispredict.
  if (internal::HaveSimdDecoder()) {
    EncodeOneVbmi(command, out.data());
    return size;
  }
#endif
  return EncodeCommandScalar(command, out);
}

}  // namespace orderwire::codec
