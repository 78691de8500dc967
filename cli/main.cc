// orderwire: the command-line entry point. Dispatches to a subcommand.
//
// Exit status, the same rule for every subcommand (cli/common.h):
//   0  success (and --help);
//   1  failure: bad input data, an I/O error, a journal that fails
//      verification, a server error;
//   2  usage error: an unknown subcommand or flag, a missing required flag,
//      a flag value that does not parse or is out of range (the message
//      names the flag and the value), flags that do not go together.
// A subcommand returns an absl::Status; cli::UsageError() marks the usage
// errors, and RunCommand() turns the status into the exit status.
#include <cstdio>
#include <string_view>

#include "cli/commands.h"
#include "cli/common.h"

namespace {

struct Subcommand {
  std::string_view name;
  int (*run)(int argc, char** argv);
  std::string_view summary;
};

constexpr Subcommand kSubcommands[] = {
    {"encode", orderwire::cli::RunEncode,
     "JSON Lines to binary frames (stdin to stdout)"},
    {"decode", orderwire::cli::RunDecode,
     "binary or hex frames, or hex datagrams, to JSON Lines"},
    {"bench-decode", orderwire::cli::RunBenchDecode,
     "decode a generated mix of command frames and print the figures"},
    {"match", orderwire::cli::RunMatch,
     "run command frames through the matching engine; write the reports"},
    {"gen", orderwire::cli::RunGen,
     "write a deterministic command stream (mixed, wl1, book shapes)"},
    {"journal", orderwire::cli::RunJournal,
     "journal write (append frames from stdin), journal inspect"},
    {"serve", orderwire::cli::RunServe,
     "run the UDP order-entry service (journal, match, answer)"},
    {"submit", orderwire::cli::RunSubmit,
     "send a session's commands to serve; print acks and latency"},
    {"replay", orderwire::cli::RunReplay,
     "replay a journal through the engine, or --verify it"},
    {"snapshot", orderwire::cli::RunSnapshot,
     "write a snapshot of a journal's state; snapshot inspect FILE"},
    {"config", orderwire::cli::RunConfig,
     "config convert OLD: an old key = value config file as TOML"},
};

void PrintUsage(std::FILE* out) {
  std::fputs(
      "usage: orderwire <command> [flags]\n\n"
      "orderwire: a matching-engine command codec and journal service.\n\n"
      "commands:\n",
      out);
  for (const Subcommand& sub : kSubcommands) {
    std::fprintf(out, "  %-14.*s %.*s\n", static_cast<int>(sub.name.size()),
                 sub.name.data(), static_cast<int>(sub.summary.size()),
                 sub.summary.data());
  }
  std::fputs("\n'orderwire <command> --help' describes a command.\n\n", out);
  std::fputs(orderwire::cli::kExitStatusHelp.data(), out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return orderwire::cli::kExitUsage;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(stdout);
    return orderwire::cli::kExitOk;
  }
  for (const Subcommand& sub : kSubcommands) {
    if (sub.name == name) return sub.run(argc, argv);
  }
  std::fprintf(stderr, "orderwire: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return orderwire::cli::kExitUsage;
}
