// The feed's retransmission costs, per message sent again
// (docs/MARKETDATA.md "Retransmission"):
//   - BM_RingRetransmit: from the request server's ring (FeedRing::Copy of
//     1024 messages, then packed into Data packets as the server packs a
//     reply);
//   - BM_RegenerateFromStart: made again from the journal by a regenerator
//     with no position (service/feed_regenerator.h): the journal's start
//     to 1024 messages (the worst a pruned-free journal's first request
//     costs, per message);
//   - BM_RegenerateCatchUp: a subscriber catching up 1024 messages at a
//     time through the regenerator's position (records applied per message
//     in the steady state).
// The journal is the `mixed` workload, 200,000 records, written once per
// process under $OW_BENCH_DIR (default /tmp) and removed at exit.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "codec/command.h"
#include "codec/wire.h"
#include "engine/workload.h"
#include "feed/builder.h"
#include "feed/packet.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "service/feed_regenerator.h"
#include "service/feed_request_server.h"
#include "service/feed_ring.h"
#include "state/state_machine.h"

namespace orderwire::service {
namespace {

constexpr std::size_t kRecords = 200'000;
constexpr std::size_t kPerAppend = 31;
constexpr std::size_t kAsk = kMaxRetransmitMessages;

std::string BenchRoot() {
  const char* dir = std::getenv("OW_BENCH_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

state::StateMachineOptions Machine() {
  return state::StateMachineOptions{.engine = engine::EngineConfig{},
                                    .max_sessions = 1024,
                                    .report_history = 1,
                                    .history_budget_bytes = 0};
}

// The journal, its id and its feed (feed[i]: sequence i + 1).
struct MixedFeed {
  std::string root;
  std::string dir;
  std::uint64_t journal_id = 0;
  std::vector<std::vector<std::byte>> feed;
  ~MixedFeed() {
    std::error_code ec;
    if (!root.empty()) std::filesystem::remove_all(root, ec);
  }
};

const MixedFeed& Feed() {
  static MixedFeed m = [] {
    MixedFeed out;
    std::string pattern = BenchRoot() + "/ow-feed-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return out;
    out.root = pattern;
    out.dir = pattern + "/mixed";
    journal::WriterOptions o;
    o.directory = out.dir;
    o.durability = journal::Durability::kNone;
    auto writer = journal::JournalWriter::Open(o);
    if (!writer.ok()) return out;
    workload::MixedGenerator generator(1);
    std::vector<std::byte> buffer(kPerAppend * codec::kMaxFrameSize);
    for (std::size_t done = 0; done < kRecords; done += kPerAppend) {
      std::size_t used = 0;
      for (std::size_t i = 0; i < kPerAppend; ++i) {
        used += *codec::EncodeCommand(
            generator.Next(), std::span<std::byte>(buffer).subspan(used));
      }
      while ((*writer)->Append({buffer.data(), used}, 1, done) ==
             journal::AppendStatus::kFull) {
        (void)(*writer)->Wait();
      }
    }
    out.journal_id = (*writer)->journal_id();
    (void)(*writer)->Close();
    state::StateMachine machine(Machine());
    auto reader = journal::JournalReader::Open(out.dir);
    if (!reader.ok()) return out;
    journal::Record record;
    while ((*reader)->Next(record) == journal::ReadResult::kRecord) {
      if (!machine.Apply(state::Record::FromJournal(record)).ok()) break;
      for (const state::FeedMessage& f : machine.feed()) {
        out.feed.emplace_back(f.bytes.begin(), f.bytes.end());
      }
    }
    return out;
  }();
  return m;
}

FeedRegeneratorOptions RegeneratorOptions(const MixedFeed& m) {
  const state::StateMachineOptions machine = Machine();
  return {.journal_dir = m.dir,
          .journal_id = m.journal_id,
          .machine = machine,
          .unpinned = {.engine = machine.engine,
                       .max_sessions = machine.max_sessions}};
}

// Runs one request to its end; the messages made.
std::size_t Regenerate(FeedRegenerator& regenerator, std::uint64_t first,
                       std::size_t count) {
  regenerator.Begin(first, count);
  FeedRegenerator::Progress p = FeedRegenerator::Progress::kWorking;
  while (p == FeedRegenerator::Progress::kWorking) p = regenerator.Work();
  return p == FeedRegenerator::Progress::kDone ? count : 0;
}

void BM_RingRetransmit(benchmark::State& state) {
  const MixedFeed& m = Feed();
  if (m.feed.size() < 2 * kAsk) {
    state.SkipWithError("no journal");
    return;
  }
  // The ring holds the whole feed (as the publisher packs it).
  FeedRing ring(std::size_t{256} << 20);
  ring.Reset(1);
  std::array<std::byte, feed::kMaxPacketBytes> buffer;
  feed::PacketBuilder builder(buffer);
  const auto close = [&] {
    const std::span<const std::byte> packet = builder.Finish();
    ring.Append(builder.next_sequence() - builder.count(), builder.count(),
                packet.subspan(feed::kPacketHeaderSize));
  };
  builder.BeginData(m.journal_id, 1);
  for (std::size_t s = 1; s <= m.feed.size(); ++s) {
    if (!builder.FitsLength(m.feed[s - 1].size())) {
      close();
      builder.BeginData(m.journal_id, s);
    }
    (void)builder.AppendMessage(m.feed[s - 1]);
  }
  if (!builder.empty()) close();
  ring.Commit();
  std::vector<std::byte> copied;
  std::array<std::byte, feed::kMaxPacketBytes> out;
  std::uint64_t first = 1;
  std::size_t messages = 0;
  for (auto _ : state) {
    const std::uint64_t from = ring.Copy(first, kAsk, copied);
    // Pack as the server does: greedy Data packets from `first`.
    feed::PacketBuilder reply(out);
    reply.BeginData(m.journal_id, first, 1);
    std::uint64_t sequence = from;
    std::size_t at = 0;
    std::size_t sent = 0;
    while (at + feed::kBlockLengthSize <= copied.size() && sent < kAsk) {
      const auto length = codec::LoadLE<std::uint16_t>(copied.data() + at);
      const std::span<const std::byte> message(
          copied.data() + at + feed::kBlockLengthSize, length);
      at += feed::kBlockLengthSize + length;
      if (sequence++ < first) continue;
      if (!reply.FitsLength(length)) {
        benchmark::DoNotOptimize(reply.Finish().data());
        reply.BeginData(m.journal_id, sequence - 1, 1);
      }
      (void)reply.AppendMessage(message);
      ++sent;
    }
    benchmark::DoNotOptimize(reply.Finish().data());
    messages += sent;
    first += kAsk;
    if (first + kAsk > m.feed.size()) first = 1;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(messages));
}
BENCHMARK(BM_RingRetransmit);

void BM_RegenerateFromStart(benchmark::State& state) {
  const MixedFeed& m = Feed();
  if (m.feed.size() < 2 * kAsk) {
    state.SkipWithError("no journal");
    return;
  }
  std::size_t messages = 0;
  for (auto _ : state) {
    FeedRegenerator regenerator(RegeneratorOptions(m));
    messages += Regenerate(regenerator, 1, kAsk);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(messages));
}
BENCHMARK(BM_RegenerateFromStart)->Unit(benchmark::kMicrosecond);

void BM_RegenerateCatchUp(benchmark::State& state) {
  const MixedFeed& m = Feed();
  if (m.feed.size() < 2 * kAsk) {
    state.SkipWithError("no journal");
    return;
  }
  FeedRegenerator regenerator(RegeneratorOptions(m));
  std::uint64_t first = 1;
  std::size_t messages = 0;
  for (auto _ : state) {
    if (first + kAsk > m.feed.size()) {
      state.PauseTiming();
      regenerator.Release();
      first = 1;
      state.ResumeTiming();
    }
    messages += Regenerate(regenerator, first, kAsk);
    first += kAsk;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(messages));
  state.counters["records_per_message"] = benchmark::Counter(
      static_cast<double>(regenerator.counters().records_applied) /
      static_cast<double>(regenerator.counters().messages));
}
BENCHMARK(BM_RegenerateCatchUp)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace orderwire::service

BENCHMARK_MAIN();
