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
};

// OK when `name` is usable in the stream's name and subject; otherwise an
// InvalidArgument that says which character or length is wrong.
absl::Status ValidateEngineName(std::string_view name);
std::string JournalStreamName(std::string_view engine_name);
std::string JournalSubject(std::string_view engine_name);

// Creates the stream if it does not exist, or checks that the existing one
// has the subject, the storage and the replica count of `spec` (an existing
// stream with other settings is a FailedPrecondition that names them; it is
// never changed). `servers`: comma-separated nats:// URLs. Returns the
// stream's state. Blocking; `timeout` bounds each request.
absl::StatusOr<JournalStreamState> EnsureJournalStream(
    const std::string& servers, const JournalStreamSpec& spec,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The stream's state; NotFound if it does not exist.
absl::StatusOr<JournalStreamState> GetJournalStreamState(
    const std::string& servers, std::string_view engine_name,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_JOURNAL_STREAM_H_
