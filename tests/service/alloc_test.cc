// Admission allocates nothing either (SessionTable::Admit, the Sequencer's
// hot path), also while idle sessions give their slots back and new ones
// take them (the id and source indexes churn).
//
// The report history allocates nothing in the StateMachine's steady state
// (state/state_machine.h, state/report_history.h): once every session's
// ring has grown to its cap, Apply() allocates exactly as often as with no
// history at all; while rings grow, the history adds the doublings and no
// more. tests/support/counting_new.h counts (its own binary, because it
// replaces the global operator new).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "codec/command.h"
#include "config/service_config.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "service/latency_buckets.h"
#include "service/metrics/metrics.h"
#include "service/service.h"
#include "service/session_table.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/counting_new.h"

namespace orderwire::service {
namespace {

using state::Record;
using state::StateMachine;
using state::StateMachineOptions;

using config::ParseServiceConfig;
using config::ServiceConfig;

constexpr std::uint32_t kSessions = 4;

// The mixed workload of each session, encoded, interleaved round-robin.
struct AllocStream {
  std::vector<std::vector<std::byte>> frames;
  std::vector<std::uint32_t> sessions;
};

AllocStream Interleaved(std::size_t per_session) {
  std::vector<std::vector<codec::Command>> commands;
  for (std::uint32_t s = 0; s < kSessions; ++s) {
    commands.push_back(
        workload::Generate(workload::Workload::kMixed, per_session, 21 + s));
  }
  AllocStream stream;
  for (std::size_t i = 0; i < per_session; ++i) {
    for (std::uint32_t s = 0; s < kSessions; ++s) {
      std::vector<std::byte> frame(codec::kMaxFrameSize);
      const auto size = codec::EncodeCommand(commands[s][i], frame);
      EXPECT_TRUE(size.ok());
      frame.resize(*size);
      stream.frames.push_back(std::move(frame));
      stream.sessions.push_back(100 + s);
    }
  }
  return stream;
}

// Applies `stream` to a machine with `options`, the first `warm_up`
// records uncounted; returns the allocations during the rest.
std::size_t AllocationsAfter(const StateMachineOptions& options,
                             const AllocStream& stream, std::size_t warm_up,
                             std::size_t* ring_capacity = nullptr) {
  auto machine = std::make_unique<StateMachine>(options);
  std::uint64_t index = 1;
  for (std::size_t i = 0; i < stream.frames.size(); ++i) {
    if (i == warm_up) {
      if (ring_capacity != nullptr) {
        *ring_capacity = machine->session(0).history.capacity();
        for (std::uint32_t s = 1; s < kSessions; ++s) {
          *ring_capacity =
              std::min(*ring_capacity, machine->session(s).history.capacity());
        }
      }
      test_support::StartCountingAllocations();
    }
    const absl::Status status = machine->Apply(
        Record{index++, 0, stream.sessions[i], 0, stream.frames[i]});
    if (!status.ok()) {
      (void)test_support::StopCountingAllocations();
      ADD_FAILURE() << status;
      return SIZE_MAX;
    }
  }
  return test_support::StopCountingAllocations();
}

// The report history adds no allocation once every ring has reached its
// cap: the same records allocate exactly as often with histories as with
// none. (The engine itself allocates a few times in this four-session mix:
// 16 blocks of 8 KiB over 160,000 commands, the same in both runs; that is
// the engine's, not the history's.)
TEST(StateMachineAlloc, HistoriesAtTheirCapAddNoAllocation) {
  const AllocStream stream = Interleaved(60'000);
  StateMachineOptions with_history;
  with_history.report_history = 1 << 10;  // reached within the warm-up
  StateMachineOptions without_history = with_history;
  without_history.history_budget_bytes = 0;
  std::size_t capacity = 0;
  const std::size_t warm_up = std::size_t{kSessions} * 20'000;
  const std::size_t with =
      AllocationsAfter(with_history, stream, warm_up, &capacity);
  const std::size_t without =
      AllocationsAfter(without_history, stream, warm_up);
  EXPECT_EQ(capacity, std::size_t{1} << 10);
  EXPECT_EQ(with, without);
}

// While histories grow, each allocation a history adds is a ring doubling:
// at most log2(cap / 2) per session, whatever the number of reports.
TEST(StateMachineAlloc, GrowthAddsOnlyTheDoublings) {
  const AllocStream stream = Interleaved(40'000);
  StateMachineOptions with_history;
  with_history.report_history = 1 << 12;
  StateMachineOptions without_history = with_history;
  without_history.history_budget_bytes = 0;
  // After each session's first command (its state is created then).
  const std::size_t with = AllocationsAfter(with_history, stream, kSessions);
  const std::size_t without =
      AllocationsAfter(without_history, stream, kSessions);
  const std::size_t doublings =
      static_cast<std::size_t>(std::bit_width(std::size_t{1} << 11)) - 1;
  EXPECT_GT(with, without);
  EXPECT_LE(with - without, kSessions * doublings);
}

// What `serve --metrics-listen` adds to the service's thread allocates
// nothing: recording a latency, refreshing and publishing the counters into
// the mirror; and the HTTP thread's read of the mirror neither.
TEST(MetricsAlloc, RecordingAndPublishingAllocateNothing) {
  LatencyBuckets latency;
  StatsMirror mirror;
  ServiceStats stats;
  ServiceStats read;
  test_support::StartCountingAllocations();
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    latency.Record(i * 997);
    stats.datagrams_in = i;
    stats.command_latency = latency;
    mirror.Publish(stats);
    mirror.Read(&read);
  }
  EXPECT_EQ(test_support::StopCountingAllocations(), 0u);
  EXPECT_EQ(read.datagrams_in, 9'999u);
  EXPECT_EQ(read.command_latency.count(), 10'000u);
}

// The journal holds every even id (at sequence 2): those come back with
// any datagram; odd ids open with frame 1.
struct EvenIdsJournaled final : JournaledSessions {
  std::uint64_t NextExpected(std::uint32_t id) const override {
    return id % 2 == 0 ? 2 : 0;
  }
};

// 200,000 datagrams of 4,000 ids from 64 source addresses into a table of
// 111 places (8 per address): sessions are admitted, refused for either
// number, and released oldest first so that others take their slots. 111
// fills an id index reserved for just that many past the 25/32 beyond which
// absl rehashes tombstones into a new allocation.
TEST(SessionTableAlloc, AdmittingAndGivingSlotsBackAllocateNothing) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "[service]\nmax_sessions = 111\nmax_sessions_per_source = 8\n");
  ASSERT_TRUE(config.ok()) << config.status();
  constexpr std::uint32_t kIds = 4000;
  std::vector<test_support::Bytes> bytes;
  std::vector<codec::DatagramView> datagrams;
  for (std::uint32_t id = 0; id < kIds; ++id) {
    bytes.push_back(test_support::Datagram(
        id, {test_support::Frame(1, codec::CancelByOrder{7, 1})}));
  }
  for (const test_support::Bytes& b : bytes) {
    datagrams.push_back(*codec::DatagramView::Parse(b));
  }
  std::vector<Endpoint> sources;
  for (int a = 0; a < 64; ++a) {
    sources.push_back(
        *Endpoint::Parse("127.0.1." + std::to_string(a) + ":4000"));
  }
  const EvenIdsJournaled journal;
  SessionTable table(*config, &journal);
  std::vector<std::uint32_t> held;  // slots, oldest first
  held.reserve(1 << 20);
  std::size_t oldest = 0;
  std::array<std::size_t, kAdmissionCount> outcomes{};
  test_support::StartCountingAllocations();
  for (std::uint32_t i = 0; i < 200'000; ++i) {
    const std::uint32_t id = (i * 7919u) % kIds;
    Session* session = nullptr;
    const Admission a =
        table.Admit(datagrams[id], sources[(i / 3) % 64], true, &session);
    ++outcomes[static_cast<std::size_t>(a)];
    if (a == Admission::kOk && session != nullptr && held.size() < (1 << 20)) {
      held.push_back(session->index);
    }
    if (i % 5 == 0 && oldest < held.size()) {
      Session& slot = table.at(held[oldest++]);
      if (slot.held) (void)table.Release(slot);
    }
  }
  EXPECT_EQ(test_support::StopCountingAllocations(), 0u);
  EXPECT_GT(outcomes[static_cast<std::size_t>(Admission::kOk)], 10'000u);
  EXPECT_GT(
      outcomes[static_cast<std::size_t>(Admission::kTooManySessions)] +
          outcomes[static_cast<std::size_t>(Admission::kTooManyFromSource)],
      0u);
  EXPECT_LE(table.held(), 111u);
}

}  // namespace
}  // namespace orderwire::service
