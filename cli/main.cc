// orderwire: the command-line entry point. kSubcommands lists the commands;
// RunMain() (cli/common.h) parses the command line with CLI11, built from
// the commands' flag tables, and runs the one chosen.
//
// Exit status, the same rule for every subcommand (cli/common.h):
//   0  success (and --help);
//   1  failure: bad input data, an I/O error, a journal that fails
//      verification, a server error;
//   2  usage error: an unknown subcommand or flag, a missing required flag,
//      a flag value that does not parse or is out of range (the message
//      names the flag and the value), flags that do not go together.
// A subcommand returns an absl::Status; cli::UsageError() marks the usage
// errors, and RunMain() turns the status into the exit status.
#include "cli/commands.h"
#include "cli/common.h"

namespace {

using orderwire::cli::Subcommand;

const orderwire::cli::CommandSpec kRoot{
    .name = "orderwire",
    .synopsis = "<command> [flags]",
    .summary =
        "orderwire: a matching-engine command codec and journal service.",
};

constexpr Subcommand kSubcommands[] = {
    {&orderwire::cli::kEncodeCommand,
     "JSON Lines to binary frames (stdin to stdout)"},
    {&orderwire::cli::kDecodeCommand,
     "binary or hex frames, or hex datagrams, to JSON Lines"},
    {&orderwire::cli::kBenchDecodeCommand,
     "decode a generated mix of command frames and print the figures"},
    {&orderwire::cli::kMatchCommand,
     "run command frames through the matching engine; write the reports"},
    {&orderwire::cli::kGenCommand,
     "write a deterministic command stream (mixed, wl1, book shapes)"},
    {&orderwire::cli::kJournalCommand,
     "journal write (append frames from stdin), journal inspect"},
    {&orderwire::cli::kServeCommand,
     "run the UDP order-entry service (journal, match, answer)"},
    {&orderwire::cli::kSubmitCommand,
     "send a session's commands to serve; print acks and latency"},
    {&orderwire::cli::kReplayCommand,
     "replay a journal through the engine, or --verify it"},
    {&orderwire::cli::kMdCommand,
     "the market-data feed: md from-journal, md watch, md record, md print"},
    {&orderwire::cli::kSnapshotCommand,
     "write a snapshot of a journal's state; snapshot inspect FILE"},
    {&orderwire::cli::kConfigCommand,
     "config convert OLD: an old key = value config file as TOML"},
    {&orderwire::cli::kClusterCommand,
     "cluster status: leader, epoch and each member's lag (NATS)"},
};

}  // namespace

int main(int argc, char** argv) {
  return orderwire::cli::RunMain(kRoot, kSubcommands, argc, argv);
}
