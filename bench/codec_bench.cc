// codec_bench: what decoding and encoding command frames costs, per frame,
// beside baselines measured in the same run on the same bytes.
//
// Every benchmark reads one pre-encoded stream made by
// codec::testing::EncodeRandomStream with a fixed seed: the decode mix
// (kDecodeBenchMix: 50% NewLimit, 5% NewMarket, 25% CancelByOrder, 5%
// CancelByClient, 15% Replace) for the mix, or a stream of one kind for the
// per-kind figures and the peers. Each decoder fills the same consumer: a
// reusable array of kBatch Commands, whose quantity and price fields are
// summed after every batch, so no decoder's work can be optimized away and
// every decoder is charged the same for it.
//
//   BM_DecodeMix/N        DecodeCommands over N mixed frames (1000: the
//                         stream stays in cache; 1000000: 40 MB, streamed)
//   BM_DecodeMixPairStep/N  the pair step with the VBMI body and no
//                         prefetch: BM_DecodeMix's baseline
//   BM_DecodeMixBlockScan/N  the VBMI block scan (measured, not chosen;
//                         bench/baselines/decode_block_scan.h)
//   BM_DecodeMixScalar/N  the portable path (no AVX-512 VBMI), forced
//   BM_DecodeMixPairStepScalar/N  the portable path's baseline (the same
//                         code: the portable path does not prefetch)
//   BM_DecodeKind/<Kind>  DecodeCommands over 1000 frames of one kind
//   BM_Encode             EncodeCommands (batch) of the 1000 mixed Commands
//   BM_EncodeSingle       EncodeCommand, one call per Command, same input
//   BM_EncodeKind/NewLimit  EncodeCommand of 1000 NewLimit Commands (the
//                         same call with its kind branch always predicted)
//   BM_EncodeFrame/NewLimit  EncodeFrame<NewLimit> of 1000 models
//   BM_ReadBound/N        sum of the mix bytes as u64 words: the cost of
//                         touching the bytes at all
//   BM_Memcpy/N           memcpy of the mix bytes
//   BM_FrameWalk/N        the frame-size chain alone: kind byte -> frame size
//                         -> next frame, nothing decoded
//   BM_OwningCopyDecode   each frame copied into a heap std::vector first,
//                         then decoded: the pattern zero-copy avoids
//   BM_FlatBuffersStruct  (peers) the NewLimit stream's content as
//   BM_FlatBuffersVerified  size-prefixed FlatBuffers (struct read in place;
//   BM_Protobuf             table + Verifier) and length-prefixed proto3
//                           messages, read into the same Commands
//
// Counters: items_per_second is frames per second; ns_per_frame is CPU time
// per frame (Google Benchmark's inverted rate: the console prints it with its
// SI prefix, e.g. "2.4ns", the JSON holds seconds); bytes_per_second is over
// the encoded bytes of that format.
// Run it pinned, as scripts/bench.sh does: `taskset -c 1 codec_bench`.
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "bench/baselines/decode_block_scan.h"
#include "codec/command.h"
#include "codec/error.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/testing/random_commands.h"
#include "codec/types.h"
#include "codec/wire.h"

#ifdef ORDERWIRE_BENCH_PEERS
#include "bench/peers/new_limit.pb.h"
#include "bench/peers/new_limit_generated.h"
#endif

namespace orderwire::codec {
namespace {

// The seed of every stream: the figures are for the same bytes on every run.
constexpr std::uint64_t kSeed = 0x6F72646572776972;  // "orderwir"
constexpr std::size_t kBatch = 256;
constexpr std::int64_t kCacheFrames = 1000;
constexpr std::int64_t kStreamFrames = 1'000'000;

// A pre-encoded stream and where each of its frames starts.
struct Stream {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> offsets;  // frame i starts at offsets[i]; the last
                                     // entry is bytes.size()

