// RebuildState (state/rebuild.h), the one rebuild behind the service's
// restart, `orderwire replay` and `orderwire snapshot`: its contract, each
// part failing when it breaks:
//   - without snapshots it is the full replay (the same state, byte for
//     byte), each record handed to on_applied once in order, each segment
//     to on_new_segments once;
//   - it starts from the newest snapshot that loads, skipping (and naming)
//     a damaged one, and applies only the records after it;
//   - it stops at up_to_index, reading nothing after it, and ignores
//     snapshots past it;
//   - a pruned journal is rebuilt only from a snapshot that reaches its
//     start; otherwise the caller's pruned_error (or a default) says so;
//   - an unreadable snapshot directory is an error, or with
//     unreadable_snapshots_replay_all a line and the full replay.
#include "state/rebuild.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/prune.h"
#include "journal/reader.h"
#include "state/snapshot.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/trading_journal.h"

namespace orderwire::state {
namespace {

using test_support::Bytes;
using test_support::ScratchDir;
using ::testing::HasSubstr;

using test_support::kTradingRecords;
using test_support::TradingMachineOptions;
using test_support::TradingReference;
using test_support::WriteTradingJournal;

constexpr std::uint64_t kRecords = kTradingRecords;

RebuildOptions Options(const std::string& dir) {
  const StateMachineOptions machine = TradingMachineOptions();
  return RebuildOptions{.directory = dir,
                        .machine_options = machine,
                        .unpinned = {.engine = machine.engine,
                                     .max_sessions = machine.max_sessions}};
}

TEST(RebuildState, WithoutSnapshotsItIsTheFullReplay) {
  ScratchDir dir;
  const std::uint64_t id = WriteTradingJournal(dir.path());
  std::vector<std::uint64_t> applied;
  std::vector<std::size_t> new_segments;
  RebuildOptions options = Options(dir.path());
  options.on_applied = [&](const journal::Record& record,
                           const StateMachine& machine,
                           const journal::JournalReader&) {
    EXPECT_EQ(machine.last_index(), record.index);
    applied.push_back(record.index);
    return absl::OkStatus();
  };
  options.on_new_segments = [&](const journal::JournalReader& reader,
                                std::size_t first_unseen) {
    EXPECT_EQ(first_unseen + 1, reader.segments().size());
    new_segments.push_back(first_unseen);
    return absl::OkStatus();
  };
  auto rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_FALSE(rebuilt->snapshot.has_value());
  EXPECT_TRUE(rebuilt->skipped.empty());
  EXPECT_EQ(rebuilt->from_index, 1u);
  EXPECT_EQ(rebuilt->replayed, kRecords);
  EXPECT_EQ(rebuilt->end, journal::ReadResult::kEnd);
  EXPECT_EQ(rebuilt->journal_id, id);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0),
            TradingReference(dir.path(), kRecords, id));
  ASSERT_EQ(applied.size(), kRecords);
  for (std::uint64_t i = 0; i < kRecords; ++i) EXPECT_EQ(applied[i], i + 1);
  ASSERT_NE(rebuilt->reader, nullptr);
  const std::size_t segments = rebuilt->reader->segments().size();
  ASSERT_GE(segments, 10u);  // the tail crosses many segments
  ASSERT_EQ(new_segments.size(), segments);
  for (std::size_t i = 0; i < segments; ++i) EXPECT_EQ(new_segments[i], i);

  // A hook's error stops it with that error.
  options.on_applied = [](const journal::Record& record, const StateMachine&,
                          const journal::JournalReader&) {
    return record.index == 5 ? absl::CancelledError("stop at 5")
                             : absl::OkStatus();
  };
  EXPECT_EQ(RebuildState(options).status(), absl::CancelledError("stop at 5"));
}

TEST(RebuildState, StartsFromTheNewestValidSnapshotPastADamagedOne) {
  ScratchDir dir;
  const std::uint64_t id = WriteTradingJournal(dir.path());
  const std::vector<std::byte> full =
      TradingReference(dir.path(), kRecords, id, {100, 200, 300});
  // The newest is damaged (one bit in its middle).
  const std::string damaged =
      SnapshotDirectory(dir.path()) + "/" + SnapshotFileName(300);
  std::vector<std::byte> bytes = test_support::ReadFile(damaged);
  bytes[bytes.size() / 2] ^= std::byte{1};
  test_support::WriteFile(damaged, bytes);

  std::uint64_t first_applied = 0;
  RebuildOptions options = Options(dir.path());  // journal_id 0: read it
  options.on_applied = [&](const journal::Record& record, const StateMachine&,
                           const journal::JournalReader&) {
    if (first_applied == 0) first_applied = record.index;
    return absl::OkStatus();
  };
  auto rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_TRUE(rebuilt->snapshot.has_value());
  EXPECT_EQ(rebuilt->snapshot->index, 200u);
  ASSERT_EQ(rebuilt->skipped.size(), 1u);
  EXPECT_THAT(rebuilt->skipped[0], HasSubstr(damaged));
  EXPECT_THAT(rebuilt->skipped[0], HasSubstr("using the previous one"));
  EXPECT_EQ(rebuilt->from_index, 201u);
  EXPECT_EQ(first_applied, 201u);
  EXPECT_EQ(rebuilt->replayed, kRecords - 200);
  EXPECT_EQ(rebuilt->journal_id, id);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0), full);

  // use_snapshots false: the whole journal, the same state.
  options.use_snapshots = false;
  rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_FALSE(rebuilt->snapshot.has_value());
  EXPECT_EQ(rebuilt->replayed, kRecords);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0), full);

  // Snapshots of another journal are skipped, every one.
  options.use_snapshots = true;
  options.journal_id = id + 1;
  rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_FALSE(rebuilt->snapshot.has_value());
  EXPECT_EQ(rebuilt->skipped.size(), 3u);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0), full);
}

