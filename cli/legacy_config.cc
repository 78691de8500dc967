// The reader and converter of pre-TOML configuration files; see
// legacy_config.h.
#include "cli/legacy_config.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "config/config_text.h"
#include "engine/config.h"

namespace orderwire::cli::legacy {
namespace {

using config::AccountSet;
using config::AddressSet;
using config::ComparableText;
using config::ConfigSource;
using config::ParseServiceConfig;
using config::SessionPolicy;
using config::text::ParseU64;
using config::text::SplitList;
using config::text::Trim;

// One line of an old file: a key = value (with its end-of-line comment and
// the comment lines just before it), or a comment line.
struct OldLine {
  std::string key;
  std::string value;
  std::string comment;                // "# ..." at the end of the line
  std::vector<std::string> comments;  // whole comment lines before it
};

// The entries of a text the old reader accepted, and the comment lines after
// the last one.
struct OldFile {
  std::vector<std::string> header;  // comment lines before the first key
  std::vector<OldLine> entries;
  std::vector<std::string> footer;
};

OldFile SplitOldFile(std::string_view text) {
  OldFile file;
  std::vector<std::string> pending;
  bool any_entry = false;
  bool blank_since_comment = false;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view raw = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{}
                                         : text.substr(eol + 1);
    const std::size_t hash = raw.find('#');
    const std::string_view content = Trim(raw.substr(0, hash));
    const std::string_view comment = hash == std::string_view::npos
                                         ? std::string_view{}
                                         : Trim(raw.substr(hash));
    if (content.empty()) {
      if (comment.empty()) {
        // A blank line after the opening comments ends the file's header.
        if (!any_entry && !pending.empty()) blank_since_comment = true;
        continue;
      }
      if (!any_entry && blank_since_comment) {
        file.header.insert(file.header.end(), pending.begin(), pending.end());
        pending.clear();
        blank_since_comment = false;
      }
      pending.emplace_back(comment);
      continue;
    }
    if (!any_entry && blank_since_comment) {
      file.header.insert(file.header.end(), pending.begin(), pending.end());
      pending.clear();
    }
    any_entry = true;
    const std::size_t eq = content.find('=');
    OldLine line;
    line.key = std::string(Trim(content.substr(0, eq)));
    line.value = eq == std::string_view::npos
                     ? std::string()
                     : std::string(Trim(content.substr(eq + 1)));
    line.comment = std::string(comment);
    line.comments = std::move(pending);
    pending.clear();
    file.entries.push_back(std::move(line));
  }
  if (!any_entry) {
    file.header = std::move(pending);
  } else {
    file.footer = std::move(pending);
  }
  return file;
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7F) {
      out += absl::StrFormat("\\u%04X", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// "any" or an array of ids (integers while they fit in TOML's 64-bit signed
// integers) and "a-b" ranges, in the order written.
std::string AccountsToToml(std::string_view value) {
  if (Trim(value) == "any") return "\"any\"";
  std::string out = "[";
  for (const std::string_view item : SplitList(value)) {
    if (out.size() > 1) out += ", ";
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      ParseU64(item, low);  // checked by the old reader
      out += low <= static_cast<std::uint64_t>(INT64_MAX)
                 ? absl::StrFormat("%d", low)
                 : absl::StrFormat("\"%d\"", low);
    } else {
      ParseU64(Trim(item.substr(0, dash)), low);
      ParseU64(Trim(item.substr(dash + 1)), high);
      out += absl::StrFormat("\"%d-%d\"", low, high);
    }
  }
  return out + "]";
}

std::string AddressesToToml(std::string_view value) {
  if (Trim(value) == "any") return "\"any\"";
  std::string out = "[";
  for (const std::string_view item : SplitList(value)) {
    if (out.size() > 1) out += ", ";
    out += TomlString(item);
  }
  return out + "]";
}

// The shortest text that reads back as `seconds`, as a TOML float.
std::string SecondsToToml(double seconds) {
  char text[64];
  const auto [end, ec] = std::to_chars(text, text + sizeof(text), seconds);
  std::string out(text, ec == std::errc() ? end : text);
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

bool IsEngineKey(std::string_view key) {
  return engine::FindConfigKey(key) != nullptr;
}

// The engine's value of `key` (an engine key), in canonical decimal.
std::string EngineValue(const engine::EngineConfig& config,
                        std::string_view key) {
  return absl::StrFormat("%d", engine::FindConfigKey(key)->get(config));
}

// One TOML table being written: its header and its lines.
struct TomlTable {
  std::string header;
  std::vector<std::string> lines;
};

// What the old reader gathers from the service lines, settled once the
// whole file is read (ResolveSessions).
struct OldServiceLines {
  std::optional<bool> open_sessions;
  std::optional<AddressSet> allowed;
  absl::flat_hash_map<std::uint32_t, std::optional<AddressSet>> addresses;
  absl::flat_hash_map<std::uint32_t, bool> has_accounts;
};

bool IsServiceKey(std::string_view key) {
  return key == "max_sessions" || key == "max_report_history_bytes" ||
         key == "session_idle_seconds" || key == "open_sessions" ||
         key == "open_accounts" || key == "allowed_addresses" ||
         key.substr(0, 8) == "session.";
}

// The reasons below are InvalidArgument errors whose message is only the
// why; the caller names the line and the key.
absl::Status Why(const std::string& why) {
  return absl::InvalidArgumentError(why);
}

// A session.ID.accounts / .addresses / .key_file line.
absl::Status ReadSessionLine(std::string_view key, std::string_view value,
                             ServiceConfig& config, OldServiceLines& lines) {
  const std::string_view rest = key.substr(8);
  const std::size_t dot = rest.find('.');
  std::uint64_t id = 0;
  if (dot == std::string_view::npos || !ParseU64(rest.substr(0, dot), id) ||
      id > UINT32_MAX) {
    return Why(
        "expected session.<id>.accounts, session.<id>.addresses or "
        "session.<id>.key_file with a u32 session id");
  }
  const std::string_view what = rest.substr(dot + 1);
  const auto sid = static_cast<std::uint32_t>(id);
  SessionPolicy& policy = config.sessions[sid];
  if (what == "accounts") {
    absl::StatusOr<AccountSet> set = AccountSet::Parse(value);
    if (!set.ok()) return Why(std::string(set.status().message()));
    policy.accounts = *set;
    lines.has_accounts[sid] = true;
  } else if (what == "addresses") {
    absl::StatusOr<AddressSet> set = AddressSet::Parse(value);
    if (!set.ok()) return Why(std::string(set.status().message()));
    lines.addresses[sid] = *set;
  } else if (what == "key_file") {
    if (value.empty()) return Why("needs a path");
    // Recorded as written; the key is read when the converted file is
    // loaded (LoadServiceConfig), never here.
    policy.key_file = std::string(value);
  } else {
    return Why("unknown session key (accounts, addresses, key_file)");
  }
  return absl::OkStatus();
}

// A line of a key IsServiceKey accepts.
absl::Status ReadServiceLine(std::string_view key, std::string_view value,
                             ServiceConfig& config, OldServiceLines& lines) {
  if (key == "max_sessions") {
    std::uint64_t n = 0;
    if (!ParseU64(value, n) || n < 1 || n > 1'000'000) {
      return Why("must be an integer from 1 to 1000000");
    }
    config.max_sessions = static_cast<std::uint32_t>(n);
  } else if (key == "max_report_history_bytes") {
    std::uint64_t n = 0;
    if (!ParseU64(value, n) || n > (std::uint64_t{1} << 40)) {
      return Why("must be an integer from 0 to 1099511627776 (1 TiB)");
    }
    config.max_report_history_bytes = n;
  } else if (key == "session_idle_seconds") {
    double seconds = 0;
    if (!absl::SimpleAtod(absl::string_view(value.data(), value.size()),
                          &seconds) ||
        !(seconds > 0) || seconds > 1e9) {
      return Why("must be a number of seconds above 0 (e.g. 60, 0.5)");
    }
    config.session_idle_seconds = seconds;
  } else if (key == "open_sessions") {
    if (value != "true" && value != "false") {
      return Why("must be true or false");
    }
    lines.open_sessions = value == "true";
  } else if (key == "open_accounts") {
    absl::StatusOr<AccountSet> set = AccountSet::Parse(value);
    if (!set.ok()) return Why(std::string(set.status().message()));
    config.open_policy.accounts = *set;
  } else if (key == "allowed_addresses") {
    absl::StatusOr<AddressSet> set = AddressSet::Parse(value);
    if (!set.ok()) return Why(std::string(set.status().message()));
    lines.allowed = *set;
  } else {
    return ReadSessionLine(key, value, config, lines);
  }
  return absl::OkStatus();
}

// The open addresses, each session's addresses (its own, or the open ones)
// and whether unlisted sessions may connect, once every line is read.
absl::Status ResolveSessions(const OldServiceLines& lines,
                             ServiceConfig& config) {
  if (lines.allowed.has_value()) config.open_policy.addresses = *lines.allowed;
  for (auto& [id, policy] : config.sessions) {
    if (!lines.has_accounts.contains(id)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "session %d has addresses or a key file but no session.%d.accounts "
          "line",
          id, id));
    }
    auto it = lines.addresses.find(id);
    policy.addresses = it != lines.addresses.end() && it->second.has_value()
                           ? *it->second
                           : config.open_policy.addresses;
  }
  config.open_sessions = lines.open_sessions.value_or(config.sessions.empty());
  return absl::OkStatus();
}

// A relative key file, taken from the old file's directory (if given).
std::string KeyPath(std::string_view old_directory, std::string_view path) {
  if (old_directory.empty() || path.empty() || path.front() == '/') {
    return std::string(path);
  }
  return absl::StrFormat("%s/%s", old_directory, path);
}

// The TOML table, key and value an old line becomes.
struct TomlEntry {
  std::string header;
  std::string key;
  std::string value;
};

TomlEntry SessionEntry(const OldLine& line, std::string_view old_directory) {
  const std::string_view rest = std::string_view(line.key).substr(8);
  const std::size_t dot = rest.find('.');
  std::uint64_t id = 0;
  ParseU64(rest.substr(0, dot), id);  // checked by the old reader
  TomlEntry entry{.header = absl::StrFormat("sessions.%d", id),
                  .key = std::string(rest.substr(dot + 1)),
                  .value = {}};
  if (entry.key == "accounts") {
    entry.value = AccountsToToml(line.value);
  } else if (entry.key == "addresses") {
    entry.value = AddressesToToml(line.value);
  } else if (entry.key == "key_file") {
    entry.value = TomlString(KeyPath(old_directory, line.value));
  } else {
    entry.value = TomlString(line.value);
  }
  return entry;
}

TomlEntry ServiceEntry(const OldLine& line, const ServiceConfig& old) {
  TomlEntry entry{.header = "service", .key = line.key, .value = {}};
  if (line.key == "max_sessions") {
    entry.value = absl::StrFormat("%d", old.max_sessions);
  } else if (line.key == "max_report_history_bytes") {
    entry.value = absl::StrFormat("%d", old.max_report_history_bytes);
  } else if (line.key == "session_idle_seconds") {
    entry.value = SecondsToToml(old.session_idle_seconds);
  } else if (line.key == "open_sessions") {
    entry.value = line.value;  // true or false, checked by the old reader
  } else if (line.key == "open_accounts") {
    entry.value = AccountsToToml(line.value);
  } else {
    entry.value = AddressesToToml(line.value);
  }
  return entry;
}

// `old` is what the old reader read from the file.
TomlEntry EntryOf(const OldLine& line, const ServiceConfig& old,
                  std::string_view old_directory) {
  if (IsEngineKey(line.key)) {
    return {.header = "engine",
            .key = line.key,
            .value = EngineValue(old.engine, line.key)};
  }
  if (line.key.starts_with("session.")) {
    return SessionEntry(line, old_directory);
  }
  return ServiceEntry(line, old);
}

// The old file's entries in TOML tables: [engine] first, then [service],
// then the sessions in order of mention; each entry with its comments.
std::vector<TomlTable> TomlTablesOf(const OldFile& file,
                                    const ServiceConfig& old,
                                    std::string_view old_directory) {
  std::vector<TomlTable> tables;
  absl::flat_hash_map<std::string, std::size_t> table_index;
  const auto table = [&](const std::string& header) -> TomlTable& {
    auto [it, added] = table_index.try_emplace(header, tables.size());
    if (added) tables.push_back({header, {}});
    return tables[it->second];
  };
  for (const OldLine& line : file.entries) {
    if (IsEngineKey(line.key)) table("engine");
  }
  for (const OldLine& line : file.entries) {
    if (!IsEngineKey(line.key) && !line.key.starts_with("session.")) {
      table("service");
    }
  }
  for (const OldLine& line : file.entries) {
    const TomlEntry entry = EntryOf(line, old, old_directory);
    TomlTable& out = table(entry.header);
    out.lines.insert(out.lines.end(), line.comments.begin(),
                     line.comments.end());
    std::string text = absl::StrFormat("%s = %s", entry.key, entry.value);
    if (!line.comment.empty()) text += "  " + line.comment;
    out.lines.push_back(std::move(text));
  }
  return tables;
}

std::string TomlText(const OldFile& file,
                     const std::vector<TomlTable>& tables) {
  std::string toml =
      "# Converted from a key = value configuration file by 'orderwire "
      "config convert'.\n";
  for (const std::string& comment : file.header) toml += comment + "\n";
  for (const TomlTable& t : tables) {
    absl::StrAppendFormat(&toml, "\n[%s]\n", t.header);
    for (const std::string& line : t.lines) toml += line + "\n";
  }
  if (!file.footer.empty()) toml += "\n";
  for (const std::string& comment : file.footer) toml += comment + "\n";
  return toml;
}

// The check: the TOML reads back as the old reader read the old text.
absl::Status CheckConversion(const std::string& toml,
                             const ServiceConfig& old) {
  ConfigSource source;
  source.path = "(converted)";
  source.load_key_files = false;
  source.is_legacy = IsLegacyServiceConfig;  // as every reader of the CLI
  absl::StatusOr<ServiceConfig> converted = ParseServiceConfig(toml, source);
  if (!converted.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the converted file does not load (%s); the old file holds text TOML "
        "cannot (comments and paths must be UTF-8)",
        converted.status().message()));
  }
  if (ComparableText(*converted) != ComparableText(old)) {
    return absl::InternalError(absl::StrFormat(
        "conversion changed the configuration (a bug): old reader:\n%s\n"
        "converted:\n%s",
        ComparableText(old), ComparableText(*converted)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServiceConfig> ParseLegacyServiceConfig(std::string_view text) {
  ServiceConfig config;
  // Engine keys are handed to engine::ParseKeyValueConfig; service lines are
  // blanked there so that its line numbers stay those of the file.
  std::string engine_text;
  OldServiceLines service_lines;
  absl::flat_hash_set<std::string> seen_keys;
  int line_number = 0;
  while (!text.empty() || line_number == 0) {
    ++line_number;
    const std::size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view()
                                         : text.substr(end + 1);
    std::string_view line = raw.substr(0, raw.find('#'));
    const std::size_t eq = line.find('=');
    const std::string_view key = Trim(line.substr(0, eq));
    const std::string_view value =
        eq == std::string_view::npos ? "" : Trim(line.substr(eq + 1));
    if (!IsServiceKey(key) || eq == std::string_view::npos) {
      engine_text.append(raw);
      engine_text.push_back('\n');
      if (end == std::string_view::npos) break;
      continue;
    }
    engine_text.push_back('\n');
    absl::Status read = seen_keys.insert(std::string(key)).second
                            ? ReadServiceLine(key, value, config, service_lines)
                            : Why("given twice");
    if (!read.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("line %d: %s: %s", line_number, key, read.message()));
    }
    if (end == std::string_view::npos) break;
  }
  absl::StatusOr<engine::EngineConfig> engine_config =
      engine::ParseKeyValueConfig(engine_text);
  if (!engine_config.ok()) return engine_config.status();
  config.engine = *engine_config;
  if (absl::Status s = ResolveSessions(service_lines, config); !s.ok()) {
    return s;
  }
  return config;
}

absl::StatusOr<std::string> ConvertLegacyConfig(
    std::string_view text, std::string_view old_directory) {
  absl::StatusOr<ServiceConfig> old = ParseLegacyServiceConfig(text);
  if (!old.ok()) return old.status();
  for (auto& [id, policy] : old->sessions) {
    policy.key_file = KeyPath(old_directory, policy.key_file);
  }
  const OldFile file = SplitOldFile(text);
  const std::string toml =
      TomlText(file, TomlTablesOf(file, *old, old_directory));
  if (absl::Status s = CheckConversion(toml, *old); !s.ok()) return s;
  return toml;
}

bool IsLegacyServiceConfig(std::string_view text) {
  return ParseLegacyServiceConfig(text).ok();
}

}  // namespace orderwire::cli::legacy
