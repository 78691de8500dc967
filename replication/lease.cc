#include "replication/lease.h"

#include <nats/nats.h>

#include <charconv>
#include <limits>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "replication/internal/nats_handles.h"
#include "replication/journal_stream.h"

namespace orderwire::replication {
namespace {

using internal::NatsError;

// Debian's Abseil has its own string_view type: convert for StrCat.
absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

constexpr std::string_view kValuePrefix = "ow-lease/1";
constexpr std::size_t kMaxHolderLength = 64;
constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(1);

using internal::KvEntryHandle;
using internal::KvStoreHandle;

// A positive decimal number without sign or leading zero.
absl::StatusOr<std::uint64_t> ParseCount(std::string_view field,
                                         std::string_view text) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease value: ", View(field), " is empty"));
  }
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return absl::InvalidArgumentError(
          absl::StrCat("lease value: ", View(field), " '", View(text),
                       "' is not a decimal number"));
    }
  }
  if (text[0] == '0') {
    return absl::InvalidArgumentError(
        absl::StrCat("lease value: ", View(field), " '", View(text),
                     "' is 0 or has a leading zero"));
  }
  std::uint64_t n = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease value: ", View(field), " '", View(text),
                     "' does not fit in 64 bits"));
  }
  return n;
}

struct Entry {
  std::uint64_t revision = 0;
  LeaseValue value;
};

}  // namespace

absl::Status ValidateLeaseHolder(std::string_view holder) {
  if (holder.empty() || holder.size() > kMaxHolderLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease holder '", View(holder), "': ", holder.size(),
                     " characters, expected 1 to ", kMaxHolderLength));
  }
  for (std::size_t i = 0; i < holder.size(); ++i) {
    const char c = holder[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    c == '.' || c == ':';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("lease holder '", View(holder), "': character ", i + 1,
                       " is not one of A-Z a-z 0-9 _ - . :"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeLeaseValue(const LeaseValue& value) {
  if (absl::Status valid = ValidateLeaseHolder(value.holder); !valid.ok()) {
    return valid;
  }
  if (value.epoch == 0) {
    return absl::InvalidArgumentError(
        "lease value: epoch 0 (epochs start at 1)");
  }
  if (value.duration.count() <= 0 || value.duration > kMaxDuration) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease value: duration ", value.duration.count(),
                     " ms, expected 1 ms to 1 hour"));
  }
  return absl::StrCat(View(kValuePrefix), " ", value.epoch, " ",
                      value.duration.count(), " ", value.holder);
}

absl::StatusOr<LeaseValue> ParseLeaseValue(std::string_view text) {
  const std::vector<absl::string_view> fields = absl::StrSplit(View(text), ' ');
  if (fields[0] != View(kValuePrefix)) {
    return absl::InvalidArgumentError(absl::StrCat("lease value: starts with '",
                                                   fields[0], "', expected '",
                                                   View(kValuePrefix), "'"));
  }
  if (fields.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease value: ", fields.size(),
        " space-separated fields, expected 4 (ow-lease/1 EPOCH DURATION_MS "
        "HOLDER)"));
  }
  LeaseValue value;
  auto epoch = ParseCount("epoch", {fields[1].data(), fields[1].size()});
  if (!epoch.ok()) return epoch.status();
  value.epoch = *epoch;
  auto duration =
      ParseCount("duration_ms", {fields[2].data(), fields[2].size()});
  if (!duration.ok()) return duration.status();
  if (*duration > static_cast<std::uint64_t>(kMaxDuration.count())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease value: duration_ms ", *duration, " is over an hour"));
  }
  value.duration = std::chrono::milliseconds(*duration);
  const std::string_view holder(fields[3].data(), fields[3].size());
  if (absl::Status valid = ValidateLeaseHolder(holder); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease value: ", valid.message()));
  }
  value.holder = std::string(holder);
  return value;
}

std::string LeaseBucketName(std::string_view engine_name) {
  return absl::StrCat("orderwire_", View(engine_name), "_lease");
}

std::string_view AcquireOutcomeName(AcquireOutcome outcome) {
  switch (outcome) {
    case AcquireOutcome::kAcquired:
      return "acquired";
    case AcquireOutcome::kHeld:
      return "held by another member";
    case AcquireOutcome::kLostRace:
      return "lost the race";
  }
  return "?";
}

