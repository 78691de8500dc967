// The crash test of the UDP service: the real `orderwire serve` (batch
// durability) is SIGKILLed at random moments while two go-back-N clients
// (client::RunClient, in this process) send it the `mixed` workload on two
// sessions that trade the same accounts, and is restarted on the same
// journal and port each time. The clients carry on by themselves
// (retransmission after a timeout, and the service's report resend on
// duplicates). At the end, for each session:
//   - the client acknowledged every command, each answer checked against
//     its command;
//   - `orderwire replay --reports-dir` reproduces, byte for byte, the report
//     stream the client received: live == restart == replay;
//   - the journal holds each of its commands exactly once, verbatim, in
//     sequence order (no command applied twice, none lost);
//   - the client's counts reconcile with the replay's.
//
// The kill moments come from a seed printed at the start; set
// ORDERWIRE_CRASH_SEED to run a schedule again. Children get SIGKILL if this
// process dies (PR_SET_PDEATHSIG) and are killed and reaped on every exit
// path of the test.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/run_client.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/types.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "net/udp.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::service {
namespace {

using client::ClientOptions;
using client::ClientResult;
using client::Fnv1a;
using client::kFnvOffset;
using client::RunClient;
using net::DatagramBatch;
using net::Endpoint;
using net::UdpSocket;

using Clock = std::chrono::steady_clock;
using test_support::ReadText;
using test_support::ScratchDir;

constexpr std::size_t kCommands = 100'000;  // per session
constexpr std::uint32_t kSessions[] = {1, 2};
constexpr std::size_t kClients = std::size(kSessions);

// A child process running the orderwire binary. Killed (SIGKILL) and reaped
// when destroyed while still running.
class Child {
 public:
  // Starts ORDERWIRE_BINARY with `args`, stdout and stderr appended to
  // `log`. Fork and exec: between them only async-signal-safe calls (this
  // process has other threads).
  static std::optional<Child> Start(const std::vector<std::string>& args,
                                    const std::string& log) {
    std::vector<std::string> argv_storage;
    argv_storage.emplace_back(ORDERWIRE_BINARY);
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return std::nullopt;
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        ::close(fd);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return Child(pid);
  }

  Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  Child& operator=(Child&& other) noexcept {
    if (this != &other) {
      Kill();
      pid_ = std::exchange(other.pid_, -1);
    }
    return *this;
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { Kill(); }

  [[nodiscard]] bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    pid_ = -1;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return false;
  }

  // SIGKILL and reap.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_status_ = -1;
  }

  // Sends `signal`, waits up to `timeout_ms` for the exit; the exit status,
  // or -1 if it died of a signal or had to be killed.
  int Stop(int signal, int timeout_ms) {
    if (pid_ > 0) ::kill(pid_, signal);
    return Wait(timeout_ms);
  }

