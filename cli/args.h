// Command-line flags for the orderwire subcommands. Cold path.
//
// Each subcommand declares its flags in a table (name, value name, default,
// help); Parse() accepts `--name value`, `--name=value` and, for boolean
// flags, `--name`. Unknown flags, missing values and positional arguments the
// subcommand does not take are errors with a message that names them.
// `--help` prints the subcommand's usage generated from the same table.
#ifndef ORDERWIRE_CLI_ARGS_H_
#define ORDERWIRE_CLI_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::cli {

struct FlagSpec {
  std::string_view name = {};        // without the leading "--"
  std::string_view value_name = {};  // "" for a boolean flag
  std::string_view default_value = {};
  std::string_view help = {};
};

struct CommandSpec {
  std::string_view name = {};      // e.g. "decode"
  std::string_view synopsis = {};  // e.g. "[--hex] [--datagram]"
  std::string_view summary = {};   // one line
  std::string_view details = {};   // paragraphs shown under --help
  std::vector<FlagSpec> flags = {};
  std::string_view positional = {};  // name of positional args, "" for none
};

class Args {
 public:
  // Parses argv[first..argc). Returns the parsed flags, or InvalidArgument.
  // If `--help` is given, help_requested() is true and nothing else is
  // checked.
  static absl::StatusOr<Args> Parse(const CommandSpec& spec, int argc,
                                    char** argv, int first);

  [[nodiscard]] bool help_requested() const { return help_; }
  [[nodiscard]] bool Has(std::string_view name) const;
  [[nodiscard]] bool Bool(std::string_view name) const { return Has(name); }
  // The flag's value, or its default.
  [[nodiscard]] std::string String(std::string_view name) const;
  // Parses the value as an integer in [min, max]; the error names the flag.
  [[nodiscard]] absl::StatusOr<std::int64_t> Int(std::string_view name,
                                                 std::int64_t min,
                                                 std::int64_t max) const;
  [[nodiscard]] absl::StatusOr<std::uint64_t> Uint(std::string_view name,
                                                   std::uint64_t max) const;
  [[nodiscard]] absl::StatusOr<double> Double(std::string_view name, double min,
                                              double max) const;
  [[nodiscard]] const std::vector<std::string>& positional() const {
    return positional_;
  }

 private:
  const CommandSpec* spec_ = nullptr;
  bool help_ = false;
  absl::flat_hash_map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The --help text of a subcommand.
[[nodiscard]] std::string Usage(const CommandSpec& spec);

// Prints "orderwire <cmd>: <message>" to stderr; returns exit status 1.
int ReportError(std::string_view command, const absl::Status& status);
// The same for a usage error (bad flags); returns exit status 2.
int ReportUsageError(std::string_view command, const absl::Status& status);

// Parses the flags of `spec` from argv[2..], prints --help if asked, runs
// `body` and turns its status into an exit status: 0 for OK, 2 for a usage
// error (a bad flag, or FailedPrecondition from `body` for a bad combination
// of flags), 1 for any other failure.
int RunCommand(const CommandSpec& spec, int argc, char** argv,
               absl::Status (*body)(const Args&));

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_ARGS_H_
