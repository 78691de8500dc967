// ChildProcess: a program the tests start and control as a separate
// process: nats-server nodes (nats_cluster.h), and `orderwire serve` as
// primary and standby in the failover tests, which must be killed
// (SIGKILL), paused (SIGSTOP) and resumed (SIGCONT) like a real member.
//
// The child's standard output and error go to a log file; it gets
// PR_SET_PDEATHSIG(SIGKILL), so that a test that crashes leaves nothing
// running, and the destructor kills and reaps it.
#ifndef ORDERWIRE_TESTS_SUPPORT_CHILD_PROCESS_H_
#define ORDERWIRE_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::test_support {

// The last `bytes` of the file at `path` (empty if it cannot be read), for
// failure messages.
std::string FileTail(const std::string& path, std::size_t bytes);

class ChildProcess {
 public:
  // Starts args[0] (a path) with `args`, output to `log_path` (truncated).
  // Errors: the log cannot be opened, fork fails. An exec that fails shows
  // as an exit with status 127.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      std::vector<std::string> args, std::string log_path);

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps it if it is still running.
  ~ChildProcess();

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool running() const { return pid_ > 0; }
  [[nodiscard]] const std::string& log_path() const { return log_path_; }
  // The last `bytes` of the log, for failure messages.
  [[nodiscard]] std::string LogTail(std::size_t bytes = 4000) const;

  // SIGKILL and reap. Error if it is not running.
  absl::Status Kill();
  // SIGSTOP, and wait until it has stopped (kill() returns before it has):
  // nothing sent to it afterwards is served before the pause.
  absl::Status Pause();
  // SIGCONT.
  absl::Status Resume();
  // Sends `signal` and waits up to `timeout` for the exit; returns the wait
  // status. DeadlineExceeded if it is still running (it is then left so).
  absl::StatusOr<int> Stop(int signal, std::chrono::milliseconds timeout);
  // The wait status once it has exited (reaping it; a Kill() counts),
  // nullopt while it runs.
  std::optional<int> Exited();

 private:
  ChildProcess(pid_t pid, std::string log_path)
      : pid_(pid), log_path_(std::move(log_path)) {}

  pid_t pid_ = -1;
  std::optional<int> exit_status_;
  std::string log_path_;
};

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_CHILD_PROCESS_H_