std::string_view RenewOutcomeName(RenewOutcome outcome) {
  switch (outcome) {
    case RenewOutcome::kRenewed:
      return "renewed";
    case RenewOutcome::kLost:
      return "lost";
    case RenewOutcome::kFailed:
      return "failed";
  }
  return "?";
}

struct LeaseMember::Nats {
  internal::ConnectionHandle conn;
  internal::JetStreamHandle js;
  KvStoreHandle kv;
  std::string bucket;

  // The key's entry; NotFound when there is none; FailedPrecondition when
  // its value is malformed.
  absl::StatusOr<Entry> Read() {
    kvEntry* raw = nullptr;
    const natsStatus s = kvStore_Get(&raw, kv.get(), kLeaseKey.data());
    KvEntryHandle entry(raw);
    if (s == NATS_NOT_FOUND) {
      return absl::NotFoundError(absl::StrCat("lease bucket ", bucket,
                                              " has no key ", View(kLeaseKey)));
    }
    if (s != NATS_OK) {
      return NatsError(s, absl::StrCat("read lease bucket ", bucket));
    }
    Entry out;
    out.revision = kvEntry_Revision(entry.get());
    const auto* bytes = static_cast<const char*>(kvEntry_Value(entry.get()));
    const int len = kvEntry_ValueLen(entry.get());
    auto value = ParseLeaseValue(
        std::string_view(bytes == nullptr ? "" : bytes,
                         bytes == nullptr ? 0 : static_cast<std::size_t>(len)));
    if (!value.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "lease bucket ", bucket, " key ", View(kLeaseKey), " revision ",
          out.revision, ": ", value.status().message()));
    }
    out.value = *std::move(value);
    return out;
  }
};

absl::StatusOr<std::unique_ptr<LeaseMember>> LeaseMember::Open(LeaseSpec spec) {
  if (absl::Status valid = ValidateEngineName(spec.engine_name); !valid.ok()) {
    return valid;
  }
  if (absl::Status valid = ValidateLeaseHolder(spec.holder); !valid.ok()) {
    return valid;
  }
  if (spec.replicas != 1 && spec.replicas != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease bucket replicas: ", spec.replicas, ", expected 1 or 3"));
  }
  if (spec.duration.count() <= 0 || spec.duration > kMaxDuration) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease duration ", spec.duration.count(),
                     " ms, expected 1 ms to 1 hour"));
  }
  if (spec.safety_margin.count() <= 0 || spec.renew_interval.count() <= 0 ||
      spec.request_timeout.count() <= 0 || spec.poll_interval.count() <= 0 ||
      spec.renew_interval + spec.request_timeout >=
          spec.duration - spec.safety_margin) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease timing: renew interval ", spec.renew_interval.count(),
        " ms + request timeout ", spec.request_timeout.count(),
        " ms must be positive and under duration ", spec.duration.count(),
        " ms - safety margin ", spec.safety_margin.count(), " ms"));
  }
  auto nats = std::make_unique<Nats>();
  nats->bucket = LeaseBucketName(spec.engine_name);
  auto conn =
      internal::Connect(spec.servers, spec.request_timeout, /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  nats->conn = *std::move(conn);
  auto js = internal::JetStream(nats->conn.get(), spec.request_timeout);
  if (!js.ok()) return js.status();
  nats->js = *std::move(js);

  // A bucket is the stream KV_<bucket>: look at its replica count first.
  const std::string stream = absl::StrCat("KV_", nats->bucket);
  jsStreamInfo* raw_info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&raw_info, nats->js.get(), stream.c_str(),
                                  nullptr, &jerr);
  internal::StreamInfoHandle info(raw_info);
  kvStore* raw_kv = nullptr;
  if (s == NATS_OK) {
    const int replicas =
        info->Config != nullptr ? static_cast<int>(info->Config->Replicas) : 0;
    if (replicas != spec.replicas) {
      return absl::FailedPreconditionError(
          absl::StrCat("lease bucket ", nats->bucket, " exists with ", replicas,
                       " replicas, expected ", spec.replicas));
    }
    s = js_KeyValue(&raw_kv, nats->js.get(), nats->bucket.c_str());
  } else if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
    kvConfig config;
    s = kvConfig_Init(&config);
    config.Bucket = nats->bucket.c_str();
    config.History = 1;
    config.StorageType = js_FileStorage;
    config.Replicas = spec.replicas;
    if (s == NATS_OK) s = js_CreateKeyValue(&raw_kv, nats->js.get(), &config);
    if (s != NATS_OK) {
      // Another member may have created it in the meantime.
      s = js_KeyValue(&raw_kv, nats->js.get(), nats->bucket.c_str());
    }
  } else {
    return NatsError(s, absl::StrCat("look up lease bucket ", nats->bucket),
                     static_cast<int>(jerr));
  }
  nats->kv.reset(raw_kv);
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("open lease bucket ", nats->bucket));
  }
  return std::unique_ptr<LeaseMember>(
      new LeaseMember(std::move(spec), std::move(nats)));
}

