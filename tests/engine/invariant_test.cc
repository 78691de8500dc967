// Long random streams: the engine's invariants after every command, checked
// against a shadow model built only from the reports; and determinism.
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "codec/command.h"
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

using codec::testing::SplitMix64;

// A chaotic stream: few accounts (many self-trades), two instruments, a
// narrow price band (many crossings and deep sweeps), every time in force,
// cancels and replaces of real, finished, foreign and made-up orders, and a
// sprinkle of invalid fields. With `owners` > 1, each command also comes from
// one of that many owners (sessions), independently of its account, so
// accounts are shared between owners and owners between accounts: orders of
// other sessions of the same account, and client order ids held by several
// sessions at once. With one owner, every command is owner 0 and the stream
// is the one it always was. With `mass_cancel_per_mille` > 0, that many
// commands in 1,000 are a MassCancel of a random scope and side, a Goodbye
// (one in four of them), which closes its owner's session with
// cancel-on-disconnect when its request id is odd (CancelsOnClose), or an
// OrderStatusRequest (one in four of the rest).
// Whether the chaos stream's Goodbye `command` closes with
// cancel-on-disconnect (the state machine reads it from the record).
bool CancelsOnClose(const codec::Command& command) {
  return command.client_order_id.value() % 2 == 1;
}

class ChaosStream {
 public:
  explicit ChaosStream(std::uint64_t seed, std::uint32_t owners = 1,
                       std::uint64_t mass_cancel_per_mille = 0)
      : rng_(seed),
        owners_(owners),
        mass_cancel_per_mille_(mass_cancel_per_mille) {}

  // The owner of the command last returned by Next().
  [[nodiscard]] OwnerTag owner() const { return owner_; }

  codec::Command Next() {
    owner_ = owners_ > 1 ? static_cast<OwnerTag>(rng_.Below(owners_)) : 0;
    const std::uint64_t account = 1 + rng_.Below(4);
    const auto instrument = static_cast<std::uint32_t>(1 + rng_.Below(2));
    const Side side = rng_.Below(2) == 0 ? kBuy : kSell;
    const auto price = static_cast<std::int64_t>(95 + rng_.Below(11));
    const std::uint64_t quantity = 1 + rng_.Below(30);
    const std::uint64_t coid = 1 + rng_.Below(40);  // collisions on purpose
    const std::uint64_t order_id = 1 + rng_.Below(next_order_id_guess_ + 2);
    const std::uint64_t u = rng_.Below(100);
    codec::Command c;
    if (mass_cancel_per_mille_ > 0 &&
        rng_.Below(1000) < mass_cancel_per_mille_) {
      static constexpr codec::MassCancelSide kSides[] = {
          codec::MassCancelSide::kBuy, codec::MassCancelSide::kSell,
          codec::MassCancelSide::kBoth};
      if (rng_.Below(4) == 0) return Goodbye(account, rng_.Next());
      if (rng_.Below(3) == 0) {
        return StatusOf(account, rng_.Below(2) == 0 ? order_id : 0, coid);
      }
      return MassCancel(account, rng_.Next(),
                        rng_.Below(3) == 0 ? 0 : instrument,
                        kSides[rng_.Below(3)]);
    }
    if (u < 45) {
      static constexpr TimeInForce kTifs[] = {kGtc, kGtc, kGtc,
                                              kIoc, kFok, kPostOnly};
      c = Limit(account, coid, instrument, side, kTifs[rng_.Below(6)], price,
                quantity);
      ++next_order_id_guess_;
    } else if (u < 50) {
      c = Market(account, coid, instrument, side, quantity * 3);
      ++next_order_id_guess_;
    } else if (u < 70) {
      c = CancelOrder(account, order_id);
    } else if (u < 80) {
      c = CancelClient(account, coid);
    } else {
      c = Replace(account, order_id, coid, price, quantity);
    }
    // Now and then, an invalid field.
    if (rng_.Below(50) == 0) {
      switch (rng_.Below(5)) {
        case 0:
          c.instrument_id = codec::InstrumentId(0);
          break;
        case 1:
          c.side = static_cast<Side>(3);
          break;
        case 2:
          c.time_in_force = static_cast<TimeInForce>(0);
          break;
        case 3:
          c.price = codec::Price(0);
          break;
        default:
          c.quantity = codec::Quantity(0);
          break;
      }
    }
    return c;
  }

