// The engine configuration file: defaults, every key, and errors that name
// the line and the key.
#include "engine/config.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::engine {
namespace {

using ::testing::HasSubstr;

TEST(Config, DefaultsAreThoseOfProtocolMd) {
  const EngineConfig config;
  EXPECT_EQ(config.min_instrument, 1u);
  EXPECT_EQ(config.max_instrument, 1024u);
  EXPECT_EQ(config.min_price, 1);
  EXPECT_EQ(config.max_price, 1'000'000'000);
  EXPECT_EQ(config.min_quantity, 1u);
  EXPECT_EQ(config.max_quantity, 1'000'000'000u);
  EXPECT_EQ(config.max_live_orders, 1u << 20);
  EXPECT_TRUE(ValidateConfig(config).ok());
}

TEST(Config, EmptyTextGivesTheDefaults) {
  const auto config = ParseKeyValueConfig("# nothing but a comment\n\n   \n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_instrument, 1024u);
}

TEST(Config, ParsesEveryKeyWithCommentsSpacesAndDigitGroups) {
  const auto config = ParseKeyValueConfig(
      "min_instrument = 10\n"
      "  max_instrument=20   # inline comment\n"
      "min_price = -1_000\r\n"
      "max_price = 5_000\n"
      "min_quantity = 2\n"
      "max_quantity = 300\n"
      "max_live_orders = 4096");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->min_instrument, 10u);
  EXPECT_EQ(config->max_instrument, 20u);
  EXPECT_EQ(config->min_price, -1000);
  EXPECT_EQ(config->max_price, 5000);
  EXPECT_EQ(config->min_quantity, 2u);
  EXPECT_EQ(config->max_quantity, 300u);
  EXPECT_EQ(config->max_live_orders, 4096u);
}

TEST(Config, FormatRoundTripsThroughParse) {
  EngineConfig config;
  config.min_price = -7;
  config.max_live_orders = 99;
  const auto parsed = ParseKeyValueConfig(FormatKeyValueConfig(config));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->min_price, -7);
  EXPECT_EQ(parsed->max_live_orders, 99u);
  EXPECT_EQ(FormatKeyValueConfig(*parsed), FormatKeyValueConfig(config));
}

TEST(Config, UnknownKeyIsAnErrorNamingLineAndKey) {
  const auto config = ParseKeyValueConfig("max_price = 5\nmax_prize = 6\n");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("line 2: unknown key 'max_prize'"));
}

TEST(Config, BadValuesAreErrorsNamingLineAndKey) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"max_price = ten", "line 1: key 'max_price': value 'ten'"},
      {"\nmax_quantity = 0", "line 2: key 'max_quantity': value '0'"},
      {"min_instrument = -1", "line 1: key 'min_instrument': value '-1'"},
      {"max_live_orders = 99999999999",
       "line 1: key 'max_live_orders': value '99999999999'"},
      {"max_price =", "line 1: key 'max_price': value ''"},
      {"min_price = 1__0", "line 1: key 'min_price': value '1__0'"},
      {"max_price = 99999999999999999999",
       "line 1: key 'max_price': value '99999999999999999999'"},
      {"max_price 5", "line 1: expected 'key = value'"},
      {"max_price = 5\nmax_price = 6",
       "line 2: key 'max_price' given twice (first on line 1)"},
  };
  for (const Case& c : cases) {
    const auto config = ParseKeyValueConfig(c.text);
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.expected))
        << c.text;
  }
}

TEST(Config, InconsistentRangesAreErrorsNamingTheKeys) {
  EXPECT_THAT(std::string(ParseKeyValueConfig("min_price = 10\nmax_price = 5")
                              .status()
                              .message()),
              HasSubstr("min_price (10) is greater than max_price (5)"));
  EXPECT_THAT(
      std::string(ParseKeyValueConfig("min_instrument = 9\nmax_instrument = 2")
                      .status()
                      .message()),
      HasSubstr("min_instrument (9) is greater than max_instrument (2)"));
  EXPECT_THAT(
      std::string(ParseKeyValueConfig("min_quantity = 9\nmax_quantity = 2")
                      .status()
                      .message()),
      HasSubstr("min_quantity"));
  EXPECT_THAT(std::string(ParseKeyValueConfig("max_instrument = 4000000000")
                              .status()
                              .message()),
              HasSubstr("instruments"));
  EXPECT_THAT(
      std::string(ParseKeyValueConfig("max_quantity = 18446744073709551615")
                      .status()
                      .message()),
      HasSubstr("max_quantity"));
  EngineConfig config;
  config.min_price = INT64_MIN;
  EXPECT_FALSE(ValidateConfig(config).ok());
  config = EngineConfig{};
  config.min_quantity = 0;
  EXPECT_FALSE(ValidateConfig(config).ok());
}

TEST(Config, JustOutsideEachKeysRangeValidateConfigRefuses) {
  // The ranges of kConfigKeys are the widest ValidateConfig accepts: one
  // step beyond a range (where the field can hold it) is refused, even with
  // the other keys as accommodating as they can be.
  const auto refused = [](const char* name, auto&& change) {
    EngineConfig config;
    config.min_price = -INT64_MAX;
    config.max_price = INT64_MAX;
    config.max_quantity = INT64_MAX;
    config.max_live_orders = 1;
    change(config);
    EXPECT_FALSE(ValidateConfig(config).ok()) << name;
  };
  const ConfigKey& min_price = *FindConfigKey("min_price");
  const ConfigKey& max_price = *FindConfigKey("max_price");
  const ConfigKey& min_quantity = *FindConfigKey("min_quantity");
  const ConfigKey& max_quantity = *FindConfigKey("max_quantity");
  const ConfigKey& max_live_orders = *FindConfigKey("max_live_orders");
  refused("min_price",
          [&](EngineConfig& c) { c.min_price = min_price.min - 1; });
  refused("max_price",
          [&](EngineConfig& c) { c.max_price = max_price.min - 1; });
  refused("min_quantity", [&](EngineConfig& c) {
    c.min_quantity = static_cast<std::uint64_t>(min_quantity.min) - 1;
  });
  refused("max_quantity", [&](EngineConfig& c) {
    c.max_quantity = static_cast<std::uint64_t>(max_quantity.max) + 1;
  });
  refused("min_quantity", [&](EngineConfig& c) {
    c.min_quantity = static_cast<std::uint64_t>(min_quantity.max) + 1;
    c.max_quantity = c.min_quantity;
  });
  refused("max_live_orders", [&](EngineConfig& c) {
    c.max_live_orders = static_cast<std::uint32_t>(max_live_orders.max) + 1;
    c.max_quantity = 1;
  });
  refused("max_live_orders", [&](EngineConfig& c) {
    c.max_live_orders = static_cast<std::uint32_t>(max_live_orders.min) - 1;
  });
  // The instrument keys' ranges are their fields' (any u32).
  EXPECT_EQ(FindConfigKey("min_instrument")->min, 0);
  EXPECT_EQ(FindConfigKey("max_instrument")->max, UINT32_MAX);
}

}  // namespace
}  // namespace orderwire::engine