  // The bytes of the first `count` frames.
  [[nodiscard]] std::span<const std::byte> Prefix(std::size_t count) const {
    return std::span<const std::byte>(bytes).first(offsets[count]);
  }
};

Stream MakeStream(std::size_t count, const testing::CommandMix& mix) {
  Stream stream;
  std::vector<Kind> kinds;
  stream.bytes = testing::EncodeRandomStream(count, kSeed, mix, &kinds);
  stream.offsets.reserve(count + 1);
  std::size_t offset = 0;
  for (const Kind kind : kinds) {
    stream.offsets.push_back(offset);
    offset += Info(kind).frame_size;
  }
  stream.offsets.push_back(offset);
  return stream;
}

// The decode mix, 1000000 frames; its first 1000 frames are the cache-resident
// stream (EncodeRandomStream with the same seed makes the same prefix).
const Stream& MixStream() {
  static const Stream stream = MakeStream(
      static_cast<std::size_t>(kStreamFrames), testing::kDecodeBenchMix);
  return stream;
}

// In the order of CommandMix::percent.
constexpr std::array<Kind, 5> kCommandKinds = {
    Kind::kNewLimit, Kind::kNewMarket, Kind::kCancelByOrder,
    Kind::kCancelByClient, Kind::kReplace};
static_assert(
    [] {
      for (std::size_t i = 0; i < kCommandKinds.size(); ++i) {
        if (static_cast<std::size_t>(kCommandKinds[i]) != i + 1) return false;
      }
      return true;
    }(),
    "KindStream indexes its streams by kind value - 1");

// 1000 frames of `kind` alone.
const Stream& KindStream(Kind kind) {
  static const std::array<Stream, kCommandKinds.size()> streams = [] {
    std::array<Stream, kCommandKinds.size()> all;
    for (std::size_t i = 0; i < kCommandKinds.size(); ++i) {
      testing::CommandMix mix{};
      mix.percent[i] = 100;
      all[i] = MakeStream(static_cast<std::size_t>(kCacheFrames), mix);
    }
    return all;
  }();
  return streams[static_cast<std::size_t>(kind) - 1];
}

// Decodes a whole stream that is known to be good (setup only, not timed).
std::vector<Command> DecodeAll(std::span<const std::byte> bytes) {
  std::vector<Command> commands;
  while (!bytes.empty()) {
    Command command;
    const Result<std::size_t> size = DecodeCommand(bytes, command);
    if (!size.ok()) break;
    commands.push_back(command);
    bytes = bytes.subspan(*size);
  }
  return commands;
}

// The consumer every decoder feeds: reads two fields of each Command.
[[nodiscard]] inline std::uint64_t Consume(
    std::span<const Command> commands) noexcept {
  std::uint64_t sum = 0;
  for (const Command& command : commands) {
    sum += command.quantity.value() +
           static_cast<std::uint64_t>(command.price.value());
  }
  return sum;
}

// items_per_second (frames/s), bytes_per_second and ns_per_frame, from the
// frames and bytes one iteration handles.
void SetFrameCounters(benchmark::State& state, std::size_t frames,
                      std::size_t bytes) {
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(frames));
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(bytes));
  // frames * iterations / seconds, inverted: seconds per frame. The console
  // prints it with an SI prefix ("2.4ns"); the JSON holds seconds.
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(frames),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

// ---------------------------------------------------------------------------
// orderwire decode and encode.

// A batch decoder: DecodeCommands or one of its implementations.
using Decoder = DecodeBatch (*)(std::span<const std::byte>,
                                std::span<Command>) noexcept;

// `decode` over `bytes` in batches of kBatch. Sets `frames` to the
// number decoded; stops at the first error.
[[nodiscard]] inline std::uint64_t DecodeStream(
    std::span<const std::byte> bytes, std::span<Command, kBatch> out,
    std::size_t& frames, Decoder decode = DecodeCommands) noexcept {
  std::uint64_t sum = 0;
  frames = 0;
  while (!bytes.empty()) {
    const DecodeBatch batch = decode(bytes, out);
    sum += Consume(std::span<const Command>(out).first(batch.frames));
    frames += batch.frames;
    if (batch.error != CodecError::kOk || batch.frames == 0) break;
    bytes = bytes.subspan(batch.bytes);
  }
  return sum;
}

void RunDecode(benchmark::State& state, const Stream& stream, std::size_t count,
               Decoder decode = DecodeCommands) {
  const std::span<const std::byte> bytes = stream.Prefix(count);
  std::array<Command, kBatch> out{};
  std::size_t frames = 0;
  // Every decoder must give what DecodeCommand gives frame by frame.
  const std::uint64_t expected =
      DecodeStream(bytes, out, frames, internal::DecodeCommandsPairStepScalar);
  if (frames != count || DecodeStream(bytes, out, frames, decode) != expected ||
      frames != count) {
    state.SkipWithError("the stream did not decode whole");
    return;
  }
  for (auto _ : state) {
    std::uint64_t sum = DecodeStream(bytes, out, frames, decode);
    benchmark::DoNotOptimize(sum);
  }
  SetFrameCounters(state, count, bytes.size());
}

void BM_DecodeMix(benchmark::State& state) {
  RunDecode(state, MixStream(), static_cast<std::size_t>(state.range(0)));
}

// The baseline of BM_DecodeMix: the pair step without prefetch (with the
// VBMI body where the CPU has it).
void BM_DecodeMixPairStep(benchmark::State& state) {
  RunDecode(state, MixStream(), static_cast<std::size_t>(state.range(0)),
            internal::DecodeCommandsPairStep);
}

// The portable path DecodeCommands takes without AVX-512 VBMI, forced, and
// its baseline (the same code: the portable path does not prefetch).
void BM_DecodeMixScalar(benchmark::State& state) {
  RunDecode(state, MixStream(), static_cast<std::size_t>(state.range(0)),
            internal::DecodeCommandsScalar);
}

void BM_DecodeMixBlockScan(benchmark::State& state) {
  RunDecode(state, MixStream(), static_cast<std::size_t>(state.range(0)),
            bench::DecodeCommandsBlockScan);
}

void BM_DecodeMixPairStepScalar(benchmark::State& state) {
  RunDecode(state, MixStream(), static_cast<std::size_t>(state.range(0)),
            internal::DecodeCommandsPairStepScalar);
}

void BM_DecodeKind(benchmark::State& state, Kind kind) {
  RunDecode(state, KindStream(kind), static_cast<std::size_t>(kCacheFrames));
}

// EncodeCommand of every Command decoded from `expected`, back to back; the
// output must be `expected` again.
void RunEncode(benchmark::State& state, std::span<const std::byte> expected,
               bool batch = true) {
  const std::vector<Command> commands = DecodeAll(expected);
  std::vector<std::byte> out(expected.size());
  const auto encode_all = [&]() noexcept {
    if (batch) return EncodeCommands(commands, out).bytes;
    std::size_t pos = 0;
    for (const Command& command : commands) {
      const Result<std::size_t> size =
          EncodeCommand(command, std::span<std::byte>(out).subspan(pos));
      if (!size.ok()) [[unlikely]] {
        return pos;
      }
      pos += *size;
    }
    return pos;
  };
  if (encode_all() != expected.size() ||
      std::memcmp(out.data(), expected.data(), expected.size()) != 0) {
    state.SkipWithError("encoding the decoded Commands did not give the bytes");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_all());
    benchmark::ClobberMemory();
  }
  SetFrameCounters(state, commands.size(), expected.size());
}

