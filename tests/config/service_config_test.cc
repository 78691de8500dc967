// Tests of the configuration (config/service_config.h): account and
// address sets, the file format, the defaults and the errors.
#include "config/service_config.h"

#include <arpa/inet.h>

#include "gtest/gtest.h"

namespace orderwire::config {
namespace {

Endpoint EndpointOf(const char* host_port) {
  return *Endpoint::Parse(host_port);
}

TEST(AccountSetTest, ParsesIdsAndRangesAndAny) {
  absl::StatusOr<AccountSet> set = AccountSet::Parse("7, 100-199 ,8");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->Contains(7));
  EXPECT_TRUE(set->Contains(8));
  EXPECT_TRUE(set->Contains(100));
  EXPECT_TRUE(set->Contains(150));
  EXPECT_TRUE(set->Contains(199));
  EXPECT_FALSE(set->Contains(9));
  EXPECT_FALSE(set->Contains(200));
  EXPECT_FALSE(set->Contains(0));
  EXPECT_EQ(set->ToString(), "7, 8, 100-199");
  EXPECT_TRUE(AccountSet::Parse("any")->Contains(123456789));
}

TEST(AccountSetTest, RejectsBadItemsNamingThem) {
  for (const char* bad : {"x", "5-", "9-3", "1,,2", "-4", "1.5"}) {
    absl::StatusOr<AccountSet> set = AccountSet::Parse(bad);
    EXPECT_FALSE(set.ok()) << bad;
  }
  EXPECT_NE(
      std::string(AccountSet::Parse("9-3").status().message()).find("9-3"),
      std::string::npos);
}

TEST(AddressSetTest, MatchesCidrBlocksIgnoringThePort) {
  absl::StatusOr<AddressSet> set = AddressSet::Parse("10.1.0.0/16, ::1");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->Contains(EndpointOf("10.1.2.3:5")));
  EXPECT_TRUE(set->Contains(EndpointOf("10.1.255.255:65535")));
  EXPECT_FALSE(set->Contains(EndpointOf("10.2.0.1:5")));
  EXPECT_TRUE(set->Contains(EndpointOf("[::1]:9")));
  EXPECT_FALSE(set->Contains(EndpointOf("127.0.0.1:9")));
}

TEST(AddressSetTest, LoopbackIsTheDefaultAndCoversV4MappedAddresses) {
  const AddressSet loopback = AddressSet::Loopback();
  EXPECT_TRUE(loopback.Contains(EndpointOf("127.0.0.1:1")));
  EXPECT_TRUE(loopback.Contains(EndpointOf("127.255.0.9:1")));
  EXPECT_TRUE(loopback.Contains(EndpointOf("[::1]:1")));
  EXPECT_TRUE(loopback.Contains(EndpointOf("[::ffff:127.0.0.1]:1")));
  EXPECT_FALSE(loopback.Contains(EndpointOf("192.0.2.1:1")));
}

TEST(AddressSetTest, RejectsBadAddressesAndPrefixes) {
  EXPECT_FALSE(AddressSet::Parse("300.1.1.1").ok());
  EXPECT_FALSE(AddressSet::Parse("10.0.0.0/33").ok());
  EXPECT_FALSE(AddressSet::Parse("::1/129").ok());
  EXPECT_FALSE(AddressSet::Parse("host.example").ok());
}

TEST(ServiceConfigTest, DefaultsAreOpenToLoopbackForAnyAccount) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_sessions, 1024u);
  EXPECT_TRUE(config->open_sessions);
  const SessionPolicy* policy = config->PolicyFor(42);
  ASSERT_NE(policy, nullptr);
  EXPECT_TRUE(policy->accounts.any());
  EXPECT_TRUE(policy->addresses.Contains(EndpointOf("127.0.0.1:1")));
  EXPECT_FALSE(policy->addresses.Contains(EndpointOf("192.0.2.1:1")));
  EXPECT_EQ(config->engine.max_instrument, 1024u);
}

TEST(ServiceConfigTest, MemoryKeysHaveDefaultsAndCanBeSet) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_report_history_bytes, std::uint64_t{64} << 20);
  EXPECT_EQ(config->session_idle_seconds, 60.0);
  config = ParseServiceConfig(
      "[service]\nmax_report_history_bytes = 1048576\n"
      "session_idle_seconds = 0.25\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_report_history_bytes, 1048576u);
  EXPECT_EQ(config->session_idle_seconds, 0.25);
}

TEST(ServiceConfigTest, ListedSessionsCloseTheDoorToOthers) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "# sessions\n"
      "[service]\n"
      "max_sessions = 8\n"
      "[sessions.7]\n"
      "accounts = [7, 8]\n"
      "addresses = [\"192.0.2.0/24\"]\n"
      "[sessions.9]\n"
      "accounts = \"any\"   # trailing comment\n"
      "[engine]\n"
      "max_instrument = 16\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_sessions, 8u);
  EXPECT_FALSE(config->open_sessions);
  EXPECT_EQ(config->PolicyFor(1), nullptr);
  const SessionPolicy* seven = config->PolicyFor(7);
  ASSERT_NE(seven, nullptr);
  EXPECT_TRUE(seven->accounts.Contains(8));
  EXPECT_FALSE(seven->accounts.Contains(9));
  EXPECT_TRUE(seven->addresses.Contains(EndpointOf("192.0.2.7:1")));
  EXPECT_FALSE(seven->addresses.Contains(EndpointOf("127.0.0.1:1")));
  const SessionPolicy* nine = config->PolicyFor(9);
  ASSERT_NE(nine, nullptr);
  EXPECT_TRUE(
      nine->addresses.Contains(EndpointOf("127.0.0.1:1")));  // the default
  EXPECT_EQ(config->engine.max_instrument, 16u);
}

TEST(ServiceConfigTest, OpenSessionsCanBeKeptWithListedOnes) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "[service]\nopen_sessions = true\nopen_accounts = [\"1-10\"]\n"
      "allowed_addresses = \"any\"\n[sessions.3]\naccounts = [99]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const SessionPolicy* other = config->PolicyFor(4);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->accounts.Contains(10));
  EXPECT_FALSE(other->accounts.Contains(11));
  EXPECT_TRUE(other->addresses.Contains(EndpointOf("192.0.2.1:1")));
  EXPECT_TRUE(config->PolicyFor(3)->accounts.Contains(99));
}

}  // namespace
}  // namespace orderwire::config

namespace orderwire::config {
namespace {

TEST(AddressSetTest, RejectsAnAddressWithANulByteInside) {
  EXPECT_FALSE(AddressSet::Parse(std::string_view("10.0.0.1\0junk", 13)).ok());
}

TEST(AddressSetTest, AnIpv4BlockWrittenAsIpv6MatchesIpv4Sources) {
  absl::StatusOr<AddressSet> set = AddressSet::Parse("::ffff:10.0.0.0/120");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->Contains(*Endpoint::Parse("10.0.0.5:1")));
  EXPECT_TRUE(set->Contains(*Endpoint::Parse("[::ffff:10.0.0.5]:1")));
  EXPECT_FALSE(set->Contains(*Endpoint::Parse("10.1.0.5:1")));
}

}  // namespace
}  // namespace orderwire::config
