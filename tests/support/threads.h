// The threads of this process and whether each blocks the stop signals,
// read from /proc/self/task/<tid>/status ("SigBlk:", a hexadecimal mask in
// which signal n is bit n-1). For tests of base/background_thread.h's rule:
// no helper thread may take SIGINT or SIGTERM.
#ifndef ORDERWIRE_TESTS_SUPPORT_THREADS_H_
#define ORDERWIRE_TESTS_SUPPORT_THREADS_H_

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace orderwire::test_support {

// The signal mask of every thread of this process, by thread id, from
// /proc/self/task/<tid>/status ("SigBlk:", signal n is bit n-1). A thread
// whose status cannot be read shows mask 0 (blocks nothing), so a test
// cannot pass by failing to read.
inline std::map<std::string, std::uint64_t> ThreadSignalMasks() {
  std::map<std::string, std::uint64_t> masks;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    std::uint64_t mask = 0;
    while (std::getline(status, line)) {
      if (line.rfind("SigBlk:", 0) != 0) continue;
      mask = std::stoull(line.substr(7), nullptr, 16);
      break;
    }
    masks[task.path().filename().string()] = mask;
  }
  return masks;
}

// The ids of this process's threads that do NOT block both SIGINT and
// SIGTERM. glibc starts every new thread with every signal blocked (all of
// 1..31 but SIGKILL and SIGSTOP) and sets its real mask as the thread
// begins to run, so a thread caught in that instant would look blocked
// whatever it will run with: the scan is repeated (for up to 2 s) until no
// thread shows that start mask.
inline std::set<std::string> ThreadsTakingStopSignals() {
  constexpr std::uint64_t kStop =
      (std::uint64_t{1} << (SIGINT - 1)) | (std::uint64_t{1} << (SIGTERM - 1));
  constexpr std::uint64_t kClassic = 0x7FFF'FFFF;  // signals 1..31
  constexpr std::uint64_t kStartMask = kClassic &
                                       ~(std::uint64_t{1} << (SIGKILL - 1)) &
                                       ~(std::uint64_t{1} << (SIGSTOP - 1));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::map<std::string, std::uint64_t> masks = ThreadSignalMasks();
  const auto starting = [&masks] {
    for (const auto& [tid, mask] : masks) {
      if ((mask & kClassic) == kStartMask) return true;
    }
    return false;
  };
  while (starting() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    masks = ThreadSignalMasks();
  }
  std::set<std::string> taking;
  for (const auto& [tid, mask] : masks) {
    if ((mask & kStop) != kStop) taking.insert(tid);
  }
  return taking;
}

// How many threads this process has.
inline std::size_t ThreadCount() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_THREADS_H_