void BM_Encode(benchmark::State& state) {
  RunEncode(state, MixStream().Prefix(static_cast<std::size_t>(kCacheFrames)));
}

void BM_EncodeSingle(benchmark::State& state) {
  RunEncode(state, MixStream().Prefix(static_cast<std::size_t>(kCacheFrames)),
            /*batch=*/false);
}

void BM_EncodeKind(benchmark::State& state, Kind kind) {
  RunEncode(state, KindStream(kind).bytes);
}

void BM_EncodeFrameNewLimit(benchmark::State& state) {
  const std::span<const std::byte> expected = KindStream(Kind::kNewLimit).bytes;
  const std::vector<Command> commands = DecodeAll(expected);
  std::vector<NewLimit> models;
  std::vector<std::uint64_t> sequences;
  for (const Command& command : commands) {
    models.push_back(command.As<NewLimit>());
    sequences.push_back(command.sequence);
  }
  std::vector<std::byte> out(expected.size());
  const auto encode_all = [&]() noexcept {
    std::size_t pos = 0;
    for (std::size_t i = 0; i < models.size(); ++i) {
      const Result<std::size_t> size = EncodeFrame(
          sequences[i], models[i], std::span<std::byte>(out).subspan(pos));
      if (!size.ok()) [[unlikely]] {
        return pos;
      }
      pos += *size;
    }
    return pos;
  };
  if (encode_all() != expected.size() ||
      std::memcmp(out.data(), expected.data(), expected.size()) != 0) {
    state.SkipWithError("encoding the NewLimit models did not give the bytes");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_all());
    benchmark::ClobberMemory();
  }
  SetFrameCounters(state, models.size(), expected.size());
}

