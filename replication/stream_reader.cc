// Reading single messages of a journal stream; see stream_reader.h.
#include "replication/stream_reader.h"

#include <nats/nats.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "replication/internal/nats_handles.h"
#include "replication/journal_stream.h"
#include "replication/stream_position.h"

namespace orderwire::replication {
namespace {

// FindRecord reads forward at most this many messages from where the
// search lands: markers (one per failover) and at most one records message
// before the one that holds the index.
constexpr int kMaxForwardReads = 64;

}  // namespace

struct StreamReader::Handles {
  internal::ConnectionHandle conn;
  internal::JetStreamHandle js;
};

StreamReader::StreamReader(std::unique_ptr<Handles> handles,
                           std::string servers, std::string engine_name,
                           std::chrono::milliseconds timeout)
    : handles_(std::move(handles)),
      servers_(std::move(servers)),
      engine_name_(std::move(engine_name)),
      stream_(JournalStreamName(engine_name_)),
      timeout_(timeout) {}

StreamReader::~StreamReader() = default;

absl::StatusOr<std::unique_ptr<StreamReader>> StreamReader::Open(
    const std::string& servers, std::string_view engine_name,
    std::chrono::milliseconds timeout) {
  if (absl::Status valid = ValidateEngineName(engine_name); !valid.ok()) {
    return valid;
  }
  auto handles = std::make_unique<Handles>();
  absl::StatusOr<internal::ConnectionHandle> conn =
      internal::Connect(servers, timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  handles->conn = std::move(*conn);
  absl::StatusOr<internal::JetStreamHandle> js =
      internal::JetStream(handles->conn.get(), timeout);
  if (!js.ok()) return js.status();
  handles->js = std::move(*js);
  return std::unique_ptr<StreamReader>(new StreamReader(
      std::move(handles), servers, std::string(engine_name), timeout));
}

absl::StatusOr<StreamMessage> StreamReader::Read(std::uint64_t sequence) {
  natsMsg* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetMsg(&raw, handles_->js.get(), stream_.c_str(),
                                 sequence, nullptr, &jerr);
  const internal::MessageHandle msg(raw);
  if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr ||
      jerr == JSStreamNotFoundErr) {
    return absl::NotFoundError(absl::StrFormat(
        "stream %s has no message at sequence %d", stream_, sequence));
  }
  if (s != NATS_OK) {
    return internal::NatsError(
        s, absl::StrFormat("read sequence %d of stream %s", sequence, stream_),
        static_cast<int>(jerr));
  }
  StreamMessage out;
  out.sequence = sequence;
  const int length = natsMsg_GetDataLength(msg.get());
  const auto* data =
      reinterpret_cast<const std::byte*>(natsMsg_GetData(msg.get()));
  out.bytes.assign(data, data + length);
  absl::StatusOr<GroupMessage> parsed = ParseGroupMessage(out.bytes);
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrFormat("stream %s sequence %d: %s",
                                               stream_, sequence,
                                               parsed.status().message()));
  }
  out.message = *parsed;
  return out;
}

absl::StatusOr<std::optional<StreamMessage>> StreamReader::ReadLast() {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetStreamInfo(&raw, handles_->js.get(),
                                        stream_.c_str(), nullptr, &jerr);
  const internal::StreamInfoHandle info(raw);
  if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
    return absl::NotFoundError(
        absl::StrFormat("JetStream stream %s does not exist", stream_));
  }
  if (s != NATS_OK) {
    return internal::NatsError(
        s, absl::StrFormat("look up JetStream stream %s", stream_),
        static_cast<int>(jerr));
  }
  const std::uint64_t last = info->State.LastSeq;
  if (last == 0 || info->State.FirstSeq > last) {
    return std::optional<StreamMessage>();
  }
  absl::StatusOr<StreamMessage> message = Read(last);
  if (!message.ok()) return message.status();
  return std::optional<StreamMessage>(*std::move(message));
}

absl::StatusOr<std::optional<StreamRecord>> StreamReader::FindRecord(
    std::uint64_t index) {
  absl::StatusOr<StreamPosition> position =
      FindStreamPosition(servers_, engine_name_, index, timeout_);
  if (!position.ok()) return position.status();
  std::uint64_t sequence = position->sequence;
  for (int read = 0; read < kMaxForwardReads; ++read, ++sequence) {
    if (sequence > position->last_sequence) break;
    absl::StatusOr<StreamMessage> message = Read(sequence);
    if (absl::IsNotFound(message.status())) {
      return absl::DataLossError(absl::StrFormat(
          "stream %s: sequence %d (at most %d) cannot be read: a hole in the "
          "replicated journal",
          stream_, sequence, position->last_sequence));
    }
    if (!message.ok()) return message.status();
    const GroupMessage& m = message->message;
    if (m.first_index > index) break;
    if (m.kind == GroupMessageKind::kEpochMarker || m.last_index() < index) {
      continue;
    }
    std::optional<StreamRecord> found;
    m.ForEachRecord([&](const journal::Record& r) {
      if (r.index != index) return;
      const auto frame = r.frame.bytes();
      found = StreamRecord{.sequence = sequence,
                           .epoch = m.epoch,
                           .last_in_message = r.index == m.last_index(),
                           .index = r.index,
                           .receive_ns = r.receive_ns,
                           .session_id = r.session_id,
                           .flags = r.flags,
                           .frame = {frame.begin(), frame.end()}};
    });
    return found;
  }
  return std::optional<StreamRecord>();
}

}  // namespace orderwire::replication
