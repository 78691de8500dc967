// journal_bench: what journaling costs, in records/s and MB/s, for 47-byte
// NewLimit frames in each durability mode, beside plain write(2) baselines
// doing the same batching in the same run; submission-to-durable latency of
// batch groups; and replay throughput (verify only, and with the engine).
//
// Every append benchmark writes a fresh journal of kRecords records under a
// scratch directory on the file system of $OW_BENCH_DIR (default /tmp),
// Append() calls of kPerAppend frames each (31 NewLimit frames: one full
// 1472-byte datagram), and stops the clock after Close() (everything durable
// under the mode). One iteration is one whole journal; Google Benchmark's
// repetitions give the median. The clock stops when Flush() returns: every
// record durable under the mode (for none: written to the page cache, as
// the none baseline's write(2) calls leave it).
//
//   BM_Append/none|batch|sync     JournalWriter with its default options
//   BM_WriteBaseline/none         the same records, built the same way
//                                 into groups of the writer's group size,
//                                 written with pwrite(2) at explicit offsets
//                                 of a preallocated file (one call per group)
//   BM_WriteBaseline/batch        ... + fdatasync(2) after each group
//   BM_WriteBaseline/sync         ... one group per Append(), each synced
//   BM_RawWrite/none              pwrite(2) of the already built groups: the
//                                 file system's own ceiling, nothing encoded
//   BM_ReplayVerify               JournalReader over a 1M-record journal of
//                                 the `mixed` workload (page cache warm)
//   BM_ReplayEngine               the same, each command through the engine
//   BM_VerifyPrefix               journal::VerifyPrefix over the same journal
//                                 (the start-up check of the records before
//                                 the checkpoint and the snapshot)
//   BM_RebuildFromSnapshot        the state at 1M from a snapshot at 900k:
//                                 load it, apply the 100k records after it
//   BM_Regenerate                 a session's reports from command 900,001
//                                 made again (state::ReportRegenerator:
//                                 the same snapshot and replay, the reports
//                                 through its ring to this thread)
//   BM_Crc32c/N                   the CRC32C of N bytes (one record, one
//                                 64 KiB group)
//
// Counters: items_per_second = records/s; bytes_per_second = frame bytes/s
// (47 per record); for batch and sync: durable_p50_us / durable_p99_us, the
// time from a group's submission to its durability; groups.
// Run it pinned, as scripts/bench.sh does: `taskset -c 1 journal_bench`.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/latency_histogram.h"
#include "codec/command.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "codec/wire.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/verify.h"
#include "journal/writer.h"
#include "state/pinned_config.h"
#include "state/rebuild.h"
#include "state/report_regenerator.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace orderwire::journal {
namespace {

constexpr std::size_t kRecords = 2'000'000;
constexpr std::size_t kSyncRecords = 31 * 2000;  // 2000 synced appends
constexpr std::size_t kPerAppend = 31;
constexpr std::size_t kFrameSize = codec::kFrameSize<codec::NewLimit>;
static_assert(kFrameSize == 47);

std::string BenchRoot() {
  const char* root = std::getenv("OW_BENCH_DIR");
  return root != nullptr ? root : "/tmp";
}

// Waits for the file system to write back and discard what earlier
// iterations left (this file system may be mounted with `discard`: the
// journal commit after a large file is deleted carries its discards and can
// take a second), so that no iteration pays for the one before.
void Settle() {
  const int fd = ::open(BenchRoot().c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)::syncfs(fd);
    ::close(fd);
  }
}

