// Durability, proven against the I/O the writer actually asks for: a
// DurabilityRecorder (io_recorder.h) on the writer's I/O seam records every
// write (file, offset, length, RWF_DSYNC or the file's O_DSYNC/O_SYNC) and
// every fdatasync/fsync with its completion, and each value durable_index()
// takes is checked against it: no index may count as durable before a
// completed DSYNC write, or a completed sync issued after its write
// completed (or linked behind it), covers the bytes of its group.
//
// The crash test cannot see this: SIGKILL leaves the page cache intact, so
// a writer that dropped RWF_DSYNC or its fdatasync would pass it. This test
// fails instead, naming the index, the bytes and the ops on the file.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/testing/random_commands.h"
#include "gtest/gtest.h"
#include "journal/internal/io_queue.h"
#include "journal/writer.h"
#include "tests/journal/io_recorder.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::DurabilityRecorder;
using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SessionFor;
using ::orderwire::journal::testing::TimeFor;
using ::orderwire::test_support::ScratchDir;

using Clock = std::chrono::steady_clock;
// The last element is the format version of the segments.
using Mode = std::tuple<Durability, SyncMethod, IoBackend, std::uint16_t>;

class DurabilityOrderTest : public ::testing::TestWithParam<Mode> {};

// The run of `w` exercised what it claims to: rotations (segment headers
// written through the queue), and the durable ops of its method (`direct`:
// RWF_DSYNC writes, else syncs). Prints what `recorder` saw.
void ExpectTheRunRotatedAndMadeDurable(JournalWriter& w,
                                       DurabilityRecorder& recorder,
                                       bool direct) {
  EXPECT_GE(w.stats().rotations, 1u) << "no rotation happened";
  EXPECT_EQ(recorder.queued_headers(), w.stats().rotations);
  if (direct) {
    EXPECT_GE(recorder.dsync_writes(), w.stats().groups);
  } else {
    EXPECT_GE(recorder.syncs(), w.stats().groups);
  }
  std::printf(
      "%s: %llu records in %llu groups, %llu writes (%llu DSYNC), "
      "%llu syncs, %d segment headers\n",
      w.io_description().c_str(),
      static_cast<unsigned long long>(w.last_index()),
      static_cast<unsigned long long>(recorder.groups()),
      static_cast<unsigned long long>(recorder.writes()),
      static_cast<unsigned long long>(recorder.dsync_writes()),
      static_cast<unsigned long long>(recorder.syncs()),
      recorder.queued_headers());
}

TEST_P(DurabilityOrderTest, NoIndexCountsAsDurableBeforeItsBytesAre) {
  const auto [durability, method, backend, version] = GetParam();
  if (backend == IoBackend::kIoUring) {
    if (absl::Status s = internal::ProbeIoUring(); !s.ok()) {
      GTEST_SKIP() << s.message();
    }
  }
  ScratchDir dir;
  if (method == SyncMethod::kDirectDsync &&
      !testing::DirectIoSupported(dir.path())) {
    GTEST_SKIP() << "the file system of " << dir.path()
                 << " does not support O_DIRECT";
  }
  const std::uint64_t seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message()
               << "seed " << seed << " (rerun with ORDERWIRE_TEST_SEED=" << seed
               << ")");
  codec::testing::SplitMix64 rng(seed);

  DurabilityRecorder recorder;
  const bool sync = durability == Durability::kSync;
  // Small segments, so that the run rotates (packed groups: 2,000 records
  // of kSync take about 150 KiB).
  const WriterOptions options{
      .directory = dir.path(),
      .durability = durability,
      .segment_size = std::uint64_t{sync ? 64u : 256u} * 1024,
      .group_size = 16 * 1024,
      .sync_method = method,
      .backend = backend,
      .faults = &recorder,
      .format_version = version};
  auto opened = JournalWriter::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  JournalWriter& w = **opened;
  recorder.SkipTo(w.durable_index());
  const bool direct = method == SyncMethod::kDirectDsync;
  ASSERT_NE(w.io_description().find(direct ? "RWF_DSYNC" : "fdatasync"),
            std::string::npos)
      << w.io_description();

  // Every value durable_index() takes is checked the moment it is seen.
  std::uint64_t seen = w.durable_index();
  std::string violation;
  auto check = [&](std::uint64_t durable) {
    if (durable == seen || !violation.empty()) return;
    seen = durable;
    violation = recorder.Check(durable);
  };

  const std::uint64_t target = sync ? 2'000 : 12'000;
  const std::uint64_t max_append = sync ? 8 : 40;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  std::uint64_t next = w.last_index() + 1;
  while (next <= target && violation.empty() && Clock::now() < deadline) {
    const std::size_t n = 1 + rng.Below(max_append);
    const std::vector<std::byte> frames = FramesFor(next, n);
    const AppendStatus st = w.Append(frames, SessionFor(next), TimeFor(next));
    if (st == AppendStatus::kOk) {
      next += n;
      if (sync) {
        EXPECT_EQ(w.durable_index(), w.last_index())
            << "sync: Append returned before its records were durable";
      }
    } else if (st == AppendStatus::kFull) {
      ASSERT_TRUE(w.Wait().ok()) << w.status();
    } else {
      FAIL() << "append " << Name(st) << ": " << w.status();
    }
    check(w.durable_index());
    // Now and then let I/O complete, so that Poll() seals partial groups
    // and completions interleave with appends in every way.
    if (rng.Below(4) == 0) check(w.Poll());
    if (rng.Below(16) == 0) {
      ASSERT_TRUE(w.Wait().ok()) << w.status();
      check(w.durable_index());
    }
  }
  // Drain: every record durable, still by the rules.
  while (violation.empty() && w.durable_index() < w.last_index() &&
         Clock::now() < deadline) {
    ASSERT_TRUE(w.Wait().ok()) << w.status();
    check(w.Poll());
  }
  ASSERT_TRUE(violation.empty())
      << Name(durability) << ", " << w.io_description() << ":\n"
      << violation;
  ASSERT_EQ(w.durable_index(), w.last_index())
      << "the writer did not finish within the deadline";
  ASSERT_GE(w.last_index(), target);
  EXPECT_EQ(recorder.checked(), w.last_index());

  ExpectTheRunRotatedAndMadeDurable(w, recorder, direct);
  ASSERT_TRUE(w.Close().ok()) << w.status();
  const auto back = ReadAndCheck(dir.path(), 0);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, w.last_index());
}

std::string ModeName(const ::testing::TestParamInfo<Mode>& p) {
  const auto [durability, method, backend, version] = p.param;
  return absl::StrFormat(
      "%s_%s_%s_V%d", Name(durability),
      method == SyncMethod::kFdatasync ? "Fdatasync" : "Dsync",
      backend == IoBackend::kBlocking ? "Blocking" : "IoUring", version);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, DurabilityOrderTest,
    ::testing::Combine(
        ::testing::Values(Durability::kBatch, Durability::kSync),
        ::testing::Values(SyncMethod::kDirectDsync, SyncMethod::kFdatasync),
        ::testing::Values(IoBackend::kIoUring, IoBackend::kBlocking),
        ::testing::Values(std::uint16_t{2}, std::uint16_t{3})),
    ModeName);

}  // namespace
}  // namespace orderwire::journal