// ---------------------------------------------------------------------------
// Baselines, on the bytes of BM_DecodeMix/N.

// Four independent sums, so that the add chain does not hide the loads.
void BM_ReadBound(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::span<const std::byte> bytes = MixStream().Prefix(count);
  const std::byte* const data = bytes.data();
  constexpr std::size_t kWord = sizeof(std::uint64_t);
  const std::size_t blocks = bytes.size() / (4 * kWord);
  for (auto _ : state) {
    std::array<std::uint64_t, 4> sums{};
    for (std::size_t i = 0; i < blocks; ++i) {
      for (std::size_t j = 0; j < 4; ++j) {
        sums[j] += LoadLE<std::uint64_t>(data + (4 * i + j) * kWord);
      }
    }
    std::uint64_t sum = sums[0] + sums[1] + sums[2] + sums[3];
    for (std::size_t i = blocks * 4 * kWord; i < bytes.size(); ++i) {
      sum += LoadLE<std::uint8_t>(data + i);
    }
    benchmark::DoNotOptimize(sum);
  }
  SetFrameCounters(state, count, bytes.size());
}

void BM_Memcpy(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::span<const std::byte> bytes = MixStream().Prefix(count);
  std::vector<std::byte> out(bytes.size());
  for (auto _ : state) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetFrameCounters(state, count, bytes.size());
}

// Only the dependency chain every decoder of this format has: the kind byte
// of frame i gives its size, which gives where frame i+1 starts.
void BM_FrameWalk(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::span<const std::byte> bytes = MixStream().Prefix(count);
  const auto walk = [&]() noexcept {
    std::size_t pos = 0;
    std::size_t frames = 0;
    while (pos + kFrameHeaderSize <= bytes.size()) {
      const std::size_t size = kCommandFrameSize[LoadLE<std::uint8_t>(
          bytes.data() + pos + kKindOffset)];
      if (size == 0) [[unlikely]] {
        break;
      }
      pos += size;
      ++frames;
    }
    return frames;
  };
  if (walk() != count) {
    state.SkipWithError("the walk did not find every frame");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(walk());
  }
  SetFrameCounters(state, count, bytes.size());
}

// Copies each frame into a heap buffer of its own before decoding it, as a
// receiver that hands out owning messages must.
void BM_OwningCopyDecode(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(kCacheFrames);
  const std::span<const std::byte> bytes = MixStream().Prefix(count);
  std::array<Command, kBatch> out{};
  const auto decode_all = [&](std::size_t& frames) {
    std::uint64_t sum = 0;
    std::size_t pos = 0;
    std::size_t n = 0;
    frames = 0;
    while (pos < bytes.size()) {
      const Result<FrameView> frame = FrameView::Parse(bytes.subspan(pos));
      if (!frame.ok()) [[unlikely]] {
        break;
      }
      const std::span<const std::byte> frame_bytes = frame->bytes();
      const std::vector<std::byte> owned(frame_bytes.begin(),
                                         frame_bytes.end());
      benchmark::DoNotOptimize(owned.data());
      const Result<std::size_t> size = DecodeCommand(owned, out[n]);
      if (!size.ok()) [[unlikely]] {
        break;
      }
      pos += *size;
      ++frames;
      if (++n == kBatch) {
        sum += Consume(out);
        n = 0;
      }
    }
    return sum + Consume(std::span<const Command>(out).first(n));
  };
  std::size_t frames = 0;
  benchmark::DoNotOptimize(decode_all(frames));
  if (frames != count) {
    state.SkipWithError("the stream did not decode whole");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(decode_all(frames));
  }
  SetFrameCounters(state, count, bytes.size());
}

