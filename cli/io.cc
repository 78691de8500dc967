// Small I/O helpers; see io.h.
#include "cli/io.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace orderwire::cli {

absl::StatusOr<std::vector<std::byte>> ReadAll(std::FILE* file) {
  std::vector<std::byte> data;
  std::byte chunk[1 << 16];
  while (true) {
    const std::size_t n = std::fread(chunk, 1, sizeof(chunk), file);
    data.insert(data.end(), chunk, chunk + n);
    if (n < sizeof(chunk)) {
      if (std::ferror(file)) {
        return absl::UnavailableError(
            absl::StrFormat("reading input: %s", std::strerror(errno)));
      }
      break;
    }
  }
  return data;
}

absl::Status WriteAll(std::FILE* file, std::span<const std::byte> bytes,
                      std::string_view what) {
  if (!bytes.empty() &&
      std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
    return absl::UnavailableError(
        absl::StrFormat("writing %s: %s", what, std::strerror(errno)));
  }
  if (std::fflush(file) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("writing %s: %s", what, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(std::FILE* file, std::string_view text,
                      std::string_view what) {
  return WriteAll(file, std::as_bytes(std::span(text.data(), text.size())),
                  what);
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string ToHex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    const auto v = static_cast<unsigned>(b);
    out.push_back(kDigits[v >> 4]);
    out.push_back(kDigits[v & 0xF]);
  }
  return out;
}

absl::StatusOr<std::vector<std::byte>> FromHex(std::string_view text) {
  std::vector<std::byte> out;
  out.reserve(text.size() / 2);
  int pending = -1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("column %d: '%c' is not a hex digit", i, c));
    }
    if (pending < 0) {
      pending = v;
    } else {
      out.push_back(static_cast<std::byte>((pending << 4) | v));
      pending = -1;
    }
  }
  if (pending >= 0) {
    return absl::InvalidArgumentError("odd number of hex digits");
  }
  return out;
}

}  // namespace orderwire::cli
