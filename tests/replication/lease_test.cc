// The leadership lease (replication/lease.h) against real nats-server
// processes: the first acquisition is epoch 1; nobody takes a renewed lease;
// a standby takes an unrenewed one with epoch + 1 no earlier than D on its
// own clock after the holder's last renewal; of two racing standbys exactly
// one wins; the old holder learns it lost; StillLeader turns false by the
// local deadline with NATS paused; malformed values are refused; and the
// value's text form is parsed strictly. Short leases (600 ms) keep it quick.
#include "replication/lease.h"

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/nats_cluster.h"

namespace orderwire::replication {
namespace {

using std::chrono::milliseconds;
using test_support::NatsCluster;
using test_support::StartNatsCluster;
using ::testing::HasSubstr;

constexpr milliseconds kDuration{600};
constexpr milliseconds kMargin{150};

LeaseSpec Spec(const NatsCluster& cluster, const std::string& engine,
               const std::string& holder, int replicas = 1) {
  LeaseSpec spec;
  spec.servers = cluster.ServersUrl();
  spec.engine_name = engine;
  spec.replicas = replicas;
  spec.holder = holder;
  spec.duration = kDuration;
  spec.safety_margin = kMargin;
  spec.renew_interval = milliseconds(100);
  spec.request_timeout = milliseconds(200);
  spec.poll_interval = milliseconds(10);
  return spec;
}

std::unique_ptr<LeaseMember> OpenMember(LeaseSpec spec) {
  auto member = LeaseMember::Open(std::move(spec));
  if (!member.ok()) {
    ADD_FAILURE() << "open lease member: " << member.status();
    return nullptr;
  }
  return *std::move(member);
}

// When the member sent its last successful acquisition or renewal: its
// deadline is that + D - margin.
LeaseClock::time_point SentAt(const LeaseMember& member) {
  return member.leader_deadline() -
         (member.spec().duration - member.spec().safety_margin);
}

// Puts `text` under the lease key with plain libnats, as an operator or a
// foreign writer would; returns the revision (0 on failure, reported).
std::uint64_t PutRaw(const NatsCluster& cluster, const std::string& engine,
                     const char* text) {
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  kvStore* kv = nullptr;
  std::uint64_t revision = 0;
  natsStatus s = natsConnection_ConnectTo(&conn, cluster.ServersUrl().c_str());
  if (s == NATS_OK) s = natsConnection_JetStream(&js, conn, nullptr);
  if (s == NATS_OK) s = js_KeyValue(&kv, js, LeaseBucketName(engine).c_str());
  if (s == NATS_OK) s = kvStore_PutString(&revision, kv, "leader", text);
  EXPECT_EQ(s, NATS_OK) << natsStatus_GetText(s);
  kvStore_Destroy(kv);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  return s == NATS_OK ? revision : 0;
}

class LeaseSingleNode : public test_support::SharedNatsClusterTest<1> {};

TEST_F(LeaseSingleNode, AcquireOnAnEmptyBucketGivesEpochOne) {
  auto a = OpenMember(Spec(*cluster_, "empty", "a"));
  ASSERT_NE(a, nullptr);
  auto got = a->TryAcquire();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(got->epoch, 1u);
  EXPECT_EQ(a->epoch(), 1u);
  EXPECT_TRUE(a->StillLeader(LeaseClock::now()));
  // Another member sees it held by "a", epoch 1.
  auto b = OpenMember(Spec(*cluster_, "empty", "b"));
  ASSERT_NE(b, nullptr);
  auto seen = b->TryAcquire();
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->outcome, AcquireOutcome::kHeld);
  EXPECT_EQ(seen->epoch, 1u);
  EXPECT_EQ(seen->holder, "a");
  EXPECT_FALSE(b->StillLeader(LeaseClock::now()));
}

// While the holder renews, a standby waiting 3 lease durations never gets
// it.
TEST_F(LeaseSingleNode, NobodyTakesARenewedLease) {
  auto a = OpenMember(Spec(*cluster_, "renewed", "a"));
  auto b = OpenMember(Spec(*cluster_, "renewed", "b"));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto got = a->TryAcquire();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->outcome, AcquireOutcome::kAcquired);
  LeaseRenewer renewer(*a);
  auto tried = b->Acquire(3 * kDuration);
  renewer.Stop();
  ASSERT_TRUE(tried.ok()) << tried.status();
  EXPECT_EQ(tried->outcome, AcquireOutcome::kHeld);
  EXPECT_EQ(tried->holder, "a");
  EXPECT_EQ(tried->epoch, 1u);
  EXPECT_EQ(b->epoch(), 0u);
  EXPECT_GE(renewer.renewed(), 10u);
  EXPECT_EQ(renewer.failed(), 0u);
  EXPECT_TRUE(a->StillLeader(LeaseClock::now()));
}

