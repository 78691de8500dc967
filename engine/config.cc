#include "engine/config.h"

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

namespace orderwire::engine {
namespace {

std::string_view Trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const std::size_t last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Parses a decimal integer in [min, max]; '_' may separate digit groups.
bool ParseInteger(std::string_view text, std::int64_t min, std::uint64_t max,
                  bool& negative, std::uint64_t& magnitude) {
  negative = false;
  magnitude = 0;
  if (!text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == '_' || text.back() == '_') return false;
  bool any_digit = false;
  char previous = '0';
  for (const char c : text) {
    if (c == '_' && previous == '_') return false;
    previous = c;
    if (c == '_') continue;
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      return false;
    }
    magnitude = magnitude * 10 + digit;
    any_digit = true;
  }
  if (!any_digit) return false;
  if (negative) {
    if (min >= 0) return magnitude == 0;
    // |min| as unsigned, without overflowing on INT64_MIN.
    const std::uint64_t limit = static_cast<std::uint64_t>(-(min + 1)) + 1;
    return magnitude <= limit;
  }
  return magnitude <= max &&
         (min <= 0 || magnitude >= static_cast<std::uint64_t>(min));
}

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

}  // namespace

const ConfigKey* FindConfigKey(std::string_view name) {
  for (const ConfigKey& key : kConfigKeys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::string ConfigKeyNames() {
  std::string out;
  for (const ConfigKey& key : kConfigKeys) {
    if (!out.empty()) out += ", ";
    out += key.name;
  }
  return out;
}

absl::Status ValidateConfig(const EngineConfig& c) {
  if (c.min_instrument > c.max_instrument) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "min_instrument (%d) is greater than max_instrument (%d)",
        c.min_instrument, c.max_instrument));
  }
  if (std::uint64_t{c.max_instrument} - c.min_instrument + 1 >
      kMaxInstrumentCount) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "min_instrument..max_instrument spans %d instruments; at most %d "
        "are supported",
        std::uint64_t{c.max_instrument} - c.min_instrument + 1,
        kMaxInstrumentCount));
  }
  if (c.min_price == kI64Min) {
    return absl::InvalidArgumentError(
        "min_price must be greater than -9223372036854775808");
  }
  if (c.min_price > c.max_price) {
    return absl::InvalidArgumentError(
        absl::StrFormat("min_price (%d) is greater than max_price (%d)",
                        c.min_price, c.max_price));
  }
  if (c.min_quantity == 0) {
    return absl::InvalidArgumentError(
        "min_quantity must be at least 1 (a quantity of 0 is never valid)");
  }
  if (c.min_quantity > c.max_quantity) {
    return absl::InvalidArgumentError(
        absl::StrFormat("min_quantity (%d) is greater than max_quantity (%d)",
                        c.min_quantity, c.max_quantity));
  }
  if (c.max_live_orders == 0 || c.max_live_orders > kMaxLiveOrdersLimit) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_live_orders (%d) must be in 1..%d",
                        c.max_live_orders, kMaxLiveOrdersLimit));
  }
  if (c.max_quantity > kI64Max / c.max_live_orders) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_quantity (%d) times max_live_orders (%d) exceeds 2^63-1, so a "
        "book's total quantity could overflow; lower one of them",
        c.max_quantity, c.max_live_orders));
  }
  return absl::OkStatus();
}

absl::StatusOr<EngineConfig> ParseKeyValueConfig(std::string_view text) {
  EngineConfig config;
  std::array<std::size_t, kConfigKeys.size()> seen_on_line{};
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{}
                                         : text.substr(eol + 1);
    if (const std::size_t hash = line.find('#');
        hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = Trim(line);
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d: expected 'key = value', got '%s'", line_number, line));
    }
    const std::string_view key = Trim(line.substr(0, eq));
    const std::string_view value = Trim(line.substr(eq + 1));
    const ConfigKey* const spec = FindConfigKey(key);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("line %d: unknown key '%s' (known keys: %s)",
                          line_number, key, ConfigKeyNames()));
    }
    const auto k = static_cast<std::size_t>(spec - kConfigKeys.data());
    if (seen_on_line[k] != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("line %d: key '%s' given twice (first on line %d)",
                          line_number, key, seen_on_line[k]));
    }
    seen_on_line[k] = line_number;
    bool negative = false;
    std::uint64_t magnitude = 0;
    if (!ParseInteger(value, spec->min, static_cast<std::uint64_t>(spec->max),
                      negative, magnitude)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d: key '%s': value '%s' is not an integer in %d..%d",
          line_number, key, value, spec->min, spec->max));
    }
    // |value| <= max <= INT64_MAX, and -value >= min > INT64_MIN.
    const std::int64_t as_signed = negative
                                       ? -static_cast<std::int64_t>(magnitude)
                                       : static_cast<std::int64_t>(magnitude);
    spec->set(config, as_signed);
  }
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  return config;
}

std::string FormatKeyValueConfig(const EngineConfig& config) {
  std::string out;
  for (const ConfigKey& key : kConfigKeys) {
    absl::StrAppendFormat(&out, "%s = %d\n", key.name, key.get(config));
  }
  return out;
}

}  // namespace orderwire::engine