 private:
  SplitMix64 rng_;
  std::uint32_t owners_;
  std::uint64_t mass_cancel_per_mille_;
  OwnerTag owner_ = 0;
  std::uint64_t next_order_id_guess_ = 1;
};

// What the reports say about each live order.
struct Shadow {
  std::uint64_t account_id;
  OwnerTag owner;
  std::uint64_t client_order_id;
  std::uint32_t instrument_id;
  Side side;
  std::int64_t price;
  std::uint64_t leaves;
  std::uint64_t executed = 0;  // all its fills, across replaces
};

// Applies `reports` to `live` and checks each report against it: quantities
// are conserved (every fill and cancel takes exactly what was left), each
// match pairs a maker and a taker of different accounts at one price, and
// ids count up. And the ownership rules: each report goes to the owner of the
// order it concerns (a maker's Filled and a SelfTrade cancel of a resting
// order to the resting order's owner, every other report to the command's);
// a cancel or replace of a live order of another account or owner is
// NotOwner; a client order id is a duplicate exactly when the command's owner
// holds a live order of the account with it; CancelByClient cancels exactly
// the owner's own order of (account, client_order_id).
class ShadowBook {
 public:
  void Apply(const codec::Command& command, OwnerTag owner,
             const ReportBuffer& reports) {
    CheckOwnership(command, owner, reports);
    if (::testing::Test::HasFatalFailure()) return;
    Incoming taker;
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const Report& r = reports[i];
      switch (r.kind) {
        case codec::Kind::kAccepted: {
          const codec::Accepted a = reports.Get<codec::Accepted>(r);
          ASSERT_EQ(a.order_id, next_order_id_++);
          ASSERT_EQ(r.owner, owner);
          taker.id = a.order_id;
          taker.order =
              Shadow{a.account_id, owner,   a.client_order_id, a.instrument_id,
                     a.side,       a.price, a.quantity,        0};
          taker.rests = a.time_in_force == kGtc || a.time_in_force == kPostOnly;
          accepted_quantity_ += a.quantity;
          break;
        }
        case codec::Kind::kRejected:
          ASSERT_EQ(reports.size(), 1u) << "a rejected command reports once";
          ASSERT_EQ(reports.Get<codec::Rejected>(r).command_kind, command.kind);
          ASSERT_EQ(r.owner, owner);
          break;
        case codec::Kind::kFilled:
          ASSERT_NO_FATAL_FAILURE(ApplyMatch(reports, i, owner, taker));
          ++i;  // the taker's Filled too
          break;
        case codec::Kind::kCancelled:
          ASSERT_NO_FATAL_FAILURE(
              ApplyCancelled(command, owner, reports, r, taker));
          break;
        case codec::Kind::kReplaced:
          ASSERT_NO_FATAL_FAILURE(ApplyReplaced(owner, reports, i));
          break;
        case codec::Kind::kOrderStatus:
          ASSERT_EQ(command.kind, codec::Kind::kOrderStatusRequest);
          ASSERT_EQ(reports.size(), 1u);
          ASSERT_EQ(r.owner, owner);
          break;
        case codec::Kind::kSessionClosed:
          ASSERT_EQ(command.kind, codec::Kind::kGoodbye);
          ASSERT_EQ(i + 1, reports.size()) << "SessionClosed comes last";
          ASSERT_EQ(r.owner, owner);
          ASSERT_EQ(reports.Get<codec::SessionClosed>(r).cancelled_orders,
                    reports.size() - 1);
          break;
        case codec::Kind::kMassCancelDone:
          ASSERT_EQ(command.kind, codec::Kind::kMassCancel);
          ASSERT_EQ(i + 1, reports.size()) << "MassCancelDone comes last";
          ASSERT_EQ(r.owner, owner);
          ASSERT_EQ(reports.Get<codec::MassCancelDone>(r).cancelled_orders,
                    reports.size() - 1);
          break;
        default:
          FAIL() << "unexpected report kind";
      }
    }
    if (taker.id != 0 && taker.rests && taker.order.leaves > 0) {
      live_[taker.id] = taker.order;
    }
    if (replaced_id_ != 0) {
      if (replaced_.leaves > 0) live_[replaced_id_] = replaced_;
      replaced_id_ = 0;
    }
    // Conservation: every lot accepted is filled, cancelled or resting.
    std::uint64_t resting = 0;
    for (const auto& [id, order] : live_) resting += order.leaves;
    ASSERT_EQ(accepted_quantity_,
              filled_quantity_ + cancelled_quantity_ + resting);
  }

  // The ownership rules, decided from the live orders before `command`.
  void CheckOwnership(const codec::Command& command, OwnerTag owner,
                      const ReportBuffer& reports) const {
    ASSERT_GT(reports.size(), 0u);
    const Report& first = reports[0];
    const auto rejected_for = [&](codec::RejectReason reason) {
      return first.kind == codec::Kind::kRejected &&
             reports.Get<codec::Rejected>(first).reason == reason;
    };
    // The live order of (account, owner, client_order_id), if any.
    const auto own_by_client = [&](std::uint64_t client_order_id) {
      std::uint64_t found = 0;
      for (const auto& [id, order] : live_) {
        if (order.account_id == command.account_id.value() &&
            order.owner == owner && order.client_order_id == client_order_id) {
          EXPECT_EQ(found, 0u) << "two live orders share a client key";
          found = id;
        }
      }
      return found;
    };
    switch (command.kind) {
      case codec::Kind::kNewLimit:
      case codec::Kind::kNewMarket:
        if (first.kind == codec::Kind::kAccepted) {
          ASSERT_EQ(own_by_client(command.client_order_id.value()), 0u)
              << "accepted although the owner holds its client order id";
        } else if (rejected_for(codec::RejectReason::kDuplicateClientOrderId)) {
          ASSERT_NE(own_by_client(command.client_order_id.value()), 0u)
              << "duplicate although the owner does not hold the id";
        }
        break;
      case codec::Kind::kCancelByOrder:
      case codec::Kind::kReplace: {
        const auto it = live_.find(command.order_id.value());
        if (it == live_.end()) {
          ASSERT_TRUE(rejected_for(codec::RejectReason::kUnknownOrder));
        } else if (it->second.account_id != command.account_id.value() ||
                   it->second.owner != owner) {
          ASSERT_TRUE(rejected_for(codec::RejectReason::kNotOwner))
              << "order " << command.order_id.value() << " of account "
              << it->second.account_id << " owner " << it->second.owner;
        } else {
          ASSERT_FALSE(rejected_for(codec::RejectReason::kNotOwner));
        }
        if (command.kind == codec::Kind::kReplace && it != live_.end() &&
            command.client_order_id.value() != it->second.client_order_id &&
            first.kind != codec::Kind::kRejected) {
          ASSERT_EQ(own_by_client(command.client_order_id.value()), 0u)
              << "replaced to a client order id the owner holds";
        }
        if (rejected_for(codec::RejectReason::kDuplicateClientOrderId)) {
          ASSERT_NE(own_by_client(command.client_order_id.value()), 0u);
        }
        break;
      }
      case codec::Kind::kMassCancel:
        ASSERT_NO_FATAL_FAILURE(CheckMassCancel(command, owner, reports));
        break;
      case codec::Kind::kGoodbye:
        ASSERT_NO_FATAL_FAILURE(CheckClose(command, owner, reports));
        break;
      case codec::Kind::kOrderStatusRequest: {
        // By id, or the owner's client order id (docs/CONTROLS.md).
        const std::uint64_t id =
            command.order_id.value() != 0
                ? (live_.contains(command.order_id.value())
                       ? command.order_id.value()
                       : 0)
                : own_by_client(command.client_order_id.value());
        if (id == 0) {
          ASSERT_EQ(first.kind, codec::Kind::kOrderStatus);
          const codec::OrderStatus none =
              reports.Get<codec::OrderStatus>(first);
          ASSERT_EQ(none.state, codec::OrderState::kNotLive);
          ASSERT_EQ(none.order_id, command.order_id.value());
          ASSERT_EQ(none.account_id, command.account_id.value());
          ASSERT_EQ(none.client_order_id, command.client_order_id.value());
          ASSERT_EQ(none.instrument_id + none.leaves_quantity +
                        none.executed_quantity,
                    0u);
          ASSERT_EQ(none.price, 0);
          break;
        }
        const Shadow& order = live_.at(id);
        if (order.owner != owner ||
            order.account_id != command.account_id.value()) {
          ASSERT_TRUE(rejected_for(codec::RejectReason::kNotOwner));
          break;
        }
        ASSERT_EQ(first.kind, codec::Kind::kOrderStatus);
        const codec::OrderStatus status =
            reports.Get<codec::OrderStatus>(first);
        ASSERT_EQ(status.state, codec::OrderState::kLive);
        ASSERT_EQ(status.order_id, id);
        ASSERT_EQ(status.leaves_quantity, order.leaves);
        ASSERT_EQ(status.price, order.price);
        ASSERT_EQ(status.executed_quantity, order.executed);
        ASSERT_EQ(status.account_id, order.account_id);
        ASSERT_EQ(status.client_order_id, order.client_order_id);
        ASSERT_EQ(status.instrument_id, order.instrument_id);
        ASSERT_EQ(status.side, order.side);
        break;
      }
      case codec::Kind::kCancelByClient: {
        const std::uint64_t own =
            own_by_client(command.client_order_id.value());
        if (own == 0) {
          ASSERT_TRUE(rejected_for(codec::RejectReason::kUnknownOrder));
        } else {
          ASSERT_EQ(first.kind, codec::Kind::kCancelled);
          ASSERT_EQ(reports.Get<codec::Cancelled>(first).order_id, own);
        }
        break;
      }
      default:
        break;
    }
  }

  // A valid MassCancel cancels exactly the owner's live orders of the
  // account in its scope and side, in id order (docs/CONTROLS.md).
  void CheckMassCancel(const codec::Command& command, OwnerTag owner,
                       const ReportBuffer& reports) const {
    if (reports[0].kind == codec::Kind::kRejected) return;
    const auto side = static_cast<codec::MassCancelSide>(command.side);
    std::vector<std::uint64_t> expected;  // live_ is ordered by id
    for (const auto& [id, order] : live_) {
      if (order.owner == owner &&
          order.account_id == command.account_id.value() &&
          (command.instrument_id.value() == 0 ||
           order.instrument_id == command.instrument_id.value()) &&
          (side == codec::MassCancelSide::kBoth ||
           static_cast<int>(order.side) == static_cast<int>(side))) {
        expected.push_back(id);
      }
    }
    ASSERT_EQ(reports.size(), expected.size() + 1);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(reports[i].kind, codec::Kind::kCancelled);
      const codec::Cancelled c = reports.Get<codec::Cancelled>(reports[i]);
      ASSERT_EQ(c.order_id, expected[i]);
      ASSERT_EQ(c.reason, codec::CancelReason::kMassCancel);
    }
  }

  // A Goodbye with cancel-on-disconnect cancels every live order of the
  // owner, any account, in id order; without, none (docs/CONTROLS.md).
  void CheckClose(const codec::Command& command, OwnerTag owner,
                  const ReportBuffer& reports) const {
    std::vector<std::uint64_t> expected;  // live_ is ordered by id
    for (const auto& [id, order] : live_) {
      if (CancelsOnClose(command) && order.owner == owner) {
        expected.push_back(id);
      }
    }
    ASSERT_EQ(reports.size(), expected.size() + 1);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const codec::Cancelled c = reports.Get<codec::Cancelled>(reports[i]);
      ASSERT_EQ(c.order_id, expected[i]);
      ASSERT_EQ(c.reason, codec::CancelReason::kCancelOnDisconnect);
    }
  }

  // The engine holds exactly the shadow's live orders.
  void Compare(const Engine& engine) const {
    ASSERT_EQ(engine.live_orders(), live_.size());
    for (const auto& [id, order] : live_) {
      const auto found = engine.FindOrder(codec::OrderId(id));
      ASSERT_TRUE(found.has_value()) << "order " << id;
      ASSERT_EQ(found->leaves_quantity.value(), order.leaves) << "order " << id;
      ASSERT_EQ(found->price.value(), order.price);
      ASSERT_EQ(found->side, order.side);
      ASSERT_EQ(found->instrument_id.value(), order.instrument_id);
      ASSERT_EQ(found->owner, order.owner);
      const auto by_client = engine.FindOrderByClient(
          codec::AccountId(order.account_id), order.owner,
          codec::ClientOrderId(order.client_order_id));
      ASSERT_TRUE(by_client.has_value());
      ASSERT_EQ(by_client->order_id.value(), id);
    }
  }

 private:
  // The incoming order of the command being applied (not live until it
  // rests).
  struct Incoming {
    std::uint64_t id = 0;
    Shadow order{};
    bool rests = false;
  };

  // The match whose maker's Filled is reports[i] and taker's reports[i + 1].
  void ApplyMatch(const ReportBuffer& reports, std::size_t i, OwnerTag owner,
                  Incoming& taker) {
    const Report& r = reports[i];
    const codec::Filled f = reports.Get<codec::Filled>(r);
    ASSERT_EQ(f.liquidity, codec::Liquidity::kMaker);
    ASSERT_LT(i + 1, reports.size());
    ASSERT_EQ(reports[i + 1].kind, codec::Kind::kFilled);
    const codec::Filled t = reports.Get<codec::Filled>(reports[i + 1]);
    ASSERT_EQ(t.liquidity, codec::Liquidity::kTaker);
    ASSERT_EQ(f.match_id, next_match_id_++);
    ASSERT_EQ(t.match_id, f.match_id);
    ASSERT_EQ(t.price, f.price);
    ASSERT_EQ(t.quantity, f.quantity);
    ASSERT_NE(t.account_id, f.account_id) << "self-trade";
    ASSERT_NE(t.side, f.side);
    ASSERT_GT(f.quantity, 0u);
    auto maker = live_.find(f.order_id);
    ASSERT_NE(maker, live_.end()) << "maker " << f.order_id;
    ASSERT_EQ(r.owner, maker->second.owner) << "maker's Filled";
    ASSERT_EQ(reports[i + 1].owner, owner) << "taker's Filled";
    ASSERT_EQ(maker->second.price, f.price);
    ASSERT_EQ(maker->second.leaves, f.leaves_quantity + f.quantity);
    maker->second.leaves = f.leaves_quantity;
    maker->second.executed += f.quantity;
    if (f.leaves_quantity == 0) live_.erase(maker);
    // The taker: the incoming order, or a replaced resting one.
    if (t.order_id == taker.id) {
      ASSERT_EQ(taker.order.leaves, t.leaves_quantity + t.quantity);
      taker.order.leaves = t.leaves_quantity;
      taker.order.executed += t.quantity;
    } else {
      ASSERT_EQ(replaced_id_, t.order_id);
      ASSERT_EQ(replaced_.leaves, t.leaves_quantity + t.quantity);
      replaced_.leaves = t.leaves_quantity;
      replaced_.executed += t.quantity;
    }
    filled_quantity_ += 2 * f.quantity;
  }

  // The Cancelled `r` of `command`: of the incoming order, or of a live one.
  void ApplyCancelled(const codec::Command& command, OwnerTag owner,
                      const ReportBuffer& reports, const Report& r,
                      Incoming& taker) {
    const codec::Cancelled c = reports.Get<codec::Cancelled>(r);
    cancelled_quantity_ += c.cancelled_quantity;
    if (c.order_id == taker.id) {
      ASSERT_EQ(r.owner, owner);
      ASSERT_EQ(c.cancelled_quantity, taker.order.leaves);
      taker.order.leaves = 0;
      taker.rests = false;
      return;
    }
    const auto it = live_.find(c.order_id);
    ASSERT_NE(it, live_.end()) << "cancelled " << c.order_id;
    ASSERT_EQ(c.cancelled_quantity, it->second.leaves);
    ASSERT_EQ(c.client_order_id, it->second.client_order_id);
    ASSERT_EQ(r.owner, it->second.owner);
    if (c.reason == codec::CancelReason::kRequested ||
        c.reason == codec::CancelReason::kMassCancel) {
      ASSERT_EQ(it->second.owner, owner) << "cancelled for its owner";
      ASSERT_EQ(it->second.account_id, command.account_id.value());
    } else if (c.reason == codec::CancelReason::kCancelOnDisconnect) {
      ASSERT_EQ(it->second.owner, owner) << "closed by its owner";
    } else {
      ASSERT_EQ(c.reason, codec::CancelReason::kSelfTrade);
    }
    live_.erase(it);
  }

  // The Replaced reports[i]: the old order leaves the books, the new one
  // enters them (in `replaced_` until the command's reports are applied).
  void ApplyReplaced(OwnerTag owner, const ReportBuffer& reports,
                     std::size_t i) {
    const Report& r = reports[i];
    const codec::Replaced p = reports.Get<codec::Replaced>(r);
    ASSERT_EQ(i, 0u) << "Replaced comes first";
    const auto it = live_.find(p.order_id);
    ASSERT_NE(it, live_.end());
    ASSERT_EQ(it->second.owner, owner) << "replaced by its owner";
    ASSERT_EQ(r.owner, owner);
    // The old leaves leave the books; the new ones enter them.
    cancelled_quantity_ += it->second.leaves;
    accepted_quantity_ += p.quantity;
    replaced_id_ = p.order_id;
    replaced_ = it->second;
    replaced_.client_order_id = p.client_order_id;
    replaced_.price = p.price;
    replaced_.leaves = p.quantity;
    live_.erase(it);
  }

  std::map<std::uint64_t, Shadow> live_;
  std::uint64_t replaced_id_ = 0;
  Shadow replaced_{};
  std::uint64_t next_order_id_ = 1;
  std::uint64_t next_match_id_ = 1;
  // Lots, order by order: what entered the books (accepted, or a replace's
  // new leaves) is filled (each match fills two orders), cancelled (or
  // replaced away) or resting.
  std::uint64_t accepted_quantity_ = 0;
  std::uint64_t filled_quantity_ = 0;
  std::uint64_t cancelled_quantity_ = 0;
};

