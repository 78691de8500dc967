// The progress display (cli/progress.h): its line, its rate limit, its
// clearing, and silence when disabled (not a terminal), with a fake clock.
#include "cli/progress.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::cli {
namespace {

using ::testing::HasSubstr;

TEST(FormatProgressTest, RecordsRatePercentAndEta) {
  EXPECT_EQ(FormatProgress("replay", 1'234'567, 2.0, 25, 100),
            "replay: 1,234,567 records, 617.3k records/s, 25%, ETA 0:06");
  EXPECT_EQ(FormatProgress("replay", 50'000'000, 5.0, 1, 1000),
            "replay: 50,000,000 records, 10.00M records/s, 0%, ETA 1:23:15");
  // Unknown total: no percentage, no ETA.
  EXPECT_EQ(FormatProgress("journal write", 999, 1.0, 999, 0),
            "journal write: 999 records, 999 records/s");
  // Nothing done yet: no rate, no ETA.
  EXPECT_EQ(FormatProgress("journal prune", 0, 0.0, 0, 4),
            "journal prune: 0 records, 0%");
  // Done beyond the total (a journal that grew): capped at 100%.
  EXPECT_EQ(FormatProgress("replay", 10, 1.0, 120, 100),
            "replay: 10 records, 10 records/s, 100%, ETA 0:00");
}

struct Captured {
  std::FILE* file = std::tmpfile();
  ~Captured() { std::fclose(file); }
  [[nodiscard]] std::string Text() const {
    std::fflush(file);
    std::rewind(file);
    std::string out;
    char buffer[256];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
      out.append(buffer, n);
    }
    return out;
  }
};

TEST(ProgressTest, RefreshesAtMostEvery200MsAndClearsTheLine) {
  Captured out;
  std::int64_t now = 1'000'000'000;
  {
    Progress progress(
        "replay", 100,
        ProgressOptions{
            .enabled = true, .now_ns = [&] { return now; }, .out = out.file});
    progress.Update(10, 10);  // at the start: too early
    EXPECT_EQ(progress.refreshes(), 0);
    now += 100'000'000;
    progress.Update(20, 20);  // 100 ms: too early
    EXPECT_EQ(progress.refreshes(), 0);
    now += 100'000'000;
    progress.Update(30, 30);  // 200 ms: drawn
    EXPECT_EQ(progress.refreshes(), 1);
    now += 199'999'999;
    progress.Update(40, 40);
    EXPECT_EQ(progress.refreshes(), 1);
    now += 1;
    progress.Update(50, 50);
    EXPECT_EQ(progress.refreshes(), 2);
    progress.Finish();
  }
  const std::string text = out.Text();
  EXPECT_THAT(text, HasSubstr("\rreplay: 30 records, 150 records/s, 30%"));
  EXPECT_THAT(text, HasSubstr("\rreplay: 50 records, 125 records/s, 50%"));
  // Cleared at the end (once: Finish and the destructor).
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");
  EXPECT_EQ(text.find("\r\033[K", text.rfind("50%")), text.size() - 4);
}

TEST(ProgressTest, DisabledWritesNothingAtAll) {
  Captured out;
  std::int64_t now = 0;
  {
    Progress progress(
        "replay", 100,
        ProgressOptions{
            .enabled = false, .now_ns = [&] { return now; }, .out = out.file});
    for (int i = 0; i < 100; ++i) {
      now += 1'000'000'000;
      progress.Update(static_cast<std::uint64_t>(i), 1);
    }
    EXPECT_EQ(progress.refreshes(), 0);
  }
  EXPECT_EQ(out.Text(), "");
}

TEST(ProgressIntervalTest, TheEnvironmentSetsItAndABadValueIsSaid) {
  Captured warnings;
  EXPECT_EQ(ProgressIntervalNs(nullptr, warnings.file), 200'000'000);
  EXPECT_EQ(ProgressIntervalNs("", warnings.file), 200'000'000);
  EXPECT_EQ(ProgressIntervalNs("0", warnings.file), 0);
  EXPECT_EQ(ProgressIntervalNs("50", warnings.file), 50'000'000);
  EXPECT_EQ(warnings.Text(), "");
  EXPECT_EQ(ProgressIntervalNs("-1", warnings.file), 200'000'000);
  EXPECT_EQ(ProgressIntervalNs("fast", warnings.file), 200'000'000);
  EXPECT_THAT(warnings.Text(),
              HasSubstr("ORDERWIRE_PROGRESS_INTERVAL_MS=\"-1\" is not a "
                        "whole number of milliseconds"));
  EXPECT_THAT(warnings.Text(), HasSubstr("\"fast\""));
}

// Interval 0: the first update draws, however soon it comes.
TEST(ProgressTest, IntervalZeroDrawsAtTheFirstUpdate) {
  Captured out;
  {
    Progress progress("journal write", 10,
                      ProgressOptions{.enabled = true,
                                      .now_ns = [] { return 5; },
                                      .out = out.file,
                                      .interval_ns = 0});
    progress.Update(0, 0);
    EXPECT_EQ(progress.refreshes(), 1);
  }
  EXPECT_EQ(out.Text(), "\rjournal write: 0 records, 0%\033[K\r\033[K");
}

}  // namespace
}  // namespace orderwire::cli
