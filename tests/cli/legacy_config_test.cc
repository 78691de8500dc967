// Tests of the old key = value configuration files (cli/legacy_config.h):
// the conversion hint the command line's TOML reader gives with the old
// reader as its recogniser (config::ConfigSource::is_legacy), and the
// conversion of every old file the repository had (legacy_configs/).
#include "cli/legacy_config.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "config/service_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"

namespace orderwire::cli::legacy {
namespace {

using config::ComparableText;
using config::ConfigSource;
using config::ParseServiceConfig;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message of the error that parsing `text` as the command line does
// (the old form recognised) must give.
std::string ErrorOf(std::string_view text) {
  ConfigSource source;
  source.is_legacy = IsLegacyServiceConfig;
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(text, source);
  if (config.ok()) return "(parsed without error)";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

TEST(ConfigFileTest, AnOldKeyValueFileGetsTheConversionHint) {
  // Old engine files are valid TOML with keys outside any table.
  EXPECT_EQ(ErrorOf("# tiny\nmax_live_orders = 1\n"),
            "config (text):2:1: 'max_live_orders' outside any table: this is "
            "an old 'key = value' configuration file; configuration files "
            "are TOML now ([engine], [service] and [sessions.N] tables, "
            "docs/SERVICE.md \"Configuration\"): 'orderwire config convert "
            "(text) > NEW.toml' prints the TOML equivalent");
  // `session.7.accounts = 7` is TOML too (a table 'session'): still old.
  EXPECT_THAT(ErrorOf("\nsession.7.accounts = 7\n"),
              ::testing::AllOf(
                  StartsWith("config (text):2:1: 'session' outside any table: "
                             "this is an old 'key = value' configuration "
                             "file"),
                  HasSubstr("'orderwire config convert (text) > NEW.toml'")));
  // Old service files are not TOML; the old reader reads them.
  EXPECT_THAT(ErrorOf("max_sessions = 8\nsession.7.accounts = any\n"),
              ::testing::AllOf(
                  StartsWith("config (text):2:22: not TOML ("),
                  HasSubstr("this is an old 'key = value' configuration "
                            "file"),
                  HasSubstr("'orderwire config convert (text) > NEW.toml'")));
  // Not TOML and not the old form either: no hint.
  EXPECT_THAT(ErrorOf("max_sessions = 8\nsession.7.accounts = \n"),
              ::testing::Not(HasSubstr("config convert")));
}

// ---------------------------------------------------------------------------
// The old key = value files: every one the repository had (docs examples,
// test and script configurations, fuzz seeds) is in tests/cli/
// legacy_configs/.

std::vector<std::filesystem::path> LegacyConfigFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(ORDERWIRE_LEGACY_CONFIG_DIR)) {
    if (entry.path().extension() == ".conf") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(LegacyConfigTest, EveryOldConfigConvertsToTomlThatLoadsTheSame) {
  const std::vector<std::filesystem::path> files = LegacyConfigFiles();
  ASSERT_GE(files.size(), 10u);
  ConfigSource source;
  source.load_key_files = false;
  source.is_legacy = IsLegacyServiceConfig;
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const std::string old_text = test_support::ReadText(file.string());
    absl::StatusOr<ServiceConfig> old = ParseLegacyServiceConfig(old_text);
    ASSERT_TRUE(old.ok()) << old.status();
    // As an old file, the TOML reader refuses it with the hint.
    source.path = file.string();
    absl::StatusOr<ServiceConfig> as_toml =
        ParseServiceConfig(old_text, source);
    ASSERT_FALSE(as_toml.ok());
    EXPECT_THAT(std::string(as_toml.status().message()),
                HasSubstr("'orderwire config convert " + file.string()));
    absl::StatusOr<std::string> converted = ConvertLegacyConfig(old_text);
    ASSERT_TRUE(converted.ok()) << converted.status();
    source.path = "(converted)";
    absl::StatusOr<ServiceConfig> loaded =
        ParseServiceConfig(*converted, source);
    ASSERT_TRUE(loaded.ok()) << loaded.status() << "\n" << *converted;
    EXPECT_EQ(ComparableText(*loaded), ComparableText(*old)) << *converted;
  }
}

// A TOML file takes relative paths from its own directory: converted with
// the old file's directory, a relative key_file becomes that directory plus
// the path, so the new file names the same key wherever it is written; an
// absolute one stays as it is.
TEST(LegacyConfigTest, ARelativeKeyFileIsWrittenFromTheOldFilesDirectory) {
  const std::string old_text =
      "session.7.accounts = any\nsession.7.key_file = keys/7.key\n"
      "session.8.accounts = any\nsession.8.key_file = /etc/ow/8.key\n";
  absl::StatusOr<std::string> converted =
      ConvertLegacyConfig(old_text, "/srv/orderwire");
  ASSERT_TRUE(converted.ok()) << converted.status();
  EXPECT_THAT(*converted,
              HasSubstr("key_file = \"/srv/orderwire/keys/7.key\"\n"));
  EXPECT_THAT(*converted, HasSubstr("key_file = \"/etc/ow/8.key\"\n"));
  // Loaded from anywhere, the key is the same file.
  ConfigSource source;
  source.path = "/elsewhere/new.toml";
  source.base_dir = "/elsewhere";
  source.load_key_files = false;
  absl::StatusOr<ServiceConfig> loaded = ParseServiceConfig(*converted, source);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->sessions.at(7).key_file, "/srv/orderwire/keys/7.key");
  // Without a directory the paths are written as they are.
  absl::StatusOr<std::string> as_is = ConvertLegacyConfig(old_text);
  ASSERT_TRUE(as_is.ok()) << as_is.status();
  EXPECT_THAT(*as_is, HasSubstr("key_file = \"keys/7.key\"\n"));
}

TEST(LegacyConfigTest, TheConversionKeepsCommentsAndGroupsKeysInTables) {
  const std::string old_text = test_support::ReadText(
      std::string(ORDERWIRE_LEGACY_CONFIG_DIR) + "/service_example.conf");
  absl::StatusOr<std::string> converted = ConvertLegacyConfig(old_text);
  ASSERT_TRUE(converted.ok()) << converted.status();
  EXPECT_EQ(
      *converted,
      R"(# Converted from a key = value configuration file by 'orderwire config convert'.

[engine]
# The engine's limits: every key of engine/config.h.
max_instrument = 1024
max_live_orders = 1048576

[service]
# Sessions.
max_sessions = 1024
max_report_history_bytes = 67108864
session_idle_seconds = 60.0
allowed_addresses = ["127.0.0.1", "::1", "10.1.0.0/16"]
open_sessions = false
open_accounts = "any"

[sessions.7]
# One block per known session.
accounts = [7, 8, "100-199"]
addresses = ["10.1.2.3"]

[sessions.9]
accounts = "any"
key_file = "/etc/orderwire/session-9.key"
)");
}

TEST(LegacyConfigTest, AnOldFileTheOldReaderRefusesIsNotConverted) {
  absl::StatusOr<std::string> converted =
      ConvertLegacyConfig("max_sessions = 0\n");
  ASSERT_FALSE(converted.ok());
  EXPECT_THAT(std::string(converted.status().message()),
              StartsWith("line 1: max_sessions"));
}

}  // namespace
}  // namespace orderwire::cli::legacy