  // Waits up to `timeout_ms` for the exit (then kills): the exit status, or
  // -1 if it died of a signal or had to be killed.
  int Wait(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (running()) {
      if (Clock::now() > deadline) {
        Kill();
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return exit_status_;
  }

 private:
  explicit Child(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  int exit_status_ = -1;
};

// Runs `orderwire args...` to completion (at most `timeout_ms`); its exit
// status, with its output in `log`.
int RunTool(const std::vector<std::string>& args, const std::string& log,
            int timeout_ms) {
  std::optional<Child> child = Child::Start(args, log);
  if (!child.has_value()) return -1;
  return child->Wait(timeout_ms);
}

// A free UDP port on 127.0.0.1 (bound and released).
std::uint16_t FreePort() {
  absl::StatusOr<UdpSocket> socket =
      UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  if (!socket.ok()) return 0;
  absl::StatusOr<Endpoint> local = socket->LocalEndpoint();
  return local.ok() ? local->port() : 0;
}

// Starts `orderwire serve` on `port` and waits until it says it listens.
// nullopt if it exits first (e.g. the port was taken) or takes too long.
// Whether a snapshot has been published in `journal` (a "*.ows" file in its
// snapshots directory; a child's "*.ows.tmp" does not count).
bool HasSnapshot(const std::string& journal) {
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(journal + "/snapshots", error)) {
    if (entry.path().extension() == ".ows") return true;
  }
  return false;
}

// With `snapshot_every` (records) it snapshots while serving and restarts
// from its newest snapshot.
std::optional<Child> StartServer(const ScratchDir& dir, std::uint16_t port,
                                 int incarnation, std::uint64_t snapshot_every,
                                 const std::string& config_file) {
  const std::string log =
      dir.Sub("serve." + std::to_string(incarnation) + ".log");
  std::vector<std::string> args = {"serve",
                                   "--journal",
                                   dir.Sub("journal"),
                                   "--durability",
                                   "batch",
                                   "--listen",
                                   "127.0.0.1:" + std::to_string(port),
                                   "--segment-size",
                                   "1048576"};
  if (snapshot_every != 0) {
    args.insert(args.end(),
                {"--snapshot-every", std::to_string(snapshot_every)});
  }
  if (!config_file.empty()) args.insert(args.end(), {"--config", config_file});
  std::optional<Child> child = Child::Start(args, log);
  if (!child.has_value()) return std::nullopt;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    if (ReadText(log).find("listening on") != std::string::npos) return child;
    if (!child->running()) {
      std::fprintf(stderr, "serve exited early:\n%s\n", ReadText(log).c_str());
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::fprintf(stderr, "serve did not start in time:\n%s\n",
               ReadText(log).c_str());
  return std::nullopt;
}

// The report frames of `bytes` (back to back), checked whole.
std::vector<std::span<const std::byte>> SplitReports(
    std::span<const std::byte> bytes) {
  std::vector<std::span<const std::byte>> frames;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const auto frame = codec::FrameView::Parse(bytes.subspan(pos));
    if (!frame.ok()) {
      ADD_FAILURE() << "a bad report frame at byte " << pos << ": "
                    << codec::Name(frame.error());
      break;
    }
    frames.push_back(frame->bytes());
    pos += frame->size();
  }
  return frames;
}

// One run of the test.
struct CrashRun {
  // Records between snapshots (0: none; each restart replays the whole
  // journal).
  std::uint64_t snapshot_every = 0;
  // The bytes all report histories may hold (the configuration's
  // max_report_history_bytes; 0: the default).
  std::uint64_t history_bytes = 0;
  // Commands per second per client, and the kills: between kills_min and
  // kills_max, each gap_min_ms + [0, gap_spread_ms] apart.
  double rate = 75'000;
  int kills_min = 2;
  int kills_max = 3;
  std::uint64_t gap_min_ms = 100;
  std::uint64_t gap_spread_ms = 300;
};

// The seed of the kill schedule: ORDERWIRE_CRASH_SEED, or a random one;
// printed with `dir`.
std::uint64_t CrashSeed(const ScratchDir& dir) {
  std::uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("ORDERWIRE_CRASH_SEED"); s != nullptr) {
    seed = std::strtoull(s, nullptr, 10);
  }
  std::printf("kill schedule seed %llu (ORDERWIRE_CRASH_SEED), directory %s\n",
              static_cast<unsigned long long>(seed), dir.path().c_str());
  return seed;
}

// The server's log of incarnation `i`.
std::string ServeLog(const ScratchDir& dir, int i) {
  return dir.Sub("serve." + std::to_string(i) + ".log");
}

// Where the client of session `session` writes the reports it receives.
std::string ClientReports(const ScratchDir& dir, std::uint32_t session) {
  return dir.Sub("client-" + std::to_string(session) + ".reports");
}

// The served side of a run: `orderwire serve` on one port, restarted on it
// as incarnation 0, 1, 2, ... (each with its own log).
struct CrashServer {
  const ScratchDir& dir;
  const CrashRun& run;
  std::string config_file{};  // empty: none
  std::uint16_t port = 0;
  int incarnation = 0;  // the next one
  std::optional<Child> child{};