#ifdef ORDERWIRE_BENCH_PEERS
// ---------------------------------------------------------------------------
// Peers: the content of KindStream(kNewLimit) in other formats, each message
// behind a 4-byte little-endian length as it would travel in a stream, read
// into the same Commands by the same consumer as BM_DecodeKind/NewLimit.

namespace fb = ::orderwire::bench::fb;
namespace pb = ::orderwire::bench::pb;

// FlatBuffers messages back to back. FlatBuffers reads scalars in place and
// needs them aligned: every size-prefixed buffer is a multiple of 8 bytes
// long and the storage is 8-byte aligned, so every message stays aligned.
struct FlatStream {
  std::vector<std::uint64_t> storage;
  std::size_t size = 0;
  std::size_t frames = 0;

  [[nodiscard]] std::span<const std::uint8_t> bytes() const {
    return {reinterpret_cast<const std::uint8_t*>(storage.data()), size};
  }
};

// Appends one finished size-prefixed buffer. False if it would break the
// alignment of the next one.
bool Append(FlatStream& stream, const flatbuffers::FlatBufferBuilder& builder) {
  const std::size_t size = builder.GetSize();
  if (size % sizeof(std::uint64_t) != 0) return false;
  stream.storage.resize((stream.size + size) / sizeof(std::uint64_t));
  std::memcpy(
      reinterpret_cast<std::uint8_t*>(stream.storage.data()) + stream.size,
      builder.GetBufferPointer(), size);
  stream.size += size;
  ++stream.frames;
  return true;
}

// Builds the stream once; an empty stream means it could not be built.
template <typename BuildOne>
FlatStream MakeFlatStream(BuildOne build_one) {
  FlatStream stream;
  for (const Command& command : DecodeAll(KindStream(Kind::kNewLimit).bytes)) {
    flatbuffers::FlatBufferBuilder builder(128);
    build_one(builder, command);
    if (!Append(stream, builder)) return FlatStream{};
  }
  return stream;
}

const FlatStream& FlatStructStream() {
  static const FlatStream stream = MakeFlatStream(
      [](flatbuffers::FlatBufferBuilder& builder, const Command& c) {
        const fb::NewLimit fields(
            c.sequence, c.account_id.value(), c.client_order_id.value(),
            c.instrument_id.value(), static_cast<std::uint8_t>(c.side),
            static_cast<std::uint8_t>(c.time_in_force), c.price.value(),
            c.quantity.value());
        builder.FinishSizePrefixed(fb::CreateNewLimitStruct(builder, &fields));
      });
  return stream;
}

const FlatStream& FlatTableStream() {
  static const FlatStream stream = MakeFlatStream(
      [](flatbuffers::FlatBufferBuilder& builder, const Command& c) {
        fb::FinishSizePrefixedNewLimitTableBuffer(
            builder, fb::CreateNewLimitTable(
                         builder, c.sequence, c.account_id.value(),
                         c.client_order_id.value(), c.instrument_id.value(),
                         static_cast<std::uint8_t>(c.side),
                         static_cast<std::uint8_t>(c.time_in_force),
                         c.price.value(), c.quantity.value()));
      });
  return stream;
}

// Calls `read_one(message, message_size, out)` for each length-prefixed
// message of `bytes`, in batches of kBatch Commands fed to Consume. Stops at
// the first message read_one refuses. Sets `frames` to the messages read.
template <typename ReadOne>
[[nodiscard]] inline std::uint64_t ReadPrefixedStream(
    std::span<const std::uint8_t> bytes, std::span<Command, kBatch> out,
    std::size_t& frames, ReadOne read_one) {
  std::uint64_t sum = 0;
  std::size_t pos = 0;
  std::size_t n = 0;
  frames = 0;
  while (bytes.size() - pos >= sizeof(std::uint32_t)) {
    const std::uint8_t* const p = bytes.data() + pos;
    const auto size =
        LoadLE<std::uint32_t>(reinterpret_cast<const std::byte*>(p));
    if (size > bytes.size() - pos - sizeof(std::uint32_t)) [[unlikely]] {
      break;
    }
    if (!read_one(p, size, out[n])) [[unlikely]] {
      break;
    }
    pos += sizeof(std::uint32_t) + size;
    ++frames;
    if (++n == kBatch) {
      sum += Consume(out);
      n = 0;
    }
  }
  return sum + Consume(std::span<const Command>(out).first(n));
}