// A scratch directory, removed with its contents (and settled).
class Scratch {
 public:
  Scratch() {
    std::string pattern = BenchRoot() + "/ow-journal-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    Settle();
  }
  ~Scratch() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    Settle();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// kPerAppend NewLimit frames (sequences 1..31): the bytes of one datagram.
const std::vector<std::byte>& DatagramFrames() {
  static const std::vector<std::byte> frames = [] {
    std::vector<std::byte> out(kPerAppend * kFrameSize);
    for (std::size_t i = 0; i < kPerAppend; ++i) {
      (void)codec::EncodeFrame(
          i + 1,
          codec::NewLimit{.account_id = 7,
                          .client_order_id = 1000 + i,
                          .instrument_id = 42,
                          .side = codec::Side::kBuy,
                          .time_in_force = codec::TimeInForce::kGoodTillCancel,
                          .price = static_cast<std::int64_t>(10050 + i),
                          .quantity = 300},
          std::span<std::byte>(out).subspan(i * kFrameSize, kFrameSize));
    }
    return out;
  }();
  return frames;
}

// The writer's variants measured: its defaults, and for batch the choices
// docs/JOURNAL.md discusses.
enum Variant : int {
  kDefault = 0,       // O_DIRECT + RWF_DSYNC into pre-zeroed segments
  kNoPrezero = 1,     // O_DIRECT + RWF_DSYNC into fallocated segments
  kFdatasync = 2,     // buffered writes, linked fdatasync, pre-zeroed
  kEightSlots = 3,    // 8 group buffers instead of the default 4
  kSixteenSlots = 4,  // 16 group buffers
};

WriterOptions Options(const std::string& dir, Durability durability,
                      int variant = kDefault) {
  WriterOptions o;
  o.directory = dir;
  o.durability = durability;
  if (variant == kNoPrezero) o.prezero = false;
  if (variant == kFdatasync) o.sync_method = SyncMethod::kFdatasync;
  if (variant == kEightSlots) o.slots = 8;
  if (variant == kSixteenSlots) o.slots = 16;
  return o;
}

std::string VariantName(Durability durability, int variant) {
  std::string name(Name(durability));
  if (variant == kNoPrezero) name += ", no pre-zeroing";
  if (variant == kFdatasync) name += ", fdatasync";
  if (variant == kEightSlots) name += ", 8 buffers";
  if (variant == kSixteenSlots) name += ", 16 buffers";
  return name;
}

std::size_t RecordsFor(Durability durability) {
  return durability == Durability::kSync ? kSyncRecords : kRecords;
}

void SetCounters(benchmark::State& state, std::size_t records,
                 std::uint64_t groups, const LatencyHistogram* latency) {
  const auto items = static_cast<std::int64_t>(state.iterations()) *
                     static_cast<std::int64_t>(records);
  state.SetItemsProcessed(items);
  state.SetBytesProcessed(items * static_cast<std::int64_t>(kFrameSize));
  state.counters["groups"] = static_cast<double>(groups);
  if (latency != nullptr && latency->count() > 0) {
    state.counters["durable_p50_us"] =
        static_cast<double>(latency->Percentile(0.50)) / 1e3;
    state.counters["durable_p99_us"] =
        static_cast<double>(latency->Percentile(0.99)) / 1e3;
    state.counters["durable_max_us"] =
        static_cast<double>(latency->max()) / 1e3;
  }
}

// ---------------------------------------------------------------------------
// The writer.

void BM_Append(benchmark::State& state) {
  const auto durability = static_cast<Durability>(state.range(0));
  const auto variant = static_cast<int>(state.range(1));
  const std::size_t records = RecordsFor(durability);
  const std::vector<std::byte>& frames = DatagramFrames();
  std::uint64_t groups = 0;
  LatencyHistogram latency;
  for (auto _ : state) {
    state.PauseTiming();
    auto scratch = std::make_unique<Scratch>();
    auto writer =
        JournalWriter::Open(Options(scratch->path(), durability, variant));
    if (!writer.ok()) {
      state.SkipWithError(std::string(writer.status().message()).c_str());
      return;
    }
    JournalWriter& w = **writer;
    state.ResumeTiming();
    for (std::size_t done = 0; done < records; done += kPerAppend) {
      AppendStatus st;
      while ((st = w.Append(frames, 1, done)) == AppendStatus::kFull) {
        (void)w.Wait();
      }
      if (st != AppendStatus::kOk) {
        state.SkipWithError(std::string(w.status().message()).c_str());
        return;
      }
      w.Poll();
    }
    // Everything appended is durable under the mode (written, for none).
    if (absl::Status s = w.Flush(); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
    state.PauseTiming();
    (void)w.Close();
    groups = w.stats().groups;
    latency = w.durable_latency();
    writer->reset();
    scratch.reset();
    state.ResumeTiming();
  }
  SetCounters(state, records, groups,
              durability == Durability::kNone ? nullptr : &latency);
  state.SetLabel(VariantName(durability, variant));
}
BENCHMARK(BM_Append)
    ->ArgNames({"durability", "variant"})
    ->Args({static_cast<int>(Durability::kNone), kDefault})
    ->Args({static_cast<int>(Durability::kBatch), kDefault})
    ->Args({static_cast<int>(Durability::kBatch), kNoPrezero})
    ->Args({static_cast<int>(Durability::kBatch), kFdatasync})
    ->Args({static_cast<int>(Durability::kBatch), kEightSlots})
    ->Args({static_cast<int>(Durability::kBatch), kSixteenSlots})
    ->Args({static_cast<int>(Durability::kSync), kDefault})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// Baselines: the same records in the same groups, with write(2).

// Builds groups exactly as the writer does (header, records, CRC32C
// trailer, zero padding) into `buffer`; returns the group's aligned size.
struct GroupBuilder {
  std::byte* buffer;
  std::uint32_t capacity;
  std::uint32_t used = static_cast<std::uint32_t>(kGroupHeaderSize);
  std::uint32_t count = 0;
  std::uint64_t first = 1;

  bool Fits(std::size_t bytes) const {
    return used + bytes + kGroupTrailerSize <= capacity;
  }
  void Add(std::span<const std::byte> frames, std::uint64_t& index,
           std::uint64_t now) {
    std::byte* out = buffer + used;
    for (std::size_t pos = 0; pos < frames.size(); pos += kFrameSize) {
      codec::StoreLE(out + kOffsetOf<kRecordHeaderLayout, &RecordHeader::index>,
                     ++index);
      codec::StoreLE(
          out + kOffsetOf<kRecordHeaderLayout, &RecordHeader::receive_ns>, now);
      codec::StoreLE(
          out + kOffsetOf<kRecordHeaderLayout, &RecordHeader::session_id>,
          std::uint32_t{1});
      codec::StoreLE(out + kOffsetOf<kRecordHeaderLayout, &RecordHeader::flags>,
                     std::uint32_t{0});
      std::memcpy(out + kRecordHeaderSize, frames.data() + pos, kFrameSize);
      out += kRecordHeaderSize + kFrameSize;
      ++count;
    }
    used = static_cast<std::uint32_t>(out - buffer);
  }
  std::uint32_t Seal(std::uint64_t stable) {
    StoreStruct<kGroupHeaderLayout>(
        GroupHeader{kGroupMagic,
                    used - static_cast<std::uint32_t>(kGroupHeaderSize), first,
                    stable, count, 0},
        buffer);
    StoreStruct<kGroupTrailerLayout>(
        GroupTrailer{Crc32c({buffer, used}), kTrailerMagic}, buffer + used);
    const std::uint32_t end =
        used + static_cast<std::uint32_t>(kGroupTrailerSize);
    const auto length = static_cast<std::uint32_t>(AlignUp(end));
    std::memset(buffer + end, 0, length - end);
    first += count;
    used = static_cast<std::uint32_t>(kGroupHeaderSize);
    count = 0;
    return length;
  }
};

int OpenPreallocated(const std::string& path, std::uint64_t size) {
  const int fd =
      ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
  if (fd >= 0) (void)::fallocate(fd, 0, 0, static_cast<off_t>(size));
  return fd;
}

void BM_WriteBaseline(benchmark::State& state) {
  const auto durability = static_cast<Durability>(state.range(0));
  const std::size_t records = RecordsFor(durability);
  // The writer's default group size for the mode.
  const std::uint32_t group_size =
      durability == Durability::kNone ? 256u << 10 : 64u << 10;
  const std::vector<std::byte>& frames = DatagramFrames();
  void* memory = std::aligned_alloc(kBlockSize, group_size);
  GroupBuilder builder{static_cast<std::byte*>(memory), group_size};
  std::uint64_t groups = 0;
  LatencyHistogram latency;
  for (auto _ : state) {
    state.PauseTiming();
    auto scratch = std::make_unique<Scratch>();
    const std::uint64_t file_size =
        AlignUp(records * (kRecordHeaderSize + kFrameSize) * 2 + (8u << 20));
    const int fd = OpenPreallocated(scratch->path() + "/baseline", file_size);
    builder.first = 1;
    groups = 0;
    latency.Reset();
    state.ResumeTiming();
    std::uint64_t offset = kFirstGroupOffset;
    std::uint64_t index = 0;
    auto write_group = [&] {
      const auto start = std::chrono::steady_clock::now();
      const std::uint32_t length = builder.Seal(index);
      if (::pwrite(fd, builder.buffer, length, static_cast<off_t>(offset)) !=
          static_cast<ssize_t>(length)) {
        state.SkipWithError("pwrite failed");
      }
      if (durability != Durability::kNone) ::fdatasync(fd);
      latency.Record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now() - start)
              .count()));
      offset += length;
      ++groups;
    };
    for (std::size_t done = 0; done < records; done += kPerAppend) {
      const std::size_t bytes = kPerAppend * (kRecordHeaderSize + kFrameSize);
      if (!builder.Fits(bytes)) write_group();
      builder.Add(frames, index, done);
      if (durability == Durability::kSync) write_group();
    }
    if (builder.count > 0) write_group();
    state.PauseTiming();
    ::close(fd);
    scratch.reset();
    state.ResumeTiming();
  }
  std::free(memory);
  SetCounters(state, records, groups,
              durability == Durability::kNone ? nullptr : &latency);
  state.SetLabel(std::string(Name(durability)) + " baseline: write(2)" +
                 (durability == Durability::kNone ? "" : " + fdatasync"));
}
BENCHMARK(BM_WriteBaseline)
    ->ArgName("durability")
    ->Arg(static_cast<int>(Durability::kNone))
    ->Arg(static_cast<int>(Durability::kBatch))
    ->Arg(static_cast<int>(Durability::kSync))
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// pwrite(2) of groups built once, before the clock starts.
void BM_RawWrite(benchmark::State& state) {
  const std::uint32_t group_size = 256u << 10;
  const std::vector<std::byte>& frames = DatagramFrames();
  void* memory = std::aligned_alloc(kBlockSize, group_size);
  GroupBuilder builder{static_cast<std::byte*>(memory), group_size};
  std::uint64_t index = 0;
  std::size_t per_group = 0;
  while (builder.Fits(kPerAppend * (kRecordHeaderSize + kFrameSize))) {
    builder.Add(frames, index, 0);
    per_group += kPerAppend;
  }
  const std::uint32_t length = builder.Seal(0);
  const std::size_t groups = kRecords / per_group;
  for (auto _ : state) {
    state.PauseTiming();
    auto scratch = std::make_unique<Scratch>();
    const int fd = OpenPreallocated(scratch->path() + "/raw",
                                    AlignUp(groups * length + kBlockSize));
    state.ResumeTiming();
    std::uint64_t offset = kFirstGroupOffset;
    for (std::size_t g = 0; g < groups; ++g) {
      if (::pwrite(fd, builder.buffer, length, static_cast<off_t>(offset)) !=
          static_cast<ssize_t>(length)) {
        state.SkipWithError("pwrite failed");
      }
      offset += length;
    }
    state.PauseTiming();
    ::close(fd);
    scratch.reset();
    state.ResumeTiming();
  }
  std::free(memory);
  SetCounters(state, groups * per_group, groups, nullptr);
  state.SetLabel("none ceiling: pwrite(2) of prebuilt groups");
}
BENCHMARK(BM_RawWrite)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The device's own durable-write latency, the floor under every batch
// round trip: one 4096-byte pwrite(2) at a time with O_DIRECT | O_DSYNC
// (what the writer's default batch mode issues through io_uring, minus the
// ring) at consecutive offsets of a pre-zeroed file, the latency of each.
// scripts/bench_service.sh runs it in the same run as the service's
// latency figures, on the same file system (OW_BENCH_DIR).
void BM_DeviceWrite(benchmark::State& state) {
  constexpr std::size_t kWrites = 4000;
  constexpr std::size_t kBytes = kWrites * kBlockSize;
  void* memory = std::aligned_alloc(kBlockSize, 1u << 20);
  std::memset(memory, 0, 1u << 20);
  LatencyHistogram latency;
  for (auto _ : state) {
    state.PauseTiming();
    auto scratch = std::make_unique<Scratch>();
    const std::string path = scratch->path() + "/device";
    // Pre-zeroed and synced, as the writer prepares a segment, so that no
    // write below changes file metadata.
    int fd = OpenPreallocated(path, kBytes);
    for (std::size_t at = 0; fd >= 0 && at < kBytes; at += 1u << 20) {
      if (::pwrite(fd, memory, 1u << 20, static_cast<off_t>(at)) < 0) break;
    }
    if (fd >= 0) (void)::fsync(fd);
    if (fd >= 0) ::close(fd);
    fd = ::open(path.c_str(), O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError("open with O_DIRECT | O_DSYNC failed");
      break;
    }
    latency.Reset();
    state.ResumeTiming();
    for (std::size_t i = 0; i < kWrites; ++i) {
      const auto start = std::chrono::steady_clock::now();
      if (::pwrite(fd, memory, kBlockSize,
                   static_cast<off_t>(i * kBlockSize)) !=
          static_cast<ssize_t>(kBlockSize)) {
        state.SkipWithError("pwrite failed");
        break;
      }
      latency.Record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now() - start)
              .count()));
    }
    state.PauseTiming();
    ::close(fd);
    scratch.reset();
    state.ResumeTiming();
  }
  std::free(memory);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kWrites));
  for (const auto& [name, q] :
       {std::pair{"p50_us", 0.50}, std::pair{"p90_us", 0.90},
        std::pair{"p99_us", 0.99}, std::pair{"p999_us", 0.999}}) {
    state.counters[name] = static_cast<double>(latency.Percentile(q)) / 1e3;
  }
  state.counters["max_us"] = static_cast<double>(latency.max()) / 1e3;
  state.SetLabel(
      "device floor: 4 KiB pwrite, O_DIRECT | O_DSYNC, one at a time");
}
BENCHMARK(BM_DeviceWrite)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// The checksum alone, over one 64 KiB group (in cache).

