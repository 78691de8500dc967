// Cancel-on-disconnect with real processes (docs/CONTROLS.md "Goodbye,
// liveness and cancel-on-disconnect"): `orderwire serve` with two sessions
// of a 2-second liveness timeout, one with cancel_on_disconnect; an
// `orderwire submit` per session trades until it is SIGKILLed with orders
// resting. After the timeout the first session's orders are cancelled
// (reason CancelOnDisconnect) and the second's stay, each closed by one
// SessionClosed (Lapsed), as `orderwire replay` of the journal shows. And
// `submit --goodbye` closes a session at the end of its commands.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_processes.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::cli::session_cli_test {
namespace {

using cli_processes::FreeUdpPorts;
using cli_processes::LogShows;
using cli_processes::Loopback;
using cli_processes::Orderwire;
using cli_processes::Spawn;
using test_support::ChildProcess;
using test_support::ReadText;
using test_support::ScratchDir;
using test_support::WriteText;

// Lines of `text` matching `pattern`.
std::size_t CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re),
                    std::sregex_iterator()));
}

// The SessionClosed lines of `json` (JSON Lines give enumerations by
// number: reason 2 is Lapsed): how many, how many orders they cancelled in
// all, and whether the last report of all is one of a lapse.
struct Closings {
  std::size_t count = 0;
  std::uint64_t cancelled = 0;
  bool last_is_a_lapse = false;
};
Closings ClosingsOf(const std::string& json) {
  Closings c;
  const std::regex re(
      "\"SessionClosed\".*\"reason\":([0-9]+),"
      "\"cancelled_orders\":([0-9]+)\\}");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), re);
       it != std::sregex_iterator(); ++it) {
    ++c.count;
    c.cancelled += std::stoull((*it)[2]);
    c.last_is_a_lapse =
        (*it)[1] == "2" &&
        static_cast<std::size_t>(it->position() + it->length()) + 1 ==
            json.size();
  }
  return c;
}

// `orderwire serve` of a journal in `dir` on loopback `port` with the
// configuration `toml`, once it listens (null, with a test failure, if it
// does not).
std::unique_ptr<ChildProcess> Serve(const ScratchDir& dir, int port,
                                    const std::string& toml) {
  WriteText(dir.Sub("orderwire.toml"), toml);
  std::unique_ptr<ChildProcess> serve =
      Spawn({"serve", "--journal", dir.Sub("j"), "--listen", Loopback(port),
             "--config", dir.Sub("orderwire.toml")},
            dir.Sub("serve.log"));
  if (serve == nullptr) return nullptr;
  if (!LogShows(*serve, "listening on")) {
    ADD_FAILURE() << serve->LogTail();
    return nullptr;
  }
  return serve;
}

