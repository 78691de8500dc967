// Tests of the session table: admission by policy, pinning, the cap, and
// keyed sessions (MAC checked before anything else changes; a keyed session
// moves only with a valid MAC and a new command).
#include "service/session_table.h"

#include <sys/stat.h>

#include <deque>
#include <string>

#include "auth/mac.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::service {
namespace {

Endpoint Ip(const char* host_port) { return *Endpoint::Parse(host_port); }

// Datagrams built for a test, kept alive for the views Admit reads.
std::deque<test_support::Bytes>& Storage() {
  static std::deque<test_support::Bytes> storage;
  return storage;
}

// A datagram of session `id` holding one CancelByOrder with `sequence`,
// signed with `mac` when given (the Authenticated flag set), or with the flag
// and a wrong trailer when `forge` is set.
codec::DatagramView Datagram(std::uint32_t id, std::uint64_t sequence = 1,
                             const auth::Mac* mac = nullptr,
                             bool forge = false) {
  test_support::Bytes buffer(codec::kMaxDatagramSize);
  const bool authenticated = mac != nullptr || forge;
  codec::DatagramBuilder builder(buffer, id, authenticated);
  EXPECT_EQ(builder.Append(sequence, codec::CancelByOrder{7, 1}),
            codec::CodecError::kOk);
  std::span<const std::byte> bytes = builder.bytes();
  if (mac != nullptr) {
    bytes = auth::SealDatagram(*mac, builder);
  } else if (forge) {
    const auth::Tag zero{};
    bytes = builder.Seal(zero);
  }
  Storage().emplace_back(bytes.begin(), bytes.end());
  return *codec::DatagramView::Parse(Storage().back());
}

constexpr std::string_view kKeyHex =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

// A configuration where session 7 is keyed (kKeyHex) and session 8 is not.
struct KeyedConfig {
  test_support::ScratchDir dir;
  ServiceConfig config;
  auth::Mac mac{*auth::ParseKeyHex(kKeyHex)};

  KeyedConfig() {
    const std::string key = dir.Sub("7.key");
    test_support::WriteText(key, std::string(kKeyHex) + "\n");
    ::chmod(key.c_str(), 0600);
    config =
        *ParseServiceConfig("[sessions.7]\naccounts = \"any\"\nkey_file = \"" +
                            key + "\"\n[sessions.8]\naccounts = \"any\"\n");
  }
};

TEST(SessionTableTest, PinsASessionToItsFirstSource) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(5), Ip("127.0.0.1:4000"), true, &session),
            Admission::kOk);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->id, 5u);
  EXPECT_EQ(session->next_expected, 1u);
  Session* again = nullptr;
  EXPECT_EQ(table.Admit(Datagram(5), Ip("127.0.0.1:4000"), true, &again),
            Admission::kOk);
  EXPECT_EQ(again, session);
  EXPECT_EQ(table.Admit(Datagram(5), Ip("127.0.0.1:4001"), true, &again),
            Admission::kPinnedElsewhere);
  EXPECT_EQ(table.Admit(Datagram(5), Ip("127.0.0.2:4000"), true, &again),
            Admission::kPinnedElsewhere);
  EXPECT_EQ(table.size(), 1u);
}

TEST(SessionTableTest, RefusesSourcesOutsideThePolicy) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(Datagram(1), Ip("192.0.2.1:4000"), true, &session),
            Admission::kAddressNotAllowed);
  EXPECT_EQ(table.size(), 0u);
}

TEST(SessionTableTest, RefusesUnlistedSessionsWhenClosed) {
  const ServiceConfig config =
      *ParseServiceConfig("[sessions.1]\naccounts = [1]\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(Datagram(2), Ip("127.0.0.1:4000"), true, &session),
            Admission::kUnknownSession);
  EXPECT_EQ(table.Admit(Datagram(1), Ip("127.0.0.1:4000"), true, &session),
            Admission::kOk);
}