void BM_Crc32c(benchmark::State& state) {
  std::vector<std::byte> group(static_cast<std::size_t>(state.range(0)));
  for (std::size_t i = 0; i < group.size(); ++i) {
    group[i] = static_cast<std::byte>(i * 131);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(Crc32c(group));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          state.range(0));
}
BENCHMARK(BM_Crc32c)->Arg(67)->Arg(64 * 1024);

// ---------------------------------------------------------------------------
// Replay.

// A journal of the `mixed` workload, written once per process.
const std::string& MixedJournal() {
  static Scratch scratch;  // removed at exit
  static const std::string dir = [] {
    const std::string path = scratch.path() + "/mixed";
    auto writer = JournalWriter::Open(Options(path, Durability::kNone));
    if (!writer.ok()) return std::string();
    workload::MixedGenerator generator(1);
    std::vector<std::byte> buffer(kPerAppend * codec::kMaxFrameSize);
    for (std::size_t done = 0; done < 1'000'000; done += kPerAppend) {
      std::size_t used = 0;
      for (std::size_t i = 0; i < kPerAppend; ++i) {
        used += *codec::EncodeCommand(
            generator.Next(), std::span<std::byte>(buffer).subspan(used));
      }
      while ((*writer)->Append({buffer.data(), used}, 1, done) ==
             AppendStatus::kFull) {
        (void)(*writer)->Wait();
      }
    }
    (void)(*writer)->Close();
    return path;
  }();
  return dir;
}

