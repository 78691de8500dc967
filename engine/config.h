// The engine's configuration: which instruments exist, the valid price band
// and quantity range, and the capacity in live orders. Cold path.
//
// With no configuration the defaults of PROTOCOL.md apply ("Validation and
// report details"): instruments 1 to 1024, prices 1 to 1,000,000,000 ticks,
// quantities 1 to 1,000,000,000 lots; the capacity (PROTOCOL.md leaves it
// open) defaults to 1,048,576 live orders.
//
// Configuration files are TOML and are read by the service
// (config/service_config.h, the `[engine]` table), not here. This file keeps
// the engine's limits in one `key = value` text form, which is a journal
// format, not a configuration file: state/pinned_config.h writes it into
// every segment header (docs/JOURNAL.md "Segment metadata"), and the reader
// of pre-TOML configuration files (cli/legacy_config.h, behind
// `orderwire config convert`) reads their engine keys with it. It must not
// change, or journals written before would no longer open:
//
//   min_instrument = 1
//   max_instrument = 1024
//   min_price = 1
//   max_price = 1000000000
//   min_quantity = 1
//   max_quantity = 1000000000
//   max_live_orders = 1048576
//
// `#` starts a comment that runs to the end of the line; blank lines are
// ignored; whitespace around keys and values is ignored. Values are decimal
// integers (a leading '-' for prices only; '_' may separate digit groups, as
// in 1_000_000). Every key is optional: a key not given keeps its default. An
// unknown key, a repeated key, a line without '=', or a value that is not an
// integer of the key's range is an error naming the line and the key.
#ifndef ORDERWIRE_ENGINE_CONFIG_H_
#define ORDERWIRE_ENGINE_CONFIG_H_

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::engine {

struct EngineConfig {
  std::uint32_t min_instrument = 1;
  std::uint32_t max_instrument = 1024;
  std::int64_t min_price = 1;
  std::int64_t max_price = 1'000'000'000;
  std::uint64_t min_quantity = 1;
  std::uint64_t max_quantity = 1'000'000'000;
  std::uint32_t max_live_orders = 1u << 20;
};

// Upper bounds that keep the engine's arrays addressable and its sums exact.
inline constexpr std::uint32_t kMaxInstrumentCount = 1u << 20;
inline constexpr std::uint32_t kMaxLiveOrdersLimit = 1u << 26;

// One key of the configuration: its name (in the key = value form below and
// in the `[engine]` table of a configuration file), the values a key may
// take on its own (ValidateConfig then checks the keys together), a
// one-line description, and the field of EngineConfig it sets and reads.
struct ConfigKey {
  std::string_view name;
  std::int64_t min;
  std::int64_t max;
  std::string_view description;
  // Sets the field to `value`, which must be in [min, max].
  void (*set)(EngineConfig& config, std::int64_t value);
  // The field's value; in [min, max] for a config that passes
  // ValidateConfig.
  std::int64_t (*get)(const EngineConfig& config);
};

namespace config_internal {

template <auto kField>
void SetField(EngineConfig& config, std::int64_t value) {
  using Field = std::remove_reference_t<decltype(config.*kField)>;
  config.*kField = static_cast<Field>(value);
}

template <auto kField>
std::int64_t GetField(const EngineConfig& config) {
  return static_cast<std::int64_t>(config.*kField);
}

template <auto kField>
constexpr ConfigKey Key(std::string_view name, std::int64_t min,
                        std::int64_t max, std::string_view description) {
  return {name, min, max, description, &SetField<kField>, &GetField<kField>};
}

inline constexpr std::int64_t kU32Max =
    std::numeric_limits<std::uint32_t>::max();
inline constexpr std::int64_t kI64Max =
    std::numeric_limits<std::int64_t>::max();

}  // namespace config_internal

// Every key of the configuration, in the order of the key = value form: the
// one list the engine's parser, the service's TOML reader
// (config/service_config.h), the reader of old configuration files and the
// command line's help take the keys, their ranges and their meaning from.
// Each range is the widest ValidateConfig can accept for that key: a price
// above INT64_MIN, a quantity of at most 2^63-1 (max_live_orders *
// max_quantity must fit in 63 bits), at most kMaxLiveOrdersLimit live
// orders.
inline constexpr std::array<ConfigKey, 7> kConfigKeys = {{
    config_internal::Key<&EngineConfig::min_instrument>(
        "min_instrument", 0, config_internal::kU32Max,
        "first instrument id that exists"),
    config_internal::Key<&EngineConfig::max_instrument>(
        "max_instrument", 0, config_internal::kU32Max,
        "last instrument id that exists"),
    config_internal::Key<&EngineConfig::min_price>(
        "min_price", -config_internal::kI64Max, config_internal::kI64Max,
        "lowest valid price, in ticks"),
    config_internal::Key<&EngineConfig::max_price>(
        "max_price", -config_internal::kI64Max, config_internal::kI64Max,
        "highest valid price, in ticks"),
    config_internal::Key<&EngineConfig::min_quantity>(
        "min_quantity", 1, config_internal::kI64Max,
        "smallest valid quantity, in lots"),
    config_internal::Key<&EngineConfig::max_quantity>(
        "max_quantity", 1, config_internal::kI64Max,
        "largest valid quantity, in lots"),
    config_internal::Key<&EngineConfig::max_live_orders>(
        "max_live_orders", 1, kMaxLiveOrdersLimit,
        "capacity in live orders; BookFull beyond it"),
}};

// The key of kConfigKeys named `name`, or nullptr.
[[nodiscard]] const ConfigKey* FindConfigKey(std::string_view name);

// The names of kConfigKeys in order, separated by ", " (for error messages
// and help texts).
[[nodiscard]] std::string ConfigKeyNames();

// Checks that `config` describes a usable engine: min <= max for each range,
// min_quantity >= 1, min_price > INT64_MIN, at most kMaxInstrumentCount
// instruments, 1 <= max_live_orders <= kMaxLiveOrdersLimit, and
// max_live_orders * max_quantity fits in 63 bits (so a level's or a book's
// total quantity can never overflow). Returns InvalidArgument naming the
// keys at fault. Cost: O(1).
[[nodiscard]] absl::Status ValidateConfig(const EngineConfig& config);

// Parses the key = value text form above (a pinned configuration's engine
// lines, or an old configuration file's), starting from the defaults, and
// validates the result. Errors: InvalidArgument "line N: ..." naming the key
// (or ValidateConfig's message). Cost: O(text size).
[[nodiscard]] absl::StatusOr<EngineConfig> ParseKeyValueConfig(
    std::string_view text);

// The limits in the key = value form, every key present, in the order above
// and of kConfigKeys (round-trips through ParseKeyValueConfig; the pinned
// text is built on it). `config` must pass ValidateConfig.
[[nodiscard]] std::string FormatKeyValueConfig(const EngineConfig& config);

}  // namespace orderwire::engine

#endif  // ORDERWIRE_ENGINE_CONFIG_H_
