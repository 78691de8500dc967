// See cluster_status.h.
#include "replication/cluster_status.h"

#include <nats/nats.h>

#include <algorithm>
#include <charconv>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "replication/group_message.h"
#include "replication/internal/nats_handles.h"
#include "replication/nats_error.h"

namespace orderwire::replication {
namespace {

using internal::NatsError;

// Debian's Abseil has its own string_view type: convert for StrCat.
absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

constexpr std::string_view kReportPrefix = "ow-member/1";
constexpr std::size_t kMaxRoleLength = 16;

using internal::KvEntryHandle;
using internal::KvStoreHandle;

// A member's name is its key in the bucket: a lease holder's characters
// without ':' (which NATS does not allow in a key).
absl::Status ValidateMemberName(std::string_view name) {
  if (absl::Status valid = ValidateLeaseHolder(name); !valid.ok()) {
    return valid;
  }
  if (name.find(':') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("member name '", View(name),
                     "': ':' cannot be part of a NATS key; use '-' or '.'"));
  }
  return absl::OkStatus();
}

absl::Status ValidateRole(std::string_view role) {
  const bool ok = !role.empty() && role.size() <= kMaxRoleLength &&
                  std::all_of(role.begin(), role.end(),
                              [](char c) { return c >= 'a' && c <= 'z'; });
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "member role '", View(role), "': expected 1 to 16 letters a-z"));
  }
  return absl::OkStatus();
}

// A decimal number without sign or leading zero ("0" itself is allowed).
absl::StatusOr<std::uint64_t> ParseNumber(std::string_view field,
                                          std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      (text.size() > 1 && text[0] == '0') || text[0] == '+' || text[0] == '-') {
    return absl::InvalidArgumentError(
        absl::StrCat("member report: ", View(field), " '", View(text),
                     "' is not a decimal number"));
  }
  return n;
}

absl::StatusOr<KvStoreHandle> OpenBucket(jsCtx* js, const std::string& bucket,
                                         bool create, int replicas) {
  kvStore* raw = nullptr;
  natsStatus s = js_KeyValue(&raw, js, bucket.c_str());
  if (s == NATS_NOT_FOUND && create) {
    kvConfig config;
    s = kvConfig_Init(&config);
    config.Bucket = bucket.c_str();
    config.History = 1;
    config.StorageType = js_FileStorage;
    config.Replicas = replicas;
    if (s == NATS_OK) s = js_CreateKeyValue(&raw, js, &config);
    // Another member may have created it in the meantime.
    if (s != NATS_OK) s = js_KeyValue(&raw, js, bucket.c_str());
  }
  KvStoreHandle kv(raw);
  if (s == NATS_NOT_FOUND) {
    return absl::NotFoundError(absl::StrCat("no bucket ", bucket));
  }
  if (s != NATS_OK) return NatsError(s, absl::StrCat("open bucket ", bucket));
  return kv;
}

bool Unread(const ClusterStatus& status, std::string_view source) {
  return std::find(status.unread.begin(), status.unread.end(), source) !=
         status.unread.end();
}

std::string Quoted(std::string_view s) {
  return absl::StrCat("\"", View(s), "\"");
}

}  // namespace

std::string MemberBucketName(std::string_view engine_name) {
  return absl::StrCat("orderwire_", View(engine_name), "_members");
}

absl::StatusOr<std::string> EncodeMemberReport(const MemberReport& report) {
  if (absl::Status valid = ValidateMemberName(report.name); !valid.ok()) {
    return valid;
  }
  if (absl::Status valid = ValidateRole(report.role); !valid.ok()) {
    return valid;
  }
  return absl::StrCat(View(kReportPrefix), " ", report.role, " ", report.epoch,
                      " ", report.applied_index, " ", report.stream_sequence);
}

