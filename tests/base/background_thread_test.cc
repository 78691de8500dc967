// base/background_thread.h: a thread started with StartWithStopSignalsBlocked
// blocks SIGINT and SIGTERM, and its creator's mask is left as it was.
#include "base/background_thread.h"

#include <signal.h>

#include <atomic>
#include <thread>

#include "gtest/gtest.h"
#include "tests/support/threads.h"

namespace orderwire::base {
namespace {

TEST(BackgroundThread, BlocksTheStopSignalsOnTheNewThreadOnly) {
  ASSERT_FALSE(StopSignalsBlockedHere())
      << "the test thread must start with the stop signals deliverable";
  std::atomic<bool> blocked{false};
  std::thread thread = StartWithStopSignalsBlocked(
      [&blocked] { blocked.store(StopSignalsBlockedHere()); });
  thread.join();
  EXPECT_TRUE(blocked.load());
  EXPECT_FALSE(StopSignalsBlockedHere()) << "the creator's mask changed";
}

TEST(BackgroundThread, APlainThreadTakesTheStopSignals) {
  // What the check above tells apart: a thread started the usual way
  // inherits a mask that lets SIGINT and SIGTERM in.
  std::atomic<bool> blocked{true};
  std::thread thread([&blocked] { blocked.store(StopSignalsBlockedHere()); });
  thread.join();
  EXPECT_FALSE(blocked.load());
}

TEST(BackgroundThread, TheProcScanSeesWhichThreadsTakeTheSignals) {
  const auto before = test_support::ThreadsTakingStopSignals();
  std::atomic<bool> release{false};
  std::thread plain([&release] {
    while (!release.load()) std::this_thread::yield();
  });
  std::thread quiet = StartWithStopSignalsBlocked([&release] {
    while (!release.load()) std::this_thread::yield();
  });
  const auto during = test_support::ThreadsTakingStopSignals();
  release.store(true);
  plain.join();
  quiet.join();
  EXPECT_EQ(during.size(), before.size() + 1)
      << "the plain thread, and only it, is a new thread taking the signals";
}

}  // namespace
}  // namespace orderwire::base