void RunChaos(std::uint64_t seed, int commands, const EngineConfig& config,
              std::uint32_t owners = 1,
              std::uint64_t mass_cancel_per_mille = 0) {
  auto engine = std::make_unique<Engine>(config);
  ReportBuffer reports;
  ChaosStream stream(seed, owners, mass_cancel_per_mille);
  ShadowBook shadow;
  for (int i = 0; i < commands; ++i) {
    const codec::Command command = stream.Next();
    reports.Clear();
    if (command.kind == codec::Kind::kGoodbye) {
      engine->CloseSession(command, stream.owner(),
                           codec::SessionCloseReason::kGoodbye,
                           CancelsOnClose(command), reports);
    } else {
      ASSERT_EQ(engine->Execute(command, stream.owner(), reports),
                ExecuteStatus::kOk);
    }
    ASSERT_GT(reports.size(), 0u) << "every command gets a report";
    shadow.Apply(command, stream.owner(), reports);
    if (::testing::Test::HasFatalFailure()) {
      FAIL() << "seed " << seed << ", command " << i + 1;
    }
    const absl::Status invariants = engine->CheckInvariants();
    ASSERT_TRUE(invariants.ok())
        << invariants << " (seed " << seed << ", command " << i + 1 << ")";
    if (i % 64 == 0 || i + 1 == commands) {
      shadow.Compare(*engine);
      if (::testing::Test::HasFatalFailure()) {
        FAIL() << "seed " << seed << ", command " << i + 1;
      }
    }
  }
}