// The standby polls while the holder renews, then the holder stops: the
// standby takes over with epoch 2, no earlier than D after the holder SENT
// its last renewal (its own clock; here the same clock), and the holder's
// local deadline passed at least the safety margin before the takeover was
// sent. Then the old holder's Renew says it lost, and it is leader no more.
TEST_F(LeaseSingleNode, StandbyTakesOverAfterDAndTheOldHolderLearnsItLost) {
  auto a = OpenMember(Spec(*cluster_, "takeover", "a"));
  auto b = OpenMember(Spec(*cluster_, "takeover", "b"));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto got = a->TryAcquire();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->outcome, AcquireOutcome::kAcquired);

  absl::StatusOr<AcquireResult> taken = absl::UnknownError("not run");
  std::thread standby([&] { taken = b->Acquire(std::chrono::seconds(5)); });
  {
    LeaseRenewer renewer(*a);
    std::this_thread::sleep_for(2 * kDuration);
    renewer.Stop();
    EXPECT_EQ(renewer.failed(), 0u);
  }
  const LeaseClock::time_point last_renewal_sent = SentAt(*a);
  const LeaseClock::time_point holder_deadline = a->leader_deadline();
  standby.join();
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_EQ(taken->outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(taken->epoch, 2u);
  const LeaseClock::time_point takeover_sent = SentAt(*b);
  const auto delay = std::chrono::duration_cast<milliseconds>(
      takeover_sent - last_renewal_sent);
  EXPECT_GE(takeover_sent - last_renewal_sent, kDuration)
      << "took over " << delay.count() << " ms after the last renewal";
  EXPECT_LE(holder_deadline + kMargin, takeover_sent);
  // Prompt, too (generous: CI runs this under ASan on a loaded machine).
  EXPECT_LT(delay, kDuration + milliseconds(1000)) << "slow takeover";

  const RenewResult late = a->Renew();
  EXPECT_EQ(late.outcome, RenewOutcome::kLost) << late.detail;
  EXPECT_THAT(late.detail, HasSubstr("b holds epoch 2"));
  EXPECT_FALSE(a->StillLeader(LeaseClock::now()));
  EXPECT_EQ(a->epoch(), 0u);
  EXPECT_TRUE(b->StillLeader(LeaseClock::now()));
  EXPECT_EQ(b->Renew().outcome, RenewOutcome::kRenewed);
}

// Two standbys that both saw the lease expire read the same revision and
// both try the compare-and-set (the hook holds each until both have read):
// exactly one wins, the other gets kLostRace, not an error. Five rounds,
// each on the previous winner's abandoned lease.
TEST_F(LeaseSingleNode, OfTwoRacingStandbysExactlyOneWins) {
  const std::string engine = "race";
  auto a = OpenMember(Spec(*cluster_, engine, "a"));
  ASSERT_NE(a, nullptr);
  auto first = a->TryAcquire();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->outcome, AcquireOutcome::kAcquired);
  std::uint64_t epoch = 1;
  for (int round = 0; round < 5; ++round) {
    std::mutex mu;
    std::condition_variable cv;
    int ready = 0;
    auto both_read = [&] {
      std::unique_lock lock(mu);
      ++ready;
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(5), [&] { return ready == 2; });
    };
    std::vector<std::unique_ptr<LeaseMember>> racers;
    for (const char* name : {"b", "c"}) {
      LeaseSpec spec = Spec(*cluster_, engine, absl::StrCat(name, round));
      spec.before_compare_and_set_for_tests = both_read;
      racers.push_back(OpenMember(std::move(spec)));
      ASSERT_NE(racers.back(), nullptr);
    }
    std::vector<absl::StatusOr<AcquireResult>> results(
        2, absl::UnknownError("not run"));
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < 2; ++i) {
      threads.emplace_back(
          [&, i] { results[i] = racers[i]->Acquire(std::chrono::seconds(5)); });
    }
    for (auto& t : threads) t.join();
    std::size_t won = 2;  // nobody
    for (std::size_t i = 0; i < 2; ++i) {
      ASSERT_TRUE(results[i].ok())
          << "round " << round << ": " << results[i].status();
      if (results[i]->outcome == AcquireOutcome::kAcquired) {
        EXPECT_EQ(won, 2u) << "round " << round << ": both won";
        won = i;
      } else {
        EXPECT_EQ(results[i]->outcome, AcquireOutcome::kLostRace)
            << "round " << round << ": "
            << AcquireOutcomeName(results[i]->outcome);
        EXPECT_FALSE(racers[i]->StillLeader(LeaseClock::now()));
      }
    }
    ASSERT_NE(won, 2u) << "round " << round << ": nobody won";
    EXPECT_EQ(results[won]->epoch, epoch + 1);
    EXPECT_EQ(results[1 - won]->epoch, epoch + 1);  // the winner's, seen
    EXPECT_EQ(results[1 - won]->holder, racers[won]->spec().holder);
    ++epoch;
  }
}

