// `orderwire md record`, `md watch` and `md print` against a live `orderwire
// serve` (child processes, loopback UDP): a client trades 2000 mixed
// commands; recorders that follow the feed from its start (--from-start:
// retransmission, no snapshot), one of them started after the trading,
// write exactly the JSON Lines `md from-journal` makes of the journal
// afterwards, in both forms (--json, and the binary file `md print` shows);
// --count stops a recorder by itself; EndOfSession stops the others; `md
// watch` off a terminal prints its documented lines and stops on SIGTERM
// with exit status 0, and without --from-start asks for a snapshot; `md
// print` refuses a file cut short or not one; usage errors exit 2.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire::cli::md_live_cli_test {
namespace {

using test_support::ChildProcess;
using test_support::ReadText;
using test_support::ScratchDir;
using ::testing::HasSubstr;
using ::testing::Not;

// `n` distinct loopback UDP ports free now: each bound to port 0 while the
// others are held, then all released (the children bind them next).
std::vector<int> FreeUdpPorts(int n) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (fd < 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      ADD_FAILURE() << "cannot find a free UDP port";
      break;
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (const int fd : fds) ::close(fd);
  return ports;
}

std::string Loopback(int port) { return absl::StrCat("127.0.0.1:", port); }

// Waits up to `seconds` for `text` in the child's log.
bool LogShows(const ChildProcess& child, const std::string& text,
              int seconds = 20) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReadText(child.log_path()).find(text) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Waits up to `seconds` for the child to exit by itself; its wait status.
std::optional<int> ExitWithin(ChildProcess& child, int seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (const std::optional<int> status = child.Exited()) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

bool ExitedZero(const std::optional<int>& status) {
  return status.has_value() && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

std::unique_ptr<ChildProcess> Spawn(std::vector<std::string> args,
                                    const std::string& log) {
  args.insert(args.begin(), ORDERWIRE_BINARY);
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(std::move(args), log);
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? *std::move(child) : nullptr;
}

test_support::ShellOutcome Orderwire(const ScratchDir& dir,
                                     const std::string& line) {
  return test_support::RunShell(
      dir.path(), absl::StrCat("'", ORDERWIRE_BINARY, "' ", line));
}

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

TEST(MdLiveCli, RecordingsOfALiveRunAreTheJournalsFeed) {
  ScratchDir dir;
  const std::vector<int> ports = FreeUdpPorts(8);
  ASSERT_EQ(ports.size(), 8u);
  const std::string listen = Loopback(ports[0]);
  const std::string request = Loopback(ports[1]);
  auto serve = Spawn(
      {"serve", "--journal", dir.Sub("j"), "--listen", listen, "--md-target",
       absl::StrCat(Loopback(ports[2]), ",", Loopback(ports[3]), ",",
                    Loopback(ports[4]), ",", Loopback(ports[5]), ",",
                    Loopback(ports[6]), ",", Loopback(ports[7])),
       "--md-request-listen", request, "--md-heartbeat-ms", "100"},
      dir.Sub("serve.log"));
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(LogShows(*serve, "listening on")) << serve->LogTail();

  const auto live = [&](const char* command, int port) {
    return std::vector<std::string>{"md",           command,      "--target",
                                    Loopback(port), "--request",  request,
                                    "--from-start", "--duration", "300"};
  };
  auto with = [](std::vector<std::string> args,
                 const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  auto json = Spawn(with(live("record", ports[2]),
                         {"--json", "--output", dir.Sub("feed.jsonl")}),
                    dir.Sub("json.log"));
  auto binary =
      Spawn(with(live("record", ports[3]), {"--output", dir.Sub("feed.owmd")}),
            dir.Sub("binary.log"));
  auto counted =
      Spawn(with(live("record", ports[4]),
                 {"--json", "--count", "5", "--output", dir.Sub("five.jsonl")}),
            dir.Sub("counted.log"));
  auto watch = Spawn(live("watch", ports[5]), dir.Sub("watch.log"));
  // Without --from-start the watch joins by snapshot: it asks for one.
  auto joining = Spawn({"md", "watch", "--target", Loopback(ports[7]),
                        "--request", request, "--duration", "300"},
                       dir.Sub("joining.log"));
  for (ChildProcess* child :
       {json.get(), binary.get(), counted.get(), watch.get(), joining.get()}) {
    ASSERT_NE(child, nullptr);
    ASSERT_TRUE(LogShows(*child, "receiving on")) << child->LogTail();
  }

  const test_support::ShellOutcome submit = Orderwire(
      dir, absl::StrCat("submit --target ", listen,
                        " --session 1 --workload mixed --count 2000"));
  ASSERT_EQ(submit.status, 0) << submit.err;

  // A recorder that starts after the trading gets all of it by
  // retransmission; serve is stopped once it has caught up with the live
  // recorder.
  auto late = Spawn(with(live("record", ports[6]),
                         {"--json", "--output", dir.Sub("late.jsonl")}),
                    dir.Sub("late.log"));
  ASSERT_NE(late, nullptr);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (ReadText(dir.Sub("late.jsonl")).empty() ||
          ReadText(dir.Sub("late.jsonl")) != ReadText(dir.Sub("feed.jsonl")))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // --count: that recorder stops by itself.
  const std::optional<int> counted_exit = ExitWithin(*counted, 60);
  EXPECT_TRUE(ExitedZero(counted_exit)) << counted->LogTail();
  EXPECT_THAT(counted->LogTail(), HasSubstr("--count reached"));

  // md watch: lines, then a clean stop on SIGTERM.
  ASSERT_TRUE(LogShows(*watch, "trade seq=")) << watch->LogTail();
  absl::StatusOr<int> watched = watch->Stop(SIGTERM, std::chrono::seconds(20));
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_TRUE(ExitedZero(*watched)) << watch->LogTail();
  const std::string watch_log = ReadText(watch->log_path());
  EXPECT_THAT(watch_log, HasSubstr("md watch: session "));
  ExpectWatchLines(watch_log);

  absl::StatusOr<int> joined = joining->Stop(SIGTERM, std::chrono::seconds(20));
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_TRUE(ExitedZero(*joined)) << joining->LogTail();
  EXPECT_THAT(joining->LogTail(), HasSubstr("md watch: session "));
  EXPECT_THAT(joining->LogTail(), Not(HasSubstr("snapshot requests 0,")));

  // A clean stop sends EndOfSession: the recorders finish by themselves.
  absl::StatusOr<int> served = serve->Stop(SIGTERM, std::chrono::seconds(30));
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_TRUE(ExitedZero(*served)) << serve->LogTail();
  for (ChildProcess* child : {json.get(), binary.get(), late.get()}) {
    const std::optional<int> status = ExitWithin(*child, 60);
    EXPECT_TRUE(ExitedZero(status)) << child->LogTail();
    EXPECT_THAT(child->LogTail(), HasSubstr("; end of session"));
  }

  const test_support::ShellOutcome journal =
      Orderwire(dir, "md from-journal --journal j");
  ASSERT_EQ(journal.status, 0) << journal.err;
  ASSERT_GT(LineCount(journal.out), 2000u);
  EXPECT_TRUE(ReadText(dir.Sub("feed.jsonl")) == journal.out)
      << "md record --json differs from md from-journal";
  EXPECT_TRUE(ReadText(dir.Sub("late.jsonl")) == journal.out)
      << "the late recorder differs from md from-journal";
  EXPECT_THAT(late->LogTail(), Not(HasSubstr("retransmit requests 0,")));
  EXPECT_EQ(ReadText(dir.Sub("five.jsonl")), FirstLines(journal.out, 5));
  const test_support::ShellOutcome printed =
      Orderwire(dir, "md print feed.owmd");
  ASSERT_EQ(printed.status, 0) << printed.err;
  EXPECT_TRUE(printed.out == journal.out)
      << "md print of the binary recording differs from md from-journal";

  // md print: a file cut inside its last record prints the records before
  // it and fails naming the offset; a file that is not one fails.
  std::string bytes = ReadText(dir.Sub("feed.owmd"));
  test_support::WriteText(dir.Sub("cut.owmd"),
                          bytes.substr(0, bytes.size() - 1));
  const test_support::ShellOutcome cut = Orderwire(dir, "md print cut.owmd");
  EXPECT_EQ(cut.status, 1) << cut.err;
  EXPECT_THAT(cut.err, HasSubstr("a record cut short"));
  EXPECT_EQ(cut.out, FirstLines(journal.out, LineCount(journal.out) - 1));
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