LeaseMember::LeaseMember(LeaseSpec spec, std::unique_ptr<Nats> nats)
    : spec_(std::move(spec)), nats_(std::move(nats)) {}

LeaseMember::~LeaseMember() = default;

bool LeaseMember::StillLeader(LeaseClock::time_point now) const {
  return epoch_.load(std::memory_order_acquire) != 0 &&
         now.time_since_epoch().count() <
             deadline_.load(std::memory_order_acquire);
}

LeaseClock::time_point LeaseMember::leader_deadline() const {
  return LeaseClock::time_point(
      LeaseClock::duration(deadline_.load(std::memory_order_acquire)));
}

std::uint64_t LeaseMember::epoch() const {
  return epoch_.load(std::memory_order_acquire);
}

void LeaseMember::Hold(std::uint64_t epoch, std::uint64_t revision,
                       LeaseClock::time_point sent) {
  held_revision_ = revision;
  pending_epoch_ = 0;
  const LeaseClock::time_point deadline =
      sent + spec_.duration - spec_.safety_margin;
  deadline_.store(deadline.time_since_epoch().count(),
                  std::memory_order_release);
  epoch_.store(epoch, std::memory_order_release);
}

void LeaseMember::Drop() {
  epoch_.store(0, std::memory_order_release);
  deadline_.store(LeaseClock::time_point::min().time_since_epoch().count(),
                  std::memory_order_release);
  held_revision_ = 0;
}

absl::StatusOr<bool> LeaseMember::Write(std::uint64_t epoch,
                                        std::uint64_t expected,
                                        LeaseClock::time_point* sent,
                                        std::uint64_t* revision,
                                        LeaseValue* found) {
  auto text = EncodeLeaseValue({epoch, spec_.duration, spec_.holder});
  if (!text.ok()) return text.status();
  // The send time, taken before the request leaves: the holder's deadline
  // counts from here, which is before the server writes the revision and so
  // before any standby can first see it.
  *sent = LeaseClock::now();
  const int len = static_cast<int>(text->size());
  const natsStatus s =
      expected == 0
          ? kvStore_Create(revision, nats_->kv.get(), kLeaseKey.data(),
                           text->data(), len)
          : kvStore_Update(revision, nats_->kv.get(), kLeaseKey.data(),
                           text->data(), len, expected);
  if (s == NATS_OK) return true;
  // The compare-and-set failed, or the request did: tell them apart by
  // reading the key. Another revision than the one we expected means
  // someone wrote first (possibly we ourselves, if an answer was lost: the
  // caller looks at `found`).
  const absl::Status write_error = NatsError(
      s, absl::StrCat(expected == 0 ? "create" : "update", " lease key in ",
                      nats_->bucket, " at revision ", expected));
  auto now = nats_->Read();
  if (now.ok()) {
    if (now->revision == expected) return write_error;
    *revision = now->revision;
    *found = std::move(now->value);
    return false;
  }
  if (now.status().code() != absl::StatusCode::kNotFound) return now.status();
  return write_error;
}

