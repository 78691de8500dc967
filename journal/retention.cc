// Retention policy; see retention.h.
#include "journal/retention.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace orderwire::journal {
namespace {

struct Unit {
  std::string_view name;
  RetentionPolicy::Kind kind;
  std::uint64_t factor;
};

constexpr std::uint64_t kSecond = 1'000'000'000;
constexpr Unit kUnits[] = {
    {"", RetentionPolicy::Kind::kSegments, 1},
    {"B", RetentionPolicy::Kind::kBytes, 1},
    {"KB", RetentionPolicy::Kind::kBytes, 1'000},
    {"MB", RetentionPolicy::Kind::kBytes, 1'000'000},
    {"GB", RetentionPolicy::Kind::kBytes, 1'000'000'000},
    {"TB", RetentionPolicy::Kind::kBytes, 1'000'000'000'000},
    {"KiB", RetentionPolicy::Kind::kBytes, std::uint64_t{1} << 10},
    {"MiB", RetentionPolicy::Kind::kBytes, std::uint64_t{1} << 20},
    {"GiB", RetentionPolicy::Kind::kBytes, std::uint64_t{1} << 30},
    {"TiB", RetentionPolicy::Kind::kBytes, std::uint64_t{1} << 40},
    {"s", RetentionPolicy::Kind::kDuration, kSecond},
    {"m", RetentionPolicy::Kind::kDuration, 60 * kSecond},
    {"h", RetentionPolicy::Kind::kDuration, 3600 * kSecond},
    {"d", RetentionPolicy::Kind::kDuration, 86400 * kSecond},
    {"w", RetentionPolicy::Kind::kDuration, std::uint64_t{7} * 86400 * kSecond},
};

}  // namespace

absl::StatusOr<RetentionPolicy> ParseRetention(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s': %s (expected a number of segments like 8, a size like 10GiB "
        "or 500MB, or a duration like 7d, 12h, 30m, 45s)",
        text, why));
  };
  std::uint64_t number = 0;
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc::result_out_of_range) return invalid("too large");
  if (ec != std::errc() || ptr == text.data()) {
    return invalid("it does not start with a number");
  }
  const std::string_view unit(
      ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
  for (const Unit& u : kUnits) {
    if (u.name != unit) continue;
    if (number == 0) return invalid("it must be at least 1");
    if (number > std::numeric_limits<std::uint64_t>::max() / u.factor) {
      return invalid("too large");
    }
    return RetentionPolicy{.kind = u.kind, .value = number * u.factor};
  }
  return invalid(absl::StrFormat("unknown unit '%s'", unit));
}

std::string DescribeRetention(const RetentionPolicy& policy) {
  switch (policy.kind) {
    case RetentionPolicy::Kind::kSegments:
      return absl::StrFormat("the newest %d segment%s", policy.value,
                             policy.value == 1 ? "" : "s");
    case RetentionPolicy::Kind::kBytes:
      return absl::StrFormat("the newest segments up to %d bytes",
                             policy.value);
    case RetentionPolicy::Kind::kDuration:
      return absl::StrFormat("segments of the last %d s",
                             policy.value / kSecond);
  }
  return "?";
}

std::uint64_t PruneBeforeIndex(std::span<const SegmentSummary> segments,
                               std::span<const std::uint64_t> snapshot_indexes,
                               const RetentionPolicy& policy,
                               std::uint64_t now_ns) noexcept {
  const std::size_t n = segments.size();
  if (n < 2 || snapshot_indexes.empty()) return 0;
  // Nothing after the newest snapshot may go: its records are the restart.
  const std::uint64_t limit =
      *std::max_element(snapshot_indexes.begin(), snapshot_indexes.end()) + 1;
  // The first segment inside the window (never past the last).
  std::size_t keep = 0;
  switch (policy.kind) {
    case RetentionPolicy::Kind::kSegments:
      keep = n > policy.value ? n - static_cast<std::size_t>(policy.value) : 0;
      break;
    case RetentionPolicy::Kind::kBytes: {
      keep = n - 1;
      std::uint64_t total = segments[n - 1].bytes;
      while (keep > 0 && total + segments[keep - 1].bytes >= total &&
             total + segments[keep - 1].bytes <= policy.value) {
        total += segments[keep - 1].bytes;
        --keep;
      }
      break;
    }
    case RetentionPolicy::Kind::kDuration:
      while (keep + 1 < n && segments[keep + 1].created_ns <= now_ns &&
             now_ns - segments[keep + 1].created_ns >= policy.value) {
        ++keep;
      }
      break;
  }
  // Back to a segment whose records before it are all <= the snapshot.
  while (keep > 0 && segments[keep].first_index > limit) --keep;
  return keep == 0 ? 0 : segments[keep].first_index;
}

}  // namespace orderwire::journal
