// `orderwire config convert OLD`: prints the TOML equivalent of a
// configuration file in the old `key = value` form (cli/legacy_config.h),
// so that an operator can move to the TOML files of docs/SERVICE.md:
//
//   orderwire config convert /etc/orderwire/serve.conf > serve.toml
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/legacy_config.h"

namespace orderwire::cli {
namespace {

const CommandSpec kConvertSpec{
    .name = "convert",
    .synopsis = "OLD > NEW.toml",
    .summary = "Print the TOML equivalent of an old key = value config file.",
    .details =
        "Reads OLD, a configuration file in the 'key = value' form of before\n"
        "TOML (max_live_orders = ..., session.7.accounts = ...), with the old\n"
        "reader, and prints the same configuration as TOML on standard\n"
        "output: the engine's keys in [engine], the service's in [service],\n"
        "each session's in [sessions.N], comments kept. The result is checked\n"
        "before it is printed: loaded as TOML, it must give the configuration\n"
        "the old reader read (key files are not read). A relative\n"
        "session key_file is written as an absolute path, OLD's directory\n"
        "plus the path, so that the new file names the same key wherever\n"
        "it is put. Errors (exit 1): OLD\n"
        "cannot be read, or the old reader refuses it (naming the line and\n"
        "the key), or it holds text TOML cannot (not UTF-8).",
    .flags = {},
    .positional = "OLD",
};

// The directory `path` is in, as an absolute path ("" if it cannot be
// made one: the paths are then written as they are).
std::string AbsoluteDirectoryOf(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute =
      std::filesystem::absolute(path, error).lexically_normal();
  return error ? std::string() : absolute.parent_path().string();
}

absl::Status Convert(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("give one configuration file to convert");
  }
  const std::string& path = args.positional()[0];
  absl::StatusOr<std::vector<std::byte>> bytes = ReadFile("config", path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::string> toml =
      legacy::ConvertLegacyConfig(AsText(*bytes), AbsoluteDirectoryOf(path));
  if (!toml.ok()) {
    return absl::Status(
        toml.status().code(),
        absl::StrFormat("config %s: %s", path, toml.status().message()));
  }
  return WriteAll(stdout, *toml, "standard output");
}

const CommandSpec kConfigSpec{
    .name = "config",
    .synopsis = "<command> [flags]",
    .summary = "Work with configuration files: config convert OLD.",
};

const Command kConfigSubcommands[] = {{&kConvertSpec, Convert}};

}  // namespace

const Command kConfigCommand{&kConfigSpec, nullptr, kConfigSubcommands};

}  // namespace orderwire::cli
