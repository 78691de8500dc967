// The orderwire subcommands: each binds its flag table (CommandSpec) to the
// function that runs it (cli/common.h). main.cc lists them; RunMain()
// parses the command line and runs the one chosen. A command returns an
// absl::Status: exit status 0 success, 1 failure (bad input, I/O error, a
// journal that fails verification, a server error), 2 usage error.
#ifndef ORDERWIRE_CLI_COMMANDS_H_
#define ORDERWIRE_CLI_COMMANDS_H_

#include "cli/common.h"

namespace orderwire::cli {

extern const Command kEncodeCommand;
extern const Command kDecodeCommand;
extern const Command kBenchDecodeCommand;
extern const Command kMatchCommand;
extern const Command kGenCommand;
// `journal write|inspect|prune|follow`.
extern const Command kJournalCommand;
extern const Command kReplayCommand;
// `snapshot` and `snapshot inspect`.
extern const Command kSnapshotCommand;
// `config convert`.
extern const Command kConfigCommand;
extern const Command kServeCommand;
extern const Command kSubmitCommand;
// `cluster status`.
extern const Command kClusterCommand;
// `md from-journal`, `md watch`, `md record`, `md print`.
extern const Command kMdCommand;

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_COMMANDS_H_
