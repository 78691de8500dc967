// The engine's report stream, pinned: for each workload, a 64-bit FNV-1a hash
// of every report frame, the owner of every report and the live orders left at
// the end, compared with a pinned value. Any change to what the engine decides,
// to a byte of a frame, to whom a report goes or to the book it leaves behind
// changes a hash. The wl1 stream also checks its published outcome counts.
//
// If a change to the engine is meant to change reports (a protocol change),
// these constants change with it, in the same commit, with PROTOCOL.md.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/messages.h"
#include "codec/testing/random_commands.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "tests/engine/scenario.h"

namespace orderwire::engine::testing {
namespace {

class Fnv1a {
 public:
  void Add(std::span<const std::byte> bytes) {
    for (const std::byte b : bytes) {
      hash_ = (hash_ ^ static_cast<std::uint64_t>(b)) * 0x100000001b3ULL;
    }
  }
  void Add(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ = (hash_ ^ ((value >> (8 * i)) & 0xFF)) * 0x100000001b3ULL;
    }
  }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

struct StreamResult {
  std::uint64_t reports_hash = 0;  // frames and owners, in emission order
  std::uint64_t book_hash = 0;     // ForEachLiveOrder at the end
  std::uint64_t reports = 0;
  std::uint64_t maker_fills = 0;
  std::uint64_t remainder_cancels = 0;  // IOC remainders (reason 4)
  std::uint64_t requested_cancels = 0;
  std::uint64_t rejects = 0;
};

// With `prefetch`, Engine::Prefetch is called for each next command before
// the current one executes, as a batching caller does: it must change
// nothing.
StreamResult RunStream(std::span<const codec::Command> commands,
                       std::span<const OwnerTag> owners = {},
                       bool prefetch = false) {
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports;
  StreamResult result;
  Fnv1a hash;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    reports.Clear();
    if (prefetch && i + 1 < commands.size()) {
      engine->Prefetch(commands[i + 1], owners.empty() ? 0 : owners[i + 1]);
    }
    (void)engine->Execute(commands[i], owners.empty() ? 0 : owners[i], reports);
    hash.Add(reports.frames());
    for (const Report& r : reports.reports()) {
      hash.Add(r.owner);
      ++result.reports;
      if (r.kind == codec::Kind::kFilled &&
          reports.Get<codec::Filled>(r).liquidity == codec::Liquidity::kMaker) {
        ++result.maker_fills;
      } else if (r.kind == codec::Kind::kCancelled) {
        const codec::CancelReason reason =
            reports.Get<codec::Cancelled>(r).reason;
        result.remainder_cancels +=
            reason == codec::CancelReason::kImmediateOrCancel;
        result.requested_cancels += reason == codec::CancelReason::kRequested;
      } else if (r.kind == codec::Kind::kRejected) {
        ++result.rejects;
      }
    }
  }
  result.reports_hash = hash.value();
  EXPECT_TRUE(engine->CheckInvariants().ok()) << engine->CheckInvariants();
  Fnv1a book;
  engine->ForEachLiveOrder([&](const OrderInfo& o) {
    book.Add(o.order_id.value());
    book.Add(o.account_id.value());
    book.Add(o.client_order_id.value());
    book.Add(o.instrument_id.value());
    book.Add(static_cast<std::uint64_t>(o.side));
    book.Add(static_cast<std::uint64_t>(o.time_in_force));
    book.Add(static_cast<std::uint64_t>(o.price.value()));
    book.Add(o.leaves_quantity.value());
    book.Add(o.owner);
  });
  book.Add(engine->next_order_id().value());
  book.Add(engine->next_match_id());
  result.book_hash = book.value();
  return result;
}

// A stream for the level structure: a mid that walks and jumps (swings of
// thousands of ticks), orders mostly near it but also thousands of ticks
// away (a deep book), some at the edges of the price band and anywhere in
// it, six accounts (self-trades), every time in force, market sweeps, and
// cancels and replaces of recent orders (reprices near and far).
std::vector<codec::Command> SwingsAndDepth(std::size_t count,
                                           std::uint64_t seed) {
  codec::testing::SplitMix64 rng(seed);
  std::vector<codec::Command> out;
  out.reserve(count);
  std::int64_t mid = 500'000;
  std::uint64_t next_id_guess = 1;
  std::uint64_t coid = 1;
  const auto price_near = [&](Side side) {
    const std::uint64_t u = rng.Below(100);
    std::int64_t offset;
    if (u < 70) {
      offset = static_cast<std::int64_t>(rng.Below(40)) - 5;
    } else if (u < 92) {
      offset = static_cast<std::int64_t>(rng.Below(20'000));
    } else if (u < 96) {
      return static_cast<std::int64_t>(1 + rng.Below(1'000'000'000));
    } else {
      return rng.Below(2) == 0 ? std::int64_t{1} : std::int64_t{1'000'000'000};
    }
    return std::clamp<std::int64_t>(side == kBuy ? mid - offset : mid + offset,
                                    1, 1'000'000'000);
  };
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t r = rng.Below(1000);
    if (r < 3) {
      mid += static_cast<std::int64_t>(rng.Below(8'000)) - 4'000;  // a swing
    } else {
      mid += static_cast<std::int64_t>(rng.Below(3)) - 1;
    }
    mid = std::clamp<std::int64_t>(mid, 10'000, 999'990'000);
    const std::uint64_t account = 1 + rng.Below(6);
    const auto instrument = static_cast<std::uint32_t>(1 + rng.Below(2));
    const Side side = rng.Below(2) == 0 ? kBuy : kSell;
    const std::uint64_t quantity =
        rng.Below(50) == 0 ? 2'000 + rng.Below(20'000) : 1 + rng.Below(200);
    const std::uint64_t k = rng.Below(100);
    const std::uint64_t recent =
        next_id_guess - rng.Below(std::min<std::uint64_t>(next_id_guess, 3000));
    if (k < 55) {
      static constexpr TimeInForce kTifs[] = {
          kGtc, kGtc, kGtc, kGtc, kGtc, kGtc, kIoc, kIoc, kFok, kPostOnly};
      // Drawn one statement at a time: the order of a call's arguments is
      // the compiler's choice (this is the order g++ picked when the hashes
      // were pinned).
      const std::int64_t price = price_near(side);
      const TimeInForce tif = kTifs[rng.Below(10)];
      out.push_back(
          Limit(account, coid++, instrument, side, tif, price, quantity));
      ++next_id_guess;
    } else if (k < 59) {
      out.push_back(Market(account, coid++, instrument, side, quantity));
      ++next_id_guess;
    } else if (k < 84) {
      out.push_back(CancelOrder(account, recent));
    } else if (k < 90) {
      out.push_back(CancelClient(
          account, coid - rng.Below(std::min<std::uint64_t>(coid, 500))));
    } else {
      const std::uint64_t new_quantity = 1 + rng.Below(300);
      const std::int64_t price = price_near(side);
      out.push_back(Replace(account, recent, coid++, price, new_quantity));
    }
  }
  return out;
}

TEST(ReportStream, Wl1MatchesItsPublishedOutcomeAndPinnedBytes) {
  const auto commands =
      workload::Generate(workload::Workload::kWl1, 1'000'000, 1);
  const StreamResult r = RunStream(commands);
  EXPECT_EQ(r.maker_fills, 533'786u);
  EXPECT_EQ(r.remainder_cancels, 36'195u);
  EXPECT_EQ(r.requested_cancels, 48'592u);
  EXPECT_EQ(r.rejects, 251'075u);
  EXPECT_EQ(r.reports_hash, 5219029411011776311ULL);
  EXPECT_EQ(r.book_hash, 1589869792959011755ULL);
}

TEST(ReportStream, MixedIsPinned) {
  const auto commands =
      workload::Generate(workload::Workload::kMixed, 1'000'000, 1);
  const StreamResult r = RunStream(commands);
  EXPECT_EQ(r.reports, 1355135u);
  EXPECT_EQ(r.reports_hash, 1983487638721600081ULL);
  EXPECT_EQ(r.book_hash, 16510655624190545375ULL);
}

// Three owners taking turns: NotOwner, per-owner client ids, owner routing.
TEST(ReportStream, MixedWithThreeOwnersIsPinned) {
  const auto commands =
      workload::Generate(workload::Workload::kMixed, 300'000, 2);
  std::vector<OwnerTag> owners(commands.size());
  for (std::size_t i = 0; i < owners.size(); ++i) {
    owners[i] = static_cast<OwnerTag>(i % 3);
  }
  const StreamResult r = RunStream(commands, owners);
  EXPECT_EQ(r.reports, 468896u);
  EXPECT_EQ(r.reports_hash, 17367163672650731137ULL);
  EXPECT_EQ(r.book_hash, 8733201273636341973ULL);
}

TEST(ReportStream, SwingsAndDeepBookArePinned) {
  const auto commands = SwingsAndDepth(400'000, 7);
  const StreamResult r = RunStream(commands);
  EXPECT_EQ(r.reports, 752026u);
  EXPECT_EQ(r.reports_hash, 4752053941754925583ULL);
  EXPECT_EQ(r.book_hash, 18310990079698449770ULL);
}

TEST(ReportStream, PrefetchingTheNextCommandChangesNothing) {
  const auto mixed = workload::Generate(workload::Workload::kMixed, 300'000, 2);
  std::vector<OwnerTag> owners(mixed.size());
  for (std::size_t i = 0; i < owners.size(); ++i) {
    owners[i] = static_cast<OwnerTag>(i % 3);
  }
  const StreamResult m = RunStream(mixed, owners, /*prefetch=*/true);
  EXPECT_EQ(m.reports_hash, 17367163672650731137ULL);
  EXPECT_EQ(m.book_hash, 8733201273636341973ULL);
  const StreamResult s =
      RunStream(SwingsAndDepth(400'000, 7), {}, /*prefetch=*/true);
  EXPECT_EQ(s.reports_hash, 4752053941754925583ULL);
  EXPECT_EQ(s.book_hash, 18310990079698449770ULL);
}

}  // namespace
}  // namespace orderwire::engine::testing