template <typename ReadOne>
void RunPeer(benchmark::State& state, std::span<const std::uint8_t> bytes,
             std::size_t expected_frames, ReadOne read_one) {
  std::array<Command, kBatch> out{};
  std::size_t frames = 0;
  const std::uint64_t sum = ReadPrefixedStream(bytes, out, frames, read_one);
  // The peer must have read exactly what the codec decodes from the frames.
  std::array<Command, kBatch> reference_out{};
  std::size_t reference_frames = 0;
  const std::uint64_t reference = DecodeStream(
      KindStream(Kind::kNewLimit).bytes, reference_out, reference_frames);
  if (expected_frames == 0 || frames != expected_frames ||
      frames != reference_frames || sum != reference) {
    state.SkipWithError("the peer stream did not read back whole");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(ReadPrefixedStream(bytes, out, frames, read_one));
  }
  SetFrameCounters(state, frames, bytes.size());
}

void BM_FlatBuffersStruct(benchmark::State& state) {
  const FlatStream& stream = FlatStructStream();
  RunPeer(state, stream.bytes(), stream.frames,
          [](const std::uint8_t* message, std::uint32_t, Command& c) {
            const fb::NewLimit* fields =
                flatbuffers::GetSizePrefixedRoot<fb::NewLimitStruct>(message)
                    ->command();
            if (fields == nullptr) return false;
            c.sequence = fields->sequence();
            c.account_id = codec::AccountId(fields->account_id());
            c.client_order_id = codec::ClientOrderId(fields->client_order_id());
            c.order_id = codec::OrderId(0);
            c.price = codec::Price(fields->price());
            c.quantity = codec::Quantity(fields->quantity());
            c.instrument_id = codec::InstrumentId(fields->instrument_id());
            c.kind = Kind::kNewLimit;
            c.side = static_cast<Side>(fields->side());
            c.time_in_force = static_cast<TimeInForce>(fields->time_in_force());
            return true;
          });
}

void BM_FlatBuffersVerified(benchmark::State& state) {
  const FlatStream& stream = FlatTableStream();
  RunPeer(state, stream.bytes(), stream.frames,
          [](const std::uint8_t* message, std::uint32_t size, Command& c) {
            flatbuffers::Verifier verifier(message,
                                           sizeof(std::uint32_t) + size);
            if (!fb::VerifySizePrefixedNewLimitTableBuffer(verifier)) {
              return false;
            }
            const fb::NewLimitTable* table =
                fb::GetSizePrefixedNewLimitTable(message);
            c.sequence = table->sequence();
            c.account_id = codec::AccountId(table->account_id());
            c.client_order_id = codec::ClientOrderId(table->client_order_id());
            c.order_id = codec::OrderId(0);
            c.price = codec::Price(table->price());
            c.quantity = codec::Quantity(table->quantity());
            c.instrument_id = codec::InstrumentId(table->instrument_id());
            c.kind = Kind::kNewLimit;
            c.side = static_cast<Side>(table->side());
            c.time_in_force = static_cast<TimeInForce>(table->time_in_force());
            return true;
          });
}

// proto3 messages, each behind a 4-byte little-endian length.
struct ProtoStream {
  std::vector<std::uint8_t> bytes;
  std::size_t frames = 0;
};

const ProtoStream& NewLimitProtoStream() {
  static const ProtoStream stream = [] {
    ProtoStream s;
    for (const Command& c : DecodeAll(KindStream(Kind::kNewLimit).bytes)) {
      pb::NewLimit message;
      message.set_sequence(c.sequence);
      message.set_account_id(c.account_id.value());
      message.set_client_order_id(c.client_order_id.value());
      message.set_instrument_id(c.instrument_id.value());
      message.set_side(static_cast<std::uint8_t>(c.side));
      message.set_time_in_force(static_cast<std::uint8_t>(c.time_in_force));
      message.set_price(c.price.value());
      message.set_quantity(c.quantity.value());
      const std::string encoded = message.SerializeAsString();
      const std::size_t at = s.bytes.size();
      s.bytes.resize(at + sizeof(std::uint32_t) + encoded.size());
      StoreLE(reinterpret_cast<std::byte*>(s.bytes.data() + at),
              static_cast<std::uint32_t>(encoded.size()));
      std::memcpy(s.bytes.data() + at + sizeof(std::uint32_t), encoded.data(),
                  encoded.size());
      ++s.frames;
    }
    return s;
  }();
  return stream;
}