absl::StatusOr<MemberReport> ParseMemberReport(std::string_view name,
                                               std::string_view value) {
  if (absl::Status valid = ValidateMemberName(name); !valid.ok()) {
    return valid;
  }
  std::vector<std::string_view> fields;
  for (const absl::string_view field : absl::StrSplit(View(value), ' ')) {
    fields.emplace_back(field.data(), field.size());
  }
  if (fields.size() != 5 || fields[0] != kReportPrefix) {
    return absl::InvalidArgumentError(absl::StrCat(
        "member report of ", View(name), ": '", View(value), "' is not '",
        View(kReportPrefix), " ROLE EPOCH APPLIED_INDEX STREAM_SEQUENCE'"));
  }
  MemberReport report;
  report.name = std::string(name);
  report.role = std::string(fields[1]);
  if (absl::Status valid = ValidateRole(report.role); !valid.ok()) {
    return valid;
  }
  auto epoch = ParseNumber("epoch", fields[2]);
  if (!epoch.ok()) return epoch.status();
  auto applied = ParseNumber("applied_index", fields[3]);
  if (!applied.ok()) return applied.status();
  auto sequence = ParseNumber("stream_sequence", fields[4]);
  if (!sequence.ok()) return sequence.status();
  report.epoch = *epoch;
  report.applied_index = *applied;
  report.stream_sequence = *sequence;
  return report;
}

struct MemberBoard::Nats {
  internal::ConnectionHandle conn;
  internal::JetStreamHandle js;
  KvStoreHandle kv;
  std::string bucket;
};

absl::StatusOr<std::unique_ptr<MemberBoard>> MemberBoard::Open(
    const std::string& servers, std::string_view engine_name, int replicas,
    std::chrono::milliseconds timeout) {
  if (absl::Status valid = ValidateEngineName(engine_name); !valid.ok()) {
    return valid;
  }
  if (replicas != 1 && replicas != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "members bucket replicas: ", replicas, ", expected 1 or 3"));
  }
  auto nats = std::make_unique<Nats>();
  nats->bucket = MemberBucketName(engine_name);
  auto conn = internal::Connect(servers, timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  nats->conn = *std::move(conn);
  auto js = internal::JetStream(nats->conn.get(), timeout);
  if (!js.ok()) return js.status();
  nats->js = *std::move(js);
  auto kv = OpenBucket(nats->js.get(), nats->bucket, /*create=*/true, replicas);
  if (!kv.ok()) return kv.status();
  nats->kv = *std::move(kv);
  return std::unique_ptr<MemberBoard>(new MemberBoard(std::move(nats)));
}

MemberBoard::MemberBoard(std::unique_ptr<Nats> nats) : nats_(std::move(nats)) {}
MemberBoard::~MemberBoard() = default;

absl::Status MemberBoard::Put(const MemberReport& report) {
  auto value = EncodeMemberReport(report);
  if (!value.ok()) return value.status();
  std::uint64_t revision = 0;
  const natsStatus s = kvStore_PutString(&revision, nats_->kv.get(),
                                         report.name.c_str(), value->c_str());
  if (s != NATS_OK) {
    return NatsError(
        s, absl::StrCat("put ", report.name, " into bucket ", nats_->bucket));
  }
  return absl::OkStatus();
}

