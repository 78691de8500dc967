// Whole-file reads and writes for tests: a file's bytes or text in, bytes or
// text out (truncating). A file that cannot be read reads as empty.
#ifndef ORDERWIRE_TESTS_SUPPORT_FILES_H_
#define ORDERWIRE_TESTS_SUPPORT_FILES_H_

#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orderwire::test_support {

std::vector<std::byte> ReadFile(const std::string& path);
std::string ReadText(const std::string& path);
// Everything in `file` (e.g. a tmpfile a client wrote its reports to), read
// from its start.
std::vector<std::byte> ReadFromStart(std::FILE* file);

void WriteFile(const std::string& path, std::span<const std::byte> bytes);
void WriteText(const std::string& path, std::string_view text);

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_FILES_H_
