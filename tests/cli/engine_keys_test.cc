// Every consumer of the engine's configuration keys takes them from the one
// table, engine::kConfigKeys: the engine's key = value parser, the TOML
// reader's [engine] table (its ranges and its list of known keys), the
// recognition of an old file by its keys, the reader and converter of old
// files, and `orderwire match --help`. A consumer that drifts from the
// table (a key missing, a range of its own) fails here.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/legacy_config.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::cli {
namespace {

using engine::ConfigKey;
using engine::EngineConfig;
using engine::kConfigKeys;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();

// A configuration that passes ValidateConfig with `key` set to `value` (one
// of its range's ends): the defaults, with the key's partners moved as
// little as needed.
EngineConfig ValidWith(const ConfigKey& key, std::int64_t value) {
  EngineConfig c;
  key.set(c, value);
  const bool sets_min = key.name.starts_with("min_");
  if (c.min_instrument > c.max_instrument) {
    if (sets_min) {
      c.max_instrument = c.min_instrument;
    } else {
      c.min_instrument = c.max_instrument;
    }
  }
  if (std::uint64_t{c.max_instrument} - c.min_instrument >=
      engine::kMaxInstrumentCount) {
    if (sets_min) {
      c.max_instrument = c.min_instrument + engine::kMaxInstrumentCount - 1;
    } else {
      c.min_instrument = c.max_instrument - engine::kMaxInstrumentCount + 1;
    }
  }
  if (c.min_price > c.max_price) {
    if (sets_min) {
      c.max_price = c.min_price;
    } else {
      c.min_price = c.max_price;
    }
  }
  if (c.min_quantity > c.max_quantity) c.max_quantity = c.min_quantity;
  if (c.max_quantity >
      static_cast<std::uint64_t>(kI64Max) / c.max_live_orders) {
    if (key.name == "max_live_orders") {
      c.max_quantity = static_cast<std::uint64_t>(kI64Max) / c.max_live_orders;
    } else {
      c.max_live_orders = 1;
    }
  }
  EXPECT_TRUE(engine::ValidateConfig(c).ok())
      << key.name << " = " << value << ": " << engine::ValidateConfig(c);
  return c;
}

// One below and one above the key's range, as decimal text (the one above
// may not fit in 64 signed bits).
std::string Below(const ConfigKey& key) {
  return absl::StrFormat("%d", key.min - 1);  // min > INT64_MIN
}
std::string Above(const ConfigKey& key) {
  return absl::StrFormat("%d", static_cast<std::uint64_t>(key.max) + 1);
}

absl::StatusOr<config::ServiceConfig> ParseToml(std::string_view text) {
  config::ConfigSource source;
  source.is_legacy = legacy::IsLegacyServiceConfig;
  return config::ParseServiceConfig(text, source);
}

TEST(EngineKeysTest, TheTableHasEveryKeyOnceInTheFormattedOrder) {
  std::string names;
  for (const ConfigKey& key : kConfigKeys) {
    EXPECT_EQ(engine::FindConfigKey(key.name), &key);
    EXPECT_LE(key.min, key.max) << key.name;
    EXPECT_FALSE(key.description.empty()) << key.name;
    absl::StrAppendFormat(&names, "%s = ", key.name);
  }
  // FormatKeyValueConfig writes the keys of the table, in its order.
  std::string formatted_names;
  const std::string formatted =
      engine::FormatKeyValueConfig(engine::EngineConfig{});
  for (std::string_view rest = formatted; !rest.empty();) {
    const std::size_t eq = rest.find("= ");
    formatted_names += rest.substr(0, eq + 2);
    rest.remove_prefix(rest.find('\n') + 1);
  }
  EXPECT_EQ(formatted_names, names);
}

TEST(EngineKeysTest, EveryReaderAcceptsBothEndsOfEveryRange) {
  for (const ConfigKey& key : kConfigKeys) {
    for (const std::int64_t value : {key.min, key.max}) {
      SCOPED_TRACE(absl::StrFormat("%s = %d", key.name, value));
      const EngineConfig wanted = ValidWith(key, value);
      const std::string lines = engine::FormatKeyValueConfig(wanted);

      const absl::StatusOr<EngineConfig> engine =
          engine::ParseKeyValueConfig(lines);
      ASSERT_TRUE(engine.ok()) << engine.status();
      EXPECT_EQ(key.get(*engine), value);

      const absl::StatusOr<config::ServiceConfig> toml =
          ParseToml("[engine]\n" + lines);
      ASSERT_TRUE(toml.ok()) << toml.status();
      EXPECT_EQ(key.get(toml->engine), value);

      const absl::StatusOr<legacy::ServiceConfig> old =
          legacy::ParseLegacyServiceConfig(lines);
      ASSERT_TRUE(old.ok()) << old.status();
      EXPECT_EQ(key.get(old->engine), value);

      const absl::StatusOr<std::string> converted =
          legacy::ConvertLegacyConfig(lines);
      ASSERT_TRUE(converted.ok()) << converted.status();
      EXPECT_THAT(*converted,
                  HasSubstr(absl::StrFormat("[engine]\n%s", lines)));
    }
  }
}

TEST(EngineKeysTest, EveryReaderRefusesJustOutsideEveryRangeNamingTheKey) {
  for (const ConfigKey& key : kConfigKeys) {
    // Above INT64_MAX is not a TOML integer: the TOML reader cannot be
    // given it as one, the key = value readers can.
    const bool toml_can_say_above = key.max < kI64Max;
    for (const std::string& value : {Below(key), Above(key)}) {
      SCOPED_TRACE(absl::StrFormat("%s = %s", key.name, value));
      const std::string line = absl::StrFormat("%s = %s\n", key.name, value);
      const std::string range = absl::StrFormat("%d..%d", key.min, key.max);

      const absl::StatusOr<EngineConfig> engine =
          engine::ParseKeyValueConfig(line);
      ASSERT_FALSE(engine.ok());
      EXPECT_THAT(std::string(engine.status().message()),
                  AllOf(HasSubstr(absl::StrFormat("key '%s'", key.name)),
                        HasSubstr(range)));

      const absl::StatusOr<legacy::ServiceConfig> old =
          legacy::ParseLegacyServiceConfig(line);
      ASSERT_FALSE(old.ok());
      EXPECT_THAT(std::string(old.status().message()),
                  AllOf(HasSubstr(absl::StrFormat("key '%s'", key.name)),
                        HasSubstr(range)));

      if (value == Above(key) && !toml_can_say_above) continue;
      const absl::StatusOr<config::ServiceConfig> toml =
          ParseToml("[engine]\n" + line);
      ASSERT_FALSE(toml.ok());
      EXPECT_THAT(std::string(toml.status().message()),
                  HasSubstr(absl::StrFormat("engine.%s: %s is out of range "
                                            "(%s)",
                                            key.name, value, range)));
    }
  }
}

TEST(EngineKeysTest, TheTomlReadersUnknownKeyErrorListsEveryKey) {
  const absl::StatusOr<config::ServiceConfig> toml =
      ParseToml("[engine]\nmax_live_order = 6\n");
  ASSERT_FALSE(toml.ok());
  const std::string message(toml.status().message());
  EXPECT_THAT(message, HasSubstr(absl::StrFormat("(known keys: %s)",
                                                 engine::ConfigKeyNames())));
  for (const ConfigKey& key : kConfigKeys) {
    EXPECT_THAT(message, HasSubstr(key.name));
  }
}

TEST(EngineKeysTest, EveryKeyOutsideAnyTableMarksAnOldFile) {
  for (const ConfigKey& key : kConfigKeys) {
    // The key alone marks the file as old: no recogniser is given.
    const std::string text = absl::StrFormat("%s = %d\n", key.name, key.max);
    const config::ConfigSource source;
    const absl::StatusOr<config::ServiceConfig> toml =
        config::ParseServiceConfig(text, source);
    ASSERT_FALSE(toml.ok()) << key.name;
    EXPECT_THAT(
        std::string(toml.status().message()),
        AllOf(HasSubstr(absl::StrFormat("'%s' outside any table", key.name)),
              HasSubstr("orderwire config convert")));
  }
}

TEST(EngineKeysTest, MatchHelpListsEveryKeyWithItsDescription) {
  const std::string_view details = kMatchCommand.spec->details;
  for (const ConfigKey& key : kConfigKeys) {
    EXPECT_THAT(
        std::string(details),
        HasSubstr(absl::StrFormat("  %-16s %s (%d)\n", key.name,
                                  key.description, key.get(EngineConfig{}))));
  }
}

}  // namespace
}  // namespace orderwire::cli
