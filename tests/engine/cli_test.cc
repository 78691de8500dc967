// `orderwire match` and `orderwire gen` as a user runs them: the real binary,
// bytes on standard input, bytes and exit status out.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codec/command.h"
#include "codec/frame.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/scenario.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire::engine::testing {
namespace {

using ::testing::HasSubstr;

using Outcome = ::orderwire::test_support::ShellOutcome;

// Runs `orderwire <args>` with `input` on standard input, in a scratch
// directory of its own (CTest runs tests in parallel processes).
Outcome Orderwire(const std::string& args, std::string_view input = {}) {
  const ::orderwire::test_support::ScratchDir dir("ow-engine-cli");
  return ::orderwire::test_support::RunShell(
      dir.path(), std::string("'") + ORDERWIRE_BINARY + "' " + args, input);
}

std::string Frames(const std::vector<codec::Command>& commands) {
  const std::vector<std::byte> bytes = workload::EncodeCommands(commands);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

codec::Command Numbered(codec::Command c, std::uint64_t sequence) {
  c.sequence = sequence;
  return c;
}

TEST(MatchCli, WritesTheReportFramesNumberedOneTwoThree) {
  const std::string input =
      Frames({Numbered(Limit(7, 1001, 42, kBuy, kGtc, 10050, 300), 1),
              Numbered(Market(9, 77, 42, kSell, 250), 2),
              Numbered(CancelClient(7, 1001), 3)});
  const Outcome run = Orderwire("match", input);
  ASSERT_EQ(run.status, 0) << run.err;
  std::vector<std::string> lines;
  std::span<const std::byte> bytes(
      reinterpret_cast<const std::byte*>(run.out.data()), run.out.size());
  std::uint64_t expected = 1;
  while (!bytes.empty()) {
    const auto frame = codec::FrameView::Parse(bytes);
    ASSERT_TRUE(frame.ok());
    EXPECT_EQ(frame->sequence(), expected++);
    lines.push_back(Render(frame->bytes()));
    bytes = bytes.subspan(frame->size());
  }
  EXPECT_THAT(
      lines,
      ::testing::ElementsAre(
          "Accepted #1 acct=7 coid=1001 inst=42 Buy GTC px=10050 qty=300",
          "Accepted #2 acct=9 coid=77 inst=42 Sell IOC px=0 qty=250",
          "Filled #1 acct=7 coid=1001 match=1 inst=42 Buy Maker px=10050 "
          "qty=250 leaves=50",
          "Filled #2 acct=9 coid=77 match=1 inst=42 Sell Taker px=10050 "
          "qty=250 leaves=0",
          "Cancelled #1 acct=7 coid=1001 inst=42 qty=50 Requested"));
}

TEST(MatchCli, JsonWritesOneDecodeFormLinePerReport) {
  const std::string input =
      Frames({Numbered(Limit(7, 1001, 42, kBuy, kGtc, 10050, 300), 1)});
  const Outcome run = Orderwire("match --json", input);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "{\"kind\":\"Accepted\",\"sequence\":1,\"order_id\":1,"
            "\"account_id\":7,\"client_order_id\":1001,\"instrument_id\":42,"
            "\"side\":1,\"time_in_force\":1,\"price\":10050,\"quantity\":300}"
            "\n");
}

TEST(MatchCli, ASequenceOutOfOrderIsAnErrorNamingTheByteOffset) {
  const std::string input =
      Frames({Numbered(Limit(7, 1, 1, kBuy, kGtc, 100, 1), 1),
              Numbered(Limit(7, 2, 1, kBuy, kGtc, 100, 1), 3)});
  const Outcome run = Orderwire("match", input);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("byte offset 47: frame sequence 3 where 2 "
                                 "was expected"));
  EXPECT_TRUE(run.out.empty()) << "nothing is written for a bad stream";
}

TEST(MatchCli, ASessionMustStartAtSequenceOne) {
  const Outcome run = Orderwire(
      "match", Frames({Numbered(Limit(7, 1, 1, kBuy, kGtc, 100, 1), 0)}));
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("byte offset 0: frame sequence 0 where 1 "
                                 "was expected"));
  const Outcome repeated = Orderwire(
      "match",
      Frames({Numbered(CancelOrder(7, 1), 1), Numbered(CancelOrder(7, 1), 1)}));
  EXPECT_EQ(repeated.status, 1);
  EXPECT_THAT(repeated.err, HasSubstr("byte offset 25: frame sequence 1"));
}

TEST(MatchCli, TruncatedOrNonCommandFramesAreErrorsNamingTheByteOffset) {
  std::string input =
      Frames({Numbered(CancelOrder(7, 1), 1), Numbered(CancelOrder(7, 2), 2)});
  input.pop_back();
  Outcome run = Orderwire("match", input);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("byte offset 25: truncated"));

  std::byte report[codec::kMaxFrameSize];
  const auto size =
      codec::EncodeFrame(2, codec::SequenceGap{.expected_sequence = 5}, report);
  input = Frames({Numbered(CancelOrder(7, 1), 1)}) +
          std::string(reinterpret_cast<const char*>(report), *size);
  run = Orderwire("match", input);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("byte offset 25: a report kind"));
}

