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

#include <cstdint>
#include <string>
#include <string_view>

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
// (round-trips through ParseKeyValueConfig; the pinned text is built on it).
[[nodiscard]] std::string FormatKeyValueConfig(const EngineConfig& config);

}  // namespace orderwire::engine

#endif  // ORDERWIRE_ENGINE_CONFIG_H_
