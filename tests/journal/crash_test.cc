// The crash test: a child process appends with durability reporting and is
// killed with SIGKILL at a random moment; every index it reported durable
// must then be in the journal, intact, after recovery. Repeated on one
// journal (each child recovers what the previous one left) in each mode.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/testing/random_commands.h"
#include "gtest/gtest.h"
#include "journal/internal/io_queue.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::FramesFor;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SessionFor;
using ::orderwire::journal::testing::TimeFor;
using ::orderwire::test_support::ScratchDir;

using Clock = std::chrono::steady_clock;

WriterOptions CrashOptions(const std::string& dir, Durability durability,
                           SyncMethod method, std::uint16_t version) {
  return WriterOptions{.directory = dir,
                       .durability = durability,
                       .segment_size = 1 << 20,  // rotations are frequent
                       .group_size = 32 * 1024,
                       .sync_method = method,
                       .format_version = version};
}

// The child: append until killed (or 5 s pass), reporting every advance of
// the durable index as 8 bytes on `report_fd`.
[[noreturn]] void Child(const WriterOptions& options, int report_fd,
                        std::uint64_t seed) {
  auto writer = JournalWriter::Open(options);
  if (!writer.ok()) {
    std::fprintf(stderr, "child: %s\n", writer.status().ToString().c_str());
    ::_exit(20);
  }
  JournalWriter& w = **writer;
  codec::testing::SplitMix64 rng(seed);
  std::uint64_t next = w.last_index() + 1;
  std::uint64_t reported = w.durable_index();  // report progress only
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    const std::size_t n = 1 + rng.Below(63);
    const std::vector<std::byte> frames = FramesFor(next, n);
    const AppendStatus st = w.Append(frames, SessionFor(next), TimeFor(next));
    if (st == AppendStatus::kOk) {
      next += n;
    } else if (st == AppendStatus::kFull) {
      (void)w.Wait();
    } else {
      std::fprintf(stderr, "child: append %s: %s\n",
                   std::string(Name(st)).c_str(),
                   w.status().ToString().c_str());
      ::_exit(21);
    }
    const std::uint64_t durable = w.Poll();
    if (durable > reported) {
      if (::write(report_fd, &durable, sizeof(durable)) != sizeof(durable)) {
        ::_exit(22);
      }
      reported = durable;
    }
  }
  ::_exit(0);
}

struct CrashRun {
  std::uint64_t max_reported = 0;
  bool killed = false;
};

// Starts a child, kills it `kill_after` after its first durability report,
// and returns the highest index it reported.
CrashRun CrashOnce(const WriterOptions& options, std::uint64_t seed,
                   std::chrono::microseconds kill_after) {
  CrashRun run;
  int fds[2];
  if (::pipe(fds) != 0) return run;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Child(options, fds[1], seed);
  }
  ::close(fds[1]);
  std::optional<Clock::time_point> kill_at;
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  bool eof = false;
  auto drain = [&](int timeout_ms) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return;
    std::uint64_t values[512];
    const ssize_t got = ::read(fds[0], values, sizeof(values));
    if (got <= 0) {
      eof = true;
      return;
    }
    for (ssize_t i = 0; i < got / 8; ++i) {
      run.max_reported = std::max(run.max_reported, values[i]);
    }
    if (!kill_at.has_value()) kill_at = Clock::now() + kill_after;
  };
  while (!eof && Clock::now() < give_up &&
         (!kill_at.has_value() || Clock::now() < *kill_at)) {
    drain(1);
  }
  ::kill(pid, SIGKILL);
  while (!eof) drain(100);  // what it wrote before dying
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  run.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (!run.killed) {
    ADD_FAILURE() << "the child was not killed: status " << status;
  }
  return run;
}

class CrashTest : public ::testing::TestWithParam<
                      std::tuple<Durability, SyncMethod, std::uint16_t>> {};

TEST_P(CrashTest, EveryIndexReportedDurableSurvivesSigkill) {
  if (absl::Status s = internal::ProbeIoUring(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  const auto [durability, method, version] = GetParam();
  ScratchDir dir;
  if (method == SyncMethod::kDirectDsync &&
      !testing::DirectIoSupported(dir.path())) {
    GTEST_SKIP() << "the file system of " << dir.path()
                 << " does not support O_DIRECT";
  }
  const WriterOptions options =
      CrashOptions(dir.path(), durability, method, version);
  const std::uint64_t seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message()
               << "seed " << seed << " (rerun with ORDERWIRE_TEST_SEED=" << seed
               << ")");
  codec::testing::SplitMix64 rng(seed);
  int torn = 0;
  std::uint64_t previous_last = 0;
  for (int iteration = 0; iteration < 10; ++iteration) {
    const auto kill_after = std::chrono::microseconds(rng.Below(30'000));
    const CrashRun run = CrashOnce(options, rng.Next(), kill_after);
    ASSERT_TRUE(run.killed);
    ASSERT_GT(run.max_reported, previous_last);

    // Recovery: never refused, never below what was reported durable.
    auto writer = JournalWriter::Open(options);
    ASSERT_TRUE(writer.ok())
        << "iteration " << iteration << ": " << writer.status();
    const RecoveryReport& report = (*writer)->recovery();
    torn += report.torn_tail ? 1 : 0;
    EXPECT_GE(report.last_index, run.max_reported)
        << "iteration " << iteration << ": " << report.message;
    const std::uint64_t last = report.last_index;
    ASSERT_TRUE((*writer)->Close().ok());

    // Every record, 1..last: the right frame, index, session and time.
    const auto back = ReadAndCheck(dir.path(), 0);
    ASSERT_EQ(back.end, ReadResult::kEnd) << back.status;
    ASSERT_EQ(back.records, last);
    previous_last = last;
  }
  RecordProperty("torn_tails", torn);
  std::printf("%d of 10 recoveries cut a torn tail; %d records\n", torn,
              static_cast<int>(previous_last));
}

std::string CrashName(const ::testing::TestParamInfo<
                      std::tuple<Durability, SyncMethod, std::uint16_t>>& p) {
  const SyncMethod method = std::get<1>(p.param);
  return absl::StrFormat("%s_%s_V%d", Name(std::get<0>(p.param)),
                         method == SyncMethod::kFdatasync     ? "Fdatasync"
                         : method == SyncMethod::kDirectDsync ? "Dsync"
                                                              : "Auto",
                         std::get<2>(p.param));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CrashTest,
    ::testing::Values(
        std::make_tuple(Durability::kBatch, SyncMethod::kDirectDsync,
                        std::uint16_t{3}),
        std::make_tuple(Durability::kBatch, SyncMethod::kFdatasync,
                        std::uint16_t{3}),
        std::make_tuple(Durability::kNone, SyncMethod::kAuto, std::uint16_t{3}),
        // The previous format, packed groups with the framing of version 1.
        std::make_tuple(Durability::kBatch, SyncMethod::kDirectDsync,
                        std::uint16_t{2})),
    CrashName);

}  // namespace
}  // namespace orderwire::journal
