// What the command-line tests that run `orderwire` as child processes
// share (md_live_cli_test.cc, session_cli_test.cc): free loopback ports, the
// binary started and watched through its log, and one-shot runs through the
// shell. ORDERWIRE_BINARY is the binary's path (orderwire_test_uses_binary).
#ifndef ORDERWIRE_TESTS_CLI_CLI_PROCESSES_H_
#define ORDERWIRE_TESTS_CLI_CLI_PROCESSES_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire::cli::cli_processes {

using test_support::ChildProcess;
using test_support::ReadText;
using test_support::ScratchDir;

// `n` distinct loopback UDP ports free now: each bound to port 0 while the
// others are held, then all released (the children bind them next).
inline std::vector<int> FreeUdpPorts(int n) {
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

inline std::string Loopback(int port) {
  return absl::StrCat("127.0.0.1:", port);
}

// Waits up to `seconds` for `text` in the child's log.
inline bool LogShows(const ChildProcess& child, const std::string& text,
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
inline std::optional<int> ExitWithin(ChildProcess& child, int seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (const std::optional<int> status = child.Exited()) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

inline bool ExitedZero(const std::optional<int>& status) {
  return status.has_value() && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

inline std::unique_ptr<ChildProcess> Spawn(std::vector<std::string> args,
                                           const std::string& log) {
  args.insert(args.begin(), ORDERWIRE_BINARY);
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(std::move(args), log);
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? *std::move(child) : nullptr;
}

inline test_support::ShellOutcome Orderwire(const ScratchDir& dir,
                                            const std::string& line) {
  return test_support::RunShell(
      dir.path(), absl::StrCat("'", ORDERWIRE_BINARY, "' ", line));
}

}  // namespace orderwire::cli::cli_processes

#endif  // ORDERWIRE_TESTS_CLI_CLI_PROCESSES_H_