absl::StatusOr<AcquireResult> LeaseMember::TryAcquire() {
  AcquireResult result;
  const std::uint64_t held = epoch();
  if (held != 0) {
    result.outcome = AcquireOutcome::kAcquired;
    result.epoch = held;
    result.revision = held_revision_;
    result.holder = spec_.holder;
    return result;
  }
  auto current = nats_->Read();
  const LeaseClock::time_point received = LeaseClock::now();
  std::uint64_t next_epoch = 1;
  std::uint64_t expected = 0;
  if (current.ok()) {
    result.epoch = current->value.epoch;
    result.revision = current->revision;
    result.holder = current->value.holder;
    if (pending_epoch_ != 0 && current->value.epoch == pending_epoch_ &&
        current->value.holder == spec_.holder) {
      // Our own acquisition whose answer was lost: it landed.
      Hold(pending_epoch_, current->revision, pending_sent_);
      result.outcome = AcquireOutcome::kAcquired;
      return result;
    }
    if (current->revision != observed_revision_) {
      // A revision we had not seen: its D starts now, on our clock.
      observed_revision_ = current->revision;
      observed_at_ = received;
      result.outcome = AcquireOutcome::kHeld;
      return result;
    }
    if (received - observed_at_ < current->value.duration) {
      result.outcome = AcquireOutcome::kHeld;
      return result;
    }
    next_epoch = current->value.epoch + 1;
    expected = current->revision;
  } else if (current.status().code() != absl::StatusCode::kNotFound) {
    return current.status();
  } else if (!spec_.create_if_absent) {
    result.outcome = AcquireOutcome::kHeld;
    return result;
  }
  if (spec_.before_compare_and_set_for_tests) {
    spec_.before_compare_and_set_for_tests();
  }
  LeaseClock::time_point sent;
  std::uint64_t revision = 0;
  LeaseValue found;
  auto written = Write(next_epoch, expected, &sent, &revision, &found);
  if (!written.ok()) {
    if (pending_epoch_ != next_epoch) {
      pending_epoch_ = next_epoch;
      pending_sent_ = sent;
    }
    return written.status();
  }
  if (!*written) {
    if (found.epoch == next_epoch && found.holder == spec_.holder) {
      // Our own acquisition landed though its answer was an error: count
      // from the earliest send that could have written it.
      if (pending_epoch_ == next_epoch) sent = pending_sent_;
    } else {
      result.outcome = AcquireOutcome::kLostRace;
      result.epoch = found.epoch;
      result.revision = revision;
      result.holder = found.holder;
      return result;
    }
  }
  Hold(next_epoch, revision, sent);
  result.outcome = AcquireOutcome::kAcquired;
  result.epoch = next_epoch;
  result.revision = revision;
  result.holder = spec_.holder;
  return result;
}

absl::StatusOr<AcquireResult> LeaseMember::Acquire(
    std::chrono::milliseconds max_wait) {
  const LeaseClock::time_point until = LeaseClock::now() + max_wait;
  while (true) {
    auto step = TryAcquire();
    if (!step.ok() || step->outcome != AcquireOutcome::kHeld ||
        LeaseClock::now() >= until) {
      return step;
    }
    std::this_thread::sleep_for(spec_.poll_interval);
  }
}

RenewResult LeaseMember::Renew() {
  RenewResult result;
  const std::uint64_t held = epoch();
  if (held == 0) {
    result.outcome = RenewOutcome::kLost;
    result.detail = "this member does not hold the lease";
    return result;
  }
  // At most twice: a second time when the key holds our own earlier
  // renewal whose answer was lost.
  for (int attempt = 0; attempt < 2; ++attempt) {
    LeaseClock::time_point sent;
    std::uint64_t revision = 0;
    LeaseValue found;
    auto written = Write(held, held_revision_, &sent, &revision, &found);
    if (!written.ok()) {
      result.outcome = RenewOutcome::kFailed;
      result.detail = std::string(written.status().message());
      return result;
    }
    if (*written) {
      Hold(held, revision, sent);
      result.outcome = RenewOutcome::kRenewed;
      return result;
    }
    if (found.epoch != held || found.holder != spec_.holder) {
      Drop();
      result.outcome = RenewOutcome::kLost;
      result.detail = absl::StrCat(
          "lost the lease: ", found.holder, " holds epoch ", found.epoch,
          " at revision ", revision, " (this member held epoch ", held, ")");
      return result;
    }
    // Our own value at a newer revision: an earlier renewal landed after
    // its answer was lost. Which send wrote it is unknown, so the deadline
    // stays; renew again at that revision.
    held_revision_ = revision;
  }
  result.outcome = RenewOutcome::kFailed;
  result.detail = "the lease key kept moving under our own value";
  return result;
}

LeaseRenewer::LeaseRenewer(LeaseMember& member)
    : member_(member), thread_([this] { Run(); }) {}

LeaseRenewer::~LeaseRenewer() { Stop(); }

void LeaseRenewer::Stop() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseRenewer::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    const LeaseClock::time_point next =
        LeaseClock::now() + member_.spec().renew_interval;
    lock.unlock();
    const RenewResult result = member_.Renew();
    lock.lock();
    if (result.outcome == RenewOutcome::kRenewed) {
      renewed_.fetch_add(1);
    } else if (result.outcome == RenewOutcome::kFailed) {
      failed_.fetch_add(1);
    } else {
      lost_.store(true);
      return;
    }
    wake_.wait_until(lock, next, [this] { return stop_; });
  }
}

}  // namespace orderwire::replication
