#include "tests/support/shell.h"

#include <sys/wait.h>

#include <cstdlib>

#include "tests/support/files.h"

namespace orderwire::test_support {

ShellOutcome RunShell(const std::string& work_dir, const std::string& line,
                      std::string_view input) {
  const std::string in = work_dir + "/stdin";
  const std::string out = work_dir + "/stdout";
  const std::string err = work_dir + "/stderr";
  WriteText(in, input);
  const std::string command = "cd '" + work_dir + "' && ( " + line + " ) < '" +
                              in + "' > '" + out + "' 2> '" + err + "'";
  const int raw = std::system(command.c_str());
  return ShellOutcome{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, ReadText(out),
                      ReadText(err)};
}

}  // namespace orderwire::test_support