// The renewal loop ends by itself when a renewal finds the key taken (here
// by a foreign write of epoch 9), and the member is leader no more at once,
// long before its deadline.
TEST_F(LeaseSingleNode, RenewerEndsWhenTheLeaseIsTaken) {
  auto a = OpenMember(Spec(*cluster_, "taken", "a"));
  ASSERT_NE(a, nullptr);
  auto got = a->TryAcquire();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->outcome, AcquireOutcome::kAcquired);
  LeaseRenewer renewer(*a);
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_GE(renewer.renewed(), 2u);
  EXPECT_FALSE(renewer.lost());
  ASSERT_NE(PutRaw(*cluster_, "taken", "ow-lease/1 9 600 z"), 0u);
  const LeaseClock::time_point put_at = LeaseClock::now();
  while (!renewer.lost() && LeaseClock::now() < put_at + kDuration) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(renewer.lost());
  EXPECT_FALSE(a->StillLeader(LeaseClock::now()));
  EXPECT_EQ(a->epoch(), 0u);
  // Within about one renew interval, well before the old deadline.
  EXPECT_LT(LeaseClock::now() - put_at, milliseconds(400));
  const std::uint64_t renewed = renewer.renewed();
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(renewer.renewed(), renewed) << "kept renewing after kLost";
}

// With the only server paused, renewals get no answer and the holder's
// StillLeader, polled every millisecond on another thread than the one
// renewing, turns false at its local deadline (the send time of its last
// successful renewal + D - margin) with no NATS answer at all: never true
// after it, and false within a few milliseconds of it.
TEST(LeasePausedServer, StillLeaderTurnsFalseByTheLocalDeadline) {
  auto cluster = StartNatsCluster(1);
  ASSERT_NE(cluster, nullptr);
  auto a = OpenMember(Spec(*cluster, "paused", "a"));
  ASSERT_NE(a, nullptr);
  auto got = a->TryAcquire();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->outcome, AcquireOutcome::kAcquired);
  const RenewResult renewed = a->Renew();
  ASSERT_EQ(renewed.outcome, RenewOutcome::kRenewed) << renewed.detail;
  // The last successful renewal was sent before this.
  const LeaseClock::time_point after_last_ok = LeaseClock::now();
  const LeaseClock::time_point rule = after_last_ok + kDuration - kMargin;
  ASSERT_TRUE(cluster->Pause(0).ok());

  LeaseClock::time_point turned_false{};
  std::uint64_t renewed_while_paused = 0;
  std::uint64_t failed_while_paused = 0;
  {
    LeaseRenewer renewer(*a);
    while (LeaseClock::now() < after_last_ok + 3 * kDuration) {
      const LeaseClock::time_point now = LeaseClock::now();
      if (!a->StillLeader(now)) {
        turned_false = now;
        break;
      }
      ASSERT_LT(now, rule) << "still leader past the local deadline";
      std::this_thread::sleep_for(milliseconds(1));
    }
    renewer.Stop();
    renewed_while_paused = renewer.renewed();
    failed_while_paused = renewer.failed();
  }
  ASSERT_NE(turned_false, LeaseClock::time_point{}) << "never turned false";
  EXPECT_EQ(renewed_while_paused, 0u);
  EXPECT_GE(failed_while_paused, 1u);
  EXPECT_LT(turned_false - rule, milliseconds(30))
      << "turned false late: did it wait for a NATS answer?";
  // The deadline is where the rule puts it, and StillLeader flips there.
  EXPECT_LE(a->leader_deadline(), rule);
  EXPECT_TRUE(a->StillLeader(a->leader_deadline() - milliseconds(1)));
  EXPECT_FALSE(a->StillLeader(a->leader_deadline()));
  EXPECT_EQ(a->epoch(), 1u);  // held, but not to be used
  ASSERT_TRUE(cluster->Resume(0).ok());
}

