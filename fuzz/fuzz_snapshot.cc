// Fuzz target: loading snapshot files (state/snapshot.h, docs/SNAPSHOT.md).
//
// A snapshot file is untrusted input: a restart loads it, a disk can rot it,
// anyone with access can edit it. Each input is tried twice: as it is (so
// the checksums refuse nearly all mutations), and with every checksum
// recomputed (ResealSnapshot), so the mutations reach the checks behind the
// checksums (sizes, counts, ranges, cross-references) as a forger could.
// For both, the target checks:
//
// 1. Nothing crashes, leaks or trips a sanitizer.
// 2. A refused file gives an error and no state (never half-loaded).
// 3. A file that loads is canonical: its state re-encodes (with the
//    header's journal_id and created_ns) to exactly the bytes loaded; a
//    version-2 file (still read) re-encodes to a version-3 file that
//    loads, 8 bytes longer (its feed_session_start).
// 4. A loaded state is whole: the engine's invariants hold
//    (CheckInvariants), and it goes on applying commands of every kind for
//    its sessions and a new one (each record is applied or refused, the
//    invariants still hold after each).
//
// Seeds: real snapshots written by fuzz_make_snapshot_corpus (an empty
// state, one session, several sessions with wrapped and released report
// histories, after a reconfiguration).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/testing/random_commands.h"
#include "codec/wire.h"
#include "fuzz/fuzz_check.h"
#include "state/snapshot.h"
#include "state/state_machine.h"

namespace {

using orderwire::state::LoadedSnapshot;

void Check(std::span<const std::byte> bytes, std::uint64_t seed) {
  absl::StatusOr<LoadedSnapshot> loaded =
      orderwire::state::DecodeSnapshot(bytes, "input", 0);
  if (!loaded.ok()) {
    FUZZ_CHECK(!loaded.status().message().empty());
    return;
  }
  orderwire::state::StateMachine& machine = *loaded->machine;
  FUZZ_CHECK(machine.last_index() == loaded->info.index);
  const std::vector<std::byte> again = orderwire::state::EncodeSnapshot(
      machine, loaded->info.journal_id, loaded->info.created_ns);
  if (loaded->version == orderwire::state::kSnapshotVersion) {
    FUZZ_CHECK(again.size() == bytes.size());
    FUZZ_CHECK(std::equal(again.begin(), again.end(), bytes.begin()));
  } else {
    FUZZ_CHECK(again.size() == bytes.size() + 8);
    FUZZ_CHECK(orderwire::state::DecodeSnapshot(again, "again", 0).ok());
  }
  FUZZ_CHECK(machine.engine().CheckInvariants().ok());

  // Go on: commands of every kind for the sessions it has and a new one.
  orderwire::codec::testing::SplitMix64 rng(seed);
  std::vector<std::byte> frame(orderwire::codec::kMaxFrameSize);
  std::uint64_t index = machine.last_index();
  for (int i = 0; i < 32; ++i) {
    const auto kind = static_cast<orderwire::codec::Kind>(1 + rng.Below(5));
    orderwire::codec::Command command =
        orderwire::codec::testing::RandomCommand(rng, kind, rng.Below(4) == 0);
    const std::size_t sessions = machine.session_count();
    const std::uint32_t pick =
        static_cast<std::uint32_t>(rng.Below(sessions + 1));
    std::uint32_t session_id = 0xFFFF'FFF0u + static_cast<std::uint32_t>(i % 2);
    std::uint64_t sequence = 1;
    if (pick < sessions) {
      const auto& session = machine.session(pick);
      session_id = session.id;
      sequence = session.next_expected;
    } else if (const auto* known = machine.Find(session_id); known != nullptr) {
      sequence = known->next_expected;
    }
    command.sequence = sequence;
    const auto size = orderwire::codec::EncodeCommand(command, frame);
    if (!size.ok()) continue;
    const absl::Status applied = machine.Apply(orderwire::state::Record{
        index + 1, 0, session_id, 0,
        std::span<const std::byte>(frame.data(), *size)});
    if (applied.ok()) ++index;
    FUZZ_CHECK(machine.engine().CheckInvariants().ok());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::span<const std::byte> input(
      reinterpret_cast<const std::byte*>(data), size);
  std::uint64_t seed = 0;
  for (std::size_t i = 0; i < size && i < 64; ++i) seed = seed * 31 + data[i];
  Check(input, seed);
  std::vector<std::byte> resealed(input.begin(), input.end());
  orderwire::state::ResealSnapshot(resealed);
  Check(resealed, seed);
  return 0;
}
