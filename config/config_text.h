// The small text helpers the configuration readers share: the TOML reader's
// list values ("1-5, 9", "10.0.0.0/8, ::1") in service_config.cc and the
// old key = value reader and converter next to `orderwire config convert`
// (cli/legacy_config.cc). Public (not internal/) because cli/ uses it.
// Cold path.
#ifndef ORDERWIRE_CONFIG_CONFIG_TEXT_H_
#define ORDERWIRE_CONFIG_CONFIG_TEXT_H_

#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <vector>

namespace orderwire::config::text {

// `s` without leading spaces and tabs, and without trailing spaces, tabs
// and carriage returns.
[[nodiscard]] inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// The comma-separated items of `text`, each trimmed (an empty item stays).
[[nodiscard]] inline std::vector<std::string_view> SplitList(
    std::string_view text) {
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t comma = text.find(',');
    items.push_back(Trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

// Whether all of `text` is a decimal u64 (no sign, no spaces); it goes to
// `out`.
inline bool ParseU64(std::string_view text, std::uint64_t& out) {
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace orderwire::config::text

#endif  // ORDERWIRE_CONFIG_CONFIG_TEXT_H_