void BM_ReplayVerify(benchmark::State& state) {
  const std::string& dir = MixedJournal();
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    auto reader = JournalReader::Open(dir);
    if (!reader.ok()) {
      state.SkipWithError("no journal");
      return;
    }
    Record r;
    std::uint64_t kinds = 0;
    while ((*reader)->Next(r) == ReadResult::kRecord) {
      kinds += static_cast<std::uint8_t>(r.frame.kind());
    }
    if (!(*reader)->status().ok()) state.SkipWithError("journal not whole");
    benchmark::DoNotOptimize(kinds);
    records += (*reader)->last_index();
    bytes += (*reader)->bytes_done();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(records));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_ReplayVerify)->UseRealTime()->Unit(benchmark::kMillisecond);

// Replay as `orderwire replay` and a restart do it: every record through
// state::StateMachine (decode, flags, the engine, per-session numbering
// and routing), with the history replay uses (none kept).
void BM_ReplayEngine(benchmark::State& state) {
  const std::string& dir = MixedJournal();
  std::uint64_t records = 0;
  std::uint64_t reports = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto machine = std::make_unique<state::StateMachine>(
        state::StateMachineOptions{.engine = engine::EngineConfig{},
                                   .max_sessions = 1024,
                                   .report_history = 1,
                                   .history_budget_bytes = 0});
    state.ResumeTiming();
    auto reader = JournalReader::Open(dir);
    if (!reader.ok()) {
      state.SkipWithError("no journal");
      return;
    }
    Record r;
    while ((*reader)->Next(r) == ReadResult::kRecord) {
      if (!machine->Apply(state::Record::FromJournal(r)).ok()) {
        state.SkipWithError("a record the state machine refused");
        return;
      }
      reports += machine->outputs().size();
    }
    records += (*reader)->last_index();
  }
  benchmark::DoNotOptimize(reports);
  state.SetItemsProcessed(static_cast<std::int64_t>(records));
}
BENCHMARK(BM_ReplayEngine)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_VerifyPrefix(benchmark::State& state) {
  const std::string& dir = MixedJournal();
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<VerifiedPrefix> verified = VerifyPrefix(dir, 1'000'001);
    if (!verified.ok() || verified->records != 1'000'000) {
      state.SkipWithError("journal not whole");
      return;
    }
    records += verified->records;
    bytes += verified->bytes;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(records));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_VerifyPrefix)->UseRealTime()->Unit(benchmark::kMillisecond);

