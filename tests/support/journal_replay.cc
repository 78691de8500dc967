// The per-session replay of a journal; see journal_replay.h.
#include "tests/support/journal_replay.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "service/state_machine.h"

namespace orderwire::test_support {

SessionReplay ReplayJournalBySession(const std::string& directory,
                                     const engine::EngineConfig& engine) {
  SessionReplay replay;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(directory);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return replay;
  service::StateMachineOptions options;
  options.engine = engine;
  auto machine = std::make_unique<service::StateMachine>(options);
  journal::Record record;
  journal::ReadResult result;
  while ((result = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
    ++replay.records;
    ++replay.records_by_session[record.session_id];
    const absl::Status applied =
        machine->Apply(service::Record::FromJournal(record));
    EXPECT_TRUE(applied.ok()) << applied;
    for (const service::Output& out : machine->outputs()) {
      replay.reports_by_session[out.session_id].emplace_back(out.frame.begin(),
                                                             out.frame.end());
    }
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  return replay;
}

}  // namespace orderwire::test_support