  // The first incarnation, on a free port (another process may take a port
  // between our probe and the bind: try a few).
  void StartOnAFreePort() {
    for (int attempt = 0; attempt < 5 && !child.has_value(); ++attempt) {
      port = FreePort();
      ASSERT_NE(port, 0);
      StartNext();
    }
    ASSERT_TRUE(child.has_value());
  }
  void StartNext() {
    child =
        StartServer(dir, port, incarnation++, run.snapshot_every, config_file);
  }
};

// The clients, one per session, each RunClient on a thread of its own;
// `stop` ends them early on any failure (and the destructor stops and joins
// them).
struct CrashClients {
  std::vector<ClientOptions> options = std::vector<ClientOptions>(kClients);
  std::vector<std::FILE*> reports_out = std::vector<std::FILE*>(kClients);
  std::vector<absl::StatusOr<ClientResult>> results =
      std::vector<absl::StatusOr<ClientResult>>(kClients,
                                                absl::UnknownError("not run"));
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> done{0};
  std::vector<std::thread> threads;

  ~CrashClients() {
    stop.store(true);
    Join();
  }

  // Starts them on `port` with `frames` (one stream per session).
  void Start(const ScratchDir& dir, const CrashRun& run, std::uint16_t port,
             const std::vector<std::vector<std::byte>>& frames) {
    for (std::size_t c = 0; c < kClients; ++c) {
      options[c].target = *Endpoint::Parse("127.0.0.1:" + std::to_string(port));
      options[c].session_id = kSessions[c];
      options[c].rate = run.rate;  // a few seconds: the kills land under it
      options[c].window = 4096;
      options[c].retransmit_timeout_ms = 100;
      options[c].give_up_ms = 20'000;
      reports_out[c] =
          std::fopen(ClientReports(dir, kSessions[c]).c_str(), "wb");
      ASSERT_NE(reports_out[c], nullptr);
      options[c].reports_out = reports_out[c];
    }
    for (std::size_t c = 0; c < kClients; ++c) {
      threads.emplace_back([this, c, &frames] {
        results[c] = RunClient(options[c], frames[c], stop);
        done.fetch_add(1);
      });
    }
  }
  [[nodiscard]] bool Busy() const { return done.load() < kClients; }
  void Join() {
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

// The kills (between run.kills_min and run.kills_max, drawn from `rng`),
// each while the clients are still busy, each followed by a restart.
// Returns how many there were, in `kills`.
void KillAndRestartWhileBusy(CrashServer& server, const CrashClients& clients,
                             std::mt19937_64& rng, int* kills) {
  const CrashRun& run = server.run;
  const int kills_planned =
      run.kills_min +
      static_cast<int>(rng() % static_cast<std::uint64_t>(run.kills_max -
                                                          run.kills_min + 1));
  for (int k = 0; k < kills_planned; ++k) {
    const auto wait = std::chrono::milliseconds(
        run.gap_min_ms + rng() % (run.gap_spread_ms + 1));
    const auto until = Clock::now() + wait;
    // With snapshots, the first kill waits (while the load lasts) for the
    // first snapshot to be published, so that a restart can start from one
    // however slowly a loaded machine gets through the records.
    const bool need_snapshot = run.snapshot_every != 0 && k == 0;
    while ((Clock::now() < until ||
            (need_snapshot && !HasSnapshot(server.dir.Sub("journal")))) &&
           clients.Busy()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!clients.Busy()) break;
    server.child->Kill();
    ++*kills;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 30));
    server.StartNext();
    ASSERT_TRUE(server.child.has_value()) << "restart " << *kills << " failed";
  }
}

// Every client finished (closing its reports file); prints each one's
// figures. The kills happened under load, and the clients had to work for
// it.
void ExpectTheClientsFinishedUnderTheKills(CrashClients& clients, int kills,
                                           const CrashRun& run) {
  std::uint64_t retransmitted = 0;
  for (std::size_t c = 0; c < kClients; ++c) {
    std::fclose(clients.reports_out[c]);
    ASSERT_TRUE(clients.results[c].ok())
        << "session " << kSessions[c] << ": " << clients.results[c].status();
    const ClientResult& r = *clients.results[c];
    retransmitted += r.retransmitted;
    std::printf(
        "session %u: %llu acknowledged, %llu reports, %llu retransmitted, "
        "%llu duplicate and %llu out-of-order reports dropped, %.2f s\n",
        kSessions[c], static_cast<unsigned long long>(r.acknowledged),
        static_cast<unsigned long long>(r.reports),
        static_cast<unsigned long long>(r.retransmitted),
        static_cast<unsigned long long>(r.duplicate_reports),
        static_cast<unsigned long long>(r.out_of_order_reports), r.seconds);
  }
  std::printf("%d kills\n", kills);
  EXPECT_GE(kills, run.kills_min);
  EXPECT_GT(retransmitted, 0u);
}

// Each restart (incarnations after `first`, up to `server.incarnation`)
// recovered the journal and replayed it ("replayed N records (FIRST to
// LAST)", up to a journal end that never moves back) before taking
// traffic: the whole of it, or with snapshots the records after the
// snapshot it started from.
void ExpectEachRestartReplayedTheJournal(const CrashServer& server, int first) {
  const std::uint64_t snapshot_every = server.run.snapshot_every;
  std::uint64_t end_before = 0;
  int from_snapshot = 0;
  for (int i = first + 1; i < server.incarnation; ++i) {
    const std::string log = ReadText(ServeLog(server.dir, i));
    // An incarnation killed before anything was journaled leaves nothing
    // to replay (the banner says "last index 0" and no "replayed").
    if (log.find(", last index 0;") != std::string::npos) continue;
    // Nor one whose newest snapshot holds every record.
    if (log.find("records (none after the snapshot)") != std::string::npos) {
      ++from_snapshot;
      continue;
    }
    const std::size_t at = log.find("replayed ");
    ASSERT_NE(at, std::string::npos) << log;
    char* rest = nullptr;
    const std::uint64_t replayed =
        std::strtoull(log.c_str() + at + 9, &rest, 10);
    std::uint64_t first_index = 0;
    std::uint64_t end = 0;
    ASSERT_EQ(std::sscanf(rest, " records (%" SCNu64 " to %" SCNu64 ")",
                          &first_index, &end),
              2)
        << log;
    EXPECT_EQ(replayed, end - first_index + 1) << log;
    const std::size_t snap = log.find("started from snapshot ");
    if (snap != std::string::npos) {
      ++from_snapshot;
      EXPECT_NE(snapshot_every, 0u) << log;
      EXPECT_GT(first_index, 1u) << log;
    } else {
      EXPECT_EQ(first_index, 1u) << log;
    }
    // An incarnation killed before its clients reached it journaled
    // nothing, so a restart may end where the one before did; never before.
    EXPECT_GE(end, end_before) << log;
    end_before = end;
  }
  if (server.incarnation > first + 1) {
    EXPECT_GT(end_before, 0u) << "no restart replayed anything";
  }
  if (snapshot_every != 0) {
    EXPECT_GT(from_snapshot, 0) << "no restart started from a snapshot";
  }
}

// The client of session `session` (result `r`) received `received`, the
// first reports of `whole` (the replay's, for that session), byte for byte,
// and its counts reconcile with them.
void ExpectTheReplayReproducesTheReports(const ClientResult& r,
                                         const std::string& received,
                                         const std::string& whole) {
  // The client's reconciliation.
  EXPECT_EQ(r.commands, kCommands);
  EXPECT_EQ(r.sent, kCommands);
  EXPECT_EQ(r.acknowledged, kCommands);
  // A crash is transparent: no report was gone, none unconfirmed.
  EXPECT_EQ(r.reports_gone, 0u);
  EXPECT_EQ(r.unconfirmed, 0u);

  EXPECT_EQ(received.size(), r.report_bytes);
  // A client stops listening once its last command is acknowledged; the
  // other session's later commands may still fill or cancel (self-trade)
  // its resting orders, and those reports are in the replay but were
  // never received. So: the client's reports are the replay's first ones,
  // byte for byte, and what follows them answers none of its commands
  // (only Filled and Cancelled of its resting orders).
  ASSERT_GE(whole.size(), received.size());
  const std::string replayed = whole.substr(0, received.size());
  EXPECT_TRUE(received == replayed)
      << "the client's reports differ from the replay's";
  for (const std::span<const std::byte> late :
       SplitReports(std::as_bytes(std::span(whole)).subspan(received.size()))) {
    const codec::Kind kind = codec::FrameView::Parse(late)->kind();
    EXPECT_TRUE(kind == codec::Kind::kFilled || kind == codec::Kind::kCancelled)
        << "a report after the client's last one answers one of its "
           "commands: kind "
        << static_cast<int>(kind);
  }
  const auto replay_reports = SplitReports(std::as_bytes(std::span(replayed)));
  EXPECT_EQ(r.reports, replay_reports.size());
  std::uint64_t hash = kFnvOffset;
  std::uint64_t by_kind[256] = {};
  for (std::size_t i = 0; i < replay_reports.size(); ++i) {
    hash = Fnv1a(hash, replay_reports[i]);
    ++by_kind[static_cast<std::uint8_t>(
        codec::FrameView::Parse(replay_reports[i])->kind())];
    EXPECT_EQ(codec::FrameView::Parse(replay_reports[i])->sequence(), i + 1);
  }
  EXPECT_EQ(r.report_hash, hash);
  EXPECT_EQ(r.accepted,
            by_kind[static_cast<std::uint8_t>(codec::Kind::kAccepted)]);
  EXPECT_EQ(r.rejected,
            by_kind[static_cast<std::uint8_t>(codec::Kind::kRejected)]);
  EXPECT_EQ(r.replaced,
            by_kind[static_cast<std::uint8_t>(codec::Kind::kReplaced)]);
  EXPECT_EQ(r.cancelled,
            by_kind[static_cast<std::uint8_t>(codec::Kind::kCancelled)]);
  EXPECT_EQ(r.fills, by_kind[static_cast<std::uint8_t>(codec::Kind::kFilled)]);
}

// The journal in `dir` holds each session's commands (`commands`, encoded
// as `frames`) once, verbatim, in sequence order, and nothing else; its
// indices run 1, 2, 3, ...
void ExpectTheJournalHoldsEachCommandOnce(
    const ScratchDir& dir,
    const std::vector<std::vector<codec::Command>>& commands,
    const std::vector<std::vector<std::byte>>& frames) {
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(dir.Sub("journal"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  journal::Record record;
  std::uint64_t count = 0;
  std::vector<std::size_t> per_session(kClients, 0);
  std::vector<std::size_t> pos(kClients, 0);
  std::size_t mismatches = 0;
  journal::ReadResult read;
  while ((read = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
    ++count;
    std::size_t c = 0;
    while (c < kClients && kSessions[c] != record.session_id) ++c;
    bool ok = c < kClients && record.index == count && record.flags == 0 &&
              per_session[c] < kCommands;
    if (ok) {
      const std::size_t n = per_session[c]++;
      const std::size_t size = codec::Info(commands[c][n].kind).frame_size;
      const std::span<const std::byte> sent(frames[c].data() + pos[c], size);
      pos[c] += size;
      ok = record.frame.sequence() == n + 1 &&
           std::equal(sent.begin(), sent.end(), record.frame.bytes().begin(),
                      record.frame.bytes().end());
    }
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << "journal record " << count << ": index " << record.index
                    << ", session " << record.session_id << ", sequence "
                    << record.frame.sequence();
    }
  }
  EXPECT_EQ(read, journal::ReadResult::kEnd) << (*reader)->status();
  EXPECT_EQ(count, kClients * kCommands);
  for (std::size_t c = 0; c < kClients; ++c) {
    EXPECT_EQ(per_session[c], kCommands);
  }
  EXPECT_EQ(mismatches, 0u);
}

// The whole test; with `snapshot_every` (records) the service snapshots
// while it serves and each restart starts from its newest snapshot.
void KillAndRestartUnderLoad(const CrashRun& run) {
  ScratchDir dir("ow-crash");
  ASSERT_FALSE(dir.path().empty());
  const std::uint64_t seed = CrashSeed(dir);
  std::mt19937_64 rng(seed);
  CrashServer server{.dir = dir, .run = run};
  if (run.history_bytes != 0) {
    server.config_file = dir.Sub("serve.toml");
    test_support::WriteText(server.config_file,
                            "[service]\nmax_report_history_bytes = " +
                                std::to_string(run.history_bytes) + "\n");
  }

  // The commands, as `orderwire submit --workload mixed` makes them, one
  // stream per session (the same 64 accounts).
  std::vector<std::vector<codec::Command>> commands;
  std::vector<std::vector<std::byte>> frames;
  for (std::size_t c = 0; c < kClients; ++c) {
    commands.push_back(workload::Generate(workload::Workload::kMixed, kCommands,
                                          seed % 1000 + 1 + c));
    frames.push_back(workload::EncodeCommands(commands.back()));
  }

  ASSERT_NO_FATAL_FAILURE(server.StartOnAFreePort());
  const int first_incarnation = server.incarnation - 1;
  CrashClients clients;
  ASSERT_NO_FATAL_FAILURE(clients.Start(dir, run, server.port, frames));
  int kills = 0;
  ASSERT_NO_FATAL_FAILURE(
      KillAndRestartWhileBusy(server, clients, rng, &kills));
  clients.Join();
  ASSERT_NO_FATAL_FAILURE(
      ExpectTheClientsFinishedUnderTheKills(clients, kills, run));
  ASSERT_NO_FATAL_FAILURE(
      ExpectEachRestartReplayedTheJournal(server, first_incarnation));

  // A clean stop of the last incarnation.
  const int serve_exit = server.child->Stop(SIGTERM, 20'000);
  const std::string last_log = ReadText(ServeLog(dir, server.incarnation - 1));
  EXPECT_EQ(serve_exit, 0) << last_log;
  EXPECT_NE(last_log.find("stopped cleanly"), std::string::npos) << last_log;

  // Replay reproduces each client's report stream, byte for byte.
  // The whole journal (--no-snapshot: a replay would otherwise start from
  // the newest snapshot and write only the tail's reports).
  ASSERT_EQ(RunTool({"replay", "--journal", dir.Sub("journal"), "--no-snapshot",
                     "--reports-dir", dir.Sub("replay")},
                    dir.Sub("replay.log"), 60'000),
            0)
      << ReadText(dir.Sub("replay.log"));
  for (std::size_t c = 0; c < kClients; ++c) {
    SCOPED_TRACE("session " + std::to_string(kSessions[c]));
    ASSERT_NO_FATAL_FAILURE(ExpectTheReplayReproducesTheReports(
        *clients.results[c], ReadText(ClientReports(dir, kSessions[c])),
        ReadText(dir.Sub("replay/session-" + std::to_string(kSessions[c]) +
                         ".bin"))));
  }
  ExpectTheJournalHoldsEachCommandOnce(dir, commands, frames);
}

TEST(ServiceCrashTest, KilledAndRestartedUnderLoadLosesAndDuplicatesNothing) {
  KillAndRestartUnderLoad({});
}

// The same with a snapshot every 10,000 records: restarts start from the
// newest snapshot a killed incarnation left, and the clients' reports still
// equal a full replay's.
TEST(ServiceCrashTest, RestartsFromSnapshotsLoseAndDuplicateNothing) {
  KillAndRestartUnderLoad({.snapshot_every = 10'000});
}

// docs/PROTOCOL.md "Reports the history no longer holds": five kills while
// both sessions trade the same accounts, with report histories far smaller
// than what a crash leaves unanswered (256 reports per session; a crash
// under batch durability leaves up to four groups, thousands of commands,
// durable but unanswered): every report a client lacks after a restart is
// made again from the journal, and no client ends with ReportsGone. With
// the history alone (before regeneration) most restarts ended in
// ReportsGone.
TEST(ServiceCrashTest, RepeatedKillsWithTinyHistoriesLeaveNoReportGone) {
  KillAndRestartUnderLoad({.snapshot_every = 10'000,
                           .history_bytes = 2 * 256 * 80,
                           .rate = 40'000,
                           .kills_min = 5,
                           .kills_max = 5,
                           .gap_min_ms = 150,
                           .gap_spread_ms = 250});
}

}  // namespace
}  // namespace orderwire::service
