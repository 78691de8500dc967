// Tests of the session table: admission by policy, pinning, the cap.
#include "service/session_table.h"

#include "gtest/gtest.h"

namespace orderwire::service {
namespace {

Endpoint Ip(const char* host_port) { return *Endpoint::Parse(host_port); }

TEST(SessionTableTest, PinsASessionToItsFirstSource) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(5, Ip("127.0.0.1:4000"), true, &session),
            Admission::kOk);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->id, 5u);
  EXPECT_EQ(session->next_expected, 1u);
  Session* again = nullptr;
  EXPECT_EQ(table.Admit(5, Ip("127.0.0.1:4000"), true, &again), Admission::kOk);
  EXPECT_EQ(again, session);
  EXPECT_EQ(table.Admit(5, Ip("127.0.0.1:4001"), true, &again),
            Admission::kPinnedElsewhere);
  EXPECT_EQ(table.Admit(5, Ip("127.0.0.2:4000"), true, &again),
            Admission::kPinnedElsewhere);
  EXPECT_EQ(table.size(), 1u);
}

TEST(SessionTableTest, RefusesSourcesOutsideThePolicy) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(1, Ip("192.0.2.1:4000"), true, &session),
            Admission::kAddressNotAllowed);
  EXPECT_EQ(table.size(), 0u);
}

TEST(SessionTableTest, RefusesUnlistedSessionsWhenClosed) {
  const ServiceConfig config = *ParseServiceConfig("session.1.accounts = 1\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(2, Ip("127.0.0.1:4000"), true, &session),
            Admission::kUnknownSession);
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:4000"), true, &session),
            Admission::kOk);
}

TEST(SessionTableTest, CapsTheNumberOfSessions) {
  const ServiceConfig config = *ParseServiceConfig("max_sessions = 2\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:1"), true, &session), Admission::kOk);
  EXPECT_EQ(table.Admit(2, Ip("127.0.0.1:2"), true, &session), Admission::kOk);
  EXPECT_EQ(table.Admit(3, Ip("127.0.0.1:3"), true, &session),
            Admission::kTooManySessions);
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:1"), true, &session), Admission::kOk);
}

// The cap bounds unlisted sessions only: a listed session always fits, even
// when the unlisted ones have taken every place, and after a restart that
// recovered them.
TEST(SessionTableTest, AListedSessionIsNeverRefusedForTheCap) {
  const ServiceConfig config = *ParseServiceConfig(
      "max_sessions = 2\nopen_sessions = true\nsession.77.accounts = any\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:1"), true, &session), Admission::kOk);
  EXPECT_EQ(table.Admit(2, Ip("127.0.0.1:2"), true, &session), Admission::kOk);
  EXPECT_EQ(table.Admit(3, Ip("127.0.0.1:3"), true, &session),
            Admission::kTooManySessions);
  EXPECT_EQ(table.Admit(77, Ip("127.0.0.1:77"), true, &session),
            Admission::kOk);
  EXPECT_EQ(table.unlisted(), 2u);

  SessionTable restarted(config);
  ASSERT_NE(restarted.Recover(1), nullptr);
  ASSERT_NE(restarted.Recover(2), nullptr);
  EXPECT_EQ(restarted.Recover(3), nullptr);
  EXPECT_EQ(restarted.Admit(77, Ip("127.0.0.1:77"), true, &session),
            Admission::kOk);
}

// A datagram that does not open a session is checked but leaves nothing.
TEST(SessionTableTest, AdmittingWithoutCreatingKeepsNothing) {
  const ServiceConfig config = *ParseServiceConfig("max_sessions = 1\n");
  SessionTable table(config);
  Session* session = nullptr;
  for (std::uint32_t id = 1; id <= 1000; ++id) {
    EXPECT_EQ(table.Admit(id, Ip("127.0.0.1:1"), false, &session),
              Admission::kOk);
    EXPECT_EQ(session, nullptr);
  }
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Admit(5, Ip("192.0.2.1:1"), false, &session),
            Admission::kAddressNotAllowed);
  ASSERT_EQ(table.Admit(9, Ip("127.0.0.1:1"), true, &session), Admission::kOk);
  EXPECT_EQ(table.Admit(10, Ip("127.0.0.1:1"), false, &session),
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
  ASSERT_EQ(table.Admit(9, Ip("127.0.0.1:7"), true, &session), Admission::kOk);
  EXPECT_EQ(session, recovered);
  EXPECT_EQ(session->next_expected, 42u);
  EXPECT_TRUE(session->pinned);
}

}  // namespace
}  // namespace orderwire::service
