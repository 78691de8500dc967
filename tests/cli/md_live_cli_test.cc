// `orderwire md record`, `md watch` and `md print` against a live `orderwire
// serve` (child processes, loopback UDP), one run shared by the suite: a
// client trades 2000 mixed commands; recorders that follow the feed from
// its start (--from-start: retransmission, no snapshot), one of them
// started after the trading, write exactly the JSON Lines `md from-journal`
// makes of the journal afterwards, in both forms (--json, and the binary
// file `md print` shows); --count stops a recorder by itself; EndOfSession
// stops the others; `md watch` off a terminal prints its documented lines
// and stops on SIGTERM with exit status 0; without --from-start it joins by
// snapshot and ends with the journal's books (--book, as `replay --book`);
// `md print` refuses a file cut short or not one; usage errors exit 2.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_processes.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire::cli::md_live_cli_test {
namespace {

using cli_processes::ExitedZero;
using cli_processes::ExitWithin;
using cli_processes::FreeUdpPorts;
using cli_processes::LogShows;
using cli_processes::Loopback;
using cli_processes::Orderwire;
using cli_processes::Spawn;
using test_support::ChildProcess;
using test_support::ReadText;
using test_support::ScratchDir;
using ::testing::HasSubstr;
using ::testing::Not;

std::size_t LineCount(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The first `n` lines of `text`.
std::string FirstLines(const std::string& text, std::size_t n) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < n && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  return text.substr(0, at);
}

// `md watch` off a terminal: every stdout line in its documented form.
void ExpectWatchLines(const std::string& log) {
  const std::regex bbo(
      R"(bbo seq=\d+ instrument=\d+ bid=(-|\d+@-?\d+) ask=(-|\d+@-?\d+))");
  const std::regex trade(
      R"(trade seq=\d+ instrument=\d+ price=-?\d+ quantity=\d+ )"
      R"(maker=(buy|sell) match=\d+)");
  const std::regex other(
      R"(snapshot seq=\d+|state from=\w+ to=\w+|end seq=\d+)");
  std::istringstream lines(log);
  std::string line;
  std::size_t bbos = 0;
  std::size_t trades = 0;
  while (std::getline(lines, line)) {
    if (line.starts_with("orderwire md watch:") ||
        line.starts_with("md watch:")) {
      continue;  // standard error: the start line and the counters
    }
    if (std::regex_match(line, bbo)) {
      ++bbos;
    } else if (std::regex_match(line, trade)) {
      ++trades;
    } else {
      EXPECT_TRUE(std::regex_match(line, other)) << "line: " << line;
    }
  }
  EXPECT_GT(bbos, 0u);
  EXPECT_GT(trades, 0u);
}

// The depth-table lines of `text` (cli/book_text.h: `replay --book` and `md
// watch --book` print the same), in order.
std::string BookLines(const std::string& text) {
  const std::regex table(R"((instrument \d+:|  |every book is empty).*)");
  std::istringstream lines(text);
  std::string line;
  std::string out;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, table)) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

// One live run shared by the tests below: `serve` publishing to six unicast
// targets, each followed by one `md` process, a client trading 2000 mixed
// commands, a recorder started after the trading, then a clean stop. Each
// step's outcome is kept; the tests check one process each.
class MdLiveRun : public ::testing::Test {
 protected:
  struct Run {
    ScratchDir dir;
    std::vector<int> ports;
    std::string request;
    std::unique_ptr<ChildProcess> serve, json, binary, counted, watch, joining,
        late;
    std::optional<int> counted_exit;
    absl::StatusOr<int> watched = absl::UnknownError("not stopped");
    absl::StatusOr<int> joined = absl::UnknownError("not stopped");
    std::string journal_feed;   // md from-journal of the journal
    std::string journal_books;  // replay --book of the journal
  };