// A value in the bucket that is not ours: every member refuses it with an
// error naming the bucket, the revision and the field.
TEST_F(LeaseSingleNode, MalformedValueIsRefused) {
  auto a = OpenMember(Spec(*cluster_, "malformed", "a"));
  ASSERT_NE(a, nullptr);
  const std::uint64_t revision =
      PutRaw(*cluster_, "malformed", "ow-lease/1 x1 600 b");
  ASSERT_NE(revision, 0u);

  auto got = a->TryAcquire();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr(absl::StrCat("lease bucket orderwire_malformed_lease "
                                     "key leader revision ",
                                     revision,
                                     ": lease value: epoch 'x1' is not a "
                                     "decimal number")));
  EXPECT_EQ(a->epoch(), 0u);
}

TEST_F(LeaseSingleNode, BucketWithOtherReplicasIsRefused) {
  auto a = OpenMember(Spec(*cluster_, "replicas", "a"));
  ASSERT_NE(a, nullptr);
  auto three = LeaseMember::Open(Spec(*cluster_, "replicas", "b", 3));
  ASSERT_FALSE(three.ok());
  EXPECT_THAT(std::string(three.status().message()),
              HasSubstr("lease bucket orderwire_replicas_lease exists with 1 "
                        "replicas, expected 3"));
}

TEST(LeaseSpecCheck, TimingThatCannotKeepTheLeaseIsRefused) {
  LeaseSpec spec;
  spec.servers = "nats://127.0.0.1:1";
  spec.engine_name = "spec";
  spec.holder = "a";
  spec.duration = milliseconds(600);
  spec.safety_margin = milliseconds(150);
  spec.renew_interval = milliseconds(250);
  spec.request_timeout = milliseconds(200);  // 250 + 200 >= 600 - 150
  auto member = LeaseMember::Open(spec);
  ASSERT_FALSE(member.ok());
  EXPECT_THAT(std::string(member.status().message()),
              HasSubstr("must be positive and under duration 600 ms - safety "
                        "margin 150 ms"));
  spec.holder = "a b";
  member = LeaseMember::Open(spec);
  ASSERT_FALSE(member.ok());
  EXPECT_THAT(std::string(member.status().message()),
              HasSubstr("lease holder 'a b': character 2"));
}

TEST(LeaseValueText, RoundTrips) {
  auto text = EncodeLeaseValue({7, milliseconds(3000), "host-1:4242"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "ow-lease/1 7 3000 host-1:4242");
  auto value = ParseLeaseValue(*text);
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->epoch, 7u);
  EXPECT_EQ(value->duration, milliseconds(3000));
  EXPECT_EQ(value->holder, "host-1:4242");
  auto max = ParseLeaseValue("ow-lease/1 18446744073709551615 1 a");
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(max->epoch, 18446744073709551615u);
}

