// Tests of the TOML configuration file (config/service_config.h): a file
// with every key, and each kind of error with the file, line and column it
// names. The old key = value files (cli/legacy_config.h) are tested in
// tests/cli/legacy_config_test.cc.
#include <sys/stat.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "config/service_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Endpoint Ip(const char* host_port) { return *Endpoint::Parse(host_port); }

// The message of the error that parsing `text` must give.
std::string ErrorOf(std::string_view text) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(text);
  if (config.ok()) return "(parsed without error)";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

constexpr std::string_view kEveryKey = R"(# Every key of the configuration file.
[engine]
min_instrument  = 10
max_instrument  = 20
min_price       = -5
max_price       = 99_000
min_quantity    = 2
max_quantity    = 500
max_live_orders = 4096

[service]
max_sessions             = 77
max_report_history_bytes = 1048576
session_idle_seconds     = 2.5
allowed_addresses        = ["10.1.0.0/16", "::1"]
open_sessions            = true
open_accounts            = [1, "5-9", "18446744073709551615"]

[sessions.7]
accounts  = [7, 8, "100-199"]
addresses = ["192.0.2.7"]
key_file  = "keys/7.key"

[sessions.4294967295]
accounts  = "any"
)";

TEST(ConfigFileTest, AFileWithEveryKeySetsEveryField) {
  ConfigSource source;
  source.path = "every.toml";
  source.base_dir = "/etc/ow";
  source.load_key_files = false;
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(kEveryKey, source);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->engine.min_instrument, 10u);
  EXPECT_EQ(config->engine.max_instrument, 20u);
  EXPECT_EQ(config->engine.min_price, -5);
  EXPECT_EQ(config->engine.max_price, 99'000);
  EXPECT_EQ(config->engine.min_quantity, 2u);
  EXPECT_EQ(config->engine.max_quantity, 500u);
  EXPECT_EQ(config->engine.max_live_orders, 4096u);
  EXPECT_EQ(config->max_sessions, 77u);
  EXPECT_EQ(config->max_report_history_bytes, 1048576u);
  EXPECT_EQ(config->session_idle_seconds, 2.5);
  EXPECT_TRUE(config->open_sessions);
  EXPECT_EQ(config->open_policy.accounts.ToString(),
            "1, 5-9, 18446744073709551615");
  EXPECT_EQ(config->open_policy.addresses.ToString(), "10.1.0.0/16, ::1/128");
  ASSERT_EQ(config->sessions.size(), 2u);
  const SessionPolicy& seven = config->sessions.at(7);
  EXPECT_EQ(seven.accounts.ToString(), "7, 8, 100-199");
  EXPECT_TRUE(seven.addresses.Contains(Ip("192.0.2.7:1")));
  EXPECT_FALSE(seven.addresses.Contains(Ip("10.1.0.1:1")));
  EXPECT_EQ(seven.key_file, "/etc/ow/keys/7.key");
  const SessionPolicy& last = config->sessions.at(4294967295u);
  EXPECT_TRUE(last.accounts.any());
  // A session without addresses takes [service] allowed_addresses.
  EXPECT_EQ(last.addresses.ToString(), "10.1.0.0/16, ::1/128");
  EXPECT_TRUE(config->warnings.empty());
}