  static void SetUpTestSuite() {
    run_ = new Run;
    Start(*run_);
    if (!::testing::Test::HasFatalFailure()) Trade(*run_);
    if (!::testing::Test::HasFatalFailure()) Finish(*run_);
    ready_ = !::testing::Test::HasFailure();
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(ready_) << "the live run failed (see the suite's set-up)";
  }

  static std::vector<std::string> Live(const Run& r, const char* command,
                                       int port,
                                       std::vector<std::string> more = {}) {
    std::vector<std::string> args{"md",           command,      "--target",
                                  Loopback(port), "--request",  r.request,
                                  "--from-start", "--duration", "300"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // serve, and the followers that start before the trading.
  static void Start(Run& r) {
    r.ports = FreeUdpPorts(8);
    ASSERT_EQ(r.ports.size(), 8u);
    r.request = Loopback(r.ports[1]);
    std::string targets;
    for (std::size_t i = 2; i < 8; ++i) {
      absl::StrAppend(&targets, i == 2 ? "" : ",", Loopback(r.ports[i]));
    }
    r.serve =
        Spawn({"serve", "--journal", r.dir.Sub("j"), "--listen",
               Loopback(r.ports[0]), "--md-target", targets,
               "--md-request-listen", r.request, "--md-heartbeat-ms", "100"},
              r.dir.Sub("serve.log"));
    ASSERT_NE(r.serve, nullptr);
    ASSERT_TRUE(LogShows(*r.serve, "listening on")) << r.serve->LogTail();
    r.json = Spawn(Live(r, "record", r.ports[2],
                        {"--json", "--output", r.dir.Sub("feed.jsonl")}),
                   r.dir.Sub("json.log"));
    r.binary = Spawn(
        Live(r, "record", r.ports[3], {"--output", r.dir.Sub("feed.owmd")}),
        r.dir.Sub("binary.log"));
    r.counted = Spawn(
        Live(r, "record", r.ports[4],
             {"--json", "--count", "5", "--output", r.dir.Sub("five.jsonl")}),
        r.dir.Sub("counted.log"));
    r.watch = Spawn(Live(r, "watch", r.ports[5]), r.dir.Sub("watch.log"));
    // Without --from-start the watch joins by snapshot: it asks for one.
    r.joining =
        Spawn({"md", "watch", "--target", Loopback(r.ports[7]), "--request",
               r.request, "--duration", "300", "--book", "1000000"},
              r.dir.Sub("joining.log"));
    for (ChildProcess* child : {r.json.get(), r.binary.get(), r.counted.get(),
                                r.watch.get(), r.joining.get()}) {
      ASSERT_NE(child, nullptr);
      ASSERT_TRUE(LogShows(*child, "receiving on")) << child->LogTail();
    }
  }

  // The client's commands; then a recorder that starts after them gets all
  // of it by retransmission, waited for until it has caught up with the
  // live recorder.
  static void Trade(Run& r) {
    const test_support::ShellOutcome submit = Orderwire(
        r.dir, absl::StrCat("submit --target ", Loopback(r.ports[0]),
                            " --session 1 --workload mixed --count 2000"));
    ASSERT_EQ(submit.status, 0) << submit.err;
    r.late = Spawn(Live(r, "record", r.ports[6],
                        {"--json", "--output", r.dir.Sub("late.jsonl")}),
                   r.dir.Sub("late.log"));
    ASSERT_NE(r.late, nullptr);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline &&
           (ReadText(r.dir.Sub("late.jsonl")).empty() ||
            ReadText(r.dir.Sub("late.jsonl")) !=
                ReadText(r.dir.Sub("feed.jsonl")))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // The stops: --count by itself, the watchers on SIGTERM, serve cleanly
  // (its EndOfSession ends the recorders); then the journal's feed and
  // books.
  static void Finish(Run& r) {
    r.counted_exit = ExitWithin(*r.counted, 60);
    ASSERT_TRUE(LogShows(*r.watch, "trade seq=")) << r.watch->LogTail();
    ASSERT_TRUE(LogShows(*r.joining, "snapshot seq=")) << r.joining->LogTail();
    r.watched = r.watch->Stop(SIGTERM, std::chrono::seconds(20));
    // The joining watcher keeps its books until the EndOfSession.
    absl::StatusOr<int> served =
        r.serve->Stop(SIGTERM, std::chrono::seconds(30));
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_TRUE(ExitedZero(*served)) << r.serve->LogTail();
    ASSERT_TRUE(LogShows(*r.joining, "end seq=")) << r.joining->LogTail();
    r.joined = r.joining->Stop(SIGTERM, std::chrono::seconds(20));
    const test_support::ShellOutcome journal =
        Orderwire(r.dir, "md from-journal --journal j");
    ASSERT_EQ(journal.status, 0) << journal.err;
    r.journal_feed = journal.out;
    const test_support::ShellOutcome books =
        Orderwire(r.dir, "replay --journal j --book 1000000");
    ASSERT_EQ(books.status, 0) << books.err;
    r.journal_books = BookLines(books.err);
  }

  static Run* run_;
  static bool ready_;
};

MdLiveRun::Run* MdLiveRun::run_ = nullptr;
bool MdLiveRun::ready_ = false;

TEST_F(MdLiveRun, RecordJsonWritesTheJournalsFeedAndEndsAtEndOfSession) {
  const std::optional<int> status = ExitWithin(*run_->json, 60);
  EXPECT_TRUE(ExitedZero(status)) << run_->json->LogTail();
  EXPECT_THAT(run_->json->LogTail(), HasSubstr("; end of session"));
  ASSERT_GT(LineCount(run_->journal_feed), 2000u);
  EXPECT_TRUE(ReadText(run_->dir.Sub("feed.jsonl")) == run_->journal_feed)
      << "md record --json differs from md from-journal";
}

TEST_F(MdLiveRun, ARecorderStartedAfterTheTradingGetsItAllByRetransmission) {
  const std::optional<int> status = ExitWithin(*run_->late, 60);
  EXPECT_TRUE(ExitedZero(status)) << run_->late->LogTail();
  EXPECT_TRUE(ReadText(run_->dir.Sub("late.jsonl")) == run_->journal_feed)
      << "the late recorder differs from md from-journal";
  EXPECT_THAT(run_->late->LogTail(), Not(HasSubstr("retransmit requests 0,")));
}

TEST_F(MdLiveRun, CountStopsARecorderByItself) {
  EXPECT_TRUE(ExitedZero(run_->counted_exit)) << run_->counted->LogTail();
  EXPECT_THAT(run_->counted->LogTail(), HasSubstr("--count reached"));
  EXPECT_EQ(ReadText(run_->dir.Sub("five.jsonl")),
            FirstLines(run_->journal_feed, 5));
}

TEST_F(MdLiveRun, TheBinaryRecordingPrintsAsTheJournalsFeed) {
  const std::optional<int> status = ExitWithin(*run_->binary, 60);
  EXPECT_TRUE(ExitedZero(status)) << run_->binary->LogTail();
  const test_support::ShellOutcome printed =
      Orderwire(run_->dir, "md print feed.owmd");
  ASSERT_EQ(printed.status, 0) << printed.err;
  EXPECT_TRUE(printed.out == run_->journal_feed)
      << "md print of the binary recording differs from md from-journal";
}

TEST_F(MdLiveRun, WatchPrintsItsDocumentedLinesAndStopsOnSigterm) {
  ASSERT_TRUE(run_->watched.ok()) << run_->watched.status();
  EXPECT_TRUE(ExitedZero(*run_->watched)) << run_->watch->LogTail();
  const std::string log = ReadText(run_->watch->log_path());
  EXPECT_THAT(log, HasSubstr("md watch: session "));
  ExpectWatchLines(log);
}

// Joined by snapshot (no --from-start), its --book tables at the end are
// `replay --book`'s of the journal, line for line.
TEST_F(MdLiveRun, AWatcherJoiningBySnapshotEndsWithTheJournalsBooks) {
  ASSERT_TRUE(run_->joined.ok()) << run_->joined.status();
  EXPECT_TRUE(ExitedZero(*run_->joined)) << run_->joining->LogTail();
  const std::string log = ReadText(run_->joining->log_path());
  EXPECT_THAT(log, HasSubstr("md watch: session "));
  EXPECT_THAT(log, Not(HasSubstr("snapshot requests 0,")));
  ASSERT_THAT(run_->journal_books, HasSubstr("instrument "));
  EXPECT_EQ(BookLines(log), run_->journal_books);
}

// md print: a file cut inside its last record prints the records before it
// and fails naming the offset; a file that is not one fails.
TEST_F(MdLiveRun, PrintRefusesARecordingCutShortOrNotOne) {
  ASSERT_TRUE(ExitedZero(ExitWithin(*run_->binary, 60)));
  const ScratchDir& dir = run_->dir;
  const std::string& feed = run_->journal_feed;
  std::string bytes = ReadText(dir.Sub("feed.owmd"));
  ASSERT_GT(bytes.size(), 18u);
  test_support::WriteText(dir.Sub("cut.owmd"),
                          bytes.substr(0, bytes.size() - 1));
  const test_support::ShellOutcome cut = Orderwire(dir, "md print cut.owmd");
  EXPECT_EQ(cut.status, 1) << cut.err;
  EXPECT_THAT(cut.err, HasSubstr("a record cut short"));
  EXPECT_EQ(cut.out, FirstLines(feed, LineCount(feed) - 1));
  test_support::WriteText(dir.Sub("jsonl.owmd"),
                          ReadText(dir.Sub("feed.jsonl")));
  const test_support::ShellOutcome not_one =
      Orderwire(dir, "md print jsonl.owmd");
  EXPECT_EQ(not_one.status, 1) << not_one.err;
  EXPECT_THAT(not_one.err, HasSubstr("byte offset 0: not a recorded feed"));
  // A record whose length is below a message header's 9 bytes.
  bytes[8 + 8] = '\x03';
  bytes[8 + 9] = '\0';
  test_support::WriteText(dir.Sub("short.owmd"), bytes);
  const test_support::ShellOutcome short_one =
      Orderwire(dir, "md print short.owmd");
  EXPECT_EQ(short_one.status, 1) << short_one.err;
  EXPECT_THAT(short_one.err, HasSubstr("byte offset 8: sequence 1"));
}

TEST(MdLiveCli, UsageErrorsExitTwo) {
  ScratchDir dir;
  const std::string ok = "--target 127.0.0.1:9 --request 127.0.0.1:9";
  const std::vector<std::string> refused = {
      "watch",
      "watch --target 127.0.0.1:9",
      "watch --request 127.0.0.1:9",
      "watch --target nowhere:x --request 127.0.0.1:9",
      "watch --target 127.0.0.1:0 --request 127.0.0.1:9",
      "watch --target 127.0.0.1:9 --request [::1]:9",
      "watch " + ok + " --interface 127.0.0.1",
      "watch " + ok + " --depth 0",
      "watch " + ok + " --book x",
      "watch " + ok + " --instrument 0",
      "watch " + ok + " --heartbeat-ms 0",
      "watch " + ok + " --duration 0",
      "watch " + ok + " extra",
      "record " + ok,
      "record " + ok + " --output f --count 0",
      "record " + ok + " --output f --session x",
      "print",
      "print a b"};
  for (const std::string& flags : refused) {
    const test_support::ShellOutcome md = Orderwire(dir, "md " + flags);
    EXPECT_EQ(md.status, 2) << flags << "\n" << md.err;
    EXPECT_EQ(md.out, "") << flags;
  }
  const test_support::ShellOutcome missing = Orderwire(dir, "md print nowhere");
  EXPECT_EQ(missing.status, 1) << missing.err;
}

}  // namespace
}  // namespace orderwire::cli::md_live_cli_test
