// Test support for the service's end-to-end tests over loopback
// (service_test.cc, service_resend_test.cc, service_refusal_test.cc, in the
// service_test binary): frames, the counters, the journal read back and
// replayed as `orderwire replay` does, streams of the mixed workload packed
// into datagrams. The harness itself (TestOptions, RunningService,
// TestClient) is tests/support/service_harness.h, the limit orders
// tests/support/orders.h.
#ifndef ORDERWIRE_TESTS_SERVICE_SERVICE_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_SERVICE_SERVICE_TEST_SUPPORT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/run_client.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/error.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "codec/wire.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "net/udp.h"
#include "service/service.h"
#include "service/session_table.h"
#include "state/record_flags.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

// Frames compared as hex, so a failure shows both.
#define EXPECT_FRAME_EQ(actual, expected) EXPECT_EQ(Hex(actual), Hex(expected))

namespace orderwire::service::end_to_end {

using state::kRecordUnauthorized;
using state::Output;
using state::Record;
using state::SessionState;
using state::StateMachine;
using state::StateMachineOptions;

using config::ParseServiceConfig;
using config::ServiceConfig;

using client::ClientOptions;
using client::ClientResult;
using client::Fnv1a;
using client::kFnvOffset;
using client::RunClient;
using net::DatagramBatch;
using net::Endpoint;
using net::UdpSocket;

using codec::CodecError;
using codec::Kind;
using codec::Liquidity;
using codec::Side;
using codec::TimeInForce;
using test_support::AcceptedFor;
using test_support::Bytes;
using test_support::Datagram;
using test_support::Frame;
using test_support::Hex;
using test_support::Limit;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;

inline std::uint64_t SequenceOf(const Bytes& frame) {
  return codec::LoadLE<std::uint64_t>(frame.data() + codec::kSequenceOffset);
}

inline Kind KindOf(const Bytes& frame) {
  return codec::LoadLE<Kind>(frame.data() + codec::kKindOffset);
}

inline std::uint64_t Sum(std::span<const std::uint64_t> values) {
  std::uint64_t sum = 0;
  for (std::uint64_t v : values) sum += v;
  return sum;
}

inline std::size_t Malformed(const ServiceStats& stats, CodecError error) {
  return stats.malformed[static_cast<std::size_t>(error)];
}

inline std::size_t Refused(const ServiceStats& stats, Admission admission) {
  return stats.refused[static_cast<std::size_t>(admission)];
}

// One journal record, copied out of the reader's mapping.
struct JournalRecord {
  std::uint64_t index;
  std::uint32_t session_id;
  std::uint32_t flags;
  Bytes frame;
};

// The journal's records, and the reports of applying them through a fresh
// StateMachine, as `orderwire replay` does: every report in emission order,
// numbered on its session, and the same split by session.
struct Replay {
  std::vector<JournalRecord> records;
  std::vector<Bytes> reports;
  std::map<std::uint32_t, std::vector<Bytes>> by_session;
};

inline Replay ReplayJournal(const std::string& directory,
                            const engine::EngineConfig& config) {
  Replay replay;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(directory);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return replay;
  StateMachineOptions options;
  options.engine = config;
  auto machine = std::make_unique<StateMachine>(options);
  journal::Record record;
  journal::ReadResult result;
  while ((result = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
    replay.records.push_back(JournalRecord{
        record.index, record.session_id, record.flags,
        Bytes(record.frame.bytes().begin(), record.frame.bytes().end())});
    const absl::Status applied = machine->Apply(Record::FromJournal(record));
    EXPECT_TRUE(applied.ok()) << applied;
    for (const Output& out : machine->outputs()) {
      replay.reports.emplace_back(out.frame.begin(), out.frame.end());
      replay.by_session[out.session_id].emplace_back(out.frame.begin(),
                                                     out.frame.end());
    }
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  return replay;
}

// Expects the journal to hold exactly `frames`, in order, for `session`:
// each command once, verbatim.
inline void ExpectJournalHolds(const Replay& replay, std::uint32_t session,
                               const std::vector<Bytes>& frames) {
  ASSERT_EQ(replay.records.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(replay.records[i].index, i + 1);
    EXPECT_EQ(replay.records[i].session_id, session);
    EXPECT_FRAME_EQ(replay.records[i].frame, frames[i]);
  }
}

// `count` commands of the mixed workload, encoded, and packed into
// datagrams of `session` as full as they go.
struct Stream {
  std::vector<Bytes> frames;
  std::vector<Bytes> datagrams;
};

inline Stream MixedStream(std::uint32_t session, std::size_t count,
                          std::uint64_t seed) {
  Stream stream;
  const std::vector<codec::Command> commands =
      workload::Generate(workload::Workload::kMixed, count, seed);
  const std::vector<std::byte> bytes = workload::EncodeCommands(commands);
  std::size_t pos = 0;
  for (const codec::Command& command : commands) {
    const std::size_t size = codec::Info(command.kind).frame_size;
    stream.frames.emplace_back(
        bytes.begin() + static_cast<std::ptrdiff_t>(pos),
        bytes.begin() + static_cast<std::ptrdiff_t>(pos + size));
    pos += size;
  }
  EXPECT_EQ(pos, bytes.size());
  std::array<std::byte, codec::kMaxDatagramSize> buffer{};
  codec::DatagramBuilder builder(buffer, session);
  for (const Bytes& frame : stream.frames) {
    if (!builder.Fits(frame.size())) {
      stream.datagrams.emplace_back(builder.bytes().begin(),
                                    builder.bytes().end());
      builder.Reset(session);
    }
    EXPECT_EQ(builder.AppendFrame(frame), CodecError::kOk);
  }
  stream.datagrams.emplace_back(builder.bytes().begin(), builder.bytes().end());
  return stream;
}

}  // namespace orderwire::service::end_to_end

#endif  // ORDERWIRE_TESTS_SERVICE_SERVICE_TEST_SUPPORT_H_
