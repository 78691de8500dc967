// The configuration files of before TOML: `key = value` lines (`#`
// comments; `session.N.accounts` etc. for the sessions). Read only to
// convert them: `orderwire config convert OLD` prints the TOML equivalent,
// and ParseServiceConfig (service_config.h) uses the reader to recognise an
// old file and say how to convert it. Nothing loads a service from this
// form any more. Cold path.
//
// The form the journal pins in its segment headers (pinned_config.h) is also
// key = value text, but it is a journal format, not this: it is written and
// read by pinned_config.cc and does not change.
#ifndef ORDERWIRE_SERVICE_LEGACY_CONFIG_H_
#define ORDERWIRE_SERVICE_LEGACY_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "service/service_config.h"

namespace orderwire::service::legacy {

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
// the result is checked by loading it with ParseServiceConfig (key files not
// read) and comparing with what the old reader read: Internal if they differ
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

// Every setting of `config` in a fixed order, one per line (sessions by id;
// key files by path): equal texts, equal configurations. For the
// converter's check and the tests.
[[nodiscard]] std::string ComparableText(const ServiceConfig& config);

}  // namespace orderwire::service::legacy

#endif  // ORDERWIRE_SERVICE_LEGACY_CONFIG_H_