namespace {

// A transient error makes a source unread instead of ending the read: true
// if `error` was one (recorded in `status`), false if it ends the read.
bool MarkUnread(ClusterStatus& status, std::string_view source,
                const absl::Status& error) {
  if (!IsTransientNatsError(error)) return false;
  status.unread.emplace_back(source);
  status.unread_errors.emplace_back(error.message());
  return true;
}

// The value of a key-value entry, as text.
std::string_view EntryValue(kvEntry* entry) {
  const auto* bytes = static_cast<const char*>(kvEntry_Value(entry));
  const int len = kvEntry_ValueLen(entry);
  return {bytes == nullptr ? "" : bytes,
          bytes == nullptr ? 0 : static_cast<std::size_t>(len)};
}

// The lease, into status.lease and status.lease_revision (none: no bucket
// or no key). Error: what ends the read.
absl::Status ReadLease(jsCtx* js, std::string_view engine_name,
                       ClusterStatus& status) {
  const std::string lease_bucket = LeaseBucketName(engine_name);
  auto lease_kv = OpenBucket(js, lease_bucket, /*create=*/false, 1);
  if (!lease_kv.ok()) {
    if (!absl::IsNotFound(lease_kv.status()) &&
        !MarkUnread(status, "lease", lease_kv.status())) {
      return lease_kv.status();
    }
    return absl::OkStatus();
  }
  kvEntry* raw = nullptr;
  const natsStatus s = kvStore_Get(&raw, lease_kv->get(), kLeaseKey.data());
  KvEntryHandle entry(raw);
  if (s == NATS_OK) {
    auto value = ParseLeaseValue(EntryValue(entry.get()));
    if (!value.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("lease bucket ", lease_bucket, " key ", View(kLeaseKey),
                       ": ", value.status().message()));
    }
    status.lease = *std::move(value);
    status.lease_revision = kvEntry_Revision(entry.get());
  } else if (s != NATS_NOT_FOUND) {
    absl::Status error =
        NatsError(s, absl::StrCat("read lease bucket ", lease_bucket));
    if (!MarkUnread(status, "lease", error)) return error;
  }
  return absl::OkStatus();
}

// The stream's last message, `sequence`, parsed into status.head.
absl::Status ReadStreamHead(jsCtx* js, std::string_view engine_name,
                            std::uint64_t sequence, ClusterStatus& status) {
  natsMsg* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const std::string name = JournalStreamName(engine_name);
  const natsStatus s =
      js_GetMsg(&raw, js, name.c_str(), sequence, nullptr, &jerr);
  internal::MessageHandle msg(raw);
  if (s != NATS_OK) {
    absl::Status error = NatsError(
        s, absl::StrCat("read message ", sequence, " of stream ", name),
        static_cast<int>(jerr));
    if (!MarkUnread(status, "stream", error)) return error;
    return absl::OkStatus();
  }
  const auto* data =
      reinterpret_cast<const std::byte*>(natsMsg_GetData(msg.get()));
  const auto size = static_cast<std::size_t>(natsMsg_GetDataLength(msg.get()));
  auto parsed = ParseGroupMessage(std::span(data, size));
  if (!parsed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("stream ", name, " message ", sequence, ": ",
                     parsed.status().message()));
  }
  StreamHead head;
  head.sequence = sequence;
  head.epoch_marker = parsed->kind == GroupMessageKind::kEpochMarker;
  head.epoch = parsed->epoch;
  head.last_index = parsed->last_index();
  status.head = head;
  return absl::OkStatus();
}

// The stream and its last message, into status.stream and status.head
// (none: no stream).
absl::Status ReadStream(const std::string& servers, jsCtx* js,
                        std::string_view engine_name,
                        std::chrono::milliseconds timeout,
                        ClusterStatus& status) {
  auto stream = GetJournalStreamState(servers, engine_name, timeout);
  if (!stream.ok()) {
    if (!absl::IsNotFound(stream.status()) &&
        !MarkUnread(status, "stream", stream.status())) {
      return stream.status();
    }
    return absl::OkStatus();
  }
  status.stream = *stream;
  if (stream->last_sequence == 0) return absl::OkStatus();
  return ReadStreamHead(js, engine_name, stream->last_sequence, status);
}