TEST(RebuildState, ApplyNextIsTheTailOneRecordAtATime) {
  ScratchDir dir;
  const std::uint64_t id = WriteTradingJournal(dir.path());
  (void)TradingReference(dir.path(), kRecords, id, {100});
  RebuildOptions options = Options(dir.path());
  options.up_to_index = 250;
  StateRebuild rebuild(options);
  ASSERT_TRUE(rebuild.Begin().ok());
  ASSERT_TRUE(rebuild.state().snapshot.has_value());
  for (std::uint64_t index = 101; index <= 250; ++index) {
    const absl::StatusOr<bool> applied = rebuild.ApplyNext();
    ASSERT_TRUE(applied.ok()) << applied.status();
    ASSERT_TRUE(*applied) << index;
    ASSERT_EQ(rebuild.state().machine->last_index(), index);
  }
  // Over at up_to_index, with nothing after it read; again and again.
  for (int again = 0; again < 2; ++again) {
    const absl::StatusOr<bool> applied = rebuild.ApplyNext();
    ASSERT_TRUE(applied.ok());
    EXPECT_FALSE(*applied);
  }
  EXPECT_EQ(rebuild.state().end, journal::ReadResult::kRecord);
  EXPECT_EQ(rebuild.state().replayed, 150u);
  EXPECT_EQ(EncodeSnapshot(*rebuild.state().machine, id, 0),
            TradingReference(dir.path(), 250, id));
}

TEST(RebuildState, StopsAtUpToIndexAndIgnoresLaterSnapshots) {
  ScratchDir dir;
  const std::uint64_t id = WriteTradingJournal(dir.path());
  (void)TradingReference(dir.path(), kRecords, id, {100, 200});
  RebuildOptions options = Options(dir.path());
  options.up_to_index = 150;
  auto rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_TRUE(rebuilt->snapshot.has_value());
  EXPECT_EQ(rebuilt->snapshot->index, 100u);
  EXPECT_EQ(rebuilt->machine->last_index(), 150u);
  EXPECT_EQ(rebuilt->replayed, 50u);
  EXPECT_EQ(rebuilt->end, journal::ReadResult::kRecord);
  ASSERT_NE(rebuilt->reader, nullptr);
  EXPECT_EQ(rebuilt->reader->last_index(), 150u);  // nothing after it read
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0),
            TradingReference(dir.path(), 150, id));

  // Exactly at a snapshot: nothing to read.
  options.up_to_index = 200;
  rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->snapshot->index, 200u);
  EXPECT_EQ(rebuilt->replayed, 0u);
  EXPECT_EQ(rebuilt->reader, nullptr);
  EXPECT_EQ(rebuilt->journal_id, id);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0),
            TradingReference(dir.path(), 200, id));
}

TEST(RebuildState, APrunedJournalNeedsASnapshotThatReachesItsStart) {
  ScratchDir dir;
  const std::uint64_t id = WriteTradingJournal(dir.path());
  const std::vector<std::byte> full =
      TradingReference(dir.path(), kRecords, id, {100, 400});
  auto pruned =
      journal::PruneJournal({.directory = dir.path(), .before_index = 300});
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  const std::uint64_t first = pruned->first_index_after;
  ASSERT_GT(first, 101u);  // the snapshot at 100 went with its records
  ASSERT_LE(first, 300u);

  // Without a snapshot: refused, naming the first index.
  RebuildOptions options = Options(dir.path());
  options.use_snapshots = false;
  auto refused = RebuildState(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("starts at index " + std::to_string(first)));
  EXPECT_THAT(refused.status().message(), HasSubstr("pruned"));

  // In the caller's words, given the first index.
  std::uint64_t told = 0;
  options.pruned_error = [&](std::uint64_t first_available) {
    told = first_available;
    return absl::FailedPreconditionError("the caller's words");
  };
  EXPECT_EQ(RebuildState(options).status(),
            absl::FailedPreconditionError("the caller's words"));
  EXPECT_EQ(told, first);

  // The snapshot at 400 reaches the start: the state is the full replay's.
  options.use_snapshots = true;
  auto rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->first_available_index, first);
  ASSERT_TRUE(rebuilt->snapshot.has_value());
  EXPECT_EQ(rebuilt->snapshot->index, 400u);
  EXPECT_EQ(rebuilt->replayed, kRecords - 400);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0), full);

  // Up to an index before the snapshot: nothing reaches the start.
  options.up_to_index = 350;
  refused = RebuildState(options);
  EXPECT_EQ(refused.status(),
            absl::FailedPreconditionError("the caller's words"));
}

TEST(RebuildState, AnUnreadableSnapshotDirectoryIsAnErrorOrTheFullReplay) {
  ScratchDir dir;
  const std::uint64_t id = WriteTradingJournal(dir.path());
  // "snapshots" is a file, not a directory.
  test_support::WriteFile(SnapshotDirectory(dir.path()), {});
  RebuildOptions options = Options(dir.path());
  auto refused = RebuildState(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr(SnapshotDirectory(dir.path())));

  options.unreadable_snapshots_replay_all = true;
  auto rebuilt = RebuildState(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_EQ(rebuilt->skipped.size(), 1u);
  EXPECT_THAT(rebuilt->skipped[0], HasSubstr("replaying the whole journal"));
  EXPECT_EQ(rebuilt->replayed, kRecords);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0),
            TradingReference(dir.path(), kRecords, id));
}

}  // namespace
}  // namespace orderwire::state
