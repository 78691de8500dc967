// JournalPublisher: the primary's side of replication. Appends journal
// groups, one JetStream message each, to the engine's journal stream
// (replication/journal_stream.h), asynchronously with a bounded window of
// messages in flight, and reports their acknowledgements in publish order.
//
// Every message carries
//   Nats-Msg-Id                  "<epoch>-<first journal index>": a retried
//                                publish of the same group by the same epoch
//                                is dropped by JetStream as a duplicate
//                                (within the stream's duplicate window) and
//                                acknowledged with the original's sequence;
//                                an epoch marker's is "<epoch>-marker"
//                                (PublishEpochMarker);
//   Nats-Expected-Last-Sequence  the stream sequence this publisher believes
//                                is the last one: message N (counting from 1
//                                since Open) expects base + N - 1, where base
//                                is the stream's last sequence when the
//                                publisher opened (or the one given). A
//                                writer whose view is stale (another writer
//                                appended meanwhile) is refused with
//                                JetStream error 10071: the fence against two
//                                primaries;
//   Nats-Expected-Last-Msg-Id    on message N > 1 sent while message N-1 is
//                                not yet acknowledged: N-1's Msg-Id. With a
//                                pipeline, base + N - 1 is only where this
//                                publisher hopes N-1 lands; if N-1 is refused
//                                and another writer's message (a new
//                                primary's epoch marker) lands there instead,
//                                the sequence check alone would accept N
//                                after it. The Msg-Id check refuses it
//                                (JetStream error 10070, also kFenced). Not
//                                sent when the expected sequence is known to
//                                hold this publisher's own acknowledged
//                                message, or the one read from the stream
//                                (message 1): the sequence is then exact, and
//                                nats-server 2.9 forgets the last Msg-Id
//                                when it restarts more than the duplicate
//                                window after the last message
//                                (docs/REPLICATION.md "The fence");
//   Nats-Expected-Stream         the stream's name, so a stray stream that
//                                also listens on the subject cannot take it.
// An acknowledged message N must come back with stream sequence base + N;
// any other sequence is a failure too.
//
// What an acknowledgement guarantees (nats-server 2.9.10): the stream leader
// has assigned the sequence and written the message to its store files, and
// for R3 a majority of the stream's replicas (2 of 3) has it in its RAFT log
// (JetStream acknowledges a clustered publish after the RAFT entry is
// committed and applied by the leader). It does NOT mean fsync: 2.9 syncs
// its files every 2 minutes (sync_interval) and has no per-message sync. So
// an acknowledged message survives the loss of any one server process (R3),
// or a crash of the nats-server process (R1, the page cache keeps it), but
// not a power loss of a majority of the machines before their next sync.
//
// Riding out a re-election. When the server that leads the stream goes
// away, an R3 stream elects a new leader (4-9 s seen with nats-server
// 2.9.10 on a loaded machine); meanwhile a publish is answered 503 "no
// responders" (nobody listens on the subject), or not at all (the request
// reached the dying leader), or, for a message sent after one that was not
// stored, refused with 10071 (its expected last sequence is one past the
// stream's end). None of these is a failure before ack_timeout since the
// message's FIRST send. Instead the publisher republishes, in order, every
// unacknowledged message from the first one on that has no success yet,
// byte for byte the same (same Nats-Msg-Id, same expectations; only the
// reply subject, <inbox>.<message>.<attempt>, tells the attempt), after a
// backoff of 50, 100, 200, 200... ms, when:
//   - a publish is answered 503 (libnats does not say which one: all are
//     republished), or with JetStream's "code" 503 (temporarily
//     unavailable);
//   - the first unacknowledged message's current attempt has no reply after
//     ack_timeout / 10 (200 ms to 1 s), or could not be handed to libnats
//     while its connection reconnects (buffer full; only a closed
//     connection is a failure);
//   - the first unacknowledged message was refused with 10071 and the
//     stream holds nothing at the sequence it was meant to get (see below).
// Why a republish cannot store a message twice or out of order: a message
// that did land is a duplicate by its Msg-Id, so JetStream answers it with
// the original sequence (the dedupe entry is applied on every replica, so
// the new leader knows it); one that did not land carries the expectation
// base + N - 1, which holds only if every earlier message is stored in
// place. A success from ANY attempt is kept (stored is stored); a refusal
// or 503 of an older attempt is stale and ignored.
// When 10071 is a fence (and 10070, a Nats-Expected-Last-Msg-Id refused,
// decided the same way): a refusal of message N is looked at only once
// messages 1..N-1 are acknowledged at their sequences (so the stream held
// this writer's base + N - 1 at the end). A refusal of a later message is
// the gap of an earlier one that was not stored and waits for it. For the
// first unacknowledged message N, the publisher reads the stream at
// base + N (js_GetMsg): this writer's Msg-Id there means N is stored
// (acknowledged, as a duplicate); another Msg-Id there is a fence
// (kFenced): another writer appended; nothing there, or the stream cannot
// be read now (no leader), means the expectation was right: republish.
// Every republish round is counted (progress(): republished,
// republish_rounds) and logged (on_event).
//
// Failures are fail-stop: the first failure (a refusal that is not one of
// the above, a fence, a message not acknowledged within ack_timeout of its
// first send, a closed connection, an unexpected sequence) ends the
// publisher. Every later call returns that failure. The caller decides
// (the primary stops answering; docs/REPLICATION.md). A failure reported
// for message N leaves messages N+1... unresolved: they may or may not be
// in the stream.
//
// Threads: Publish and Flush are called from one thread. Acknowledgements
// are read by a thread the publisher owns (started by Open, joined by the
// destructor), which calls on_ack, in order, without holding the publisher's
// lock; on_ack must not call back into the publisher.
//
// Cost: Publish copies the group once into a libnats message and writes it
// to the socket (libnats's SendAsap option is on: no 1 ms batching);
// acknowledgements are parsed with simdjson. Not a hot-path component: it
// allocates per message.
#ifndef ORDERWIRE_REPLICATION_JOURNAL_PUBLISHER_H_
#define ORDERWIRE_REPLICATION_JOURNAL_PUBLISHER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "replication/journal_stream.h"