TEST(ConfigFileTest, MissingKeysTakeTheDocumentedDefaults) {
  absl::StatusOr<ServiceConfig> config =
      ParseServiceConfig("[engine]\n[service]\n[sessions]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const ServiceConfig defaults;
  EXPECT_EQ(ComparableText(*config), ComparableText(defaults));
  // Listing a session closes the door to others unless open_sessions says.
  config = ParseServiceConfig("[sessions.1]\naccounts = \"any\"\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->open_sessions);
}

TEST(ConfigFileTest, ASyntaxErrorNamesTheFileLineAndColumn) {
  EXPECT_THAT(ErrorOf("[engine]\nmax_live_orders = = 5\n"),
              StartsWith("config (text):2:19: not valid TOML: "));
  EXPECT_THAT(ErrorOf("[engine\n"),
              StartsWith("config (text):1:8: not valid TOML: "));
}

TEST(ConfigFileTest, AnUnknownKeyNamesItsPlace) {
  EXPECT_EQ(ErrorOf("[engine]\nmax_live_orders = 5\n  max_live_order = 6\n"),
            "config (text):3:3: unknown key 'max_live_order' in [engine] "
            "(known keys: min_instrument, max_instrument, min_price, "
            "max_price, min_quantity, max_quantity, max_live_orders)");
  EXPECT_THAT(ErrorOf("[service]\nmax_session = 5\n"),
              StartsWith("config (text):2:1: unknown key 'max_session' in "
                         "[service]"));
  EXPECT_THAT(ErrorOf("[sessions.7]\naccounts = \"any\"\ncolour = 1\n"),
              StartsWith("config (text):3:1: unknown key 'colour' in "
                         "[sessions.7]"));
}

// docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect":
// [service]'s liveness settings are every session's unless a listed one
// sets its own; the range is 0..86,400; under 3 s is warned of.
TEST(ConfigFileTest, LivenessSettingsAreInheritedCheckedAndWarnedOf) {
  const absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "[service]\nopen_sessions = true\nliveness_seconds = 5\n"
      "cancel_on_disconnect = true\n"
      "[sessions.3]\naccounts = \"any\"\n"
      "[sessions.4]\naccounts = \"any\"\nliveness_seconds = 0\n"
      "cancel_on_disconnect = false\n"
      "[sessions.5]\naccounts = \"any\"\nliveness_seconds = 2\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->PolicyFor(99)->liveness_seconds, 5u);  // unlisted
  EXPECT_TRUE(config->PolicyFor(99)->cancel_on_disconnect);
  EXPECT_EQ(config->sessions.at(3).liveness_seconds, 5u);
  EXPECT_TRUE(config->sessions.at(3).cancel_on_disconnect);
  EXPECT_EQ(config->sessions.at(4).liveness_seconds, 0u);
  EXPECT_FALSE(config->sessions.at(4).cancel_on_disconnect);
  EXPECT_EQ(config->sessions.at(5).liveness_seconds, 2u);
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0],
              HasSubstr("[sessions.5] liveness_seconds 2 is under 3"));
  // Without a file, no session lapses and none cancels.
  EXPECT_EQ(ServiceConfig{}.open_policy.liveness_seconds, 0u);
  EXPECT_FALSE(ServiceConfig{}.open_policy.cancel_on_disconnect);

  EXPECT_TRUE(ParseServiceConfig("[service]\nliveness_seconds = 86400\n").ok());
  EXPECT_THAT(ErrorOf("[service]\nliveness_seconds = 86401\n"),
              HasSubstr("service.liveness_seconds"));
  EXPECT_THAT(ErrorOf("[service]\nliveness_seconds = -1\n"),
              HasSubstr("service.liveness_seconds"));
  EXPECT_THAT(ErrorOf("[sessions.3]\naccounts = \"any\"\n"
                      "cancel_on_disconnect = 1\n"),
              HasSubstr("sessions.3.cancel_on_disconnect: expected true or "
                        "false"));
}

TEST(ConfigFileTest, AnUnknownTableNamesItsPlace) {
  EXPECT_EQ(ErrorOf("[engine]\n\n[engin]\nmax_live_orders = 5\n"),
            "config (text):3:2: unknown table 'engin' (the tables are "
            "[engine], [service] and [sessions.N])");
  EXPECT_THAT(ErrorOf("journal = 5\n"),
              StartsWith("config (text):1:1: unknown key 'journal'"));
}