// The members' reports, into status.members sorted by name; one that does
// not parse is a warning.
absl::Status ReadMembers(jsCtx* js, std::string_view engine_name,
                         ClusterStatus& status) {
  const std::string member_bucket = MemberBucketName(engine_name);
  auto members_kv = OpenBucket(js, member_bucket, /*create=*/false, 1);
  if (!members_kv.ok()) {
    if (!absl::IsNotFound(members_kv.status()) &&
        !MarkUnread(status, "members", members_kv.status())) {
      return members_kv.status();
    }
    return absl::OkStatus();
  }
  kvKeysList keys{};
  const natsStatus s = kvStore_Keys(&keys, members_kv->get(), nullptr);
  if (s != NATS_OK && s != NATS_NOT_FOUND) {
    absl::Status error =
        NatsError(s, absl::StrCat("list bucket ", member_bucket));
    if (!MarkUnread(status, "members", error)) return error;
  }
  for (int i = 0; s == NATS_OK && i < keys.Count; ++i) {
    const std::string key = keys.Keys[i];
    kvEntry* raw = nullptr;
    const natsStatus got = kvStore_Get(&raw, members_kv->get(), key.c_str());
    KvEntryHandle entry(raw);
    if (got == NATS_NOT_FOUND) continue;  // deleted meanwhile
    if (got != NATS_OK) {
      absl::Status error = NatsError(
          got, absl::StrCat("read ", key, " of bucket ", member_bucket));
      if (MarkUnread(status, "members", error)) break;  // keep the members read
      kvKeysList_Destroy(&keys);
      return error;
    }
    auto report = ParseMemberReport(key, EntryValue(entry.get()));
    if (!report.ok()) {
      status.warnings.push_back(absl::StrCat("bucket ", member_bucket, ": ",
                                             report.status().message()));
      continue;
    }
    report->stored_unix_ns = kvEntry_Created(entry.get());
    status.members.push_back(*std::move(report));
  }
  if (s == NATS_OK) kvKeysList_Destroy(&keys);
  std::sort(status.members.begin(), status.members.end(),
            [](const MemberReport& a, const MemberReport& b) {
              return a.name < b.name;
            });
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterStatus> ReadClusterStatus(
    const std::string& servers, std::string_view engine_name,
    std::chrono::milliseconds timeout) {
  if (absl::Status valid = ValidateEngineName(engine_name); !valid.ok()) {
    return valid;
  }
  ClusterStatus status;
  status.engine_name = std::string(engine_name);
  auto conn = internal::Connect(servers, timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  auto js = internal::JetStream(conn->get(), timeout);
  if (!js.ok()) return js.status();
  // The three sources, each of which may be unread (a transient error).
  if (absl::Status s = ReadLease(js->get(), engine_name, status); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadStream(servers, js->get(), engine_name, timeout, status);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadMembers(js->get(), engine_name, status); !s.ok()) {
    return s;
  }
  if (status.unread.size() == 3) {
    return absl::Status(
        absl::StatusCode::kUnavailable,
        absl::StrCat("NATS answers none of the three sources of engine ",
                     View(engine_name), ": ",
                     absl::StrJoin(status.unread_errors, "; ")));
  }
  return status;
}

std::uint64_t MemberLag(const ClusterStatus& status,
                        const MemberReport& member) {
  if (!status.head.has_value() ||
      member.applied_index >= status.head->last_index) {
    return 0;
  }
  return status.head->last_index - member.applied_index;
}

namespace {

std::string Age(std::int64_t stored_unix_ns, std::int64_t now_unix_ns) {
  if (stored_unix_ns == 0) return "?";
  const double seconds =
      static_cast<double>(now_unix_ns - stored_unix_ns) / 1e9;
  return absl::StrFormat("%.1f s", std::max(seconds, 0.0));
}

}  // namespace

std::string FormatClusterStatus(const ClusterStatus& status,
                                std::int64_t now_unix_ns) {
  std::string out = absl::StrCat("engine   ", status.engine_name, "\n");
  if (status.lease.has_value()) {
    absl::StrAppend(&out, "leader   ", status.lease->holder, " (epoch ",
                    status.lease->epoch, ", lease ",
                    status.lease->duration.count(), " ms, revision ",
                    status.lease_revision, ")\n");
  } else if (Unread(status, "lease")) {
    absl::StrAppend(&out, "leader   unknown (the lease could not be read)\n");
  } else {
    absl::StrAppend(&out, "leader   none (no lease has been taken)\n");
  }
  if (!status.stream.has_value() && Unread(status, "stream")) {
    absl::StrAppend(&out, "stream   unknown (it could not be read)\n");
  } else if (!status.stream.has_value()) {
    absl::StrAppend(&out, "stream   none (no primary has created it)\n");
  } else {
    absl::StrAppend(&out, "stream   ", JournalStreamName(status.engine_name),
                    ": ", status.stream->messages, " messages, R",
                    status.stream->replicas);
    if (!status.stream->leader.empty()) {
      absl::StrAppend(&out, ", led by ", status.stream->leader);
    }
    absl::StrAppend(&out, "\n");
    if (status.head.has_value()) {
      absl::StrAppend(
          &out, "head     sequence ", status.head->sequence, ": journal index ",
          status.head->last_index, ", epoch ", status.head->epoch,
          status.head->epoch_marker ? " (an epoch marker)" : "", "\n");
    }
  }
  if (status.members.empty() && Unread(status, "members")) {
    absl::StrAppend(&out, "members  unknown (they could not be read)\n");
  } else if (status.members.empty()) {
    absl::StrAppend(&out, "members  none reported\n");
  } else {
    absl::StrAppend(&out, absl::StrFormat("%-24s %-8s %6s %14s %10s %10s %8s\n",
                                          "member", "role", "epoch", "applied",
                                          "sequence", "lag", "heard"));
    for (const MemberReport& m : status.members) {
      absl::StrAppend(
          &out, absl::StrFormat("%-24s %-8s %6u %14u %10u %10u %8s\n", m.name,
                                m.role, m.epoch, m.applied_index,
                                m.stream_sequence, MemberLag(status, m),
                                Age(m.stored_unix_ns, now_unix_ns)));
    }
  }
  for (const std::string& warning : status.warnings) {
    absl::StrAppend(&out, "warning  ", warning, "\n");
  }
  for (std::size_t i = 0; i < status.unread.size(); ++i) {
    absl::StrAppend(&out, "unread   ", status.unread[i],
                    " could not be read now: ", status.unread_errors[i], "\n");
  }
  return out;
}

std::string ClusterStatusJson(const ClusterStatus& status,
                              std::int64_t now_unix_ns) {
  // Every string here is an engine, holder, member or role name, checked
  // to characters that need no escaping; warnings are not included.
  std::string out = absl::StrCat("{\"engine\":", Quoted(status.engine_name));
  if (status.lease.has_value()) {
    absl::StrAppend(&out, ",\"leader\":", Quoted(status.lease->holder),
                    ",\"epoch\":", status.lease->epoch,
                    ",\"lease_ms\":", status.lease->duration.count(),
                    ",\"lease_revision\":", status.lease_revision);
  } else {
    absl::StrAppend(&out, ",\"leader\":null");
  }
  if (status.stream.has_value()) {
    absl::StrAppend(&out, ",\"stream_messages\":", status.stream->messages,
                    ",\"stream_replicas\":", status.stream->replicas);
  }
  if (status.head.has_value()) {
    absl::StrAppend(&out, ",\"stream_last_sequence\":", status.head->sequence,
                    ",\"stream_last_index\":", status.head->last_index,
                    ",\"stream_last_epoch\":", status.head->epoch);
  }
  absl::StrAppend(&out, ",\"members\":[");
  for (std::size_t i = 0; i < status.members.size(); ++i) {
    const MemberReport& m = status.members[i];
    absl::StrAppend(&out, i == 0 ? "" : ",", "{\"name\":", Quoted(m.name),
                    ",\"role\":", Quoted(m.role), ",\"epoch\":", m.epoch,
                    ",\"applied_index\":", m.applied_index,
                    ",\"stream_sequence\":", m.stream_sequence,
                    ",\"lag\":", MemberLag(status, m), ",\"heard_ms_ago\":",
                    m.stored_unix_ns == 0
                        ? -1
                        : std::max<std::int64_t>(
                              0, (now_unix_ns - m.stored_unix_ns) / 1'000'000),
                    "}");
  }
  absl::StrAppend(&out, "],\"warnings\":", status.warnings.size(),
                  ",\"unread\":[");
  for (std::size_t i = 0; i < status.unread.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", Quoted(status.unread[i]));
  }
  absl::StrAppend(&out, "]}");
  return out;
}

}  // namespace orderwire::replication
