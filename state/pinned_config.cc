// The configuration a journal pins; see pinned_config.h.
#include "state/pinned_config.h"

#include <charconv>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "state/state_machine.h"

namespace orderwire::state {
namespace {

constexpr std::string_view kFirstLinePrefix = "orderwire pinned configuration ";
constexpr int kPinnedVersion = 1;
constexpr std::string_view kMaxSessionsKey = "max_sessions";

// The lines of `text` (each without its '\n').
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    lines.push_back(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view{}
                                         : text.substr(eol + 1);
  }
  return lines;
}

}  // namespace

bool operator==(const PinnedConfig& a, const PinnedConfig& b) {
  return EncodePinnedConfig(a) == EncodePinnedConfig(b);
}

PinnedConfig PinnedConfigOf(const config::ServiceConfig& config) {
  return {.engine = config.engine, .max_sessions = config.max_sessions};
}

PinnedConfig PinnedConfigOf(const StateMachine& machine) {
  return {.engine = machine.options().engine,
          .max_sessions = machine.options().max_sessions};
}

std::string EncodePinnedConfig(const PinnedConfig& config) {
  return absl::StrFormat("%s%d\n%s%s = %d\n", kFirstLinePrefix, kPinnedVersion,
                         engine::FormatKeyValueConfig(config.engine),
                         kMaxSessionsKey, config.max_sessions);
}

absl::StatusOr<PinnedConfig> DecodePinnedConfig(std::string_view text) {
  const std::vector<std::string_view> lines = Lines(text);
  if (lines.empty() || !lines[0].starts_with(kFirstLinePrefix)) {
    return absl::DataLossError(absl::StrFormat(
        "not a pinned configuration: the first line is not \"%s%d\"",
        kFirstLinePrefix, kPinnedVersion));
  }
  const std::string_view version = lines[0].substr(kFirstLinePrefix.size());
  if (version != absl::StrFormat("%d", kPinnedVersion)) {
    return absl::UnimplementedError(absl::StrFormat(
        "pinned configuration version '%s' (this build reads version %d)",
        version, kPinnedVersion));
  }
  // The engine's keys through the engine's parser, max_sessions here; then
  // the text must be exactly the canonical form of what was read.
  std::string engine_text;
  std::optional<std::uint32_t> max_sessions;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::string prefix = absl::StrFormat("%s = ", kMaxSessionsKey);
    if (line.starts_with(prefix)) {
      const std::string_view value = line.substr(prefix.size());
      std::uint32_t parsed = 0;
      const auto [end, ec] =
          std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (ec != std::errc() || end != value.data() + value.size() ||
          parsed == 0) {
        return absl::DataLossError(absl::StrFormat(
            "pinned configuration line %d: max_sessions '%s' is not an "
            "integer in 1..4294967295",
            i + 1, value));
      }
      max_sessions = parsed;
      continue;
    }
    engine_text.append(line);
    engine_text += '\n';
  }
  absl::StatusOr<engine::EngineConfig> engine =
      engine::ParseKeyValueConfig(engine_text);
  if (!engine.ok()) {
    return absl::DataLossError(
        absl::StrFormat("pinned configuration: engine limits: %s (lines "
                        "counted after the first)",
                        engine.status().message()));
  }
  if (!max_sessions.has_value()) {
    return absl::DataLossError("pinned configuration: max_sessions missing");
  }
  PinnedConfig config{.engine = *engine, .max_sessions = *max_sessions};
  if (EncodePinnedConfig(config) != text) {
    return absl::DataLossError(
        "pinned configuration is not in its canonical form (every key once, "
        "in order, as 'key = value' lines, nothing else)");
  }
  return config;
}

std::vector<std::string> PinnedConfigDifferences(const PinnedConfig& from,
                                                 const PinnedConfig& to) {
  // Both texts are canonical: the same keys on the same lines.
  const std::string a = EncodePinnedConfig(from);
  const std::string b = EncodePinnedConfig(to);
  const std::vector<std::string_view> la = Lines(a);
  const std::vector<std::string_view> lb = Lines(b);
  std::vector<std::string> out;
  for (std::size_t i = 1; i < la.size() && i < lb.size(); ++i) {
    if (la[i] == lb[i]) continue;
    const std::size_t eq = la[i].find(" = ");
    out.push_back(absl::StrFormat("%s: %s -> %s", la[i].substr(0, eq),
                                  la[i].substr(eq + 3), lb[i].substr(eq + 3)));
  }
  return out;
}

std::string DescribeDifferences(const PinnedConfig& from,
                                const PinnedConfig& to) {
  return absl::StrJoin(PinnedConfigDifferences(from, to), "; ");
}

absl::StatusOr<PinnedConfig> SegmentConfig(const journal::SegmentInfo& segment,
                                           const PinnedConfig& unpinned) {
  if (segment.metadata.empty()) return unpinned;
  absl::StatusOr<PinnedConfig> config = DecodePinnedConfig(segment.metadata);
  if (!config.ok()) {
    return absl::Status(
        config.status().code(),
        absl::StrFormat("segment %s (from index %d): the configuration in its "
                        "header block cannot be read: %s",
                        segment.path, segment.header.first_index,
                        config.status().message()));
  }
  return config;
}

absl::Status FollowNewSegments(const journal::JournalReader& reader,
                               std::size_t& seen, const PinnedConfig& unpinned,
                               StateMachine& machine,
                               std::vector<std::string>* log) {
  const std::vector<journal::SegmentInfo>& segments = reader.segments();
  for (; seen < segments.size(); ++seen) {
    const journal::SegmentInfo& segment = segments[seen];
    absl::StatusOr<PinnedConfig> config = SegmentConfig(segment, unpinned);
    if (!config.ok()) return config.status();
    const PinnedConfig current = PinnedConfigOf(machine);
    if (*config == current) continue;
    if (absl::Status s =
            machine.Reconfigure(config->engine, config->max_sessions);
        !s.ok()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "segment %s pins a configuration from index %d that the state "
          "cannot take (%s): %s",
          segment.path, segment.header.first_index,
          DescribeDifferences(current, *config), s.message()));
    }
    if (log != nullptr && machine.last_index() > 0) {
      log->push_back(absl::StrFormat("from index %d (segment %s): %s",
                                     segment.header.first_index, segment.path,
                                     DescribeDifferences(current, *config)));
    }
  }
  return absl::OkStatus();
}

}  // namespace orderwire::state
