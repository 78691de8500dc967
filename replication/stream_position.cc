// Where a follower resumes; see stream_position.h.
#include "replication/stream_position.h"

#include <nats/nats.h>

#include <cstddef>
#include <span>

#include "absl/strings/str_cat.h"
#include "replication/group_message.h"
#include "replication/internal/nats_handles.h"
#include "replication/journal_stream.h"

namespace orderwire::replication {
namespace {

using internal::MessageHandle;
using internal::NatsError;

// The stream's first and last sequence, into `position`. NotFound: no
// stream.
absl::Status ReadStreamBounds(jsCtx* js, const std::string& stream,
                              StreamPosition& position) {
  absl::StatusOr<internal::StreamInfoHandle> info =
      internal::LookUpStream(js, stream);
  if (!info.ok()) return info.status();
  position.first_sequence = (*info)->State.FirstSeq;
  position.last_sequence = (*info)->State.LastSeq;
  return absl::OkStatus();
}

// The sequences searched: first..last of `stream`.
struct SearchRange {
  jsCtx* js;
  const std::string& stream;
  std::uint64_t first;
  std::uint64_t last;
};

// A message read by the search, and its parse (a view into it).
struct Probe {
  MessageHandle msg;
  GroupMessage parsed;
};

// The message at `sequence`, read and verified; counted in `probes`.
absl::StatusOr<Probe> ReadProbe(const SearchRange& range,
                                std::uint64_t sequence, std::uint32_t& probes) {
  ++probes;
  natsMsg* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetMsg(&raw, range.js, range.stream.c_str(), sequence, nullptr, &jerr);
  Probe probe{MessageHandle(raw), {}};
  if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) {
    return absl::DataLossError(
        absl::StrCat("stream ", range.stream, ": sequence ", sequence,
                     " (between ", range.first, " and ", range.last,
                     ") cannot be read: a hole in the replicated journal"));
  }
  if (s != NATS_OK) {
    return NatsError(
        s,
        absl::StrCat("read sequence ", sequence, " of stream ", range.stream),
        static_cast<int>(jerr));
  }
  const int length = natsMsg_GetDataLength(probe.msg.get());
  const auto* data =
      reinterpret_cast<const std::byte*>(natsMsg_GetData(probe.msg.get()));
  absl::StatusOr<GroupMessage> parsed = ParseGroupMessage(
      std::span<const std::byte>(data, static_cast<std::size_t>(length)));
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrCat("stream ", range.stream,
                                            " sequence ", sequence, ": ",
                                            parsed.status().message()));
  }
  probe.parsed = *parsed;
  return probe;
}

// The last sequence whose message starts before next_index, with that
// message's header (its body dropped: the bytes went with the probe); 0
// when every message starts at next_index or later.
struct Found {
  std::uint64_t sequence = 0;
  GroupMessage message;
};

absl::StatusOr<Found> LastStartingBefore(const SearchRange& range,
                                         std::uint64_t next_index,
                                         std::uint32_t& probes) {
  std::uint64_t lo = range.first;
  std::uint64_t hi = range.last;
  Found found;
  while (lo <= hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    absl::StatusOr<Probe> probe = ReadProbe(range, mid, probes);
    if (!probe.ok()) return probe.status();
    if (probe->parsed.first_index < next_index) {
      found.sequence = mid;
      found.message = probe->parsed;
      found.message.body = {};  // the bytes went with the probe
      lo = mid + 1;
    } else {
      if (mid == range.first) break;
      hi = mid - 1;
    }
  }
  return found;
}

}  // namespace

absl::StatusOr<StreamPosition> FindStreamPosition(
    const std::string& servers, std::string_view engine_name,
    std::uint64_t next_index, std::chrono::milliseconds timeout) {
  if (absl::Status valid = ValidateEngineName(engine_name); !valid.ok()) {
    return valid;
  }
  if (next_index == 0) {
    return absl::InvalidArgumentError(
        "stream position: journal index 0 (indexes start at 1)");
  }
  auto conn = internal::Connect(servers, timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  auto js = internal::JetStream(conn->get(), timeout);
  if (!js.ok()) return js.status();
  const std::string stream = JournalStreamName(engine_name);

  StreamPosition position;
  if (absl::Status s = ReadStreamBounds(js->get(), stream, position); !s.ok()) {
    return s;
  }
  const std::uint64_t last = position.last_sequence;
  position.sequence = last + 1;
  if (last == 0 || position.first_sequence > last) return position;
  const SearchRange range{
      .js = js->get(),
      .stream = stream,
      .first = position.first_sequence == 0 ? 1 : position.first_sequence,
      .last = last};
  absl::StatusOr<Found> found =
      LastStartingBefore(range, next_index, position.probes);
  if (!found.ok()) return found.status();
  if (found->sequence == 0) {
    // Every message starts at next_index or later: follow from the first
    // (a marker of next_index, records from it, or a gap the follower
    // reports).
    position.sequence = range.first;
    return position;
  }
  // That message, if it holds next_index (or is a marker, which the
  // follower must check against its journal); else the one after it, which
  // starts at next_index or later.
  position.sequence = found->sequence;
  if (found->message.kind == GroupMessageKind::kRecords &&
      found->message.last_index() < next_index) {
    position.sequence = found->sequence + 1;
    position.epoch = found->message.epoch;
  }
  return position;
}

}  // namespace orderwire::replication
