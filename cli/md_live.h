// `orderwire md watch`, `md record` and `md print` (cmd_md_live.cc): their
// tables and bodies, listed as subcommands by cmd_md.cc's kMdCommand.
// Contracts: the --help texts and docs/OPERATIONS.md "The live feed".
#ifndef ORDERWIRE_CLI_MD_LIVE_H_
#define ORDERWIRE_CLI_MD_LIVE_H_

#include "absl/status/status.h"
#include "cli/common.h"

namespace orderwire::cli {

extern const CommandSpec kMdWatchSpec;
extern const CommandSpec kMdRecordSpec;
extern const CommandSpec kMdPrintSpec;

absl::Status MdWatch(const Args& args);
absl::Status MdRecord(const Args& args);
absl::Status MdPrint(const Args& args);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_MD_LIVE_H_
