// ChildProcess (child_process.h), which the replication and failover tests
// rely on to kill, pause and resume members: each control does what it
// says, seen from outside the child (/proc and the wait status).
#include "tests/support/child_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::test_support {
namespace {

using std::chrono::milliseconds;

// The State line of /proc/PID/status: 'S' sleeping, 'T' stopped, ...
char StateOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0) {
      const std::size_t at = line.find_first_not_of(" \t", 6);
      return at == std::string::npos ? '?' : line[at];
    }
  }
  return '?';
}

TEST(ChildProcess, PausesResumesAndStops) {
  ScratchDir dir("ow-child");
  auto child = ChildProcess::Spawn({"/bin/sleep", "30"}, dir.Sub("sleep.log"));
  ASSERT_TRUE(child.ok()) << child.status();
  ChildProcess& p = **child;
  ASSERT_TRUE(p.running());
  EXPECT_FALSE(p.Exited().has_value());
  ASSERT_TRUE(p.Pause().ok());
  EXPECT_EQ(StateOf(p.pid()), 'T');  // stopped when Pause returns
  ASSERT_TRUE(p.Resume().ok());
  for (int i = 0; i < 200 && StateOf(p.pid()) == 'T'; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_NE(StateOf(p.pid()), 'T');
  auto status = p.Stop(SIGTERM, milliseconds(5000));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM);
  EXPECT_FALSE(p.running());
  // The exit stays known, and further controls say it is not running.
  ASSERT_TRUE(p.Exited().has_value());
  EXPECT_EQ(*p.Exited(), *status);
  EXPECT_FALSE(p.Pause().ok());
  EXPECT_FALSE(p.Kill().ok());
}

TEST(ChildProcess, KillIsImmediateAndOutputGoesToTheLog) {
  ScratchDir dir("ow-child");
  auto child = ChildProcess::Spawn(
      {"/bin/sh", "-c", "echo started; echo oops >&2; exec sleep 30"},
      dir.Sub("sh.log"));
  ASSERT_TRUE(child.ok()) << child.status();
  for (int i = 0;
       i < 400 && (*child)->LogTail().find("oops") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_THAT((*child)->LogTail(), ::testing::HasSubstr("started\noops\n"));
  const pid_t pid = (*child)->pid();
  ASSERT_TRUE((*child)->Kill().ok());
  EXPECT_EQ(StateOf(pid), '?');  // reaped: gone from /proc
  ASSERT_TRUE((*child)->Exited().has_value());
  EXPECT_TRUE(WIFSIGNALED(*(*child)->Exited()));
}

TEST(ChildProcess, AProgramThatCannotRunExitsWith127) {
  ScratchDir dir("ow-child");
  auto child =
      ChildProcess::Spawn({"/nonexistent/program"}, dir.Sub("none.log"));
  ASSERT_TRUE(child.ok()) << child.status();
  std::optional<int> status;
  for (int i = 0; i < 400 && !(status = (*child)->Exited()).has_value(); ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 127);
}

TEST(ChildProcess, TheDestructorLeavesNothingRunning) {
  ScratchDir dir("ow-child");
  pid_t pid = -1;
  {
    auto child =
        ChildProcess::Spawn({"/bin/sleep", "30"}, dir.Sub("sleep.log"));
    ASSERT_TRUE(child.ok()) << child.status();
    pid = (*child)->pid();
    ASSERT_TRUE((*child)->Pause().ok());  // even a stopped one
  }
  EXPECT_EQ(StateOf(pid), '?');
}

}  // namespace
}  // namespace orderwire::test_support