constexpr std::uint64_t kSnapshotIndex = 900'000;

state::StateMachineOptions ReplayMachine() {
  return state::StateMachineOptions{.engine = engine::EngineConfig{},
                                    .max_sessions = 1024,
                                    .report_history = 1,
                                    .history_budget_bytes = 0};
}

// MixedJournal with a snapshot at kSnapshotIndex (written once); its id.
std::uint64_t MixedJournalWithSnapshot() {
  static const std::uint64_t id = [] {
    const std::string& dir = MixedJournal();
    absl::StatusOr<std::uint64_t> journal_id = state::JournalIdOf(dir, {});
    if (!journal_id.ok()) return std::uint64_t{0};
    absl::StatusOr<state::RebuiltState> rebuilt =
        state::RebuildState({.directory = dir,
                             .use_snapshots = false,
                             .up_to_index = kSnapshotIndex,
                             .machine_options = ReplayMachine()});
    if (!rebuilt.ok() ||
        !state::WriteSnapshot(*rebuilt->machine, *journal_id, dir).ok()) {
      return std::uint64_t{0};
    }
    return *journal_id;
  }();
  return id;
}

void BM_RebuildFromSnapshot(benchmark::State& state) {
  const std::uint64_t id = MixedJournalWithSnapshot();
  if (id == 0) {
    state.SkipWithError("no snapshot");
    return;
  }
  std::uint64_t records = 0;
  for (auto _ : state) {
    absl::StatusOr<state::RebuiltState> rebuilt =
        state::RebuildState({.directory = MixedJournal(),
                             .up_to_index = 1'000'000,
                             .journal_id = id,
                             .machine_options = ReplayMachine()});
    if (!rebuilt.ok() || !rebuilt->snapshot.has_value() ||
        rebuilt->machine->last_index() != 1'000'000) {
      state.SkipWithError("rebuild failed");
      return;
    }
    records += rebuilt->replayed;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(records));
}
BENCHMARK(BM_RebuildFromSnapshot)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Regenerate(benchmark::State& state) {
  const std::uint64_t id = MixedJournalWithSnapshot();
  if (id == 0) {
    state.SkipWithError("no snapshot");
    return;
  }
  state::ReportRegenerator regenerator(
      {.journal_dir = MixedJournal(),
       .journal_id = id,
       .machine = ReplayMachine(),
       .unpinned = state::PinnedConfig{.engine = engine::EngineConfig{},
                                       .max_sessions = 1024}});
  std::uint64_t reports = 0;
  std::int64_t now_ns = 0;
  for (auto _ : state) {
    // Past the last job's kRepeatNs: a new job each time.
    now_ns += 2 * state::ReportRegenerator::kRepeatNs;
    if (regenerator.Request({.session_id = 1,
                             .from_command = kSnapshotIndex + 1,
                             .up_to_index = 1'000'000},
                            now_ns) !=
        state::ReportRegenerator::Queued::kQueued) {
      state.SkipWithError("request not queued");
      return;
    }
    std::optional<state::ReportRegenerator::Finished> done;
    while (!done.has_value()) {
      // As the service's loop does: 1,024 a pass, and while nothing is
      // there, a short wait (the worker runs at nice +10 and may share
      // this core).
      const std::size_t taken = regenerator.Take(
          [](std::uint64_t, std::span<const std::byte>) { return true; }, 1024);
      reports += taken;
      done = regenerator.TakeFinished(now_ns);
      if (taken == 0 && !done.has_value()) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    if (!done->status.ok()) {
      state.SkipWithError("regeneration failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(
                                                   1'000'000 - kSnapshotIndex));
  state.counters["reports"] = benchmark::Counter(
      static_cast<double>(reports) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_Regenerate)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace orderwire::journal

BENCHMARK_MAIN();
