// The leadership lease: which member of an engine's cluster is the primary,
// and for which epoch. One JetStream key-value bucket per engine,
// `orderwire_<engine>_lease`, one key `leader`. A member takes the lease
// with a compare-and-set (create if absent, else update at the revision it
// read) and the holder keeps it by renewing with the same compare-and-set
// every few hundred milliseconds (LeaseRenewer runs that loop).
// docs/REPLICATION.md ("The leadership lease") has the timing argument in
// full; in short:
//
// - The value is the text `ow-lease/1 <epoch> <duration_ms> <holder>`
//   (EncodeLeaseValue, ParseLeaseValue; parsed strictly, a malformed value
//   is an error naming the field). `duration_ms` is the lease duration D
//   the holder promises to honour; no timestamp is written, because no
//   member ever compares another machine's clock with its own.
// - The holder (LeaseMember::Renew) counts D from the moment it SENT its
//   last successful renewal (or acquisition) and considers itself leader
//   only while `now < sent + D - safety_margin` on its own monotonic clock
//   (StillLeader), whether or not it can reach NATS.
// - A standby (LeaseMember::TryAcquire / Acquire) decides that the lease
//   expired only by seeing the key's revision unchanged for at least the
//   value's D on its own monotonic clock, counted from the moment it first
//   RECEIVED that revision. It then updates at that revision with epoch + 1:
//   if the holder renewed meanwhile, or another standby was faster, the
//   update fails and the result is kLostRace, not an error.
//
// The revision it first saw was written after the holder sent it, so the
// holder stops at least `safety_margin` before any standby can take over
// (given monotonic clocks that run at the same rate within the margin over
// D). What a lease cannot cover, a process paused between StillLeader and
// its next send, the journal stream's fence covers (Nats-Expected-Last-
// Sequence, replication/journal_publisher.h): the new primary's first
// publish moves the stream's last sequence, so the old one's next publish
// is refused with 10071.
//
// The key is read with kvStore_Get, which on an R3 bucket any replica may
// answer: a stale read can only delay a takeover or make one renewal
// kFailed instead of kLost, because every write is a compare-and-set.
//
// Thread-safety: StillLeader, epoch and leader_deadline may be called from
// any thread at any time; the other methods from one thread at a time.
#ifndef ORDERWIRE_REPLICATION_LEASE_H_
#define ORDERWIRE_REPLICATION_LEASE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::replication {

using LeaseClock = std::chrono::steady_clock;

// The decoded value of the `leader` key.
struct LeaseValue {
  std::uint64_t epoch = 0;  // 1 for the first holder, +1 per takeover
  std::chrono::milliseconds duration{};  // D, 1 ms to 1 hour
  std::string holder;                    // [A-Za-z0-9_.:-], 1 to 64 characters
};

// "ow-lease/1 <epoch> <duration_ms> <holder>": single spaces, decimal
// numbers without sign or leading zeros. The holder is checked first
// (ValidateLeaseHolder); a bad value is InvalidArgument.
absl::StatusOr<std::string> EncodeLeaseValue(const LeaseValue& value);
// The inverse, strictly: anything else (wrong prefix or version, missing or
// extra field, a number that is not decimal, overflows, has a leading zero
// or is 0, a duration over an hour, a bad holder) is InvalidArgument naming
// the field and what is wrong with it.
absl::StatusOr<LeaseValue> ParseLeaseValue(std::string_view text);
// OK when `holder` is 1 to 64 characters of [A-Za-z0-9_.:-].
absl::Status ValidateLeaseHolder(std::string_view holder);

std::string LeaseBucketName(std::string_view engine_name);
inline constexpr std::string_view kLeaseKey = "leader";

struct LeaseSpec {
  std::string servers;      // comma-separated nats:// URLs
  std::string engine_name;  // ValidateEngineName
  int replicas = 1;         // of the bucket: 1 or 3
  // This member's name, unique among the engine's members (host:pid, or a
  // configured member name). Two members with one name would each take the
  // other's renewal for their own.
  std::string holder;
  // D: how long a lease lives without renewal, as every standby counts it.
  std::chrono::milliseconds duration{3000};
  // The holder stops this long before D runs out (StillLeader).
  std::chrono::milliseconds safety_margin{500};
  // How often the holder should call Renew; it must fit, with one request
  // timeout, into D - safety_margin, so that one failed renewal does not
  // cost the leadership (checked by Open).
  std::chrono::milliseconds renew_interval{250};
  // Bounds each NATS request (connect, get, create, update).
  std::chrono::milliseconds request_timeout{1000};
  // How often Acquire reads the key while waiting for it to expire.
  std::chrono::milliseconds poll_interval{50};
  // Whether TryAcquire creates the key when it is absent (epoch 1). A
  // standby that takes over (cluster/cluster_member.h) sets false: it
  // replaces a primary that held the lease, and an engine whose lease was
  // never taken has none to replace (a primary started without --lease must
  // not find a standby serving beside it). Then an absent key is kHeld
  // with epoch 0 and no holder.
  bool create_if_absent = true;
  // Only for tests that interleave two members deterministically: called by
  // TryAcquire after it has read the key and decided to take the lease,
  // just before its compare-and-set.
  std::function<void()> before_compare_and_set_for_tests;
};

enum class AcquireOutcome {
  kAcquired,  // this member holds the lease now, with `epoch`
  kHeld,      // another holder's lease has not expired (yet) on our clock
  kLostRace,  // the compare-and-set failed: another member wrote first
};
std::string_view AcquireOutcomeName(AcquireOutcome outcome);

