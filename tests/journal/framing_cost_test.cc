// What the journal's framing costs per record (docs/BENCHMARKS.md "Journal
// bytes per record"): journal bytes per record over the record's own size (its
// 24-byte header of index, receive time, session and flags, plus the frame:
// what journal::Record carries), for the `mixed` workload of `orderwire gen`.
// The worst case is a group per record, what a quiet service at 1,000
// commands/s writes: every command a datagram, every datagram a group. Here it
// is forced deterministically by flushing after each append, so the figure does
// not depend on the machine's load. The target is at most 1.5x; format version
// 3 must meet it, version 2 does not (which shows the measurement can tell them
// apart).
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/wire.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::journal {
namespace {

using ::orderwire::test_support::ScratchDir;

// The first `count` frames `orderwire gen --workload mixed --seed 1` writes.
std::vector<std::vector<std::byte>> MixedFrames(std::size_t count) {
  workload::MixedGenerator generator(1);
  std::vector<std::vector<std::byte>> frames;
  frames.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<std::byte> frame(codec::kMaxFrameSize);
    const auto size = codec::EncodeCommand(generator.Next(), frame);
    EXPECT_TRUE(size.ok());
    frame.resize(size.ok() ? *size : 0);
    frames.push_back(std::move(frame));
  }
  return frames;
}

struct Cost {
  std::uint64_t groups = 0;
  std::uint64_t journal_bytes = 0;  // WriterStats::journal_bytes
  std::uint64_t record_bytes = 0;   // 24-byte record headers + frames
  [[nodiscard]] double ratio() const {
    return static_cast<double>(journal_bytes) /
           static_cast<double>(record_bytes);
  }
};

// Appends `frames` one per Append into a journal of `version`, flushing
// after every `per_group` appends (each flush seals a group).
Cost Measure(const std::vector<std::vector<std::byte>>& frames,
             std::uint16_t version, std::size_t per_group) {
  ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = Durability::kNone,
                                     .segment_size = std::uint64_t{64} << 20,
                                     .backend = IoBackend::kBlocking,
                                     .format_version = version});
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return {};
  Cost cost;
  std::uint64_t receive_ns = 1'700'000'000'000'000'000u;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ((*writer)->Append(frames[i], 1, receive_ns += 1000),
              AppendStatus::kOk);
    cost.record_bytes += kRecordHeaderSize + frames[i].size();
    if ((i + 1) % per_group == 0) {
      EXPECT_TRUE((*writer)->Flush().ok());
    }
  }
  EXPECT_TRUE((*writer)->Flush().ok());
  cost.groups = (*writer)->stats().groups;
  cost.journal_bytes = (*writer)->stats().journal_bytes;
  EXPECT_TRUE((*writer)->Close().ok());
  // It reads back whole.
  auto reader = JournalReader::Open(dir.path());
  EXPECT_TRUE(reader.ok());
  Record r;
  std::uint64_t records = 0;
  while ((*reader)->Next(r) == ReadResult::kRecord) ++records;
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_EQ(records, frames.size());
  return cost;
}

TEST(FramingCostTest, AOneRecordGroupOfTheMixedWorkloadCostsAtMostOneAndAHalf) {
  const std::vector<std::vector<std::byte>> frames = MixedFrames(20'000);
  for (const std::uint16_t version : {std::uint16_t{2}, std::uint16_t{3}}) {
    const Cost one = Measure(frames, version, 1);
    const Cost batched = Measure(frames, version, 64);
    EXPECT_EQ(one.groups, frames.size());
    std::printf(
        "version %d: record %.2f bytes; one record per group: %.2f journal "
        "bytes per record, %.3fx; 64 per group: %.2f, %.3fx\n",
        version,
        static_cast<double>(one.record_bytes) /
            static_cast<double>(frames.size()),
        static_cast<double>(one.journal_bytes) /
            static_cast<double>(frames.size()),
        one.ratio(),
        static_cast<double>(batched.journal_bytes) /
            static_cast<double>(frames.size()),
        batched.ratio());
    if (version == 3) {
      EXPECT_LE(one.ratio(), 1.5);
      EXPECT_LE(batched.ratio(), 1.0);  // the index no longer stored
    } else {
      EXPECT_GT(one.ratio(), 1.5);  // why version 3 exists
      EXPECT_LE(batched.ratio(), 1.05);
    }
  }
}

}  // namespace
}  // namespace orderwire::journal
