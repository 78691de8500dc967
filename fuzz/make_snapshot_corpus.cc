// Writes the seed corpus of fuzz_snapshot into DIR/fuzz_snapshot/: real
// snapshot files of a few states. Run at build time by fuzz/CMakeLists.txt,
// after fuzz_make_corpus (which empties DIR).
//
//   fuzz_make_snapshot_corpus DIR
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "engine/workload.h"
#include "state/record_flags.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace {

using orderwire::state::StateMachine;
using orderwire::state::StateMachineOptions;

// Applies `per_session` mixed commands of each of `sessions` new sessions
// (ids first_id, first_id + 3, ...), interleaved, some flagged Unauthorized.
void Feed(StateMachine& machine, std::uint32_t sessions,
          std::size_t per_session, std::uint64_t seed, std::uint32_t first_id) {
  std::vector<std::vector<orderwire::codec::Command>> streams;
  for (std::uint32_t s = 0; s < sessions; ++s) {
    streams.push_back(orderwire::workload::Generate(
        orderwire::workload::Workload::kMixed, per_session, seed + s));
  }
  std::vector<std::byte> frame(orderwire::codec::kMaxFrameSize);
  for (std::size_t i = 0; i < per_session; ++i) {
    for (std::uint32_t s = 0; s < sessions; ++s) {
      const auto size = orderwire::codec::EncodeCommand(streams[s][i], frame);
      if (!size.ok()) continue;
      const auto status = machine.Apply(orderwire::state::Record{
          machine.last_index() + 1, 0, first_id + 3 * s,
          i % 37 == 5 ? orderwire::state::kRecordUnauthorized : 0u,
          std::span<const std::byte>(frame.data(), *size)});
      if (!status.ok()) {
        std::fprintf(stderr, "fuzz_make_snapshot_corpus: %s\n",
                     std::string(status.message()).c_str());
        std::exit(1);
      }
    }
  }
}

StateMachineOptions Small() {
  StateMachineOptions options;
  options.engine.max_instrument = 16;
  options.engine.max_live_orders = 64;
  options.max_sessions = 4;
  options.report_history = 8;
  options.history_budget_bytes = std::size_t{2} * 8 * 80;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_snapshot_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir =
      std::filesystem::path(argv[1]) / "fuzz_snapshot";
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const StateMachine& machine) {
    const std::vector<std::byte> bytes =
        orderwire::state::EncodeSnapshot(machine, 0x0123456789ABCDEFull, 1);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  };
  {
    StateMachine machine(Small());
    write("empty", machine);
  }
  {
    StateMachine machine(Small());
    Feed(machine, 1, 40, 1, 40);
    write("one_session", machine);
  }
  {
    StateMachine machine(Small());
    Feed(machine, 3, 30, 2, 40);  // histories wrap; the budget runs out
    (void)machine.ReleaseHistory(1);
    write("three_sessions_released", machine);
    auto config = machine.options().engine;
    config.min_price = 99'995;
    config.max_live_orders = 80;
    if (machine.Reconfigure(config, 3).ok()) {
      Feed(machine, 2, 10, 7, 100);
      write("reconfigured", machine);
    }
  }
  return 0;
}
