// Tests of the session table: admission by policy, pinning, the cap and the
// limit per source address, slots given back and sessions the journal holds
// coming back, and keyed sessions (MAC checked before anything else
// changes; a keyed session moves only with a valid MAC and a new command).
#include "service/session_table.h"

#include <sys/stat.h>

#include <deque>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "auth/mac.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::service {
namespace {

using config::ParseServiceConfig;
using config::ServiceConfig;

Endpoint Ip(const char* host_port) { return *Endpoint::Parse(host_port); }

// Datagrams built for a test, kept alive for the views Admit reads.
std::deque<test_support::Bytes>& Storage() {
  static std::deque<test_support::Bytes> storage;
  return storage;
}

// A datagram of session `id` holding one CancelByOrder (or, with
// `heartbeat`, a Heartbeat) with `sequence`, signed with `mac` when given
// (the Authenticated flag set), or with the flag and a wrong trailer when
// `forge` is set.
codec::DatagramView Datagram(std::uint32_t id, std::uint64_t sequence = 1,
                             const auth::Mac* mac = nullptr, bool forge = false,
                             bool heartbeat = false) {
  test_support::Bytes buffer(codec::kMaxDatagramSize);
  const bool authenticated = mac != nullptr || forge;
  codec::DatagramBuilder builder(buffer, id, authenticated);
  EXPECT_EQ(heartbeat ? builder.Append(sequence, codec::Heartbeat{1})
                      : builder.Append(sequence, codec::CancelByOrder{7, 1}),
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

// The journal's sessions, as the service's StateMachine would say.
struct FakeJournal final : JournaledSessions {
  absl::flat_hash_map<std::uint32_t, std::uint64_t> next;
  std::uint64_t NextExpected(std::uint32_t id) const override {
    const auto it = next.find(id);
    return it == next.end() ? 0 : it->second;
  }
};

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

  // After a restart the journal holds 1, 2, 3 and 77: the first two back
  // take the places, the listed one still fits.
  FakeJournal journal;
  journal.next = {{1, 2}, {2, 2}, {3, 2}, {77, 2}};
  SessionTable restarted(config, &journal);
  EXPECT_EQ(restarted.Admit(Datagram(1, 2), Ip("127.0.0.1:1"), false, &session),
            Admission::kOk);
  EXPECT_EQ(restarted.Admit(Datagram(2, 2), Ip("127.0.0.1:2"), false, &session),
            Admission::kOk);
  EXPECT_EQ(restarted.Admit(Datagram(3, 2), Ip("127.0.0.1:3"), false, &session),
            Admission::kTooManySessions);
  EXPECT_EQ(
      restarted.Admit(Datagram(77, 2), Ip("127.0.0.1:77"), false, &session),
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

// A session the journal holds (after a restart) takes a slot with its first
// datagram, whatever it carries, continues at the journal's next sequence
// and is pinned to that datagram's source.
TEST(SessionTableTest, AJournaledSessionComesBackAtItsNextSequence) {
  const ServiceConfig config = *ParseServiceConfig("");
  FakeJournal journal;
  journal.next[9] = 42;
  SessionTable table(config, &journal);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(9, 5), Ip("127.0.0.1:7"), false, &session),
            Admission::kOk);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->next_expected, 42u);
  EXPECT_TRUE(session->pinned);
  EXPECT_TRUE(session->peer == Ip("127.0.0.1:7"));
  EXPECT_EQ(table.Admit(Datagram(9, 42), Ip("127.0.0.1:8"), true, &session),
            Admission::kPinnedElsewhere);
  // An id the journal does not hold still begins with frame 1 only.
  EXPECT_EQ(table.Admit(Datagram(10, 5), Ip("127.0.0.1:7"), false, &session),
            Admission::kOk);
  EXPECT_EQ(session, nullptr);
  EXPECT_EQ(table.held(), 1u);
}

// One source address holds at most max_sessions_per_source unlisted
// sessions, whatever its ports; other addresses, and listed sessions, are
// not held back by it; a slot given back counts no more.
TEST(SessionTableTest, ALimitPerSourceAddressLeavesPlacesForOthers) {
  const ServiceConfig config = *ParseServiceConfig(
      "[service]\nmax_sessions = 4\nmax_sessions_per_source = 2\n"
      "open_sessions = true\n[sessions.77]\naccounts = \"any\"\n");
  SessionTable table(config);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(1), Ip("127.0.0.1:1"), true, &session),
            Admission::kOk);
  Session* first = session;
  ASSERT_EQ(table.Admit(Datagram(2), Ip("127.0.0.1:2"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(3), Ip("127.0.0.1:3"), true, &session),
            Admission::kTooManyFromSource);
  // Checked for a datagram that would open nothing too.
  EXPECT_EQ(table.Admit(Datagram(3, 2), Ip("127.0.0.1:3"), false, &session),
            Admission::kTooManyFromSource);
  EXPECT_EQ(table.HeldFor(Ip("127.0.0.1:9")), 2u);
  EXPECT_EQ(table.Admit(Datagram(4), Ip("127.0.0.2:1"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.Admit(Datagram(77), Ip("127.0.0.1:77"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.HeldFor(Ip("127.0.0.1:9")), 2u);
  // IPv4 and the same address mapped into IPv6 are one source.
  EXPECT_EQ(
      table.Admit(Datagram(5), Ip("[::ffff:127.0.0.1]:5"), true, &session),
      Admission::kTooManyFromSource);
  ASSERT_TRUE(table.Release(*first));
  EXPECT_EQ(table.HeldFor(Ip("127.0.0.1:9")), 1u);
  EXPECT_EQ(table.Admit(Datagram(3), Ip("127.0.0.1:3"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.unlisted(), 3u);
}

// Release() gives an unlisted session's slot to the next new session; the
// session given up comes back from the journal, from any endpoint. A listed
// session is never released.
TEST(SessionTableTest, AReleasedSlotIsReusedAndItsSessionComesBack) {
  const ServiceConfig config = *ParseServiceConfig(
      "[service]\nmax_sessions = 1\nopen_sessions = true\n"
      "[sessions.77]\naccounts = \"any\"\n");
  FakeJournal journal;
  SessionTable table(config, &journal);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(Datagram(1), Ip("127.0.0.1:1"), true, &session),
            Admission::kOk);
  const std::uint32_t slot = session->index;
  session->next_expected = 3;  // two commands journaled and applied
  journal.next[1] = 3;
  EXPECT_EQ(table.Admit(Datagram(2), Ip("127.0.0.1:2"), true, &session),
            Admission::kTooManySessions);
  ASSERT_TRUE(table.Release(table.at(slot)));
  EXPECT_FALSE(table.at(slot).held);
  EXPECT_EQ(table.Find(1), nullptr);
  EXPECT_EQ(table.held(), 0u);
  ASSERT_EQ(table.Admit(Datagram(2), Ip("127.0.0.1:2"), true, &session),
            Admission::kOk);
  EXPECT_EQ(session->index, slot);
  EXPECT_EQ(session->next_expected, 1u);
  ASSERT_TRUE(table.Release(*session));
  ASSERT_EQ(table.Admit(Datagram(1, 3), Ip("127.0.0.1:9"), false, &session),
            Admission::kOk);
  EXPECT_EQ(session->next_expected, 3u);
  EXPECT_TRUE(session->peer == Ip("127.0.0.1:9"));
  ASSERT_EQ(table.Admit(Datagram(77), Ip("127.0.0.1:77"), true, &session),
            Admission::kOk);
  EXPECT_FALSE(table.Release(*session));
  EXPECT_EQ(table.Find(77), session);
  EXPECT_EQ(table.size(), 2u);
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
  // Nor a Heartbeat, whatever sequence it carries (docs/CONTROLS.md).
  EXPECT_EQ(table.Admit(Datagram(7, 2, &keyed.mac, false, /*heartbeat=*/true),
                        Ip("127.0.0.1:5000"), true, &session),
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

TEST(SessionTableTest, AfterARestartOnlyTheKeyPinsAJournaledKeyedSession) {
  KeyedConfig keyed;
  FakeJournal journal;
  journal.next[7] = 5;
  SessionTable table(keyed.config, &journal);
  Session* session = nullptr;
  // An impostor speaks first, without the key: refused, nothing held.
  EXPECT_EQ(table.Admit(Datagram(7, 5), Ip("127.0.0.1:6666"), true, &session),
            Admission::kMissingMac);
  EXPECT_EQ(table.Find(7), nullptr);
  ASSERT_EQ(table.Admit(Datagram(7, 5, &keyed.mac), Ip("127.0.0.1:4001"), true,
                        &session),
            Admission::kOk);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->next_expected, 5u);
  EXPECT_TRUE(session->peer == Ip("127.0.0.1:4001"));
}

}  // namespace
}  // namespace orderwire::service
