// StreamFollower: the standby's side of replication. Reads an engine's
// journal stream (replication/journal_stream.h) from a given stream
// sequence on, in order, and hands over each message's bytes (one journal
// group) with its stream sequence and Nats-Msg-Id.
//
// It uses a JetStream ordered consumer (ephemeral, push, no acks; libnats
// recreates it from the last delivered sequence if a delivery is lost or the
// server it uses goes away). On top of that it checks the stream sequences
// itself: each message must have the sequence after the previous one
// (start_sequence for the first). A message that skips sequences (a hole
// in the stream: deleted, purged, or a consumer bug) is a DataLoss error
// that names the missing range, and ends the follower: a standby must never
// apply a journal with a hole in it.
//
// Threads: one thread calls Next. Cost: one copy of each message's bytes.
#ifndef ORDERWIRE_REPLICATION_STREAM_FOLLOWER_H_
#define ORDERWIRE_REPLICATION_STREAM_FOLLOWER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::replication {

struct StreamFollowerOptions {
  std::string servers;  // comma-separated nats://HOST:PORT
  std::string engine_name;
  // The first stream sequence wanted (1: from the beginning).
  std::uint64_t start_sequence = 1;
  // Bounds connecting and creating the consumer. A create request left
  // unanswered (JetStream drops API requests while its leaders change) is
  // sent again every 8 s until then; DeadlineExceeded after it.
  std::chrono::milliseconds timeout{10000};
};

struct FollowedMessage {
  std::uint64_t stream_sequence = 0;
  std::string msg_id;  // Nats-Msg-Id, "<epoch>-<first journal index>"
  // Messages in the stream after this one when it was delivered (the
  // consumer's num_pending): how far the follower is behind.
  std::uint64_t pending = 0;
  std::vector<std::byte> bytes;
};

class StreamFollower {
 public:
  // Connects and creates the ordered consumer. NotFound if the stream does
  // not exist; InvalidArgument for a bad engine name or start sequence 0.
  static absl::StatusOr<std::unique_ptr<StreamFollower>> Open(
      const StreamFollowerOptions& options);

  StreamFollower(const StreamFollower&) = delete;
  StreamFollower& operator=(const StreamFollower&) = delete;
  ~StreamFollower();

  // The next message, waiting up to `timeout` for it. DeadlineExceeded when
  // none came in time (not an error of the follower: call again).
  // DataLoss on a gap, Unavailable when the connection is closed: both end
  // the follower, and every later call returns the same error.
  absl::StatusOr<FollowedMessage> Next(std::chrono::milliseconds timeout);

  // The stream sequence the next message must have.
  [[nodiscard]] std::uint64_t next_sequence() const { return next_sequence_; }

 private:
  struct Handles;
  StreamFollower(std::unique_ptr<Handles> handles, std::string stream,
                 std::uint64_t start);
  std::unique_ptr<Handles> handles_;
  std::string stream_;
  std::uint64_t next_sequence_;
  absl::Status failure_;
};

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_STREAM_FOLLOWER_H_
