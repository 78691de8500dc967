// `serve --retain`'s worker (service/retention.h) relies only on snapshots
// that verify: with the newest snapshot damaged, it prunes behind the older
// valid one, so the restart's fallback to it still finds every record it
// needs; the damaged file is reported and counted once. (With the old
// name-trusting code the prune went up to the damaged snapshot's index and
// the fallback's records were gone.)
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/start.h"
#include "service/retention.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/trading_journal.h"

namespace orderwire::service {
namespace {

using state::EncodeSnapshot;
using state::RebuildState;
using state::SnapshotDirectory;
using state::SnapshotFileName;
using state::StateMachineOptions;

using test_support::ScratchDir;
using ::testing::HasSubstr;

TEST(RetentionWorker, PrunesOnlyBehindTheNewestSnapshotThatVerifies) {
  ScratchDir dir;
  const std::uint64_t id = test_support::WriteTradingJournal(dir.path());
  const std::vector<std::byte> full = test_support::TradingReference(
      dir.path(), test_support::kTradingRecords, id, {200, 500});
  // The newest snapshot is damaged: one bit in its middle.
  const std::string damaged =
      SnapshotDirectory(dir.path()) + "/" + SnapshotFileName(500);
  std::vector<std::byte> bytes = test_support::ReadFile(damaged);
  bytes[bytes.size() / 2] ^= std::byte{1};
  test_support::WriteFile(damaged, bytes);

  std::vector<std::string> events;
  RetentionWorker worker(RetentionOptions{
      .directory = dir.path(),
      .policy = {.kind = journal::RetentionPolicy::Kind::kSegments, .value = 1},
      .journal_id = id,
      .interval_ms = 3'600'000,  // only the calls below
      .on_event = [&](std::string_view line) { events.emplace_back(line); }});
  worker.RunOnce();
  EXPECT_EQ(worker.failures(), 0u);
  EXPECT_EQ(worker.snapshots_damaged(), 1u);
  ASSERT_FALSE(events.empty());
  EXPECT_THAT(events.front(), HasSubstr(damaged));
  EXPECT_THAT(events.front(), HasSubstr("does not verify"));

  // It pruned (the window is one segment), but not past the valid one.
  absl::StatusOr<std::uint64_t> first =
      journal::FirstAvailableIndex(dir.path());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT(*first, 1u);
  EXPECT_LE(*first, 201u);
  EXPECT_TRUE(std::filesystem::exists(SnapshotDirectory(dir.path()) + "/" +
                                      SnapshotFileName(200)));

  // The restart's fallback works: the valid snapshot and every record after
  // it give the full replay's state.
  const StateMachineOptions machine = test_support::TradingMachineOptions();
  auto rebuilt =
      RebuildState({.directory = dir.path(),
                    .machine_options = machine,
                    .unpinned = {.engine = machine.engine,
                                 .max_sessions = machine.max_sessions}});
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_TRUE(rebuilt->snapshot.has_value());
  EXPECT_EQ(rebuilt->snapshot->index, 200u);
  EXPECT_EQ(EncodeSnapshot(*rebuilt->machine, id, 0), full);

  // Looked at again: the damaged file is not reported or counted again.
  const std::size_t lines = events.size();
  worker.RunOnce();
  EXPECT_EQ(worker.snapshots_damaged(), 1u);
  for (std::size_t i = lines; i < events.size(); ++i) {
    EXPECT_THAT(events[i], ::testing::Not(HasSubstr("does not verify")));
  }
  EXPECT_EQ(*journal::FirstAvailableIndex(dir.path()), *first);

  // A snapshot of another journal does not verify either.
  RetentionWorker foreign(RetentionOptions{
      .directory = dir.path(),
      .policy = {.kind = journal::RetentionPolicy::Kind::kSegments, .value = 1},
      .journal_id = id + 1,
      .interval_ms = 3'600'000,
      .on_event = [](std::string_view) {}});
  foreign.RunOnce();
  EXPECT_EQ(foreign.snapshots_damaged(), 2u);
  EXPECT_EQ(*journal::FirstAvailableIndex(dir.path()), *first);
}

}  // namespace
}  // namespace orderwire::service
