// The JetStream stream that carries one engine's journal: its names, its
// settings, and creating or checking it.
//
// One stream per engine. Its name is `orderwire_<engine>_journal` (stream
// names may not contain '.'), its only subject `orderwire.<engine>.journal`.
// Each message is one whole journal group (docs/REPLICATION.md), so the
// stream sequence counts groups, not commands. File storage, R1 or R3,
// limits retention with no limit (the journal, not NATS, decides what may be
// dropped), a duplicate window for Nats-Msg-Id, and deletes and purges
// denied so that nobody can cut a hole into the replicated journal.
//
// The stream names the journal it carries: its description is
// "orderwire journal <journal_id>" (16 lowercase hex digits, as `orderwire
// journal inspect` prints it), set when a primary creates it. A standby
// creates its journal with that journal_id, so that every member's journal
// is the same journal (the market-data feed's session is the journal_id:
// docs/MARKETDATA.md). A stream made before streams were labelled, or by a
// spec without a journal_id, has an empty description: no journal named.
#ifndef ORDERWIRE_REPLICATION_JOURNAL_STREAM_H_
#define ORDERWIRE_REPLICATION_JOURNAL_STREAM_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::replication {

struct JournalStreamSpec {
  // [A-Za-z0-9_-], 1 to 64 characters.
  std::string engine_name;
  // 1 (one server) or 3 (a three-node cluster; survives one lost server).
  int replicas = 1;
  // How long JetStream remembers a Nats-Msg-Id to drop a repeated publish.
  std::chrono::seconds duplicate_window{120};
  // The journal whose records the stream carries (its segments'
  // journal_id). Not 0: a new stream is labelled with it, and an existing
  // stream labelled with another is refused; an unlabelled existing stream
  // is accepted and left as it is. 0: no label set, none checked.
  std::uint64_t journal_id = 0;
  // Only for tests that must cut a gap into the stream (js_DeleteMsg):
  // production streams deny deletes and purges.
  bool allow_delete_for_tests = false;
};

// What JetStream reports about the stream.
struct JournalStreamState {
  std::uint64_t first_sequence = 0;
  std::uint64_t last_sequence = 0;  // 0: empty
  std::uint64_t messages = 0;
  int replicas = 0;
  std::string leader;  // the server that leads the stream (empty for R1
                       // when the server does not name one)
  // The journal_id its description names; 0: none (an empty description).
  std::uint64_t journal_id = 0;
};

// "orderwire journal <16 lowercase hex digits>": the description of the
// stream that carries journal `journal_id`.
std::string JournalStreamDescription(std::uint64_t journal_id);
// The journal_id a stream description names: 0 for an empty one; the id
// for JournalStreamDescription's text (a non-zero id); otherwise an
// InvalidArgument quoting it (a description orderwire did not write).
absl::StatusOr<std::uint64_t> ParseJournalStreamDescription(
    std::string_view description);

// OK when `name` is usable in the stream's name and subject; otherwise an
// InvalidArgument that says which character or length is wrong.
absl::Status ValidateEngineName(std::string_view name);
std::string JournalStreamName(std::string_view engine_name);
std::string JournalSubject(std::string_view engine_name);

// Creates the stream if it does not exist (labelled with spec.journal_id
// when not 0), or checks that the existing one has the subject, the storage
// and the replica count of `spec` and, when spec.journal_id is not 0, no
// other journal's label (an existing stream with other settings or another
// journal_id is a FailedPrecondition that names them; it is never changed,
// an unlabelled one is not labelled). `servers`: comma-separated nats://
// URLs. Returns the stream's state. Errors also: a description that is not
// a label (FailedPrecondition quoting it). Blocking; `timeout` bounds each
// request.
absl::StatusOr<JournalStreamState> EnsureJournalStream(
    const std::string& servers, const JournalStreamSpec& spec,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The stream's state; NotFound if it does not exist, FailedPrecondition
// when its description is not a label (quoted).
absl::StatusOr<JournalStreamState> GetJournalStreamState(
    const std::string& servers, std::string_view engine_name,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_JOURNAL_STREAM_H_
