// ReportRegenerator (state/report_regenerator.h) on a journal written by
// a real service: the reports it makes are the bytes the session received
// live, from the right starting point; requests merge as documented; a job
// that cannot keep up with a full ring is cancelled cleanly; reports older
// than the retained journal are NotFound.
#include "state/report_regenerator.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "codec/messages.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/prune.h"
#include "service/service.h"
#include "state/pinned_config.h"
#include "state/rebuild.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::state {
namespace {

using service::ServiceOptions;

using test_support::Bytes;
using test_support::Frame;
using test_support::Hex;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::SnapshotThenPrune;
using test_support::TestClient;
using test_support::TestOptions;
using ::testing::HasSubstr;

constexpr std::uint32_t kSession = 9;
constexpr std::uint64_t kPerDatagram = 25;

codec::NewLimit Order(std::uint64_t i) {
  return codec::NewLimit{.account_id = 1,
                         .client_order_id = i,
                         .instrument_id = 1,
                         .side = codec::Side::kBuy,
                         .time_in_force = codec::TimeInForce::kGoodTillCancel,
                         .price = static_cast<std::int64_t>(100 + i % 1000),
                         .quantity = 1};
}

// A journal in which session 9 sent `orders` resting orders (one Accepted
// report each: report i answers command i); returns what it received.
std::vector<Bytes> WriteJournal(const ServiceOptions& options,
                                std::uint64_t orders) {
  std::vector<Bytes> received;
  auto service = RunningService::Start(options);
  if (service == nullptr) return received;
  TestClient client(service->endpoint());
  for (std::uint64_t first = 1; first <= orders; first += kPerDatagram) {
    std::vector<Bytes> frames;
    for (std::uint64_t i = first; i < first + kPerDatagram && i <= orders;
         ++i) {
      frames.push_back(Frame(i, Order(i)));
    }
    client.Send(kSession, frames);
    for (Bytes& report : client.Frames(kSession, frames.size(), 10'000)) {
      received.push_back(std::move(report));
    }
  }
  EXPECT_TRUE(service->Stop().ok());
  return received;
}

ReportRegeneratorOptions RegeneratorOptions(const ServiceOptions& options) {
  absl::StatusOr<std::uint64_t> id = JournalIdOf(options.journal.directory, {});
  EXPECT_TRUE(id.ok()) << id.status();
  return ReportRegeneratorOptions{
      .journal_dir = options.journal.directory,
      .journal_id = id.ok() ? *id : 0,
      .machine =
          StateMachineOptions{.engine = options.config.engine,
                              .max_sessions = options.config.max_sessions},
      .unpinned = PinnedConfigOf(options.config)};
}

// Takes every report of the active job until it ends; its end.
ReportRegenerator::Finished Drain(ReportRegenerator& regenerator,
                                  std::vector<Bytes>& reports,
                                  std::vector<std::uint64_t>& sequences) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    regenerator.Take(
        [&](std::uint64_t sequence, std::span<const std::byte> frame) {
          sequences.push_back(sequence);
          reports.emplace_back(frame.begin(), frame.end());
          return true;
        },
        100);
    if (std::optional<ReportRegenerator::Finished> done =
            regenerator.TakeFinished(0)) {
      return *done;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ADD_FAILURE() << "the job did not end";
  return {};
}

TEST(ReportRegenerator, MakesTheReportsTheSessionReceivedFromItsCommand) {
  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  const std::vector<Bytes> live = WriteJournal(options, 500);
  ASSERT_EQ(live.size(), 500u);

  ReportRegenerator regenerator(RegeneratorOptions(options));
  EXPECT_FALSE(regenerator.active());
  ASSERT_EQ(
      regenerator.Request(
          {.session_id = kSession, .from_command = 200, .up_to_index = 500}, 0),
      ReportRegenerator::Queued::kQueued);
  std::vector<Bytes> reports;
  std::vector<std::uint64_t> sequences;
  const ReportRegenerator::Finished done =
      Drain(regenerator, reports, sequences);
  ASSERT_TRUE(done.status.ok()) << done.status;
  EXPECT_FALSE(done.cancelled);
  EXPECT_EQ(done.session_id, kSession);
  EXPECT_EQ(done.next_report, 501u);
  ASSERT_EQ(reports.size(), 301u);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(sequences[i], 200 + i);
    EXPECT_EQ(Hex(reports[i]), Hex(live[199 + i])) << "report " << 200 + i;
  }
  EXPECT_EQ(regenerator.counters().records_applied, 500u);
  EXPECT_EQ(regenerator.counters().reports_made, 301u);

  // Up to an earlier index only; from a report sequence.
  ASSERT_EQ(
      regenerator.Request(
          {.session_id = kSession, .from_report = 450, .up_to_index = 460}, 0),
      ReportRegenerator::Queued::kQueued);
  reports.clear();
  sequences.clear();
  const ReportRegenerator::Finished second =
      Drain(regenerator, reports, sequences);
  ASSERT_TRUE(second.status.ok()) << second.status;
  ASSERT_EQ(sequences.size(), 11u);
  EXPECT_EQ(sequences.front(), 450u);
  EXPECT_EQ(second.next_report, 461u);
}

TEST(ReportRegenerator, RequestsMergeAndTheQueueIsBounded) {
  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  // More reports than the ring holds: the job waits for them to be taken.
  const std::uint64_t orders = ReportRegenerator::kRingSlots + 500;
  ASSERT_EQ(WriteJournal(options, orders).size(), orders);
  ReportRegenerator regenerator(RegeneratorOptions(options));
  const RegenerationRequest first{
      .session_id = kSession, .from_command = 10, .up_to_index = orders};
  ASSERT_EQ(regenerator.Request(first, 0), ReportRegenerator::Queued::kQueued);
  // The job runs (its ring fills): a later command of it is covered...
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!regenerator.active() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(regenerator.active());
  ASSERT_EQ(regenerator.active_session(), kSession);
  RegenerationRequest later = first;
  later.from_command = 20;
  EXPECT_EQ(regenerator.Request(later, 0), ReportRegenerator::Queued::kMerged);
  // ... an earlier one waits, once.
  RegenerationRequest earlier = first;
  earlier.from_command = 5;
  EXPECT_EQ(regenerator.Request(earlier, 0),
            ReportRegenerator::Queued::kQueued);
  earlier.from_command = 3;
  EXPECT_EQ(regenerator.Request(earlier, 0),
            ReportRegenerator::Queued::kMerged);
  // Other sessions wait up to kMaxQueued in all.
  for (std::uint32_t s = 1; s < ReportRegenerator::kMaxQueued; ++s) {
    EXPECT_EQ(
        regenerator.Request(
            {.session_id = 1000 + s, .from_command = 1, .up_to_index = orders},
            0),
        ReportRegenerator::Queued::kQueued);
  }
  EXPECT_EQ(regenerator.queued(), ReportRegenerator::kMaxQueued);
  EXPECT_EQ(
      regenerator.Request(
          {.session_id = 5000, .from_command = 1, .up_to_index = orders}, 0),
      ReportRegenerator::Queued::kFull);

  // Cancelled with its ring full: it ends, its reports dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  regenerator.Cancel();
  std::optional<ReportRegenerator::Finished> done;
  while (!done.has_value() && std::chrono::steady_clock::now() < deadline) {
    EXPECT_EQ(regenerator.Take([](std::uint64_t,
                                  std::span<const std::byte>) { return true; },
                               100),
              0u);
    done = regenerator.TakeFinished(1'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->cancelled);
  EXPECT_LT(done->next_report, orders);  // it stopped at the full ring
  // Within kRepeatNs of a job's end, a request it covers is merged.
  EXPECT_EQ(
      regenerator.Request(later, 1'000 + ReportRegenerator::kRepeatNs / 2),
      ReportRegenerator::Queued::kMerged);
}

TEST(ReportRegenerator, ReportsOlderThanTheRetainedJournalAreNotFound) {
  ScratchDir dir;
  const std::string journal_dir = dir.Sub("journal");
  ServiceOptions options = TestOptions(journal_dir, journal::Durability::kNone);
  options.journal.segment_size = journal::kMinSegmentCapacity;
  constexpr std::uint64_t kOrders = 3000;
  ASSERT_EQ(WriteJournal(options, kOrders).size(), kOrders);
  journal::PruneReport pruned;
  ASSERT_NO_FATAL_FAILURE(SnapshotThenPrune(options, kOrders, &pruned));
  ASSERT_GT(pruned.first_index_after, 2u);

  ReportRegenerator regenerator(RegeneratorOptions(options));
  std::vector<Bytes> reports;
  std::vector<std::uint64_t> sequences;
  // Before the journal's first index, and every snapshot after it.
  ASSERT_EQ(
      regenerator.Request(
          {.session_id = kSession, .from_command = 1, .up_to_index = kOrders},
          0),
      ReportRegenerator::Queued::kQueued);
  const ReportRegenerator::Finished gone =
      Drain(regenerator, reports, sequences);
  EXPECT_TRUE(absl::IsNotFound(gone.status)) << gone.status;
  EXPECT_THAT(gone.status.message(), HasSubstr("older than the retained"));
  EXPECT_TRUE(reports.empty());
}

}  // namespace
}  // namespace orderwire::state
