// StreamReader: reads single messages of an engine's journal stream
// (replication/journal_stream.h) by stream sequence, and the stream's record
// with a given journal index, for the checks a standby makes before it
// follows (cluster/standby.h: does the local journal agree with the
// stream, and where does it stop agreeing).
//
// A message is read with JetStream's get-by-sequence (js_GetMsg: one request
// to the stream leader) and verified whole by ParseGroupMessage before
// anything of it is returned. A record by index is found with
// FindStreamPosition (stream_position.h: a binary search over sequences),
// then by reading forward past epoch markers to the records message that
// holds it.
//
// Errors: NotFound (no stream, or no message at a sequence), DataLoss naming
// the sequence for a message that does not verify, the NATS errors of
// connecting and reading. Cold: a few requests per call; not for following
// (StreamFollower is).
#ifndef ORDERWIRE_REPLICATION_STREAM_READER_H_
#define ORDERWIRE_REPLICATION_STREAM_READER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "journal/reader.h"
#include "replication/group_message.h"

namespace orderwire::replication {

// One message of the stream, verified. `message.body` points into `bytes`
// (the vector's buffer: it stays valid when a StreamMessage is moved, not
// when it is copied, hence move-only).
struct StreamMessage {
  std::uint64_t sequence = 0;
  std::vector<std::byte> bytes;
  GroupMessage message;

  StreamMessage() = default;
  StreamMessage(StreamMessage&&) = default;
  StreamMessage& operator=(StreamMessage&&) = default;
  StreamMessage(const StreamMessage&) = delete;
  StreamMessage& operator=(const StreamMessage&) = delete;
};

// A record of the stream, copied out of its message.
struct StreamRecord {
  std::uint64_t sequence = 0;  // of the message holding it
  std::uint64_t epoch = 0;     // that message's
  // Whether it is the last record of its message (a message boundary
  // follows it).
  bool last_in_message = false;
  std::uint64_t index = 0;
  std::uint64_t receive_ns = 0;
  std::uint32_t session_id = 0;
  std::uint32_t flags = 0;
  std::vector<std::byte> frame;
};

class StreamReader {
 public:
  // Connects. InvalidArgument for a bad engine name; the NATS errors.
  static absl::StatusOr<std::unique_ptr<StreamReader>> Open(
      const std::string& servers, std::string_view engine_name,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // The message at `sequence`. NotFound when the stream has none there
  // (past its end, or deleted); DataLoss when it does not verify.
  absl::StatusOr<StreamMessage> Read(std::uint64_t sequence);

  // The stream's last message: nullopt for an empty stream. NotFound when
  // there is no stream.
  absl::StatusOr<std::optional<StreamMessage>> ReadLast();

  // The stream's record with journal index `index` (>= 1): nullopt when the
  // stream does not hold it (its records end before, or a marker of a new
  // epoch at an index <= `index` comes after the last record before it).
  absl::StatusOr<std::optional<StreamRecord>> FindRecord(std::uint64_t index);

 private:
  struct Handles;
  StreamReader(std::unique_ptr<Handles> handles, std::string servers,
               std::string engine_name, std::chrono::milliseconds timeout);
  std::unique_ptr<Handles> handles_;
  std::string servers_;
  std::string engine_name_;
  std::string stream_;
  std::chrono::milliseconds timeout_;
};

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_STREAM_READER_H_
