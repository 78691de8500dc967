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
  ASSERT_EQ(table.Admit(5, Ip("127.0.0.1:4000"), &session), Admission::kOk);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->id, 5u);
  EXPECT_EQ(session->next_expected, 1u);
  Session* again = nullptr;
  EXPECT_EQ(table.Admit(5, Ip("127.0.0.1:4000"), &again), Admission::kOk);
  EXPECT_EQ(again, session);
  EXPECT_EQ(table.Admit(5, Ip("127.0.0.1:4001"), &again),
            Admission::kPinnedElsewhere);
  EXPECT_EQ(table.Admit(5, Ip("127.0.0.2:4000"), &again),
            Admission::kPinnedElsewhere);
  EXPECT_EQ(table.size(), 1u);
}

TEST(SessionTableTest, RefusesSourcesOutsideThePolicy) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(1, Ip("192.0.2.1:4000"), &session),
            Admission::kAddressNotAllowed);
  EXPECT_EQ(table.size(), 0u);
}

TEST(SessionTableTest, RefusesUnlistedSessionsWhenClosed) {
  const ServiceConfig config = *ParseServiceConfig("session.1.accounts = 1\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(2, Ip("127.0.0.1:4000"), &session),
            Admission::kUnknownSession);
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:4000"), &session), Admission::kOk);
}

TEST(SessionTableTest, CapsTheNumberOfSessions) {
  const ServiceConfig config = *ParseServiceConfig("max_sessions = 2\n");
  SessionTable table(config);
  Session* session = nullptr;
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:1"), &session), Admission::kOk);
  EXPECT_EQ(table.Admit(2, Ip("127.0.0.1:2"), &session), Admission::kOk);
  EXPECT_EQ(table.Admit(3, Ip("127.0.0.1:3"), &session),
            Admission::kTooManySessions);
  EXPECT_EQ(table.Admit(1, Ip("127.0.0.1:1"), &session), Admission::kOk);
}

TEST(SessionTableTest, RecoveredSessionsPinToTheFirstSourceAfterRestart) {
  const ServiceConfig config = *ParseServiceConfig("");
  SessionTable table(config);
  Session* recovered = table.Recover(9);
  ASSERT_NE(recovered, nullptr);
  recovered->next_expected = 42;
  EXPECT_FALSE(recovered->pinned);
  Session* session = nullptr;
  ASSERT_EQ(table.Admit(9, Ip("127.0.0.1:7"), &session), Admission::kOk);
  EXPECT_EQ(session, recovered);
  EXPECT_EQ(session->next_expected, 42u);
  EXPECT_TRUE(session->pinned);
}

}  // namespace
}  // namespace orderwire::service