namespace orderwire::replication {

// One acknowledged message.
struct PublishAck {
  std::uint64_t message = 0;      // 1, 2, ... in publish order
  std::uint64_t first_index = 0;  // the journal index given to Publish
  std::uint64_t stream_sequence = 0;
  bool duplicate = false;  // JetStream had it already (same Msg-Id)
  std::chrono::nanoseconds latency{0};  // Publish to acknowledgement read
};

enum class PublisherFailure {
  kNone,
  kFenced,              // 10071 or 10070: another writer appended
  kAckTimeout,          // no acknowledgement within ack_timeout
  kConnectionClosed,    // the NATS connection is closed for good
  kRejected,            // any other JetStream error (or no stream)
  kUnexpectedSequence,  // acknowledged with a sequence other than base + N
};

struct PublisherOptions {
  std::string servers;  // comma-separated nats://HOST:PORT
  JournalStreamSpec stream;
  // The primary's epoch (lease term): the first part of every Msg-Id.
  std::uint64_t epoch = 0;
  // At most this many messages published and not yet acknowledged in order;
  // Publish waits for room. 1 to 4096.
  std::uint32_t window = 32;
  // A message not acknowledged within this long fails the publisher.
  std::chrono::milliseconds ack_timeout{5000};
  // The last stream sequence this writer has seen; nullopt: the stream's
  // last sequence at Open (a new primary passes the sequence it caught up
  // to, so a writer that appended since is fenced out).
  std::optional<std::uint64_t> expected_last_sequence;
  // Called for each acknowledged message, in order, from the publisher's
  // acknowledgement thread. May be empty.
  std::function<void(const PublishAck&)> on_ack;
  // Called with a line for each republish round, from the acknowledgement
  // thread. Empty: the line goes to stderr.
  std::function<void(const std::string&)> on_event;
};

struct PublisherProgress {
  std::uint64_t published = 0;     // messages handed to Publish
  std::uint64_t acknowledged = 0;  // acknowledged in order: 1..acknowledged
  std::uint64_t last_stream_sequence = 0;  // of message `acknowledged`
  std::uint32_t max_in_flight = 0;         // the most unacknowledged ever seen
  // Messages JetStream answered with an error (10071, 10070, ...), counted
  // as the answers come, including those after the first failure.
  std::uint64_t refused = 0;
  // Messages sent again (no responders, no reply, a re-election's 10071),
  // and the rounds they were sent in (each from the first unacknowledged).
  std::uint64_t republished = 0;
  std::uint64_t republish_rounds = 0;
};

class JournalPublisher {
 public:
  // Connects, creates or checks the stream (EnsureJournalStream), and starts
  // the acknowledgement thread. Errors: invalid options, NATS unreachable,
  // the stream's settings differ.
  static absl::StatusOr<std::unique_ptr<JournalPublisher>> Open(
      PublisherOptions options);

  JournalPublisher(const JournalPublisher&) = delete;
  JournalPublisher& operator=(const JournalPublisher&) = delete;
  // Stops the acknowledgement thread and closes the connection; messages
  // still in flight are abandoned (they may or may not be in the stream).
  ~JournalPublisher();

  // Publishes one journal group whose first record has journal index
  // `first_index`. Waits while `window` messages are unacknowledged (at most
  // ack_timeout, then DeadlineExceeded). Returns the message's number, or
  // the publisher's failure (see failure()); nothing is sent after a
  // failure.
  absl::StatusOr<std::uint64_t> Publish(std::uint64_t first_index,
                                        std::span<const std::byte> group);

  // Publishes this epoch's marker (replication/group_message.h): `next_index`
  // is the index the next record will have. Its Msg-Id is "<epoch>-marker",
  // so that it never dedupes against the records message that follows it
  // (which starts at the same index), and differs from every records
  // message's, so an old primary's message expecting the marker's position
  // is refused. Otherwise as Publish (the same expectations).
  absl::StatusOr<std::uint64_t> PublishEpochMarker(std::uint64_t next_index);

  // Waits until every message published so far is acknowledged and handed
  // to on_ack (OK), the
  // publisher fails (its failure), or `timeout` passes (DeadlineExceeded).
  absl::Status Flush(std::chrono::milliseconds timeout);

  // OK while healthy; otherwise the first failure, with what was refused
  // and why (kind: failure_kind()).
  [[nodiscard]] absl::Status failure() const;
  [[nodiscard]] PublisherFailure failure_kind() const;
  [[nodiscard]] PublisherProgress progress() const;
  // The stream sequence message 1 expected to follow (base).
  [[nodiscard]] std::uint64_t base_sequence() const;

 private:
  struct State;
  explicit JournalPublisher(std::unique_ptr<State> state);
  absl::StatusOr<std::uint64_t> PublishWithId(std::uint64_t first_index,
                                              std::span<const std::byte> group,
                                              const std::string& msg_id);
  std::unique_ptr<State> state_;
};

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_JOURNAL_PUBLISHER_H_