TEST(ConfigFileTest, AWrongTypeNamesTheKeyAndBothTypes) {
  EXPECT_EQ(ErrorOf("[service]\nopen_sessions = \"yes\"\n"),
            "config (text):2:17: service.open_sessions: expected true or "
            "false, got a string");
  EXPECT_EQ(ErrorOf("[engine]\nmax_price = 5.5\n"),
            "config (text):2:13: engine.max_price: expected an integer, got "
            "a float");
  EXPECT_THAT(ErrorOf("[service]\nsession_idle_seconds = \"60\"\n"),
              StartsWith("config (text):2:24: service.session_idle_seconds: "
                         "expected a number of seconds, got a string"));
  EXPECT_THAT(ErrorOf("[sessions.7]\naccounts = [7, 8.5]\n"),
              StartsWith("config (text):2:16: sessions.7.accounts: an item "
                         "must be an account id"));
  EXPECT_THAT(ErrorOf("[sessions.7]\naccounts = \"7, 8\"\n"),
              StartsWith("config (text):2:12: sessions.7.accounts: the only "
                         "string allowed is \"any\""));
  EXPECT_THAT(ErrorOf("engine = 1\n"),
              StartsWith("config (text):1:10: 'engine' must be a table"));
  EXPECT_THAT(ErrorOf("[sessions]\n7 = 1\n"),
              StartsWith("config (text):2:5: sessions.7: expected a table"));
}

TEST(ConfigFileTest, AnOutOfRangeNumberNamesTheKeyAndTheRange) {
  EXPECT_EQ(ErrorOf("[engine]\nmax_live_orders = 0\n"),
            "config (text):2:19: engine.max_live_orders: 0 is out of range "
            "(1..67108864)");
  EXPECT_EQ(ErrorOf("[service]\nmax_sessions = 1_000_001\n"),
            "config (text):2:16: service.max_sessions: 1000001 is out of "
            "range (1..1000000)");
  EXPECT_THAT(ErrorOf("[service]\n\nsession_idle_seconds = 0\n"),
              StartsWith("config (text):3:24: service.session_idle_seconds: "
                         "0 is out of range"));
  EXPECT_THAT(ErrorOf("[service]\nmax_report_history_bytes = -1\n"),
              StartsWith("config (text):2:28: "
                         "service.max_report_history_bytes: -1 is out of "
                         "range"));
  EXPECT_THAT(ErrorOf("[sessions.7]\naccounts = [1, \"9-3\"]\n"),
              StartsWith("config (text):2:16: sessions.7.accounts: '9-3' is "
                         "not an account range"));
  EXPECT_THAT(
      ErrorOf("[service]\nallowed_addresses = [\"::1\", \"::1/129\"]\n"),
      StartsWith("config (text):2:29: service.allowed_addresses: "
                 "'::1/129': prefix length must be 0..128"));
  // A number too large for TOML's 64-bit integers is toml++'s own error.
  EXPECT_THAT(ErrorOf("[engine]\nmax_price = 9223372036854775808\n"),
              StartsWith("config (text):2:"));
  // Limits that are each in range but not together: the [engine] table.
  EXPECT_THAT(ErrorOf("\n[engine]\nmin_price = 10\nmax_price = 5\n"),
              StartsWith("config (text):2:1: [engine]: min_price (10) is "
                         "greater than max_price (5)"));
}

TEST(ConfigFileTest, ADuplicateKeyIsRefusedAtItsSecondPlace) {
  // toml++ stops on the second one, where it finds the value.
  EXPECT_EQ(ErrorOf("[service]\nmax_sessions = 2\nmax_sessions = 3\n"),
            "config (text):3:16: not valid TOML: Error while parsing "
            "key-value pair: cannot redefine existing integer 'max_sessions'");
  EXPECT_THAT(ErrorOf("[sessions.7]\naccounts = 1\n[sessions.7]\n"),
              StartsWith("config (text):3:"));
}

TEST(ConfigFileTest, ABadSessionIdNamesTheTableHeader) {
  EXPECT_EQ(ErrorOf("[sessions.x7]\naccounts = \"any\"\n"),
            "config (text):1:11: [sessions.x7]: 'x7' is not a session id (a "
            "decimal integer 0..4294967295 without leading zeros)");
  EXPECT_THAT(ErrorOf("\n[sessions.4294967296]\naccounts = \"any\"\n"),
              StartsWith("config (text):2:11: [sessions.4294967296]: "));
  EXPECT_THAT(ErrorOf("[sessions.07]\naccounts = \"any\"\n"),
              StartsWith("config (text):1:11: [sessions.07]: "));
  EXPECT_THAT(ErrorOf("[sessions.-1]\naccounts = \"any\"\n"),
              StartsWith("config (text):1:11: [sessions.-1]: "));
}

