// engine_profile: a small driver for instruction-count profiles of the
// engine (and of the calibration book) under callgrind, where Google
// Benchmark's repetitions would only add noise. It generates the workload,
// runs it once untimed (the tables grow to its size), resets, and runs it
// again between CALLGRIND_START/STOP_INSTRUMENTATION, so only that pass is
// counted. Instructions per command = the total Ir callgrind prints / count.
//
//   valgrind --tool=callgrind --dump-instr=no --instr-atstart=no
//       --callgrind-out-file=cg.out build/release/bench/engine_profile wl1
//   (one command line)
//   callgrind_annotate cg.out | head -40
//
// Usage: engine_profile WORKLOAD [COUNT] [calib]
//   WORKLOAD: mixed, wl1, deep, swings, crash or churn (engine/workload.h);
//   COUNT: commands, default 1,000,000; "calib": the calibration book
//   instead of the engine (wl1 only).
#include <valgrind/callgrind.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/calib_book.h"
#include "codec/command.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"

int main(int argc, char** argv) {
  using namespace orderwire;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: engine_profile "
                 "mixed|wl1|deep|swings|crash|churn [COUNT] [calib]\n");
    return 2;
  }
  const auto which = workload::ParseWorkload(argv[1]);
  if (!which.ok()) {
    std::fprintf(stderr, "engine_profile: %s\n",
                 std::string(which.status().message()).c_str());
    return 2;
  }
  const std::size_t count =
      argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1'000'000;
  const bool calib = argc > 3 && std::string(argv[3]) == "calib";
  const std::vector<codec::Command> commands =
      workload::Generate(*which, count, 1);
  std::uint64_t reports_seen = 0;
  if (calib) {
    if (*which != workload::Workload::kWl1) {
      std::fprintf(stderr,
                   "engine_profile: the calibration book is wl1 only\n");
      return 2;
    }
    const std::vector<bench::CalibCommand> packed = bench::PackWl1(commands);
    bench::CalibBook book(static_cast<std::uint32_t>(packed.size()) + 1);
    CALLGRIND_START_INSTRUMENTATION;
    for (const bench::CalibCommand& c : packed) {
      book.Execute(c);
      reports_seen += book.reports().size();
    }
    CALLGRIND_STOP_INSTRUMENTATION;
  } else {
    auto engine = std::make_unique<engine::Engine>(engine::EngineConfig{});
    engine::ReportBuffer reports(1 << 12);
    for (const codec::Command& c : commands) {
      (void)engine->Execute(c, reports);
      reports.Clear();
    }
    engine->Reset();
    CALLGRIND_START_INSTRUMENTATION;
    for (const codec::Command& c : commands) {
      (void)engine->Execute(c, reports);
      reports_seen += reports.size();
      reports.Clear();
    }
    CALLGRIND_STOP_INSTRUMENTATION;
  }
  std::printf("%zu commands, %llu reports\n", count,
              static_cast<unsigned long long>(reports_seen));
  return 0;
}
