// The configuration files of before TOML: `key = value` lines (`#`
// comments; `session.N.accounts` etc. for the sessions). Read only to
// convert them: `orderwire config convert OLD` prints the TOML equivalent,
// and the command line gives IsLegacyServiceConfig to the TOML reader
// (config::ConfigSource::is_legacy, cli/common.cc) so that it recognises an
// old file and says how to convert it. Nothing loads a service from this
// form any more. Cold path; next to its only user, `config convert`
// (cli/cmd_config.cc), in a library of its own (orderwire::legacy_config)
// that the tests and the configuration fuzz target link too.
//
// The form the journal pins in its segment headers (state/pinned_config.h)
// is also key = value text, but it is a journal format, not this: it is
// written and read by state/pinned_config.cc and does not change.
#ifndef ORDERWIRE_CLI_LEGACY_CONFIG_H_
#define ORDERWIRE_CLI_LEGACY_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "config/service_config.h"

namespace orderwire::cli::legacy {

using config::ServiceConfig;

// The old reader, as it was, except that a session.N.key_file is recorded
// as written (SessionPolicy::key_file) and never read. Errors:
// InvalidArgument "line N: key: why". Cost: O(text size).
[[nodiscard]] absl::StatusOr<ServiceConfig> ParseLegacyServiceConfig(
    std::string_view text);

// The TOML equivalent of an old file: its keys in [engine], [service] and
// [sessions.N] tables, in the order of the file within each table, with its
// comments (a comment line goes with the key after it, an end-of-line
// comment stays on its line). The old file is read with
// ParseLegacyServiceConfig first (its errors are returned as they are), and
// the result is checked by loading it with config::ParseServiceConfig (key
// files not read) and comparing (config::ComparableText) with what the old
// reader read: Internal if they differ
// (a bug), InvalidArgument if something of the old file cannot be written in
// TOML (text that is not UTF-8). Cost: O(text size).
//
// `old_directory`: the directory the old file is in, as an absolute path.
// When given, a relative session.N.key_file is written as that directory
// plus the path, so that the new file names the same key wherever it is
// put (a TOML file's relative paths are taken from its own directory).
// Empty: paths are written as they are.
[[nodiscard]] absl::StatusOr<std::string> ConvertLegacyConfig(
    std::string_view text, std::string_view old_directory = {});

// Whether the old reader accepts `text` (ParseLegacyServiceConfig(text) is
// OK): config::ConfigSource::is_legacy for the command line's TOML reader.
[[nodiscard]] bool IsLegacyServiceConfig(std::string_view text);

}  // namespace orderwire::cli::legacy

#endif  // ORDERWIRE_CLI_LEGACY_CONFIG_H_
