// marketdata_bench: the subscriber side of the market-data feed
// (docs/MARKETDATA.md) on the feed of the `mixed` workload (engine/workload.h,
// 1,000,000 commands, seed 1), made once by state::StateMachine and packed
// into live Data packets as the publisher packs them (greedily, at most
// kMaxPacketBytes each).
//
//   copy/mixed        baseline: memcpy of every packet into one buffer
//   parse/mixed       baseline: feed::PacketView::Parse of every packet and a
//                     walk over its blocks (the codec's floor: what any
//                     subscriber must do before it looks at a message)
//   book/mixed        marketdata::Book::Apply on every block of the parsed
//                     packets (the book builder alone)
//   subscriber/mixed  marketdata::Subscriber::OnPacket on every packet,
//                     following from sequence 1: parse, sequencing, the book
//                     and the listener calls (a listener that does nothing)
//
// The figure is ns per message (`per_msg`, time / messages); compare each
// with the baselines of the same run. Each pass starts from an empty book
// (cleared or rebuilt outside the timing) whose slabs already grew in an
// earlier pass: the steady state. Run pinned: scripts/bench.sh
// (docs/BENCHMARKS-MARKETDATA.md).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "benchmark/benchmark.h"
#include "codec/command.h"
#include "engine/config.h"
#include "engine/workload.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "marketdata/book.h"
#include "marketdata/subscriber.h"
#include "state/state_machine.h"

namespace orderwire::marketdata {
namespace {

constexpr std::size_t kCommands = 1'000'000;
constexpr std::uint64_t kSeed = 1;
constexpr std::uint64_t kSession = 0x0123456789ABCDEF;

struct Feed {
  std::vector<std::vector<std::byte>> packets;
  std::uint64_t messages = 0;
  std::size_t peak_orders = 0;
};

// Packs the messages of one record into `out`, continuing the open packet.
class Packer {
 public:
  explicit Packer(Feed& out) : out_(out), builder_(buffer_) {}

  void Add(const state::FeedMessage& message) {
    if (builder_.empty()) builder_.BeginData(kSession, message.sequence);
    if (!builder_.FitsLength(message.bytes.size())) {
      Flush();
      builder_.BeginData(kSession, message.sequence);
    }
    (void)builder_.AppendMessage(message.bytes);
    ++out_.messages;
  }
  void Flush() {
    const std::span<const std::byte> packet = builder_.Finish();
    if (!packet.empty())
      out_.packets.emplace_back(packet.begin(), packet.end());
    builder_.BeginData(kSession, builder_.next_sequence());
  }

