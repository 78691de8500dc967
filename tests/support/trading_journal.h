// A small journal of trading sessions written offline, and the state a
// plain full replay of it gives: the fixture of the tests of the rebuild
// (state/rebuild.h) and of retention's snapshot checks
// (service/retention.h). Header-only, for tests/service.
#ifndef ORDERWIRE_TESTS_SERVICE_TRADING_JOURNAL_H_
#define ORDERWIRE_TESTS_SERVICE_TRADING_JOURNAL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/command.h"
#include "codec/kind_table.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "state/snapshot.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"

namespace orderwire::test_support {

inline constexpr std::uint64_t kTradingRecords = 600;

inline state::StateMachineOptions TradingMachineOptions() {
  state::StateMachineOptions options;
  options.engine.max_instrument = 16;
  options.max_sessions = 8;
  options.report_history = 16;
  return options;
}

// A journal of kTradingRecords records of two sessions (40 and 41) trading
// on the same accounts (the mixed workload), one flushed group per record,
// in format-1 segments of 64 KiB (a 4 KiB block per group: 15 records a
// segment, so 40 segments). Pins no configuration (as `journal write`
// writes). Returns the journal's id.
inline std::uint64_t WriteTradingJournal(const std::string& dir) {
  std::vector<std::vector<codec::Command>> commands;
  for (std::uint64_t s = 0; s < 2; ++s) {
    commands.push_back(workload::Generate(workload::Workload::kMixed,
                                          kTradingRecords / 2, 7 + s));
  }
  journal::WriterOptions o;
  o.directory = dir;
  o.durability = journal::Durability::kNone;
  o.segment_size = journal::kMinSegmentCapacity;
  o.format_version = 1;
  auto writer = journal::JournalWriter::Open(o);
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return 0;
  for (std::uint64_t i = 0; i < kTradingRecords; ++i) {
    Bytes frame(codec::kMaxFrameSize);
    const auto size = codec::EncodeCommand(commands[i % 2][i / 2], frame);
    EXPECT_TRUE(size.ok());
    frame.resize(*size);
    journal::AppendStatus status;
    while ((status = (*writer)->Append(frame, 40 + (i % 2), 1000 + i)) ==
           journal::AppendStatus::kFull) {
      EXPECT_TRUE((*writer)->Wait().ok());
    }
    EXPECT_EQ(status, journal::AppendStatus::kOk) << "record " << i + 1;
    EXPECT_TRUE((*writer)->Flush().ok());  // a group each
  }
  const std::uint64_t id = (*writer)->journal_id();
  EXPECT_TRUE((*writer)->Close().ok());
  return id;
}

// The state after records 1..up_to applied straight from a plain reader of
// the whole journal (the reference), encoded canonically (created_ns 0);
// with `snapshots_at`, a snapshot file written at each of those indexes.
inline std::vector<std::byte> TradingReference(
    const std::string& dir, std::uint64_t up_to, std::uint64_t journal_id,
    const std::vector<std::uint64_t>& snapshots_at = {}) {
  state::StateMachine machine(TradingMachineOptions());
  auto reader = journal::JournalReader::Open(dir);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  journal::Record record;
  while (machine.last_index() < up_to &&
         (*reader)->Next(record) == journal::ReadResult::kRecord) {
    EXPECT_TRUE(machine.Apply(state::Record::FromJournal(record)).ok());
    for (const std::uint64_t at : snapshots_at) {
      if (at == record.index) {
        EXPECT_TRUE(state::WriteSnapshot(machine, journal_id, dir).ok());
      }
    }
  }
  EXPECT_EQ(machine.last_index(), up_to);
  return state::EncodeSnapshot(machine, journal_id, 0);
}

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SERVICE_TRADING_JOURNAL_H_
