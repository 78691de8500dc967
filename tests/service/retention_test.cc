// `serve --retain` end to end (service/retention.h): with small segments
// and a snapshot file in <journal>/snapshots, the service prunes its
// journal on a helper thread, keeps answering meanwhile, never prunes
// without a snapshot or past the newest one, and leaves a journal that
// reads from its new start. A pruned journal cannot be restarted by
// replaying it alone (--no-snapshot): Start() says so, naming the first
// index. (A damaged newest snapshot: retention_worker_test.cc.)
#include "journal/retention.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/prune.h"
#include "journal/reader.h"
#include "journal/start.h"
#include "service/service.h"
#include "state/rebuild.h"
#include "state/snapshot.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using state::RebuildState;
using state::RebuiltState;
using state::SnapshotInfo;
using state::WriteSnapshot;

using test_support::RunningService;
using test_support::ScratchDir;
using test_support::SendRestingBuys;
using test_support::TestClient;
using test_support::TestOptions;
using ::testing::HasSubstr;

std::size_t SegmentCount(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (journal::ParseSegmentFileName(entry.path().filename().string())) ++n;
  }
  return n;
}

// Writes a real snapshot of the journal's state at `index` (rebuilt from the
// newest snapshot and the journal, which the service goes on appending to),
// as `serve --snapshot-every` would: retention relies only on snapshots
// that verify.
void SnapshotAt(const std::string& journal_dir, std::uint64_t index) {
  absl::StatusOr<RebuiltState> rebuilt =
      RebuildState({.directory = journal_dir, .up_to_index = index});
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_EQ(rebuilt->machine->last_index(), index);
  absl::StatusOr<SnapshotInfo> written =
      WriteSnapshot(*rebuilt->machine, rebuilt->journal_id, journal_dir);
  ASSERT_TRUE(written.ok()) << written.status();
}

bool WaitUntil(const std::function<bool()>& done, int timeout_ms) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST(ServiceRetention, PrunesBehindTheNewestSnapshotAndKeepsAnswering) {
  ScratchDir dir;
  const std::string journal_dir = dir.Sub("journal");
  ServiceOptions options =
      TestOptions(journal_dir, journal::Durability::kBatch);
  options.journal.segment_size = std::uint64_t{64} * 1024;
  options.retain = *journal::ParseRetention("2");
  // Format 1 (a 4 KiB block per group): a few commands fill a segment.
  options.journal.format_version = 1;
  std::mutex mu;
  std::vector<std::string> events;
  options.on_retention = [&](std::string_view line) {
    const std::lock_guard<std::mutex> lock(mu);
    events.emplace_back(line);
  };
  auto service = RunningService::Start(std::move(options));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  std::uint64_t sequence = 1;

  // Several segments, no snapshot: nothing is pruned.
  SendRestingBuys(client, sequence, 80, /*price=*/100, /*price_step=*/0);
  const std::size_t grown = SegmentCount(journal_dir);
  ASSERT_GE(grown, 4u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(SegmentCount(journal_dir), grown);
  EXPECT_FALSE(std::filesystem::exists(journal_dir + "/START"));

  // A snapshot at index 300: everything before the segment holding 301 may
  // go, and nothing after.
  SnapshotAt(journal_dir, 300);
  ASSERT_TRUE(WaitUntil(
      [&] { return std::filesystem::exists(journal_dir + "/START"); }, 5000));
  absl::StatusOr<std::uint64_t> first =
      journal::FirstAvailableIndex(journal_dir);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT(*first, 1u);
  EXPECT_LE(*first, 301u);  // the snapshot's successor is kept

  // The service kept answering, and keeps answering; with a newer snapshot
  // the journal stays bounded by the window.
  SendRestingBuys(client, sequence, 80, /*price=*/100, /*price_step=*/0);
  SnapshotAt(journal_dir, sequence - 1);
  ASSERT_TRUE(WaitUntil([&] { return SegmentCount(journal_dir) <= 3; }, 5000))
      << SegmentCount(journal_dir) << " segments";
  SendRestingBuys(client, sequence, 5, /*price=*/100, /*price_step=*/0);
  ASSERT_TRUE(service->Stop().ok());
  {
    const std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(events.empty());
    EXPECT_THAT(events.front(), HasSubstr("pruned"));
  }
  // The old snapshot went with the records after it.
  EXPECT_FALSE(std::filesystem::exists(journal_dir + "/snapshots/" +
                                       journal::SnapshotFileName(300)));

  // What is left reads whole, from the new start to the last command.
  auto reader = journal::JournalReader::Open(journal_dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  journal::Record record;
  std::uint64_t count = 0;
  while ((*reader)->Next(record) == journal::ReadResult::kRecord) ++count;
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_EQ((*reader)->last_index(), sequence - 1);
  EXPECT_EQ(count, sequence - (*reader)->first_index());
  EXPECT_GT((*reader)->first_index(), 301u);

  // A restart cannot rebuild the state from the tail alone (--no-snapshot):
  // refused, naming the first index.
  ServiceOptions no_snapshot =
      TestOptions(journal_dir, journal::Durability::kBatch);
  no_snapshot.restart_from_snapshot = false;
  absl::StatusOr<std::unique_ptr<Service>> restarted =
      Service::Start(std::move(no_snapshot));
  ASSERT_FALSE(restarted.ok());
  EXPECT_EQ(restarted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(restarted.status().message()),
              HasSubstr("were pruned"));
  EXPECT_THAT(std::string(restarted.status().message()), HasSubstr("snapshot"));
}

}  // namespace
}  // namespace orderwire::service