TEST(SessionTableTest, CapsTheNumberOfSessions) {
  const ServiceConfig config =
      *ParseServiceConfig("[service]\nmax_sessions = 2\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(Datagram(1), Ip("127.0.0.1:1"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(2), Ip("127.0.0.1:2"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(3), Ip("127.0.0.1:3"), true, &session),
            Admission::kTooManySessions);
  EXPECT_EQ(table.Admit(Datagram(1), Ip("127.0.0.1:1"), true, &session),
            Admission::kOk);
}

// The cap bounds unlisted sessions only: a listed session always fits, even
// when the unlisted ones have taken every place, and after a restart that
// recovered them.
TEST(SessionTableTest, AListedSessionIsNeverRefusedForTheCap) {
  const ServiceConfig config = *ParseServiceConfig(
      "[service]\nmax_sessions = 2\nopen_sessions = true\n"
      "[sessions.77]\naccounts = \"any\"\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(Datagram(1), Ip("127.0.0.1:1"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(2), Ip("127.0.0.1:2"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(3), Ip("127.0.0.1:3"), true, &session),
            Admission::kTooManySessions);
  EXPECT_EQ(table.Admit(Datagram(77), Ip("127.0.0.1:77"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.unlisted(), 2u);

  SessionTable restarted(config);
  ASSERT_NE(restarted.Recover(1), nullptr);
  ASSERT_NE(restarted.Recover(2), nullptr);
  EXPECT_EQ(restarted.Recover(3), nullptr);
  EXPECT_EQ(restarted.Admit(Datagram(77), Ip("127.0.0.1:77"), true, &session),
            Admission::kOk);
}

// A datagram that does not open a session is checked but leaves nothing.
TEST(SessionTableTest, AdmittingWithoutCreatingKeepsNothing) {
  const ServiceConfig config =
      *ParseServiceConfig("[service]\nmax_sessions = 1\n");
  SessionTable table(config);
  Session* session = nullptr;
  for (std::uint32_t id = 1; id <= 1000; ++id) {
    EXPECT_EQ(table.Admit(Datagram(id), Ip("127.0.0.1:1"), false, &session),
              Admission::kOk);
    EXPECT_EQ(session, nullptr);
  }
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Admit(Datagram(5), Ip("192.0.2.1:1"), false, &session),
            Admission::kAddressNotAllowed);
  ASSERT_EQ(table.Admit(Datagram(9), Ip("127.0.0.1:1"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(10), Ip("127.0.0.1:1"), false, &session),
            Admission::kTooManySessions);
}

TEST(SessionTableTest, RecoveredSessionsPinToTheFirstSourceAfterRestart) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* recovered = table.Recover(9);
  ASSERT_NE(recovered, nullptr);
  recovered->next_expected = 42;
  EXPECT_FALSE(recovered->pinned);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(9), Ip("127.0.0.1:7"), true, &session),
            Admission::kOk);
  EXPECT_EQ(session, recovered);
  EXPECT_EQ(session->next_expected, 42u);
  EXPECT_TRUE(session->pinned);
}

TEST(SessionTableTest, KeyedSessionRefusesMissingAndBadMacsBeforeTakingASlot) {
  KeyedConfig keyed;
  SessionTable table(keyed.config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(Datagram(7), Ip("127.0.0.1:4000"), true, &session),
            Admission::kMissingMac);
  EXPECT_EQ(table.Admit(Datagram(7, 1, nullptr, /*forge=*/true),
                        Ip("127.0.0.1:4000"), true, &session),
            Admission::kBadMac);
  const auth::Mac other(*auth::ParseKeyHex(std::string(64, 'f')));
  EXPECT_EQ(
      table.Admit(Datagram(7, 1, &other), Ip("127.0.0.1:4000"), true, &session),
      Admission::kBadMac);
  EXPECT_EQ(table.size(), 0u);
  ASSERT_EQ(table.Admit(Datagram(7, 1, &keyed.mac), Ip("127.0.0.1:4000"), true,
                        &session),
            Admission::kOk);
  EXPECT_EQ(table.size(), 1u);
  // Once pinned, from the same endpoint, still every datagram is checked.
  EXPECT_EQ(table.Admit(Datagram(7, 2), Ip("127.0.0.1:4000"), true, &session),
            Admission::kMissingMac);
  EXPECT_EQ(table.Admit(Datagram(7, 2, nullptr, true), Ip("127.0.0.1:4000"),
                        true, &session),
            Admission::kBadMac);
}

