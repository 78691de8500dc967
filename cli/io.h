// Small I/O helpers shared by the subcommands. Cold path.
#ifndef ORDERWIRE_CLI_IO_H_
#define ORDERWIRE_CLI_IO_H_

#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::cli {

// Reads all of `file` (e.g. stdin) in binary.
absl::StatusOr<std::vector<std::byte>> ReadAll(std::FILE* file);

// Writes all of `bytes` to `file`; the error names `what`.
absl::Status WriteAll(std::FILE* file, std::span<const std::byte> bytes,
                      std::string_view what = "standard output");
absl::Status WriteAll(std::FILE* file, std::string_view text,
                      std::string_view what = "standard output");

// The lines of `text` (split at '\n'; a trailing '\r' is kept).
std::vector<std::string_view> SplitLines(std::string_view text);

// Lower-case hex of `bytes`.
std::string ToHex(std::span<const std::byte> bytes);

// Parses hex digits (whitespace ignored). The error names the column.
absl::StatusOr<std::vector<std::byte>> FromHex(std::string_view text);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_IO_H_
