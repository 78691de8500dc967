// trader: a small trading program built against the installed orderwire
// package (examples/README.md). It connects to a running `orderwire serve`
// as one session, sends three commands and checks every report it gets:
//
//   1. a resting limit buy:  account 1, 10 @ 100 (GoodTillCancel)
//   2. a crossing limit sell: account 2, 4 @ 100, which trades 4 against 1
//   3. once the buy's Accepted has told its order id: a cancel of the buy's
//      remaining 6
//
// and expects, in order: Accepted (buy), Accepted (sell), Filled (the buy,
// maker, 4 @ 100, leaves 6), Filled (the sell, taker, 4 @ 100, leaves 0),
// Cancelled (the buy, 6, Requested): the engine reports a match maker
// first (docs/PROTOCOL.md "Matching semantics"). Each report is printed as one
// line on stdout as it arrives. Exit 0 only when all five arrived as expected;
// 1 on an unexpected report, an error or the timeout (with what is missing and,
// when nothing was heard, the likely causes); 2 on a usage error.
//
//   trader HOST:PORT SESSION_ID [TIMEOUT_MS]     (timeout default 5000)
//
// Use a session id the service has not seen before: a session starts at
// sequence 1, and the service answers a used session's old sequences with
// their old reports.
#include <poll.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/clock.h"
#include "client/session.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "net/udp.h"