TEST(SessionTableTest, UnkeyedSessionRefusesTheAuthenticatedFlag) {
  KeyedConfig keyed;
  SessionTable table(keyed.config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(Datagram(8, 1, &keyed.mac), Ip("127.0.0.1:4000"), true,
                        &session),
            Admission::kUnexpectedMac);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Admit(Datagram(8), Ip("127.0.0.1:4000"), true, &session),
            Admission::kOk);
}

TEST(SessionTableTest, KeyedSessionMovesOnlyWithAValidMacAndANewCommand) {
  KeyedConfig keyed;
  SessionTable table(keyed.config);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(7, 1, &keyed.mac), Ip("127.0.0.1:4000"), true,
                        &session),
            Admission::kOk);
  Session* const pinned = session;
  session->next_expected = 2;  // command 1 journaled
  // A copy of the old datagram (command 1) from elsewhere: moves nothing.
  EXPECT_EQ(table.Admit(Datagram(7, 1, &keyed.mac), Ip("127.0.0.1:5000"), true,
                        &session),
            Admission::kPinnedElsewhere);
  // No key: no move.
  EXPECT_EQ(table.Admit(Datagram(7, 2), Ip("127.0.0.1:5000"), true, &session),
            Admission::kMissingMac);
  // A gap is not the next command either.
  EXPECT_EQ(table.Admit(Datagram(7, 3, &keyed.mac), Ip("127.0.0.1:5000"), true,
                        &session),
            Admission::kPinnedElsewhere);
  EXPECT_TRUE(pinned->peer == Ip("127.0.0.1:4000"));
  EXPECT_EQ(table.moves(), 0u);
  // The next command with the key: the session moves.
  ASSERT_EQ(table.Admit(Datagram(7, 2, &keyed.mac), Ip("127.0.0.1:5000"), true,
                        &session),
            Admission::kOk);
  EXPECT_TRUE(session->peer == Ip("127.0.0.1:5000"));
  EXPECT_EQ(table.moves(), 1u);
  // Not to an address the policy does not allow.
  EXPECT_EQ(table.Admit(Datagram(7, 2, &keyed.mac), Ip("192.0.2.1:5000"), true,
                        &session),
            Admission::kAddressNotAllowed);
}

TEST(SessionTableTest, UnkeyedSessionNeverMoves) {
  KeyedConfig keyed;
  SessionTable table(keyed.config);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(8, 1), Ip("127.0.0.1:4000"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(8, 1), Ip("127.0.0.1:5000"), true, &session),
            Admission::kPinnedElsewhere);
}

TEST(SessionTableTest, AfterARestartOnlyTheKeyPinsARecoveredKeyedSession) {
  KeyedConfig keyed;
  SessionTable table(keyed.config);
  Session* recovered = table.Recover(7);
  ASSERT_NE(recovered, nullptr);
  recovered->next_expected = 5;
  Session* session = nullptr;
  // An impostor speaks first, without the key: refused, nothing pinned.
  EXPECT_EQ(table.Admit(Datagram(7, 5), Ip("127.0.0.1:6666"), true, &session),
            Admission::kMissingMac);
  EXPECT_FALSE(recovered->pinned);
  ASSERT_EQ(table.Admit(Datagram(7, 5, &keyed.mac), Ip("127.0.0.1:4001"), true,
                        &session),
            Admission::kOk);
  EXPECT_EQ(session, recovered);
  EXPECT_TRUE(session->peer == Ip("127.0.0.1:4001"));
}

}  // namespace
}  // namespace orderwire::service
