// `orderwire serve` refusing to start: the real binary, a UDP port held by
// the test. A start that is refused for something that needs no journal (the
// --listen port in use) leaves the journal directory as it was: a new
// directory is not created, an empty one stays empty, an existing journal's
// files keep their bytes and modification times.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/child_process.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire {
namespace {

using test_support::ReadText;
using test_support::RunShell;
using test_support::ScratchDir;

// A UDP socket bound to a loopback port the kernel chose, held while the
// object lives: the port a second bind is refused.
class HeldUdpPort {
 public:
  HeldUdpPort() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (fd_ < 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      ADD_FAILURE() << "cannot hold a UDP port";
      return;
    }
    address_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  HeldUdpPort(const HeldUdpPort&) = delete;
  HeldUdpPort& operator=(const HeldUdpPort&) = delete;
  ~HeldUdpPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::string address_;
};

// Every file under `dir`: its bytes and modification time, by path.
struct FileState {
  std::string bytes;
  std::filesystem::file_time_type modified;
  bool operator==(const FileState&) const = default;
};
std::map<std::string, FileState> Tree(const std::string& dir) {
  std::map<std::string, FileState> tree;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    FileState state{.bytes = {}, .modified = entry.last_write_time()};
    if (entry.is_regular_file()) state.bytes = ReadText(entry.path());
    tree[std::filesystem::relative(entry.path(), dir).string()] = state;
  }
  return tree;
}

// `serve --journal JOURNAL --listen ADDRESS` run to its exit.
test_support::ShellOutcome Serve(const ScratchDir& dir,
                                 const std::string& journal,
                                 const std::string& address) {
  return RunShell(dir.path(), "timeout 20 " + std::string(ORDERWIRE_BINARY) +
                                  " serve --journal " + journal +
                                  " --segment-size 1048576 --listen " +
                                  address);
}

void ExpectRefusedNaming(const test_support::ShellOutcome& run,
                         const std::string& address) {
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find(address), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Address already in use"), std::string::npos)
      << run.err;
}

TEST(ServeStart, AListenPortInUseDoesNotCreateTheJournalDirectory) {
  ScratchDir dir;
  HeldUdpPort held;
  const test_support::ShellOutcome run = Serve(dir, "j", held.address());
  ExpectRefusedNaming(run, held.address());
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("j")));
}

TEST(ServeStart, AListenPortInUseLeavesAnEmptyJournalDirectoryEmpty) {
  ScratchDir dir;
  std::filesystem::create_directory(dir.Sub("j"));
  HeldUdpPort held;
  const test_support::ShellOutcome run = Serve(dir, "j", held.address());
  ExpectRefusedNaming(run, held.address());
  EXPECT_TRUE(std::filesystem::is_empty(dir.Sub("j")));
}

TEST(ServeStart, AListenPortInUseLeavesAnExistingJournalAsItWas) {
  ScratchDir dir;
  {
    // A journal made by a serve that started and stopped cleanly.
    const std::string log = dir.Sub("first.log");
    auto first = test_support::ChildProcess::Spawn(
        {ORDERWIRE_BINARY, "serve", "--journal", dir.Sub("j"), "--segment-size",
         "1048576", "--listen", "127.0.0.1:0"},
        log);
    ASSERT_TRUE(first.ok()) << first.status();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ReadText(log).find("listening on") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    absl::StatusOr<int> stopped =
        (*first)->Stop(SIGTERM, std::chrono::seconds(20));
    ASSERT_TRUE(stopped.ok()) << stopped.status() << (*first)->LogTail();
    ASSERT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0)
        << (*first)->LogTail();
  }
  const std::map<std::string, FileState> before = Tree(dir.Sub("j"));
  ASSERT_FALSE(before.empty());
  // Modification times have a coarse clock on some filesystems: a rewrite
  // in the same tick would look unchanged without this pause.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  HeldUdpPort held;
  const test_support::ShellOutcome run = Serve(dir, "j", held.address());
  ExpectRefusedNaming(run, held.address());
  const std::map<std::string, FileState> after = Tree(dir.Sub("j"));
  EXPECT_EQ(after.size(), before.size());
  for (const auto& [path, state] : before) {
    const auto found = after.find(path);
    ASSERT_NE(found, after.end()) << path << " is gone";
    EXPECT_TRUE(found->second.bytes == state.bytes) << path << " changed";
    EXPECT_TRUE(found->second.modified == state.modified)
        << path << " was written";
  }
}

}  // namespace
}  // namespace orderwire