 private:
  Feed& out_;
  std::array<std::byte, feed::kMaxPacketBytes> buffer_{};
  feed::PacketBuilder builder_;
};

// The feed of `mixed`, each record's messages packed after the previous
// record's, as one loop pass full of records packs them.
const Feed& MixedFeed() {
  static const Feed feed = [] {
    Feed out;
    state::StateMachine machine(
        state::StateMachineOptions{.engine = engine::EngineConfig{},
                                   .max_sessions = 1024,
                                   .report_history = 1,
                                   .history_budget_bytes = 0});
    Packer packer(out);
    std::array<std::byte, codec::kMaxFrameSize> frame{};
    std::uint64_t index = 0;
    for (const codec::Command& command :
         workload::Generate(workload::Workload::kMixed, kCommands, kSeed)) {
      const auto size = codec::EncodeCommand(command, frame);
      if (!size.ok()) continue;
      ++index;
      if (!machine
               .Apply(state::Record{index, 1'700'000'000'000'000'000 + index, 1,
                                    0, std::span(frame).first(*size)})
               .ok()) {
        continue;
      }
      for (const state::FeedMessage& m : machine.feed()) packer.Add(m);
      out.peak_orders = std::max<std::size_t>(out.peak_orders,
                                              machine.engine().live_orders());
    }
    packer.Flush();
    return out;
  }();
  return feed;
}

// A listener that does nothing; a request would mean the feed has a gap.
class NoRequests : public SubscriberListener {
 public:
  void SendRequest(std::span<const std::byte> /*request*/) override {
    ++requests;
  }
  std::uint64_t requests = 0;
};

void Report(benchmark::State& state, std::uint64_t messages) {
  state.SetItemsProcessed(static_cast<std::int64_t>(messages));
  state.counters["per_msg"] = benchmark::Counter(
      static_cast<double>(messages),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Copy(benchmark::State& state) {
  const Feed& feed = MixedFeed();
  std::vector<std::byte> sink(feed::kMaxPacketBytes);
  std::uint64_t messages = 0;
  for (auto _ : state) {
    for (const std::vector<std::byte>& p : feed.packets) {
      std::memcpy(sink.data(), p.data(), p.size());
      benchmark::ClobberMemory();
    }
    messages += feed.messages;
  }
  Report(state, messages);
}
BENCHMARK(BM_Copy)->Name("copy/mixed")->Unit(benchmark::kMillisecond);

// Parses each of the feed's packets (session kSession) and calls
// `on_block` with every message block, in order. False, having stopped, if
// a packet does not parse (the benchmark then skipped with an error) or
// `on_block` returned false (it skips the benchmark itself).
template <typename OnBlock>
bool ForEachBlock(benchmark::State& state, const Feed& feed,
                  OnBlock&& on_block) {
  for (const std::vector<std::byte>& p : feed.packets) {
    const auto parsed =
        feed::PacketView::Parse(p, feed::SessionFilter::Only(kSession));
    if (!parsed.ok()) {
      state.SkipWithError("a packet the parser refused");
      return false;
    }
    for (const feed::MessageBlock block : *parsed) {
      if (!on_block(block)) return false;
    }
  }
  return true;
}

void BM_Parse(benchmark::State& state) {
  const Feed& feed = MixedFeed();
  std::uint64_t messages = 0;
  std::uint64_t kinds = 0;
  for (auto _ : state) {
    const bool ok = ForEachBlock(state, feed, [&](feed::MessageBlock block) {
      kinds += static_cast<std::uint8_t>(block.kind());
      return true;
    });
    if (!ok) return;
    messages += feed.messages;
  }
  benchmark::DoNotOptimize(kinds);
  Report(state, messages);
}
BENCHMARK(BM_Parse)->Name("parse/mixed")->Unit(benchmark::kMillisecond);

void BM_Book(benchmark::State& state) {
  const Feed& feed = MixedFeed();
  Book book;
  book.Reserve(feed.peak_orders, feed.peak_orders);
  std::uint64_t messages = 0;
  for (auto _ : state) {
    state.PauseTiming();
    book.Clear();
    state.ResumeTiming();
    const bool ok = ForEachBlock(state, feed, [&](feed::MessageBlock block) {
      if (book.Apply(block) == BookError::kOk) return true;
      state.SkipWithError("a message the book refused");
      return false;
    });
    if (!ok) return;
    messages += feed.messages;
  }
  Report(state, messages);
  state.counters["peak_orders"] =
      static_cast<double>(feed.peak_orders);  // the working set's size
}
BENCHMARK(BM_Book)->Name("book/mixed")->Unit(benchmark::kMillisecond);

void BM_Subscriber(benchmark::State& state) {
  const Feed& feed = MixedFeed();
  NoRequests listener;
  SubscriberOptions options;
  options.session = kSession;
  options.first_sequence = 1;
  options.reserve_orders = feed.peak_orders;
  options.reserve_levels = feed.peak_orders;
  std::uint64_t messages = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto subscriber = std::make_unique<Subscriber>(options, listener);
    state.ResumeTiming();
    std::int64_t now = 0;
    for (const std::vector<std::byte>& p : feed.packets) {
      subscriber->OnPacket(p, now += 1000);
    }
    if (subscriber->counters().messages_applied != feed.messages) {
      state.SkipWithError("the subscriber did not apply every message");
      return;
    }
    messages += feed.messages;
    state.PauseTiming();
    subscriber.reset();
    state.ResumeTiming();
  }
  Report(state, messages);
}
BENCHMARK(BM_Subscriber)
    ->Name("subscriber/mixed")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace orderwire::marketdata

BENCHMARK_MAIN();
