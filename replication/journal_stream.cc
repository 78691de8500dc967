#include "replication/journal_stream.h"

#include <nats/nats.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "replication/internal/nats_handles.h"

namespace orderwire::replication {
namespace {

// Debian's Abseil has its own string_view type: convert for StrCat.
absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

using internal::NatsError;
using internal::StreamInfoHandle;

constexpr std::size_t kMaxEngineNameLength = 64;

JournalStreamState StateOf(const jsStreamInfo& info) {
  JournalStreamState state;
  state.first_sequence = info.State.FirstSeq;
  state.last_sequence = info.State.LastSeq;
  state.messages = info.State.Msgs;
  state.replicas =
      info.Config != nullptr ? static_cast<int>(info.Config->Replicas) : 0;
  if (info.Cluster != nullptr && info.Cluster->Leader != nullptr) {
    state.leader = info.Cluster->Leader;
  }
  return state;
}

}  // namespace

absl::Status ValidateEngineName(std::string_view name) {
  if (name.empty() || name.size() > kMaxEngineNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("engine name '", View(name), "': ", name.size(),
                     " characters, expected 1 to ", kMaxEngineNameLength));
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "engine name '", View(name), "': character ", i + 1,
          " is not one of A-Z a-z 0-9 _ - (it names a NATS subject)"));
    }
  }
  return absl::OkStatus();
}

std::string JournalStreamName(std::string_view engine_name) {
  return absl::StrCat("orderwire_", View(engine_name), "_journal");
}

std::string JournalSubject(std::string_view engine_name) {
  return absl::StrCat("orderwire.", View(engine_name), ".journal");
}

absl::StatusOr<JournalStreamState> EnsureJournalStream(
    const std::string& servers, const JournalStreamSpec& spec,
    std::chrono::milliseconds timeout) {
  if (absl::Status valid = ValidateEngineName(spec.engine_name); !valid.ok()) {
    return valid;
  }
  if (spec.replicas != 1 && spec.replicas != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "journal stream replicas: ", spec.replicas, ", expected 1 or 3"));
  }
  auto conn = internal::Connect(servers, timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  auto js = internal::JetStream(conn->get(), timeout);
  if (!js.ok()) return js.status();

  const std::string stream = JournalStreamName(spec.engine_name);
  const std::string subject = JournalSubject(spec.engine_name);
  auto existing = internal::LookUpStream(js->get(), stream);
  if (existing.ok()) {
    const jsStreamConfig* config = (*existing)->Config;
    const bool subject_ok = config != nullptr && config->SubjectsLen == 1 &&
                            subject == config->Subjects[0];
    if (!subject_ok || config->Storage != js_FileStorage ||
        config->Replicas != spec.replicas) {
      return absl::FailedPreconditionError(absl::StrCat(
          "JetStream stream ", stream,
          " exists with other settings (expected subject ", subject,
          ", file storage, ", spec.replicas, " replicas; it has ",
          config != nullptr ? config->Replicas : 0,
          " replicas): change or delete it with the nats tool first"));
    }
    return StateOf(**existing);
  }
  if (existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }

  jsStreamConfig config;
  natsStatus s = jsStreamConfig_Init(&config);
  if (s != NATS_OK) return NatsError(s, "stream config");
  const char* subjects[] = {subject.c_str()};
  config.Name = stream.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Replicas = spec.replicas;
  config.Retention = js_LimitsPolicy;
  config.Duplicates = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          spec.duplicate_window)
                          .count();
  config.DenyDelete = !spec.allow_delete_for_tests;
  config.DenyPurge = !spec.allow_delete_for_tests;
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_AddStream(&raw, js->get(), &config, nullptr, &jerr);
  StreamInfoHandle created(raw);
  if (s != NATS_OK) {
    // Another process may have created it in the meantime: look again.
    auto again = internal::LookUpStream(js->get(), stream);
    if (again.ok()) return StateOf(**again);
    return NatsError(s, absl::StrCat("create JetStream stream ", stream),
                     static_cast<int>(jerr));
  }
  return StateOf(*created);
}

absl::StatusOr<JournalStreamState> GetJournalStreamState(
    const std::string& servers, std::string_view engine_name,
    std::chrono::milliseconds timeout) {
  if (absl::Status valid = ValidateEngineName(engine_name); !valid.ok()) {
    return valid;
  }
  auto conn = internal::Connect(servers, timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  auto js = internal::JetStream(conn->get(), timeout);
  if (!js.ok()) return js.status();
  auto info = internal::LookUpStream(js->get(), JournalStreamName(engine_name));
  if (!info.ok()) return info.status();
  return StateOf(**info);
}

}  // namespace orderwire::replication