// ParseFromArray into one reused message (protobuf's best case: no
// allocation, since every field is a scalar), then the fields are copied out.
void BM_Protobuf(benchmark::State& state) {
  const ProtoStream& stream = NewLimitProtoStream();
  pb::NewLimit message;
  RunPeer(
      state, stream.bytes, stream.frames,
      [&message](const std::uint8_t* prefixed, std::uint32_t size, Command& c) {
        if (!message.ParseFromArray(prefixed + sizeof(std::uint32_t),
                                    static_cast<int>(size))) {
          return false;
        }
        c.sequence = message.sequence();
        c.account_id = codec::AccountId(message.account_id());
        c.client_order_id = codec::ClientOrderId(message.client_order_id());
        c.order_id = codec::OrderId(0);
        c.price = codec::Price(message.price());
        c.quantity = codec::Quantity(message.quantity());
        c.instrument_id = codec::InstrumentId(message.instrument_id());
        c.kind = Kind::kNewLimit;
        c.side = static_cast<Side>(message.side());
        c.time_in_force = static_cast<TimeInForce>(message.time_in_force());
        return true;
      });
}
#endif  // ORDERWIRE_BENCH_PEERS

void RegisterAll() {
  // Baselines first, so that each later figure has its bound above it.
  benchmark::RegisterBenchmark("BM_ReadBound", BM_ReadBound)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_Memcpy", BM_Memcpy)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_FrameWalk", BM_FrameWalk)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_DecodeMixPairStep", BM_DecodeMixPairStep)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_DecodeMix", BM_DecodeMix)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_DecodeMixBlockScan", BM_DecodeMixBlockScan)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_DecodeMixPairStepScalar",
                               BM_DecodeMixPairStepScalar)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  benchmark::RegisterBenchmark("BM_DecodeMixScalar", BM_DecodeMixScalar)
      ->Arg(kCacheFrames)
      ->Arg(kStreamFrames);
  for (const Kind kind : kCommandKinds) {
    const std::string name = "BM_DecodeKind/" + std::string(Name(kind));
    benchmark::RegisterBenchmark(name.c_str(), BM_DecodeKind, kind);
  }
  benchmark::RegisterBenchmark("BM_Encode", BM_Encode);
  benchmark::RegisterBenchmark("BM_EncodeSingle", BM_EncodeSingle);
  benchmark::RegisterBenchmark("BM_EncodeKind/NewLimit", BM_EncodeKind,
                               Kind::kNewLimit);
  benchmark::RegisterBenchmark("BM_EncodeFrame/NewLimit",
                               BM_EncodeFrameNewLimit);
  benchmark::RegisterBenchmark("BM_OwningCopyDecode", BM_OwningCopyDecode);
#ifdef ORDERWIRE_BENCH_PEERS
  benchmark::RegisterBenchmark("BM_FlatBuffersStruct", BM_FlatBuffersStruct);
  benchmark::RegisterBenchmark("BM_FlatBuffersVerified",
                               BM_FlatBuffersVerified);
  benchmark::RegisterBenchmark("BM_Protobuf", BM_Protobuf);
#endif
}

}  // namespace
}  // namespace orderwire::codec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("orderwire_seed",
                              std::to_string(orderwire::codec::kSeed));
  benchmark::AddCustomContext("orderwire_mix",
                              "NewLimit 50%, NewMarket 5%, CancelByOrder 25%, "
                              "CancelByClient 5%, Replace 15%");
#ifdef ORDERWIRE_BENCH_PEERS
  benchmark::AddCustomContext("orderwire_peers", "FlatBuffers, protobuf");
#else
  benchmark::AddCustomContext("orderwire_peers", "off");
#endif
  orderwire::codec::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