namespace {

using orderwire::codec::Accepted;
using orderwire::codec::Cancelled;
using orderwire::codec::CancelReason;
using orderwire::codec::FrameView;
using orderwire::codec::Kind;
using orderwire::codec::Liquidity;
using orderwire::codec::Side;
using orderwire::codec::TimeInForce;
using orderwire::codec::View;

constexpr std::uint32_t kInstrument = 1;
constexpr std::int64_t kPrice = 100;
constexpr std::uint64_t kBuyAccount = 1;
constexpr std::uint64_t kBuyClientOrder = 1;
constexpr std::uint64_t kBuyQuantity = 10;
constexpr std::uint64_t kSellAccount = 2;
constexpr std::uint64_t kSellClientOrder = 2;
constexpr std::uint64_t kSellQuantity = 4;
constexpr std::size_t kExpectedReports = 5;

std::string Str(std::string_view view) { return std::string(view); }

// One readable line for a report: its sequence, kind and fields.
std::string Describe(const FrameView& report) {
  std::string line = "report " + std::to_string(report.sequence()) + ": " +
                     Str(orderwire::codec::Name(report.kind()));
  orderwire::codec::VisitFrame(report, [&](const auto& view) {
    using ViewType = std::remove_cvref_t<decltype(view)>;
    const auto m = view.ToModel();
    if constexpr (std::is_same_v<ViewType, View<Accepted>>) {
      line += " order " + std::to_string(m.order_id) + " account " +
              std::to_string(m.account_id) + " client_order " +
              std::to_string(m.client_order_id) + " " + Str(Name(m.side)) +
              " " + std::to_string(m.quantity) + " @ " +
              std::to_string(m.price) + " " + Str(Name(m.time_in_force));
    } else if constexpr (std::is_same_v<ViewType,
                                        View<orderwire::codec::Filled>>) {
      line += " order " + std::to_string(m.order_id) + " account " +
              std::to_string(m.account_id) + " client_order " +
              std::to_string(m.client_order_id) + " " + Str(Name(m.side)) +
              " " + Str(Name(m.liquidity)) + " " + std::to_string(m.quantity) +
              " @ " + std::to_string(m.price) + " leaves " +
              std::to_string(m.leaves_quantity) + " match " +
              std::to_string(m.match_id);
    } else if constexpr (std::is_same_v<ViewType, View<Cancelled>>) {
      line += " order " + std::to_string(m.order_id) + " account " +
              std::to_string(m.account_id) + " client_order " +
              std::to_string(m.client_order_id) + " cancelled " +
              std::to_string(m.cancelled_quantity) + " " + Str(Name(m.reason));
    } else if constexpr (std::is_same_v<ViewType,
                                        View<orderwire::codec::Rejected>>) {
      line += " account " + std::to_string(m.account_id) + " client_order " +
              std::to_string(m.client_order_id) + " " +
              Str(Name(m.command_kind)) + " " + Str(Name(m.reason));
    } else if constexpr (std::is_same_v<ViewType,
                                        View<orderwire::codec::Replaced>>) {
      line += " order " + std::to_string(m.order_id) + " client_order " +
              std::to_string(m.client_order_id) + " " +
              std::to_string(m.quantity) + " @ " + std::to_string(m.price);
    }
  });
  return line;
}

// What the trader expects of its n-th report (0-based), given the buy's
// order id once known; "" when the report is the expected one, otherwise
// what was expected.
std::string Mismatch(std::size_t n, const FrameView& report,
                     std::uint64_t buy_order_id) {
  const auto filled = [&](std::uint64_t client_order, Side side,
                          Liquidity liquidity,
                          std::uint64_t leaves) -> std::string {
    std::string want = "Filled client_order " + std::to_string(client_order) +
                       " " + Str(Name(side)) + " " + Str(Name(liquidity)) +
                       " " + std::to_string(kSellQuantity) + " @ " +
                       std::to_string(kPrice) + " leaves " +
                       std::to_string(leaves);
    const auto view = View<orderwire::codec::Filled>::FromFrame(report);
    if (!view.ok()) return want;
    const orderwire::codec::Filled m = view->ToModel();
    const bool ok = m.client_order_id == client_order && m.side == side &&
                    m.liquidity == liquidity && m.quantity == kSellQuantity &&
                    m.price == kPrice && m.leaves_quantity == leaves;
    return ok ? "" : want;
  };
  const auto accepted = [&](std::uint64_t client_order, Side side,
                            std::uint64_t quantity) -> std::string {
    std::string want = "Accepted client_order " + std::to_string(client_order) +
                       " " + Str(Name(side)) + " " + std::to_string(quantity) +
                       " @ " + std::to_string(kPrice);
    const auto view = View<Accepted>::FromFrame(report);
    if (!view.ok()) return want;
    const Accepted m = view->ToModel();
    const bool ok = m.client_order_id == client_order && m.side == side &&
                    m.quantity == quantity && m.price == kPrice;
    return ok ? "" : want;
  };
  switch (n) {
    case 0:
      return accepted(kBuyClientOrder, Side::kBuy, kBuyQuantity);
    case 1:
      return accepted(kSellClientOrder, Side::kSell, kSellQuantity);
    case 2:
      return filled(kBuyClientOrder, Side::kBuy, Liquidity::kMaker,
                    kBuyQuantity - kSellQuantity);
    case 3:
      return filled(kSellClientOrder, Side::kSell, Liquidity::kTaker, 0);
    case 4: {
      const std::uint64_t left = kBuyQuantity - kSellQuantity;
      std::string want = "Cancelled order " + std::to_string(buy_order_id) +
                         " cancelled " + std::to_string(left) + " Requested";
      const auto view = View<Cancelled>::FromFrame(report);
      if (!view.ok()) return want;
      const Cancelled m = view->ToModel();
      const bool ok = m.order_id == buy_order_id &&
                      m.cancelled_quantity == left &&
                      m.reason == CancelReason::kRequested;
      return ok ? "" : want;
    }
    default:
      return "no more reports (all " + std::to_string(kExpectedReports) +
             " expected ones had arrived)";
  }
}

struct Progress {
  std::size_t reports = 0;
  std::uint64_t buy_order_id = 0;  // from the buy's Accepted
  std::string error;               // the first unexpected report
};

bool ParseNumber(std::string_view text, std::uint64_t* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

int Usage(const char* message) {
  std::fprintf(stderr,
               "trader: %s\nusage: trader HOST:PORT SESSION_ID [TIMEOUT_MS]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace client = orderwire::client;
  namespace codec = orderwire::codec;
  if (argc < 3 || argc > 4) return Usage("wrong number of arguments");
  const absl::StatusOr<orderwire::net::Endpoint> target =
      orderwire::net::Endpoint::Parse(argv[1]);
  if (!target.ok()) {
    std::fprintf(stderr, "trader: target %s: %s\n", argv[1],
                 std::string(target.status().message()).c_str());
    return 2;
  }
  std::uint64_t session_id = 0;
  if (!ParseNumber(argv[2], &session_id) || session_id == 0 ||
      session_id > UINT32_MAX) {
    return Usage("SESSION_ID must be a number from 1 to 4294967295");
  }
  std::uint64_t timeout_ms = 5000;
  if (argc == 4 && (!ParseNumber(argv[3], &timeout_ms) || timeout_ms == 0)) {
    return Usage("TIMEOUT_MS must be a positive number of milliseconds");
  }

  Progress progress;
  client::SessionOptions options;
  options.target = *target;
  options.session_id = static_cast<std::uint32_t>(session_id);
  options.on_report = [&progress](const codec::FrameView& report) {
    std::printf("%s\n", Describe(report).c_str());
    std::fflush(stdout);
    if (!progress.error.empty()) return;
    const std::string mismatch =
        Mismatch(progress.reports, report, progress.buy_order_id);
    if (!mismatch.empty()) {
      progress.error = "report " + std::to_string(report.sequence()) +
                       ": expected " + mismatch + ", got " + Describe(report);
      return;
    }
    if (progress.reports == 0) {
      progress.buy_order_id =
          View<Accepted>::FromFrame(report)->Get<&Accepted::order_id>();
    }
    ++progress.reports;
  };
  absl::StatusOr<std::unique_ptr<client::Session>> opened =
      client::Session::Open(std::move(options));
  if (!opened.ok()) {
    std::fprintf(stderr, "trader: cannot open the session: %s\n",
                 opened.status().ToString().c_str());
    return 1;
  }
  client::Session& session = **opened;

  const auto submit = [&session](const auto& command) {
    const absl::StatusOr<std::uint64_t> sequence = session.Submit(command);
    if (!sequence.ok()) {
      std::fprintf(stderr, "trader: submit: %s\n",
                   sequence.status().ToString().c_str());
    }
    return sequence.ok();
  };
  if (!submit(codec::NewLimit{.account_id = kBuyAccount,
                              .client_order_id = kBuyClientOrder,
                              .instrument_id = kInstrument,
                              .side = Side::kBuy,
                              .time_in_force = TimeInForce::kGoodTillCancel,
                              .price = kPrice,
                              .quantity = kBuyQuantity}) ||
      !submit(codec::NewLimit{.account_id = kSellAccount,
                              .client_order_id = kSellClientOrder,
                              .instrument_id = kInstrument,
                              .side = Side::kSell,
                              .time_in_force = TimeInForce::kGoodTillCancel,
                              .price = kPrice,
                              .quantity = kSellQuantity})) {
    return 1;
  }

  const std::int64_t deadline_ns =
      orderwire::base::MonotonicNs() +
      static_cast<std::int64_t>(timeout_ms) * 1'000'000;
  bool cancel_sent = false;
  while (progress.reports < kExpectedReports) {
    const std::int64_t now_ns = orderwire::base::MonotonicNs();
    if (now_ns >= deadline_ns) {
      std::fprintf(stderr,
                   "trader: timed out after %llu ms with %zu of the %zu "
                   "expected reports (%llu of 3 commands answered)\n",
                   static_cast<unsigned long long>(timeout_ms),
                   progress.reports, kExpectedReports,
                   static_cast<unsigned long long>(session.answered()));
      if (session.refusals().silent) {
        std::fprintf(stderr, "%s\n", session.ExplainSilence().c_str());
      }
      return 1;
    }
    const absl::StatusOr<client::PollResult> round = session.Poll(now_ns);
    if (!round.ok()) {
      std::fprintf(stderr, "trader: the session failed: %s\n",
                   round.status().ToString().c_str());
      return 1;
    }
    if (!progress.error.empty()) {
      std::fprintf(stderr, "trader: %s\n", progress.error.c_str());
      return 1;
    }
    // Once the sell's fills are in (the buy's order id came with its
    // Accepted), cancel what is left of the buy.
    if (!cancel_sent && progress.reports >= 4) {
      if (!submit(codec::CancelByOrder{.account_id = kBuyAccount,
                                       .order_id = progress.buy_order_id})) {
        return 1;
      }
      cancel_sent = true;
      continue;
    }
    if (!round->more_to_send) {
      pollfd readable{.fd = session.fd(), .events = POLLIN, .revents = 0};
      (void)::poll(&readable, 1, 10);
    }
  }
  std::printf("trader: all %zu expected reports received (session %llu)\n",
              kExpectedReports, static_cast<unsigned long long>(session_id));
  return 0;
}
