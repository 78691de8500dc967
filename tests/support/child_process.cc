// See child_process.h.
#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace orderwire::test_support {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    std::vector<std::string> args, std::string log_path) {
  if (args.empty()) return absl::InvalidArgumentError("no program to start");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int log_fd =
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(
        absl::StrCat("open ", log_path, ": ", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(log_fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(error)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  return std::unique_ptr<ChildProcess>(
      new ChildProcess(pid, std::move(log_path)));
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string ChildProcess::LogTail(std::size_t bytes) const {
  return FileTail(log_path_, bytes);
}

std::string FileTail(const std::string& path, std::size_t bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  if (all.size() > bytes) all = all.substr(all.size() - bytes);
  return all;
}

absl::Status ChildProcess::Kill() {
  if (pid_ <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_path_, ": the process is not running"));
  }
  ::kill(pid_, SIGKILL);
  int wstatus = 0;
  ::waitpid(pid_, &wstatus, 0);
  exit_status_ = wstatus;
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status ChildProcess::Pause() {
  if (pid_ <= 0 || ::kill(pid_, SIGSTOP) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_path_, ": the process is not running"));
  }
  int wstatus = 0;
  if (::waitpid(pid_, &wstatus, WUNTRACED) != pid_ || !WIFSTOPPED(wstatus)) {
    return absl::InternalError(absl::StrCat(
        "pid ", pid_, " did not stop (wait status ", wstatus, ")"));
  }
  return absl::OkStatus();
}

absl::Status ChildProcess::Resume() {
  if (pid_ <= 0 || ::kill(pid_, SIGCONT) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_path_, ": the process is not running"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ChildProcess::Stop(int signal,
                                       std::chrono::milliseconds timeout) {
  if (pid_ <= 0 || ::kill(pid_, signal) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_path_, ": the process is not running"));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (std::optional<int> status = Exited(); status.has_value()) {
      return *status;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("pid ", pid_, " still running ", timeout.count(),
                       " ms after signal ", signal));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<int> ChildProcess::Exited() {
  if (pid_ <= 0) return exit_status_;
  int wstatus = 0;
  if (::waitpid(pid_, &wstatus, WNOHANG) != pid_) return std::nullopt;
  pid_ = -1;
  exit_status_ = wstatus;
  return exit_status_;
}

}  // namespace orderwire::test_support
