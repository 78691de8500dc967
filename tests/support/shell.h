// Runs a shell command line the way a user would (sh -c), for the tests that
// drive the real orderwire binary: standard input from a string, standard
// output, standard error and the exit status back.
#ifndef ORDERWIRE_TESTS_SUPPORT_SHELL_H_
#define ORDERWIRE_TESTS_SUPPORT_SHELL_H_

#include <string>
#include <string_view>

namespace orderwire::test_support {

struct ShellOutcome {
  int status = -1;  // the exit status; -1 if the shell did not exit normally
  std::string out;
  std::string err;
};

// Runs `line` with `sh -c` in `work_dir` (which must exist; the files
// stdin, stdout and stderr are written there), with `input` on standard input.
ShellOutcome RunShell(const std::string& work_dir, const std::string& line,
                      std::string_view input = {});

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_SHELL_H_