TEST(MatchCli, BookPrintsADepthTableOfEveryNonEmptyBook) {
  const std::string input =
      Frames({Numbered(Limit(1, 1, 3, kBuy, kGtc, 100, 10), 1),
              Numbered(Limit(2, 1, 3, kBuy, kGtc, 100, 5), 2),
              Numbered(Limit(3, 1, 3, kSell, kGtc, 104, 7), 3),
              Numbered(Limit(3, 2, 9, kSell, kGtc, 50, 1), 4)});
  const Outcome run = Orderwire("match --book 5", input);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("instrument 3: 1 bid level, 1 ask level"));
  EXPECT_THAT(run.err, HasSubstr("instrument 9: 0 bid levels, 1 ask level"));
  EXPECT_THAT(run.err, ::testing::ContainsRegex("2 +15 +100 \\| 104 +7 +1"));
}

TEST(MatchCli, ConfigFileSetsTheLimitsAndItsErrorsNameLineAndKey) {
  const ::orderwire::test_support::ScratchDir dir("ow-engine-cli");
  const std::string good = dir.Sub("good.toml");
  const std::string bad = dir.Sub("bad.toml");
  const std::string old = dir.Sub("old.conf");
  ::orderwire::test_support::WriteText(
      good, "# tiny\n[engine]\nmax_live_orders = 1\n");
  ::orderwire::test_support::WriteText(
      bad, "[engine]\nmax_price = 10\nmax_qty = 5\n");
  ::orderwire::test_support::WriteText(old, "max_live_orders = 1\n");
  const std::string input =
      Frames({Numbered(Limit(1, 1, 1, kBuy, kGtc, 100, 10), 1),
              Numbered(Limit(1, 2, 1, kBuy, kGtc, 99, 10), 2)});
  Outcome run = Orderwire("match --json --config '" + good + "'", input);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("\"reason\":10"));  // BookFull
  run = Orderwire("match --config '" + bad + "'", input);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("config " + bad +
                                 ":3:1: unknown key 'max_qty' in [engine]"));
  // An old key = value file: the way to convert it, and the conversion.
  run = Orderwire("match --config '" + old + "'", input);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("config " + old +
                                 ":1:1: 'max_live_orders' "
                                 "outside any table"));
  EXPECT_THAT(run.err, HasSubstr("orderwire config convert " + old));
  run = Orderwire("config convert '" + old + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("[engine]\nmax_live_orders = 1\n"));
  ::orderwire::test_support::WriteText(good, run.out);
  run = Orderwire("match --json --config '" + good + "'", input);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("\"reason\":10"));  // BookFull
  // convert's errors: the old reader's (exit 1); no file given (exit 2).
  run = Orderwire("config convert '" + bad + "'");
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("config " + bad + ": line 1"));
  EXPECT_EQ(Orderwire("config convert").status, 2);
  EXPECT_EQ(Orderwire("config").status, 2);
  run = Orderwire("match --config /nonexistent/ow.conf", input);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("cannot open"));
}

TEST(GenCli, WritesTheWorkloadsFramesDeterministically) {
  const Outcome a = Orderwire("gen --workload wl1 --count 1000 --seed 1");
  const Outcome b = Orderwire("gen --workload wl1 --count 1000 --seed 1");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out,
            Frames(workload::Generate(workload::Workload::kWl1, 1000, 1)));
  const Outcome mixed = Orderwire("gen --workload mixed --count 1000 --seed 2");
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  EXPECT_EQ(mixed.out,
            Frames(workload::Generate(workload::Workload::kMixed, 1000, 2)));
  const Outcome unknown = Orderwire("gen --workload nope");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown workload 'nope'"));
}

TEST(GenCli, WritesTheBookShapesAndMatchRejectsNoneOfThem) {
  for (const char* name : {"deep", "swings", "crash", "churn"}) {
    const Outcome gen = Orderwire(std::string("gen --workload ") + name +
                                  " --count 5000 --seed 3");
    ASSERT_EQ(gen.status, 0) << gen.err;
    EXPECT_EQ(gen.out, Frames(workload::Generate(*workload::ParseWorkload(name),
                                                 5000, 3)))
        << name;
    const Outcome match = Orderwire("match --stats", gen.out);
    ASSERT_EQ(match.status, 0) << match.err;
    EXPECT_THAT(match.err, HasSubstr("match: 5000 commands"));
    EXPECT_THAT(match.err, HasSubstr("Rejected 0,")) << name;
  }
  const Outcome help = Orderwire("gen --help");
  EXPECT_THAT(help.out + help.err, HasSubstr("churn"));
}

TEST(GenCli, PipesIntoMatchForBothWorkloads) {
  for (const char* name : {"mixed", "wl1"}) {
    const Outcome gen =
        Orderwire(std::string("gen --workload ") + name + " --count 20000");
    ASSERT_EQ(gen.status, 0) << gen.err;
    const Outcome match = Orderwire("match --stats", gen.out);
    ASSERT_EQ(match.status, 0) << match.err;
    EXPECT_THAT(match.err, HasSubstr("match: 20000 commands"));
    EXPECT_THAT(match.err, HasSubstr("ns/command"));
    // Same bytes as the engine run in-process.
    Engine engine{EngineConfig{}};
    ReportBuffer reports;
    for (const codec::Command& c :
         workload::Generate(*workload::ParseWorkload(name), 20'000, 1)) {
      (void)engine.Execute(c, reports);
    }
    EXPECT_EQ(
        match.out,
        std::string(reinterpret_cast<const char*>(reports.frames().data()),
                    reports.frames().size()))
        << name;
  }
}

}  // namespace
}  // namespace orderwire::engine::testing