TEST(SessionCli, AKilledClientsOrdersAreCancelledOnlyWithCancelOnDisconnect) {
  ScratchDir dir;
  const std::vector<int> ports = FreeUdpPorts(1);
  ASSERT_EQ(ports.size(), 1u);
  std::unique_ptr<ChildProcess> serve =
      Serve(dir, ports[0],
            "[sessions.5]\naccounts = \"any\"\nliveness_seconds = 2\n"
            "cancel_on_disconnect = true\n"
            "[sessions.6]\naccounts = \"any\"\nliveness_seconds = 2\n");
  ASSERT_NE(serve, nullptr);
  // Two traders, slow enough to be killed mid-stream with orders resting
  // (wl1 rests most of what it enters).
  std::vector<std::unique_ptr<ChildProcess>> traders;
  for (const std::string session : {"5", "6"}) {
    traders.push_back(
        Spawn({"submit", "--session", session, "--target", Loopback(ports[0]),
               "--workload", "wl1", "--count", "1000000", "--seed", session,
               "--rate", "400", "--heartbeat-ms", "100"},
              dir.Sub("submit-" + session + ".log")));
    ASSERT_NE(traders.back(), nullptr);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  for (auto& trader : traders) {
    ASSERT_TRUE(trader->running()) << trader->LogTail();
    ASSERT_TRUE(trader->Kill().ok());
  }
  // A 2-second timeout, checked every 0.1 s: lapsed well within 5 s.
  std::this_thread::sleep_for(std::chrono::milliseconds(5000));
  const absl::StatusOr<int> stopped =
      serve->Stop(SIGTERM, std::chrono::seconds(20));
  ASSERT_TRUE(stopped.ok()) << serve->LogTail();

  const test_support::ShellOutcome replay = Orderwire(
      dir, absl::StrCat("replay --journal '", dir.Sub("j"),
                        "' --json --reports-dir '", dir.Sub("reports"), "'"));
  ASSERT_EQ(replay.status, 0) << replay.err;
  const std::string cancelling = ReadText(dir.Sub("reports/session-5.jsonl"));
  const std::string keeping = ReadText(dir.Sub("reports/session-6.jsonl"));
  // The kill leaves each session lapsed, its lapse its last report (a
  // loaded machine may also have lapsed a live one earlier: it then spoke
  // again, reopening it).
  const Closings five = ClosingsOf(cancelling);
  ASSERT_TRUE(five.last_is_a_lapse) << cancelling.substr(
      cancelling.size() > 600 ? cancelling.size() - 600 : 0);
  EXPECT_GT(five.cancelled, 0u) << "session 5 lapsed with orders resting";
  // Cancelled reason 8 is CancelOnDisconnect: as many as the lapses say.
  EXPECT_EQ(CountMatches(cancelling, "\"Cancelled\".*\"reason\":8\\}"),
            five.cancelled);
  const Closings six = ClosingsOf(keeping);
  EXPECT_TRUE(six.last_is_a_lapse);
  EXPECT_EQ(six.cancelled, 0u) << "session 6's orders are kept";
  EXPECT_EQ(CountMatches(keeping, "\"Cancelled\".*\"reason\":8\\}"), 0u);
}

// `submit --goodbye ACCOUNT` ends the session's commands with a Goodbye:
// acknowledged by its SessionClosed (reason 1 Goodbye), the session's
// resting orders cancelled first (cancel_on_disconnect), none left.
TEST(SessionCli, SubmitWithGoodbyeClosesTheSessionAndCancelsItsOrders) {
  ScratchDir dir;
  const std::vector<int> ports = FreeUdpPorts(1);
  ASSERT_EQ(ports.size(), 1u);
  std::unique_ptr<ChildProcess> serve =
      Serve(dir, ports[0],
            "[sessions.5]\naccounts = \"any\"\ncancel_on_disconnect = true\n");
  ASSERT_NE(serve, nullptr);
  const test_support::ShellOutcome submit = Orderwire(
      dir, absl::StrCat("submit --session 5 --target ", Loopback(ports[0]),
                        " --workload wl1 --count 300 --goodbye 1"));
  ASSERT_EQ(submit.status, 0) << submit.err;
  ASSERT_TRUE(serve->Stop(SIGTERM, std::chrono::seconds(20)).ok())
      << serve->LogTail();
  const test_support::ShellOutcome replay = Orderwire(
      dir, absl::StrCat("replay --journal '", dir.Sub("j"),
                        "' --json --reports-dir '", dir.Sub("reports"), "'"));
  ASSERT_EQ(replay.status, 0) << replay.err;
  EXPECT_NE(replay.out.find("0 live orders at the end"), std::string::npos)
      << replay.out;
  const std::string reports = ReadText(dir.Sub("reports/session-5.jsonl"));
  // JSON Lines give enumerations by number: reason 1 is Goodbye.
  const std::regex closed(
      "\"SessionClosed\",\"sequence\":[0-9]+,\"account_id\":1,"
      "\"request_id\":301,\"reason\":1,\"cancelled_orders\":([0-9]+)\\}\n$");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(reports, m, closed))
      << reports.substr(reports.size() > 600 ? reports.size() - 600 : 0);
  EXPECT_GT(std::stol(m[1]), 0);
  EXPECT_EQ(CountMatches(reports, "\"Cancelled\".*\"reason\":8\\}"),
            static_cast<std::size_t>(std::stol(m[1])));
}

}  // namespace
}  // namespace orderwire::cli::session_cli_test
