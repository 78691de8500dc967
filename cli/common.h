// The plumbing every orderwire subcommand shares. Cold path.
//
//  * Exit statuses: one rule for every subcommand (kExitOk, kExitFailure,
//    kExitUsage), decided from the absl::Status a subcommand returns: a
//    status made by UsageError() (or FlagError()) is a usage error, any
//    other error is a failure. --help exits 0.
//  * Commands and flags: each subcommand declares its flags in a table
//    (CommandSpec: name, value name, default, help) and binds it to the
//    function that runs it (Command); main.cc's kSubcommands lists the
//    top-level commands. RunMain() builds the command-line parser (CLI11,
//    one CLI::App per command, nested for `journal write`, `snapshot
//    inspect`) and the --help text from those tables. It accepts `--name
//    value`, `--name=value` and, for boolean flags, `--name`. Unknown
//    commands and flags, missing values, a flag given twice, a value given
//    to a boolean flag and positional arguments a command does not take are
//    usage errors with a message that names them. A flag value that does
//    not parse or is out of range is one too (Args::Int, Uint, Double), the
//    message naming the flag and the value.
//    To add a command: a CommandSpec and a `absl::Status Body(const Args&)`
//    in its cmd_*.cc, a `const Command kXCommand{&kSpec, Body}` declared in
//    commands.h, and an entry in main.cc's kSubcommands.
//  * Configuration files: LoadEngineConfig(), LoadServiceConfig().
//  * Report sinks: ReportSink writes report frames to a file or standard
//    output, as binary frames back to back or as JSON Lines.
//  * Input errors: FormatFrameError() and friends name the line, the byte
//    offset and the reason.
//  * Byte I/O: ReadAll, ReadFile, WriteAll, SplitLines, ToHex, FromHex.
#ifndef ORDERWIRE_CLI_COMMON_H_
#define ORDERWIRE_CLI_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/error.h"
#include "config/service_config.h"
#include "engine/config.h"

namespace orderwire::cli {

// ---------------------------------------------------------------------------
// Exit statuses

// 0: success.
inline constexpr int kExitOk = 0;
// 1: failure: bad input data, an I/O error, a journal that fails
// verification, a server error.
inline constexpr int kExitFailure = 1;
// 2: usage error: an unknown subcommand or flag, a missing required flag, a
// flag value that does not parse or is out of range, a bad combination of
// flags.
inline constexpr int kExitUsage = 2;

// The paragraph on exit statuses shown by `orderwire --help`.
inline constexpr std::string_view kExitStatusHelp =
    "exit status:\n"
    "  0  success\n"
    "  1  failure: bad input data, an I/O error, a journal that fails\n"
    "     verification, a server error\n"
    "  2  usage error: an unknown command or flag, a missing required flag,\n"
    "     a flag value that does not parse or is out of range, flags that\n"
    "     do not go together\n";

// A usage error (exit status 2) with `message`.
[[nodiscard]] absl::Status UsageError(std::string_view message);
// A usage error about flag `--flag`: "--flag: <status's message>". For a
// value a parser (ParseWorkload, ParseDurability, ...) refused.
[[nodiscard]] absl::Status FlagError(std::string_view flag,
                                     const absl::Status& status);
// Whether `status` was made by UsageError() or FlagError().
[[nodiscard]] bool IsUsageError(const absl::Status& status);
// The exit status of `status`: kExitOk, kExitUsage or kExitFailure.
[[nodiscard]] int ExitStatus(const absl::Status& status);

// ---------------------------------------------------------------------------
// Flags

struct FlagSpec {
  std::string_view name = {};        // without the leading "--"
  std::string_view value_name = {};  // "" for a boolean flag
  std::string_view default_value = {};
  std::string_view help = {};
};

struct CommandSpec {
  std::string_view name = {};      // one word, e.g. "decode", "inspect"
  std::string_view synopsis = {};  // e.g. "[--hex] [--datagram]"
  std::string_view summary = {};   // one line
  std::string_view details = {};   // paragraphs shown under --help
  std::vector<FlagSpec> flags = {};
  std::string_view positional = {};  // name of positional args, "" for none
};

// The flags and positional arguments a command was given, as its
// CommandSpec declares them. Made by RunMain().
class Args {
 public:
  explicit Args(const CommandSpec& spec) : spec_(&spec) {}

