// What `orderwire cluster status` shows: who leads an engine, in which
// epoch, how far its journal stream has come, and how far each member
// (primary or standby) has applied it.
//
// Three sources, all in NATS, read without changing anything:
//   the lease    bucket orderwire_<engine>_lease, key `leader`
//                (replication/lease.h): holder, epoch, duration;
//   the stream   orderwire_<engine>_journal (journal_stream.h): its state,
//                and its last message's header (group_message.h), which
//                says the last journal index replicated and by which epoch;
//   the members  bucket orderwire_<engine>_members: each member puts one
//                line under its own name (MemberBoard below), every few
//                hundred ms while it runs, with its role, epoch, applied
//                journal index and the stream sequence it has reached.
//
// A member's lag is the stream's last journal index minus the member's
// applied index (0: it has applied everything replicated). A report's age
// is the reader's wall clock minus the time the NATS server stored it: it
// is only as good as the two clocks' agreement, and is shown for a person
// ("last heard 1.2 s ago"), never used for a decision.
#ifndef ORDERWIRE_REPLICATION_CLUSTER_STATUS_H_
#define ORDERWIRE_REPLICATION_CLUSTER_STATUS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "replication/journal_stream.h"
#include "replication/lease.h"

namespace orderwire::replication {

std::string MemberBucketName(std::string_view engine_name);

// One member's line in the members bucket:
// "ow-member/1 <role> <epoch> <applied_index> <stream_sequence>".
struct MemberReport {
  std::string name;         // the key: the member's name (ValidateLeaseHolder)
  std::string role;         // "primary", "standby", "stopped" ([a-z]{1,16})
  std::uint64_t epoch = 0;  // the newest epoch it has seen
  std::uint64_t applied_index = 0;    // journal index applied to its state
  std::uint64_t stream_sequence = 0;  // last stream sequence read/acked
  // Filled in by reads: when the server stored the line (Unix ns), 0 if
  // unknown.
  std::int64_t stored_unix_ns = 0;
};

// The value of a report (name excluded: it is the key), and its strict
// inverse: InvalidArgument naming the field for anything else.
absl::StatusOr<std::string> EncodeMemberReport(const MemberReport& report);
absl::StatusOr<MemberReport> ParseMemberReport(std::string_view name,
                                               std::string_view value);

// A member's handle on the members bucket (creates it, history 1, file
// storage, `replicas`, when missing). Put is one KV put: call it from a
// thread of its own or a slow path, never the hot path.
class MemberBoard {
 public:
  static absl::StatusOr<std::unique_ptr<MemberBoard>> Open(
      const std::string& servers, std::string_view engine_name, int replicas,
      std::chrono::milliseconds timeout);
  MemberBoard(const MemberBoard&) = delete;
  MemberBoard& operator=(const MemberBoard&) = delete;
  ~MemberBoard();

  absl::Status Put(const MemberReport& report);

 private:
  struct Nats;
  explicit MemberBoard(std::unique_ptr<Nats> nats);
  std::unique_ptr<Nats> nats_;
};

struct StreamHead {
  std::uint64_t sequence = 0;    // the stream's last sequence
  bool epoch_marker = false;     // the last message is an epoch marker
  std::uint64_t epoch = 0;       // of the last message
  std::uint64_t last_index = 0;  // last journal index replicated
};

struct ClusterStatus {
  std::string engine_name;
  // The lease; nullopt when no member has ever taken one.
  std::optional<LeaseValue> lease;
  std::uint64_t lease_revision = 0;
  // The journal stream; nullopt when no primary has created it.
  std::optional<JournalStreamState> stream;
  std::optional<StreamHead> head;     // nullopt: no stream or an empty one
  std::vector<MemberReport> members;  // by name
  // Problems met while reading that did not stop it (e.g. a member's line
  // that does not parse), one per line, for the operator.
  std::vector<std::string> warnings;
  // The sources that could not be read now, because of a transient NATS
  // error (a timeout, no responders: e.g. while the leader of the stream or
  // of a bucket's stream is re-elected): "lease", "stream", "members"; what
  // they hold is missing above (members read before the error are kept).
  // unread_errors[i] says why unread[i] could not be read.
  std::vector<std::string> unread;
  std::vector<std::string> unread_errors;
};

// Reads the three sources, each request bounded by `timeout`. A source that
// fails on a transient NATS error (IsTransientNatsError, nats_error.h) does not
// stop the others: it is listed in `unread`, and the status is returned
// with what could be read. Errors: NATS unreachable (connecting fails), all
// three sources unread (the first one's error), an invalid engine name, a
// lease value or the stream's last message that does not parse
// (FailedPrecondition naming it).
absl::StatusOr<ClusterStatus> ReadClusterStatus(
    const std::string& servers, std::string_view engine_name,
    std::chrono::milliseconds timeout);

// A member's lag behind the stream (0 when the stream is empty or unknown,
// or the member is ahead).
std::uint64_t MemberLag(const ClusterStatus& status,
                        const MemberReport& member);

// For a person: one block, the leader first, then a table of members; a
// source that could not be read says so ("unread   members: ...").
// `now_unix_ns` computes the ages.
std::string FormatClusterStatus(const ClusterStatus& status,
                                std::int64_t now_unix_ns);
// The same as one JSON object (for scripts and the failover tests):
// "unread" lists the sources not read (their names only).
std::string ClusterStatusJson(const ClusterStatus& status,
                              std::int64_t now_unix_ns);

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_CLUSTER_STATUS_H_