TEST(ConfigFileTest, ASessionWithoutAccountsIsRefused) {
  EXPECT_THAT(ErrorOf("[sessions.5]\naddresses = [\"::1\"]\n"),
              StartsWith("config (text):1:1: [sessions.5] has no 'accounts'"));
}

// Text that is not TOML gets the conversion hint only when the reader is
// given a recogniser of the old form that accepts it (the command line's is
// the old reader, cli/legacy_config.h; tests/cli/legacy_config_test.cc).
TEST(ConfigFileTest, TextThatIsNotTomlGetsTheHintOnlyWhenRecognised) {
  constexpr std::string_view kNotToml =
      "max_sessions = 8\nsession.7.accounts = any\n";
  EXPECT_THAT(
      ErrorOf(kNotToml),
      ::testing::AllOf(StartsWith("config (text):2:22: not valid TOML: "),
                       ::testing::Not(HasSubstr("config convert"))));
  ConfigSource source;
  source.is_legacy = [](std::string_view) { return false; };
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(kNotToml, source);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              ::testing::Not(HasSubstr("config convert")));
  source.is_legacy = [](std::string_view text) {
    return text.starts_with("max_sessions");
  };
  config = ParseServiceConfig(kNotToml, source);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              ::testing::AllOf(
                  StartsWith("config (text):2:22: not TOML ("),
                  HasSubstr("'orderwire config convert (text) > NEW.toml'")));
}

// `[session.7]` is a TOML file with a typo in a table name, not an old
// file: the error says which table was meant, and no conversion.
TEST(ConfigFileTest, ASessionTableTypoIsNamedNotTakenForAnOldFile) {
  const std::string error = ErrorOf(
      "[engine]\nmax_live_orders = 10\n\n  [session.7]\n"
      "accounts = [1]\n");
  EXPECT_THAT(error, StartsWith("config (text):4:4: unknown table "
                                "[session...]: did you mean [sessions.N]"));
  EXPECT_THAT(error, ::testing::Not(HasSubstr("config convert")));
  EXPECT_THAT(ErrorOf("[session]\naccounts = [1]\n"),
              HasSubstr("did you mean [sessions.N]"));
}

TEST(ConfigFileTest, LoadingAFileNamesItInEveryError) {
  test_support::ScratchDir dir("ow-config");
  const std::string path = dir.path() + "/serve.toml";
  test_support::WriteText(path, "[engine]\nmax_live_orders = 0\n");
  absl::StatusOr<ServiceConfig> config = LoadServiceConfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              StartsWith("config " + path + ":2:19: engine.max_live_orders"));
  // A key file that cannot be read: the key_file value's place.
  test_support::WriteText(
      path, "[sessions.9]\naccounts = \"any\"\nkey_file = \"none.key\"\n");
  config = LoadServiceConfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              ::testing::AllOf(
                  StartsWith("config " + path + ":3:12: sessions.9.key_file: "),
                  HasSubstr(dir.path() + "/none.key")));
  // A key file others may read: a warning, at the same place.
  const std::string key = dir.path() + "/9.key";
  test_support::WriteText(key, std::string(64, 'a') + "\n");
  ::chmod(key.c_str(), 0644);
  test_support::WriteText(
      path, "[sessions.9]\naccounts = \"any\"\nkey_file = \"9.key\"\n");
  config = LoadServiceConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0],
              StartsWith("config " + path + ":3:12: sessions.9.key_file: "));
  EXPECT_TRUE(config->sessions.at(9).mac.has_value());
  config = LoadServiceConfig(dir.path() + "/missing.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  // A directory opens but cannot be read: an error, not an empty file that
  // would load as the defaults.
  config = LoadServiceConfig(dir.path());
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              StartsWith("config " + dir.path() + ": cannot read: "));
}

}  // namespace
}  // namespace orderwire::config