TEST(LeaseValueText, MalformedValuesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "starts with '', expected 'ow-lease/1'"},
      {"ow-lease/2 1 600 a", "starts with 'ow-lease/2'"},
      {"ow-lease/1 1 600", "3 space-separated fields, expected 4"},
      {"ow-lease/1 1 600 a b", "5 space-separated fields, expected 4"},
      {"ow-lease/1  1 600 a", "5 space-separated fields"},
      {"ow-lease/1 1 600 a ", "5 space-separated fields"},
      {"ow-lease/1 -1 600 a", "epoch '-1' is not a decimal number"},
      {"ow-lease/1 +1 600 a", "epoch '+1' is not a decimal number"},
      {"ow-lease/1 0 600 a", "epoch '0' is 0 or has a leading zero"},
      {"ow-lease/1 01 600 a", "epoch '01' is 0 or has a leading zero"},
      {"ow-lease/1 18446744073709551616 600 a",
       "epoch '18446744073709551616' does not fit in 64 bits"},
      {"ow-lease/1 1 6e2 a", "duration_ms '6e2' is not a decimal number"},
      {"ow-lease/1 1 0 a", "duration_ms '0' is 0"},
      {"ow-lease/1 1 3600001 a", "duration_ms 3600001 is over an hour"},
      {"ow-lease/1 1 600 a/b", "lease holder 'a/b': character 2"},
      {std::string("ow-lease/1 1 600 a\0", 19), "character 2"},
      {absl::StrCat("ow-lease/1 1 600 ", std::string(65, 'h')),
       "65 characters, expected 1 to 64"},
  };
  for (const auto& [text, want] : cases) {
    auto value = ParseLeaseValue(text);
    ASSERT_FALSE(value.ok()) << "'" << text << "' parsed";
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(value.status().message()),
                HasSubstr("lease value: "))
        << text;
    EXPECT_THAT(std::string(value.status().message()), HasSubstr(want)) << text;
  }
  EXPECT_FALSE(EncodeLeaseValue({0, milliseconds(600), "a"}).ok());
  EXPECT_FALSE(EncodeLeaseValue({1, milliseconds(0), "a"}).ok());
  EXPECT_FALSE(EncodeLeaseValue({1, milliseconds(600), ""}).ok());
}

// R3 bucket on three servers: first acquisition, a standby blocked while
// the holder renews, the takeover after D with epoch 2, and the old holder
// told it lost. Three servers share this machine's cores, so the lease and
// the request timeout are longer than on one node (with D = 2 s, renewals
// failed for a whole D once while other NATS tests ran beside it and b
// took the lease from a live renewer: 4 s leaves room for that).
TEST(LeaseThreeNodes, AcquireAndTakeoverR3) {
  auto cluster = StartNatsCluster(3);
  ASSERT_NE(cluster, nullptr);
  auto spec = [&](const std::string& holder) {
    LeaseSpec s = Spec(*cluster, "three", holder, 3);
    s.duration = milliseconds(4000);
    s.safety_margin = milliseconds(800);
    s.renew_interval = milliseconds(250);
    s.request_timeout = milliseconds(1500);
    return s;
  };
  auto a = OpenMember(spec("a"));
  auto b = OpenMember(spec("b"));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const milliseconds duration = a->spec().duration;
  // A new R3 bucket answers once its stream has a leader: retry, as a
  // member starting next to a fresh cluster does.
  absl::StatusOr<AcquireResult> got;
  const auto give_up = LeaseClock::now() + std::chrono::seconds(20);
  do {
    got = a->TryAcquire();
  } while (!got.ok() && LeaseClock::now() < give_up);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(got->epoch, 1u);
  {
    LeaseRenewer renewer(*a);
    auto held = b->Acquire(duration + duration / 2);
    ASSERT_TRUE(held.ok()) << held.status();
    EXPECT_EQ(held->outcome, AcquireOutcome::kHeld);
    EXPECT_EQ(held->holder, "a");
    renewer.Stop();
    EXPECT_GE(renewer.renewed(), 3u);
  }
  const LeaseClock::time_point last_renewal_sent = SentAt(*a);
  auto taken = b->Acquire(std::chrono::seconds(10));
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_EQ(taken->outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(taken->epoch, 2u);
  EXPECT_GE(SentAt(*b) - last_renewal_sent, duration);
  // A read served by a replica that has not applied the takeover yet makes
  // the renewal kFailed rather than kLost: ask again.
  RenewResult late;
  for (int i = 0; i < 20; ++i) {
    late = a->Renew();
    if (late.outcome != RenewOutcome::kFailed) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(late.outcome, RenewOutcome::kLost) << late.detail;
  EXPECT_FALSE(a->StillLeader(LeaseClock::now()));
}

}  // namespace
}  // namespace orderwire::replication

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  nats_CloseAndWait(5000);
  return result;
}