struct AcquireResult {
  AcquireOutcome outcome = AcquireOutcome::kHeld;
  std::uint64_t epoch = 0;     // kAcquired: ours; otherwise the holder's
  std::uint64_t revision = 0;  // the key's revision that was read or written
  std::string holder;          // the holder after this step
};

enum class RenewOutcome {
  kRenewed,  // renewed: leader until the new leader_deadline
  kLost,     // the key moved to another holder or epoch: leader no more
  kFailed,   // no answer (timeout, no connection): leader until the old
             // deadline; call Renew again
};
std::string_view RenewOutcomeName(RenewOutcome outcome);

struct RenewResult {
  RenewOutcome outcome = RenewOutcome::kFailed;
  // kFailed: why (the NATS error). kLost: who holds it now.
  std::string detail;
};

class LeaseMember {
 public:
  // Connects, creates the bucket (file storage, `replicas`, history 1) or
  // binds to the existing one, and checks the spec. An existing bucket with
  // another replica count is FailedPrecondition.
  static absl::StatusOr<std::unique_ptr<LeaseMember>> Open(LeaseSpec spec);

  LeaseMember(const LeaseMember&) = delete;
  LeaseMember& operator=(const LeaseMember&) = delete;
  ~LeaseMember();

  // One step, without waiting: reads the key once; takes the lease if it is
  // absent (epoch 1) or if its revision has stayed the same for the value's
  // duration since this member first saw it (epoch + 1); else kHeld. A
  // malformed value is FailedPrecondition naming the bucket, the revision
  // and the field. NATS failures are errors (the observation is kept, so
  // the next call continues it). If this member already holds the lease,
  // returns kAcquired with its epoch and changes nothing.
  absl::StatusOr<AcquireResult> TryAcquire();

  // TryAcquire every poll_interval until kAcquired or kLostRace, or until
  // `max_wait` has passed (then the last kHeld result). Errors end it.
  absl::StatusOr<AcquireResult> Acquire(std::chrono::milliseconds max_wait);

  // The holder's renewal: update at the last revision it wrote. kLost when
  // the key holds another epoch or holder (then StillLeader is false at
  // once); kFailed when NATS did not answer (StillLeader stays true until
  // the deadline of the last success). Not holding the lease: kLost.
  RenewResult Renew();

  // True while this member holds the lease and `now` is before
  // leader_deadline(): computed from the local monotonic clock alone.
  [[nodiscard]] bool StillLeader(LeaseClock::time_point now) const;
  // The send time of the last successful acquisition or renewal + D -
  // safety_margin; time_point::min() when not holding.
  [[nodiscard]] LeaseClock::time_point leader_deadline() const;
  // The epoch this member holds (0: none).
  [[nodiscard]] std::uint64_t epoch() const;
  [[nodiscard]] const LeaseSpec& spec() const { return spec_; }

 private:
  struct Nats;
  LeaseMember(LeaseSpec spec, std::unique_ptr<Nats> nats);
  // Compare-and-set of our value with `epoch` at revision `expected` (0:
  // create). `sent`: when the request left. true: written at `revision`.
  // false: the key is at another revision, `revision`, holding `found`.
  // An error: no answer, or a failure that left the key where it was.
  absl::StatusOr<bool> Write(std::uint64_t epoch, std::uint64_t expected,
                             LeaseClock::time_point* sent,
                             std::uint64_t* revision, LeaseValue* found);
  void Hold(std::uint64_t epoch, std::uint64_t revision,
            LeaseClock::time_point sent);
  void Drop();

  LeaseSpec spec_;
  std::unique_ptr<Nats> nats_;
  // Held lease: written by the owning thread, read anywhere.
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<LeaseClock::rep> deadline_{
      LeaseClock::time_point::min().time_since_epoch().count()};
  std::uint64_t held_revision_ = 0;
  // A standby's observation: the revision it saw and when it first did.
  std::uint64_t observed_revision_ = 0;
  LeaseClock::time_point observed_at_{};
  // An acquisition whose answer did not come (it may have landed): its
  // epoch and send time, so that finding it in the key later adopts it.
  std::uint64_t pending_epoch_ = 0;
  LeaseClock::time_point pending_sent_{};
};

// The holder's renewal loop: a thread that calls member.Renew() every
// spec().renew_interval (counted from the start of each call) from
// construction until Stop() or destruction, and ends by itself on the first
// kLost. While it runs, nobody else may call the member's TryAcquire,
// Acquire or Renew; StillLeader, epoch and leader_deadline stay callable
// from any thread (the service checks StillLeader before answering).
class LeaseRenewer {
 public:
  explicit LeaseRenewer(LeaseMember& member);
  LeaseRenewer(const LeaseRenewer&) = delete;
  LeaseRenewer& operator=(const LeaseRenewer&) = delete;
  ~LeaseRenewer();

  // Ends the loop and joins the thread (at most one request timeout).
  void Stop();
  [[nodiscard]] std::uint64_t renewed() const { return renewed_.load(); }
  [[nodiscard]] std::uint64_t failed() const { return failed_.load(); }
  // True once a renewal said kLost (the loop has ended).
  [[nodiscard]] bool lost() const { return lost_.load(); }

 private:
  void Run();

  LeaseMember& member_;
  std::atomic<std::uint64_t> renewed_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<bool> lost_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_LEASE_H_
