// The codec's hot path never touches the heap: decoding and encoding 10,000
// frames of every kind performs zero heap allocations.
//
// This binary replaces every global operator new and delete (plain, nothrow,
// array, sized, aligned) with versions that count calls while a counter is
// armed and forward to malloc/free. Forwarding to malloc keeps the binary
// usable under AddressSanitizer, whose malloc interceptor still checks every
// block; the counting itself is two relaxed atomics. It is a separate binary
// so that the replacement does not reach the other tests.
//
// Inputs are prepared, and outputs checked, outside the armed region: only
// the codec calls run while counting.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/testing/random_commands.h"
#include "gtest/gtest.h"
#include "tests/codec/test_support.h"

namespace {

std::atomic<bool> g_armed{false};
std::atomic<std::size_t> g_allocations{0};
std::atomic<std::size_t> g_deallocations{0};

void* Allocate(std::size_t size) noexcept {
  if (g_armed.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  return std::malloc(size == 0 ? 1 : size);
}

void* AllocateAligned(std::size_t size, std::align_val_t alignment) noexcept {
  if (g_armed.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  std::size_t align = static_cast<std::size_t>(alignment);
  if (align < sizeof(void*)) align = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, align, size == 0 ? 1 : size) != 0) return nullptr;
  return p;
}

void Deallocate(void* p) noexcept {
  if (p == nullptr) return;
  if (g_armed.load(std::memory_order_relaxed)) {
    g_deallocations.fetch_add(1, std::memory_order_relaxed);
  }
  std::free(p);
}

void* AllocateOrThrow(std::size_t size) {
  void* p = Allocate(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* AllocateAlignedOrThrow(std::size_t size, std::align_val_t alignment) {
  void* p = AllocateAligned(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

// The replaceable global allocation functions ([new.delete]).
void* operator new(std::size_t size) { return AllocateOrThrow(size); }
void* operator new[](std::size_t size) { return AllocateOrThrow(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  return AllocateAlignedOrThrow(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return AllocateAlignedOrThrow(size, alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment,
                   const std::nothrow_t&) noexcept {
  return AllocateAligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment,
                     const std::nothrow_t&) noexcept {
  return AllocateAligned(size, alignment);
}
void operator delete(void* p) noexcept { Deallocate(p); }
void operator delete[](void* p) noexcept { Deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { Deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { Deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  Deallocate(p);
}
void operator delete(void* p, std::align_val_t) noexcept { Deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Deallocate(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Deallocate(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Deallocate(p);
}
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  Deallocate(p);
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  Deallocate(p);
}

namespace orderwire::codec::test {
namespace {

using Rng = ::orderwire::codec::testing::SplitMix64;

constexpr std::size_t kFrames = 10000;

// Counts heap calls between construction and Stop().
class AllocationCounter {
 public:
  struct Counts {
    std::size_t allocations;
    std::size_t deallocations;
  };
  AllocationCounter() {
    g_allocations.store(0);
    g_deallocations.store(0);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_armed.store(true);
  }
  ~AllocationCounter() { g_armed.store(false); }
  Counts Stop() {
    g_armed.store(false);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return {g_allocations.load(), g_deallocations.load()};
  }
};

// Keeps results alive so the measured calls are not optimized away.
volatile std::uint64_t g_sink = 0;
void* volatile g_pointer_sink = nullptr;

// A random model of each kind, cycling through every kind.
struct AnyModel {
  Kind kind;
  NewLimit new_limit;
  NewMarket new_market;
  CancelByOrder cancel_by_order;
  CancelByClient cancel_by_client;
  Replace replace;
  Accepted accepted;
  Rejected rejected;
  Filled filled;
  Cancelled cancelled;
  Replaced replaced;
  SequenceGap sequence_gap;
  ReportsGone reports_gone;
  Busy busy;
  MassCancel mass_cancel;
  MassCancelDone mass_cancel_done;
  Heartbeat heartbeat;
  HeartbeatAck heartbeat_ack;
  Goodbye goodbye;
  SessionClosed session_closed;
  OrderStatusRequest order_status_request;
  OrderStatus order_status;

  template <typename Model>
  Model& Get() {
    if constexpr (std::is_same_v<Model, NewLimit>) return new_limit;
    if constexpr (std::is_same_v<Model, NewMarket>) return new_market;
    if constexpr (std::is_same_v<Model, CancelByOrder>) return cancel_by_order;
    if constexpr (std::is_same_v<Model, CancelByClient>) {
      return cancel_by_client;
    }
    if constexpr (std::is_same_v<Model, Replace>) return replace;
    if constexpr (std::is_same_v<Model, Accepted>) return accepted;
    if constexpr (std::is_same_v<Model, Rejected>) return rejected;
    if constexpr (std::is_same_v<Model, Filled>) return filled;
    if constexpr (std::is_same_v<Model, Cancelled>) return cancelled;
    if constexpr (std::is_same_v<Model, Replaced>) return replaced;
    if constexpr (std::is_same_v<Model, SequenceGap>) return sequence_gap;
    if constexpr (std::is_same_v<Model, ReportsGone>) return reports_gone;
    if constexpr (std::is_same_v<Model, Busy>) return busy;
    if constexpr (std::is_same_v<Model, MassCancel>) return mass_cancel;
    if constexpr (std::is_same_v<Model, MassCancelDone>) {
      return mass_cancel_done;
    }
    if constexpr (std::is_same_v<Model, Heartbeat>) return heartbeat;
    if constexpr (std::is_same_v<Model, HeartbeatAck>) return heartbeat_ack;
    if constexpr (std::is_same_v<Model, Goodbye>) return goodbye;
    if constexpr (std::is_same_v<Model, SessionClosed>) return session_closed;
    if constexpr (std::is_same_v<Model, OrderStatusRequest>) {
      return order_status_request;
    }
    if constexpr (std::is_same_v<Model, OrderStatus>) return order_status;
  }
};

// How many kinds there are.
constexpr std::size_t kKindCount = [] {
  std::size_t n = 0;
  ForEachMessage([&](auto) { ++n; });
  return n;
}();

std::vector<AnyModel> RandomModels(std::size_t count) {
  Rng rng(17);
  std::vector<AnyModel> models(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t k = 0;
    ForEachMessage([&](auto type) {
      using Model = typename decltype(type)::type;
      if (k++ == i % kKindCount) {
        models[i].kind = MessageTraits<Model>::kKind;
        models[i].Get<Model>() = RandomModel<Model>(rng, false);
      }
    });
  }
  return models;
}

// Encodes one AnyModel; the kind branch runs outside the codec.
Result<std::size_t> EncodeAny(AnyModel& m, std::uint64_t sequence,
                              std::span<std::byte> out) {
  Result<std::size_t> result = CodecError::kUnknownKind;
  ForEachMessage([&](auto type) {
    using Model = typename decltype(type)::type;
    if (m.kind == MessageTraits<Model>::kKind) {
      result = EncodeFrame(sequence, m.Get<Model>(), out);
    }
  });
  return result;
}

std::vector<std::byte> EncodeAll(std::vector<AnyModel>& models) {
  std::vector<std::byte> out(models.size() * kMaxFrameSize);
  std::size_t pos = 0;
  for (std::size_t i = 0; i < models.size(); ++i) {
    pos += *EncodeAny(models[i], i + 1, std::span(out).subspan(pos));
  }
  out.resize(pos);
  return out;
}

TEST(AllocationTest, TheCounterSeesEveryReplacedOperatorNew) {
  struct alignas(64) Aligned {
    std::byte bytes[64];
  };
  AllocationCounter counter;
  // Each pointer escapes through a volatile, so no allocation is elided.
  int* plain = new int(1);
  g_pointer_sink = plain;
  int* array = new int[8]{};
  g_pointer_sink = array;
  int* nothrow = new (std::nothrow) int(2);
  g_pointer_sink = nothrow;
  Aligned* aligned = new Aligned;
  g_pointer_sink = aligned;
  Aligned* aligned_array = new Aligned[2];
  g_pointer_sink = aligned_array;
  {
    std::vector<int> vector(100, 3);
    g_pointer_sink = vector.data();
  }
  delete plain;
  delete[] array;
  delete nothrow;
  delete aligned;
  delete[] aligned_array;
  const AllocationCounter::Counts counts = counter.Stop();
  EXPECT_EQ(counts.allocations, 6u);
  EXPECT_EQ(counts.deallocations, 6u);
}

TEST(AllocationTest, TheCounterCountsOnlyWhileArmed) {
  auto before = std::make_unique<int>(5);
  g_pointer_sink = before.get();
  AllocationCounter counter;
  const AllocationCounter::Counts counts = counter.Stop();
  auto after = std::make_unique<int>(6);
  g_pointer_sink = after.get();
  EXPECT_EQ(counts.allocations, 0u);
}

TEST(AllocationTest, DecodingCommandsAllocatesNothing) {
  const std::vector<std::byte> stream =
      ::orderwire::codec::testing::EncodeRandomStream(
          kFrames, 1, ::orderwire::codec::testing::kDecodeBenchMix);
  std::vector<Command> one_by_one(kFrames);
  std::vector<Command> batch_out(kFrames);
  std::size_t decoded = 0;
  std::size_t failures = 0;

  AllocationCounter counter;
  std::size_t pos = 0;
  while (pos < stream.size() && decoded < kFrames) {
    const Result<std::size_t> size =
        DecodeCommand(std::span(stream).subspan(pos), one_by_one[decoded]);
    if (!size.ok()) {
      ++failures;
      break;
    }
    pos += *size;
    ++decoded;
  }
  const DecodeBatch batch = DecodeCommands(stream, batch_out);
  const AllocationCounter::Counts counts = counter.Stop();

  EXPECT_EQ(counts.allocations, 0u);
  EXPECT_EQ(counts.deallocations, 0u);
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(decoded, kFrames);
  EXPECT_EQ(batch.frames, kFrames);
  EXPECT_EQ(batch.error, CodecError::kOk);
  EXPECT_EQ(batch_out.back().sequence, kFrames);
}

TEST(AllocationTest, ParsingViewsOfEveryKindAllocatesNothing) {
  std::vector<AnyModel> models = RandomModels(kFrames);
  const std::vector<std::byte> stream = EncodeAll(models);
  std::uint64_t checksum = 0;
  std::size_t frames = 0;
  std::size_t failures = 0;

  AllocationCounter counter;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    const Result<FrameView> frame =
        FrameView::Parse(std::span(stream).subspan(pos));
    if (!frame.ok()) {
      ++failures;
      break;
    }
    VisitFrame(*frame, [&](auto view) {
      using Model = std::remove_cvref_t<decltype(view.ToModel())>;
      const Result<View<Model>> typed = View<Model>::Parse(frame->bytes());
      if (!typed.ok()) ++failures;
      const Model model = typed->ToModel();
      MessageTraits<Model>::kLayout.ForEach([&](const auto& f, std::size_t) {
        using T = typename std::remove_cvref_t<decltype(f)>::ValueType;
        checksum += static_cast<internal::WireUnsigned<T>>(model.*f.member);
      });
    });
    pos += frame->size();
    ++frames;
  }
  const AllocationCounter::Counts counts = counter.Stop();
  g_sink = checksum;

  EXPECT_EQ(counts.allocations, 0u);
  EXPECT_EQ(counts.deallocations, 0u);
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(frames, kFrames);
}

TEST(AllocationTest, ParsingAndIteratingDatagramsAllocatesNothing) {
  // Pack 10,000 command frames into datagrams, outside the measured region.
  const std::vector<std::byte> stream =
      ::orderwire::codec::testing::EncodeRandomStream(
          kFrames, 2, ::orderwire::codec::testing::kDecodeBenchMix);
  std::vector<std::vector<std::byte>> datagrams;
  {
    std::vector<std::byte> buffer(kMaxDatagramSize);
    DatagramBuilder builder(buffer, 7);
    std::size_t pos = 0;
    while (pos < stream.size()) {
      const FrameView frame = *FrameView::Parse(std::span(stream).subspan(pos));
      if (!builder.Fits(frame.size())) {
        datagrams.emplace_back(builder.bytes().begin(), builder.bytes().end());
        builder.Reset(7);
      }
      ASSERT_EQ(builder.AppendFrame(frame.bytes()), CodecError::kOk);
      pos += frame.size();
    }
    datagrams.emplace_back(builder.bytes().begin(), builder.bytes().end());
  }
  std::vector<Command> commands(kFrames);
  std::size_t frames = 0;
  std::size_t failures = 0;

  AllocationCounter counter;
  for (const std::vector<std::byte>& d : datagrams) {
    std::size_t error_offset = 0;
    const Result<DatagramView> view =
        DatagramView::Parse(d, FrameFilter::kCommands, &error_offset);
    if (!view.ok()) {
      ++failures;
      continue;
    }
    for (FrameView frame : *view) {
      if (frames == kFrames ||
          !DecodeCommand(frame.bytes(), commands[frames]).ok()) {
        ++failures;
        break;
      }
      ++frames;
    }
  }
  const AllocationCounter::Counts counts = counter.Stop();

  EXPECT_EQ(counts.allocations, 0u);
  EXPECT_EQ(counts.deallocations, 0u);
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(frames, kFrames);
  EXPECT_EQ(commands.back().sequence, kFrames);
}

TEST(AllocationTest, EncodingFramesCommandsAndDatagramsAllocatesNothing) {
  std::vector<AnyModel> models = RandomModels(kFrames);
  const std::vector<std::byte> expected = EncodeAll(models);
  const std::vector<std::byte> command_stream =
      ::orderwire::codec::testing::EncodeRandomStream(
          kFrames, 3, ::orderwire::codec::testing::kDecodeBenchMix);
  std::vector<Command> commands(kFrames);
  if (DecodeCommands(command_stream, commands).frames != kFrames) {
    FAIL() << "could not prepare the commands";
  }
  std::vector<std::byte> frames_out(kFrames * kMaxFrameSize);
  std::vector<std::byte> commands_out(kFrames * kMaxFrameSize);
  std::vector<std::byte> datagram_buffer(kMaxDatagramSize);
  std::size_t frames_size = 0;
  std::size_t commands_size = 0;
  std::size_t datagrams = 0;
  std::size_t datagram_frames = 0;
  std::size_t failures = 0;

  AllocationCounter counter;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Result<std::size_t> written =
        EncodeAny(models[i], i + 1, std::span(frames_out).subspan(frames_size));
    if (!written.ok()) ++failures;
    frames_size += written.ok() ? *written : 0;
  }
  for (const Command& c : commands) {
    const Result<std::size_t> written =
        EncodeCommand(c, std::span(commands_out).subspan(commands_size));
    if (!written.ok()) ++failures;
    commands_size += written.ok() ? *written : 0;
  }
  DatagramBuilder builder(datagram_buffer, 9);
  std::size_t frame_pos = 0;  // of commands[i]'s frame in commands_out
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const Command& c = commands[i];
    const std::size_t frame_size = Info(c.kind).frame_size;
    CodecError error = CodecError::kOk;
    // Append encodes in place; AppendFrame copies an encoded frame.
    auto append = [&] {
      if (i % 2 == 0) {
        switch (c.kind) {
          case Kind::kNewLimit:
            return builder.Append(c.sequence, c.As<NewLimit>());
          case Kind::kNewMarket:
            return builder.Append(c.sequence, c.As<NewMarket>());
          case Kind::kCancelByOrder:
            return builder.Append(c.sequence, c.As<CancelByOrder>());
          case Kind::kCancelByClient:
            return builder.Append(c.sequence, c.As<CancelByClient>());
          default:
            return builder.Append(c.sequence, c.As<Replace>());
        }
      }
      return builder.AppendFrame(std::span<const std::byte>(commands_out)
                                     .subspan(frame_pos, frame_size));
    };
    error = append();
    if (error == CodecError::kBufferTooSmall) {
      ++datagrams;
      builder.Reset(9);
      error = append();
    }
    if (error != CodecError::kOk) ++failures;
    ++datagram_frames;
    frame_pos += frame_size;
  }
  const AllocationCounter::Counts counts = counter.Stop();

  EXPECT_EQ(counts.allocations, 0u);
  EXPECT_EQ(counts.deallocations, 0u);
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(datagrams, 100u);
  EXPECT_EQ(datagram_frames, kFrames);
  ASSERT_EQ(frames_size, expected.size());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), frames_out.begin()));
  ASSERT_EQ(commands_size, command_stream.size());
  EXPECT_TRUE(std::equal(command_stream.begin(), command_stream.end(),
                         commands_out.begin()));
}

}  // namespace
}  // namespace orderwire::codec::test
