// Tests of the per-session report history used to send reports again.
#include "service/report_history.h"

#include <vector>

#include "gtest/gtest.h"

namespace orderwire::service {
namespace {

std::vector<std::byte> Frame(std::uint8_t fill, std::size_t size) {
  return std::vector<std::byte>(size, std::byte{fill});
}

TEST(ReportHistoryTest, KeepsTheLastReportsAndForgetsOlderOnes) {
  ReportHistory history(4, 4);
  for (std::uint64_t seq = 1; seq <= 6; ++seq) {
    const auto frame = Frame(static_cast<std::uint8_t>(seq), 17 + seq);
    history.Add(seq, frame);
  }
  EXPECT_TRUE(history.Get(1).empty());
  EXPECT_TRUE(history.Get(2).empty());
  for (std::uint64_t seq = 3; seq <= 6; ++seq) {
    const auto got = history.Get(seq);
    ASSERT_EQ(got.size(), 17 + seq);
    EXPECT_EQ(got[0], std::byte{static_cast<std::uint8_t>(seq)});
  }
  EXPECT_TRUE(history.Get(7).empty());
  EXPECT_EQ(history.next(), 7u);
}

TEST(ReportHistoryTest, FindsTheFirstReportOfRecentCommandsOnly) {
  ReportHistory history(16, 2);
  history.BeginCommand(1, 1);
  history.Add(1, Frame(1, 36));
  history.BeginCommand(2, 2);
  history.Add(2, Frame(2, 36));
  history.Add(3, Frame(3, 36));
  EXPECT_EQ(history.FirstReportOf(1), 1u);
  EXPECT_EQ(history.FirstReportOf(2), 2u);
  history.BeginCommand(3, 4);  // evicts command 1 from the 2-entry ring
  EXPECT_FALSE(history.FirstReportOf(1).has_value());
  EXPECT_FALSE(history.FirstReportOf(9).has_value());
}

TEST(ReportHistoryTest, ForgetsCommandsWhoseReportsAreGone) {
  ReportHistory history(2, 8);
  history.BeginCommand(1, 1);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) history.Add(seq, Frame(0, 25));
  EXPECT_FALSE(history.FirstReportOf(1).has_value());
}

}  // namespace
}  // namespace orderwire::service