  // Records flag `name` (declared in the spec) as given with `value`
  // ("true" for a boolean flag), and a positional argument.
  void Set(std::string_view name, std::string value);
  void AddPositional(std::string value) {
    positional_.push_back(std::move(value));
  }

  [[nodiscard]] bool Has(std::string_view name) const;
  [[nodiscard]] bool Bool(std::string_view name) const { return Has(name); }
  // The flag's value, or its default.
  [[nodiscard]] std::string String(std::string_view name) const;
  // Parses the value as a decimal integer in [min, max]. A UsageError
  // naming the flag and the value if it does not parse or is out of range.
  [[nodiscard]] absl::StatusOr<std::int64_t> Int(std::string_view name,
                                                 std::int64_t min,
                                                 std::int64_t max) const;
  // The same for an unsigned integer in [min, max].
  [[nodiscard]] absl::StatusOr<std::uint64_t> Uint(std::string_view name,
                                                   std::uint64_t min,
                                                   std::uint64_t max) const;
  [[nodiscard]] absl::StatusOr<std::uint64_t> Uint(std::string_view name,
                                                   std::uint64_t max) const {
    return Uint(name, 0, max);
  }
  [[nodiscard]] absl::StatusOr<double> Double(std::string_view name, double min,
                                              double max) const;
  // A UsageError "--NAME VALUE is required" unless the flag is given.
  [[nodiscard]] absl::Status Require(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& positional() const {
    return positional_;
  }

 private:
  const CommandSpec* spec_ = nullptr;
  absl::flat_hash_map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// A command: its table, what runs it, and its own subcommands (`journal
// write`, `snapshot inspect`), listed by its --help in this order.
struct Command {
  const CommandSpec* spec = nullptr;
  // Runs the command with its parsed flags. nullptr for a command that
  // only groups subcommands (`journal`): given alone, it prints its usage
  // to standard error, exit status 2.
  absl::Status (*run)(const Args&) = nullptr;
  std::span<const Command> subcommands = {};
};

// A top-level command and the line `orderwire --help` lists it with.
struct Subcommand {
  const Command* command = nullptr;
  std::string_view summary = {};
};

// The whole command line: builds the parser (a CLI::App for `root`, one
// per command below it) from the tables, parses argv[1..argc), and then
//  * prints the --help (`-h`, or `help` in place of a command) of the
//    command it follows to standard output: exit status 0;
//  * on a usage error prints "orderwire <command>: <what>" to standard
//    error (and, for an unknown or missing command, the usage): exit 2;
//  * otherwise runs the command and returns ExitStatus() of its status,
//    printing the error, if any, as "orderwire <command>: <message>".
// `root.name` is the program's name; `root.summary` heads its --help.
int RunMain(const CommandSpec& root, std::span<const Subcommand> subcommands,
            int argc, char** argv);

// ---------------------------------------------------------------------------
// Configuration files

// Reads a configuration file (TOML, config/service_config.h) and returns
// its [engine] limits; the other tables are checked too, key files are not
// read. Errors name the file: NotFound "config PATH: cannot open: ..."
// (exit 1), InvalidArgument "config PATH:LINE:COL: ..." (exit 1).
[[nodiscard]] absl::StatusOr<engine::EngineConfig> LoadEngineConfig(
    const std::string& path);

// Reads and parses a service configuration file (docs/SERVICE.md), with the
// same errors; key files are read unless `load_key_files` is false.
[[nodiscard]] absl::StatusOr<config::ServiceConfig> LoadServiceConfig(
    const std::string& path, bool load_key_files = true);

// The service configuration of --config FILE (LoadServiceConfig's errors),
// or the defaults when the flag is not given.
[[nodiscard]] absl::StatusOr<config::ServiceConfig> ServiceConfigFlag(
    const Args& args);

// ---------------------------------------------------------------------------
// Report sinks

enum class ReportFormat {
  kBinary,     // frames back to back
  kJsonLines,  // one JSON object per frame, the form 'orderwire decode' prints
};

// Where report frames go: standard output or a file, in binary or as JSON
// Lines. Every Write() is flushed, so the reports written before an error
// are in the file.
class ReportSink {
 public:
  // Standard output.
  static ReportSink Stdout(ReportFormat format);
  // The file `path`, created or truncated; "-" is standard output. The
  // errors name `flag` and the path: NotFound "--reports PATH: cannot
  // open: ..." (exit 1).
  static absl::StatusOr<ReportSink> Open(std::string_view flag,
                                         const std::string& path,
                                         ReportFormat format);

  ReportSink(ReportSink&& other) noexcept;
  ReportSink& operator=(ReportSink&& other) noexcept;
  ReportSink(const ReportSink&) = delete;
  ReportSink& operator=(const ReportSink&) = delete;
  // Closes a file it opened (errors dropped: call Finish() to see them).
  ~ReportSink();

  // Writes `frames`: whole report frames back to back (e.g.
  // engine::ReportBuffer::frames()).
  absl::Status Write(std::span<const std::byte> frames);
  // Flushes, and closes a file it opened; the error names the file.
  absl::Status Finish();

  // The stream, for code that writes frames itself (binary only).
  [[nodiscard]] std::FILE* file() const { return file_; }
  [[nodiscard]] bool is_stdout() const { return file_ == stdout; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  ReportSink(std::FILE* file, bool owned, std::string name, ReportFormat format)
      : file_(file), owned_(owned), name_(std::move(name)), format_(format) {}

  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::string name_;
  ReportFormat format_ = ReportFormat::kBinary;
  std::string text_;  // JSON Lines scratch
};

// ---------------------------------------------------------------------------
// Errors in the input

// "line L, byte offset O: reason" (without "line L, " when `line` is 0), the
// form every subcommand names a place in its input with.
[[nodiscard]] std::string FormatInputError(std::size_t line, std::size_t offset,
                                           std::string_view reason);
// Why `at` (the input from the frame at fault on) is not a frame: the
// codec's description of `error` and what it can say more (the unknown kind
// byte, the bytes a truncated frame needs, the kind of a report where a
// command is required).
[[nodiscard]] std::string DescribeFrameError(codec::CodecError error,
                                             std::span<const std::byte> at);
// FormatInputError(line, offset, DescribeFrameError(error, at)).
[[nodiscard]] std::string FormatFrameError(std::size_t line, std::size_t offset,
                                           codec::CodecError error,
                                           std::span<const std::byte> at);
// InvalidArgument (exit 1) with FormatInputError / FormatFrameError.
[[nodiscard]] absl::Status InputError(std::size_t line, std::size_t offset,
                                      std::string_view reason);
[[nodiscard]] absl::Status FrameError(std::size_t line, std::size_t offset,
                                      codec::CodecError error,
                                      std::span<const std::byte> at);

// ---------------------------------------------------------------------------
// Byte I/O

// Reads all of `file` (e.g. stdin) in binary.
[[nodiscard]] absl::StatusOr<std::vector<std::byte>> ReadAll(std::FILE* file);

// Reads all of the file `path`. Errors name `what` and the path: NotFound
// "WHAT PATH: cannot open: ...", Unavailable "WHAT PATH: reading ...".
[[nodiscard]] absl::StatusOr<std::vector<std::byte>> ReadFile(
    std::string_view what, const std::string& path);

// Writes all of `bytes` to `file` and flushes; the error names `what`.
absl::Status WriteAll(std::FILE* file, std::span<const std::byte> bytes,
                      std::string_view what = "standard output");
absl::Status WriteAll(std::FILE* file, std::string_view text,
                      std::string_view what = "standard output");

// The bytes as text.
[[nodiscard]] inline std::string_view AsText(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// The lines of `text` (split at '\n'; a trailing '\r' is kept).
[[nodiscard]] std::vector<std::string_view> SplitLines(std::string_view text);

// Lower-case hex of `bytes`.
[[nodiscard]] std::string ToHex(std::span<const std::byte> bytes);

// Parses hex digits (whitespace ignored). The error names the column.
[[nodiscard]] absl::StatusOr<std::vector<std::byte>> FromHex(
    std::string_view text);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_COMMON_H_