TEST(Invariants, HoldAfterEveryCommandOfLongChaoticStreams) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    RunChaos(seed, 50'000, EngineConfig{});
    if (HasFatalFailure()) return;
  }
}

TEST(Invariants, HoldWhenTheBookIsFull) {
  EngineConfig config;
  config.max_live_orders = 16;
  for (std::uint64_t seed = 11; seed <= 12; ++seed) {
    RunChaos(seed, 30'000, config);
    if (HasFatalFailure()) return;
  }
}

// Several owners (sessions) sharing the accounts: NotOwner, per-owner client
// order ids and report owners checked against the shadow on every command.
TEST(Invariants, HoldWithSeveralOwnersSharingAccounts) {
  for (std::uint64_t seed = 21; seed <= 23; ++seed) {
    RunChaos(seed, 50'000, EngineConfig{}, /*owners=*/3);
    if (HasFatalFailure()) return;
  }
  EngineConfig config;
  config.max_live_orders = 16;
  RunChaos(31, 30'000, config, /*owners=*/2);
}

// Mass cancels (1 command in 50, a quarter of them Goodbyes) of every scope
// and side, from several owners sharing accounts: exactly the owner's
// orders in scope go, by id.
TEST(Invariants, HoldWithMassCancels) {
  for (std::uint64_t seed = 41; seed <= 42; ++seed) {
    RunChaos(seed, 40'000, EngineConfig{}, /*owners=*/3,
             /*mass_cancel_per_mille=*/20);
    if (HasFatalFailure()) return;
  }
}

TEST(Invariants, HoldOnTheMixedWorkload) {
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports;
  ShadowBook shadow;
  workload::MixedGenerator generator(7);
  for (int i = 0; i < 100'000; ++i) {
    const codec::Command command = generator.Next();
    reports.Clear();
    ASSERT_EQ(engine->Execute(command, reports), ExecuteStatus::kOk);
    shadow.Apply(command, 0, reports);
    ASSERT_FALSE(HasFatalFailure()) << "command " << i + 1;
    if (i % 1000 == 0) {
      ASSERT_TRUE(engine->CheckInvariants().ok());
      shadow.Compare(*engine);
      ASSERT_FALSE(HasFatalFailure()) << "command " << i + 1;
    }
  }
  ASSERT_TRUE(engine->CheckInvariants().ok());
}

// ---------------------------------------------------------------------------
// Determinism.

// The report frames of `commands` (each for its owner in `owners`, or owner
// 0), and after them the owner of every report (4 bytes each).
std::vector<std::byte> RunToBytes(Engine& engine,
                                  std::span<const codec::Command> commands,
                                  std::span<const OwnerTag> owners = {}) {
  ReportBuffer reports;
  std::vector<std::byte> bytes;
  std::vector<OwnerTag> report_owners;
  const auto flush = [&] {
    bytes.insert(bytes.end(), reports.frames().begin(), reports.frames().end());
    for (const Report& r : reports.reports()) report_owners.push_back(r.owner);
    reports.Clear();
  };
  for (std::size_t i = 0; i < commands.size(); ++i) {
    (void)engine.Execute(commands[i], owners.empty() ? 0 : owners[i], reports);
    if (reports.size() > 1000) flush();
  }
  flush();
  const auto* raw = reinterpret_cast<const std::byte*>(report_owners.data());
  bytes.insert(bytes.end(), raw, raw + report_owners.size() * sizeof(OwnerTag));
  return bytes;
}

TEST(Determinism, TheSameStreamTwiceGivesIdenticalReportBytes) {
  std::vector<codec::Command> commands;
  ChaosStream chaos(99);
  for (int i = 0; i < 50'000; ++i) commands.push_back(chaos.Next());
  const auto mixed = workload::Generate(workload::Workload::kMixed, 50'000, 3);
  commands.insert(commands.end(), mixed.begin(), mixed.end());

  auto first = std::make_unique<Engine>(EngineConfig{});
  auto second = std::make_unique<Engine>(EngineConfig{});
  const std::vector<std::byte> a = RunToBytes(*first, commands);
  const std::vector<std::byte> b = RunToBytes(*second, commands);
  ASSERT_GT(a.size(), 100'000u);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b);
  // And after Reset, the same engine again.
  first->Reset();
  const std::vector<std::byte> c = RunToBytes(*first, commands);
  EXPECT_TRUE(a == c);
  // The books end the same too.
  std::vector<OrderInfo> left;
  std::vector<OrderInfo> right;
  first->ForEachLiveOrder([&](const OrderInfo& o) { left.push_back(o); });
  second->ForEachLiveOrder([&](const OrderInfo& o) { right.push_back(o); });
  ASSERT_EQ(left.size(), right.size());
  for (std::size_t i = 0; i < left.size(); ++i) {
    EXPECT_EQ(left[i].order_id, right[i].order_id);
    EXPECT_EQ(left[i].client_order_id, right[i].client_order_id);
    EXPECT_EQ(left[i].price, right[i].price);
    EXPECT_EQ(left[i].leaves_quantity, right[i].leaves_quantity);
  }
}

TEST(Determinism, SeveralOwnersGiveIdenticalReportBytesAndOwners) {
  std::vector<codec::Command> commands;
  std::vector<OwnerTag> owners;
  ChaosStream chaos(98, /*owners=*/4);
  for (int i = 0; i < 50'000; ++i) {
    commands.push_back(chaos.Next());
    owners.push_back(chaos.owner());
  }
  auto first = std::make_unique<Engine>(EngineConfig{});
  auto second = std::make_unique<Engine>(EngineConfig{});
  const std::vector<std::byte> a = RunToBytes(*first, commands, owners);
  const std::vector<std::byte> b = RunToBytes(*second, commands, owners);
  ASSERT_GT(a.size(), 100'000u);
  EXPECT_TRUE(a == b);
  first->Reset();
  EXPECT_TRUE(a == RunToBytes(*first, commands, owners));
  std::vector<OrderInfo> left;
  std::vector<OrderInfo> right;
  first->ForEachLiveOrder([&](const OrderInfo& o) { left.push_back(o); });
  second->ForEachLiveOrder([&](const OrderInfo& o) { right.push_back(o); });
  ASSERT_EQ(left.size(), right.size());
  for (std::size_t i = 0; i < left.size(); ++i) {
    EXPECT_EQ(left[i].order_id, right[i].order_id);
    EXPECT_EQ(left[i].owner, right[i].owner);
    EXPECT_EQ(left[i].client_order_id, right[i].client_order_id);
  }
}

}  // namespace
}  // namespace orderwire::engine::testing
