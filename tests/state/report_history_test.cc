// Tests of the per-session report history used to send reports again: lazy
// allocation, growth by powers of two, the per-session cap, the shared
// budget, release, and finding a command's first report by the command each
// report follows.
#include "state/report_history.h"

#include <vector>

#include "gtest/gtest.h"

namespace orderwire::state {
namespace {

constexpr std::size_t kSlot = ReportHistory::kSlotSize;

std::vector<std::byte> Frame(std::uint8_t fill, std::size_t size) {
  return std::vector<std::byte>(size, std::byte{fill});
}

// Adds reports first..last, each following `command`.
void AddReports(ReportHistory& history, HistoryBudget& budget,
                std::uint64_t first, std::uint64_t last, std::uint64_t command,
                std::size_t max_reports = 1 << 14) {
  for (std::uint64_t seq = first; seq <= last; ++seq) {
    const auto frame = Frame(static_cast<std::uint8_t>(seq), 17 + seq % 50);
    history.Add(seq, command, frame, max_reports, budget);
  }
}

TEST(ReportHistoryTest, HoldsNothingUntilItsFirstReport) {
  HistoryBudget budget(1 << 20);
  ReportHistory history;
  EXPECT_EQ(history.bytes(), 0u);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_TRUE(history.Get(1).empty());
  EXPECT_FALSE(history.FirstReportOf(1).has_value());
  AddReports(history, budget, 1, 1, 1);
  EXPECT_EQ(history.capacity(), ReportHistory::kFirstCapacity);
  EXPECT_EQ(budget.used(), ReportHistory::kFirstCapacity * kSlot);
}

TEST(ReportHistoryTest, GrowsByPowersOfTwoWithWhatItHolds) {
  HistoryBudget budget(1 << 20);
  ReportHistory history;
  const std::size_t expected_capacity[] = {2, 2, 4, 4, 8, 8, 8, 8, 16};
  for (std::uint64_t seq = 1; seq <= 9; ++seq) {
    AddReports(history, budget, seq, seq, seq);
    EXPECT_EQ(history.capacity(), expected_capacity[seq - 1]) << seq;
    EXPECT_EQ(budget.used(), history.bytes());
  }
  // Every report is still held, with its bytes, after each move.
  for (std::uint64_t seq = 1; seq <= 9; ++seq) {
    const auto got = history.Get(seq);
    ASSERT_EQ(got.size(), 17 + seq % 50);
    EXPECT_EQ(got[0], std::byte{static_cast<std::uint8_t>(seq)});
  }
}

TEST(ReportHistoryTest, StopsAtThePerSessionCapAndForgetsTheOldest) {
  HistoryBudget budget(1 << 20);
  ReportHistory history;
  AddReports(history, budget, 1, 6, 1, /*max_reports=*/4);
  EXPECT_EQ(history.capacity(), 4u);
  EXPECT_TRUE(history.Get(1).empty());
  EXPECT_TRUE(history.Get(2).empty());
  for (std::uint64_t seq = 3; seq <= 6; ++seq) {
    const auto got = history.Get(seq);
    ASSERT_EQ(got.size(), 17 + seq % 50);
    EXPECT_EQ(got[0], std::byte{static_cast<std::uint8_t>(seq)});
  }
  EXPECT_TRUE(history.Get(7).empty());
}

TEST(ReportHistoryTest, AllHistoriesTogetherStayWithinTheBudget) {
  HistoryBudget budget(12 * kSlot);
  ReportHistory a;
  ReportHistory b;
  AddReports(a, budget, 1, 8, 1);  // 2, 4, 8 slots
  EXPECT_EQ(a.capacity(), 8u);
  AddReports(b, budget, 1, 100, 1);  // 2, 4; 8 would pass the budget
  EXPECT_EQ(b.capacity(), 4u);
  EXPECT_EQ(budget.used(), 12 * kSlot);
  EXPECT_EQ(b.held(), 4u);  // its newest four
  EXPECT_FALSE(b.Get(100).empty());
  EXPECT_TRUE(b.Get(96).empty());
  // A third history gets nothing at all, and keeps nothing.
  ReportHistory c;
  AddReports(c, budget, 1, 3, 1);
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_TRUE(c.Get(3).empty());
  EXPECT_FALSE(c.FirstReportOf(1).has_value());
  EXPECT_FALSE(c.OldestCommandStart().has_value());
  // Released bytes can be used again.
  a.Release(budget);
  EXPECT_EQ(budget.used(), 4 * kSlot);
  AddReports(c, budget, 4, 4, 2);
  EXPECT_EQ(c.capacity(), 2u);
  EXPECT_EQ(c.FirstReportOf(2), 4u);
}

TEST(ReportHistoryTest, FindsTheFirstReportOfEachCommandStillWhole) {
  HistoryBudget budget(1 << 20);
  ReportHistory history;
  // Command 1: reports 1-2; command 2: report 3; command 4: reports 4-6
  // (command 3 made no report of this session's).
  AddReports(history, budget, 1, 2, 1, /*max_reports=*/4);
  AddReports(history, budget, 3, 3, 2, 4);
  EXPECT_EQ(history.FirstReportOf(1), 1u);
  EXPECT_EQ(history.FirstReportOf(2), 3u);
  EXPECT_FALSE(history.FirstReportOf(5).has_value());  // no report yet
  AddReports(history, budget, 4, 6, 4, 4);             // evicts reports 1, 2
  EXPECT_FALSE(history.FirstReportOf(1).has_value());
  EXPECT_EQ(history.FirstReportOf(2), 3u);
  EXPECT_EQ(history.FirstReportOf(3), 4u);  // the reports after it
  EXPECT_EQ(history.FirstReportOf(4), 4u);
  const auto start = history.OldestCommandStart();
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->command, 2u);
  EXPECT_EQ(start->report, 3u);
  AddReports(history, budget, 7, 7, 4, 4);  // evicts report 3 of command 2
  EXPECT_FALSE(history.FirstReportOf(2).has_value());
  EXPECT_EQ(history.OldestCommandStart()->command, 4u);
  AddReports(history, budget, 8, 8, 4, 4);  // evicts report 4: command 4 cut
  EXPECT_FALSE(history.FirstReportOf(4).has_value());
  EXPECT_FALSE(history.OldestCommandStart().has_value());
}

TEST(ReportHistoryTest, ReleaseGivesTheBytesBackAndForgetsEveryCommand) {
  HistoryBudget budget(1 << 20);
  ReportHistory history;
  AddReports(history, budget, 1, 5, 3);
  ASSERT_EQ(history.FirstReportOf(3), 1u);
  history.Release(budget);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(history.bytes(), 0u);
  EXPECT_TRUE(history.Get(5).empty());
  EXPECT_FALSE(history.FirstReportOf(3).has_value());
  EXPECT_FALSE(history.OldestCommandStart().has_value());
  // It starts again small, from the next report.
  AddReports(history, budget, 6, 6, 4);
  EXPECT_EQ(history.capacity(), ReportHistory::kFirstCapacity);
  EXPECT_FALSE(history.FirstReportOf(3).has_value());
  EXPECT_EQ(history.FirstReportOf(4), 6u);
}

}  // namespace
}  // namespace orderwire::state
