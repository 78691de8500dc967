// The orderwire subcommands. Each Run function takes the whole argv (argv[1]
// is the subcommand's name) and returns the process exit status: 0 success,
// 1 failure (bad input, I/O error, a journal that fails verification, a
// server error), 2 usage error (see cli/common.h and main.cc).
#ifndef ORDERWIRE_CLI_COMMANDS_H_
#define ORDERWIRE_CLI_COMMANDS_H_

namespace orderwire::cli {

int RunEncode(int argc, char** argv);
int RunDecode(int argc, char** argv);
int RunBenchDecode(int argc, char** argv);
int RunMatch(int argc, char** argv);
int RunGen(int argc, char** argv);
int RunJournal(int argc, char** argv);
int RunReplay(int argc, char** argv);
int RunSnapshot(int argc, char** argv);
int RunConfig(int argc, char** argv);
int RunServe(int argc, char** argv);
int RunSubmit(int argc, char** argv);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_COMMANDS_H_
