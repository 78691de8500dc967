#include "replication/journal_stream.h"

#include <nats/nats.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "replication/internal/nats_handles.h"

namespace orderwire::replication {
namespace {

// Debian's Abseil has its own string_view type: convert for StrCat.
absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

using internal::NatsError;
using internal::StreamInfoHandle;

constexpr std::size_t kMaxEngineNameLength = 64;
constexpr std::string_view kDescriptionPrefix = "orderwire journal ";
constexpr std::size_t kJournalIdDigits = 16;

// FailedPrecondition for a description that is not a label.
absl::StatusOr<JournalStreamState> StateOf(const jsStreamInfo& info,
                                           std::string_view stream) {
  JournalStreamState state;
  const char* description =
      info.Config != nullptr ? info.Config->Description : nullptr;
  absl::StatusOr<std::uint64_t> journal_id =
      ParseJournalStreamDescription(description != nullptr ? description : "");
  if (!journal_id.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "JetStream stream ", View(stream), ": ", journal_id.status().message(),
        ": orderwire labels its streams 'orderwire journal <journal_id>' (16 "
        "hex digits); set or clear it with the nats tool"));
  }
  state.journal_id = *journal_id;
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

// An existing stream labelled with another journal than spec.journal_id.
absl::Status CheckStreamJournal(const JournalStreamState& state,
                                const JournalStreamSpec& spec,
                                std::string_view stream) {
  if (spec.journal_id == 0 || state.journal_id == 0 ||
      state.journal_id == spec.journal_id) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "JetStream stream %s carries journal %016x (its description), not this "
      "node's journal %016x: it holds another journal's records. Not "
      "appended to: start this node on that journal (as a standby of it), or "
      "give it another --engine-name",
      stream, state.journal_id, spec.journal_id));
}

}  // namespace

std::string JournalStreamDescription(std::uint64_t journal_id) {
  return absl::StrFormat("%s%016x", View(kDescriptionPrefix), journal_id);
}

absl::StatusOr<std::uint64_t> ParseJournalStreamDescription(
    std::string_view description) {
  if (description.empty()) return 0;
  const auto refuse = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("description '", View(description.substr(0, 80)),
                     description.size() > 80 ? "...'" : "'",
                     " is not 'orderwire journal <journal_id>'"));
  };
  if (description.size() != kDescriptionPrefix.size() + kJournalIdDigits ||
      description.substr(0, kDescriptionPrefix.size()) != kDescriptionPrefix) {
    return refuse();
  }
  std::uint64_t id = 0;
  for (const char c : description.substr(kDescriptionPrefix.size())) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return refuse();
    }
    id = (id << 4) | static_cast<std::uint64_t>(digit);
  }
  if (id == 0) return refuse();
  return id;
}

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
    absl::StatusOr<JournalStreamState> state = StateOf(**existing, stream);
    if (!state.ok()) return state.status();
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
    if (absl::Status s = CheckStreamJournal(*state, spec, stream); !s.ok()) {
      return s;
    }
    return state;
  }
  if (existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }

  jsStreamConfig config;
  natsStatus s = jsStreamConfig_Init(&config);
  if (s != NATS_OK) return NatsError(s, "stream config");
  const char* subjects[] = {subject.c_str()};
  const std::string description =
      spec.journal_id != 0 ? JournalStreamDescription(spec.journal_id) : "";
  config.Name = stream.c_str();
  if (!description.empty()) config.Description = description.c_str();
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
    if (again.ok()) {
      absl::StatusOr<JournalStreamState> state = StateOf(**again, stream);
      if (!state.ok()) return state.status();
      if (absl::Status c = CheckStreamJournal(*state, spec, stream); !c.ok()) {
        return c;
      }
      return state;
    }
    return NatsError(s, absl::StrCat("create JetStream stream ", stream),
                     static_cast<int>(jerr));
  }
  return StateOf(*created, stream);
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
  const std::string stream = JournalStreamName(engine_name);
  auto info = internal::LookUpStream(js->get(), stream);
  if (!info.ok()) return info.status();
  return StateOf(**info, stream);
}

}  // namespace orderwire::replication
