// The reports a journal replays into, per session: what `orderwire replay`
// gives, for end-to-end tests that compare what clients received live with
// the journal the service left (tests/client/failover_test.cc,
// tests/cluster/failover_test.cc); and a journal's records as owned
// copies, to compare two members' journals record by record, and its
// journal_id. Part of
// orderwire::test_support_service.
#ifndef ORDERWIRE_TESTS_SUPPORT_JOURNAL_REPLAY_H_
#define ORDERWIRE_TESTS_SUPPORT_JOURNAL_REPLAY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/engine.h"
#include "tests/support/bytes.h"

namespace orderwire::test_support {

struct SessionReplay {
  // The journal's records (commands applied), in index order.
  std::uint64_t records = 0;
  // How many records each session has in the journal.
  std::map<std::uint32_t, std::uint64_t> records_by_session;
  // Each session's report frames, in report-sequence order.
  std::map<std::uint32_t, std::vector<Bytes>> reports_by_session;
  // The market-data feed's messages: feed[i] is the one of sequence i + 1.
  std::vector<Bytes> feed;
  // feed_after[i]: how many feed messages the first i + 1 records made (the
  // next feed sequence of a state that applied them, less 1).
  std::vector<std::uint64_t> feed_after;
  // The engine's live orders at the end (Engine::ForEachLiveOrder's order).
  std::vector<engine::OrderInfo> live_orders;
};

// Reads the journal in `directory` to its end and applies every record
// through a fresh StateMachine with `engine`. A journal that does not open
// or read to a clean end fails the test (the replay so far is returned).
SessionReplay ReplayJournalBySession(const std::string& directory,
                                     const engine::EngineConfig& engine);

// What one session received live (its report frames concatenated, as a
// client's reports_out file holds them) against `replayed`, that session's
// reports from ReplayJournalBySession. A client stops listening a quiet
// period after its last acknowledgement while other sessions may trade on
// and fill or self-trade-cancel its resting orders, so `live` must be a
// prefix of the replayed frames ending on a frame boundary, byte for byte,
// and every replayed frame after it must be one another session's command
// caused (a maker's Filled, a SelfTrade Cancelled): nothing answering the
// session's own commands may be missing. Each breach fails the test (with
// `session` named); returns how many frames were received live.
std::size_t ExpectLiveIsReplayPrefix(std::uint32_t session, const Bytes& live,
                                     const std::vector<Bytes>& replayed);

// The same for a journal seeded from a snapshot of `source`'s state
// (cluster/seed.h: it starts past index 1): the records of `source` below
// its first index, then its own, applied from an empty state.
SessionReplay ReplaySeededJournalBySession(const std::string& source,
                                           const std::string& directory,
                                           const engine::EngineConfig& engine);

// A journal record with its own bytes, comparable field by field.
struct JournalRecordCopy {
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;
  Bytes frame;
  bool operator==(const JournalRecordCopy&) const = default;
};

// Every record of the journal in `directory`, in index order. A journal
// that does not open or read to a clean end fails the test.
std::vector<JournalRecordCopy> ReadJournalRecords(const std::string& directory);

// The journal_id of the journal in `directory` (its segments' header). A
// journal that does not open or read to a clean end fails the test (0).
std::uint64_t JournalIdOf(const std::string& directory);

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_JOURNAL_REPLAY_H_
