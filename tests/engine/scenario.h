// Test support for engine scenarios: command frames in, exact reports out.
//
// A Scenario encodes each command as a frame (numbered 1, 2, 3, ...),
// decodes it back into a codec::Command - so the engine sees exactly what a
// client's bytes give it - executes it and renders every report frame as one
// line of text that holds every field of the frame:
//
//   Accepted #1 acct=7 coid=1001 inst=1 Buy GTC px=100 qty=10
//   Rejected acct=7 coid=1001 #0 NewLimit InvalidPrice
//   Filled #1 acct=7 coid=1001 match=1 inst=1 Buy Maker px=100 qty=5 leaves=5
//   Cancelled #1 acct=7 coid=1001 inst=1 qty=5 Requested
//   Replaced #1 acct=7 coid=1002 px=101 qty=5 kept=Yes
//
// It also checks, for every report, that the frame and the model the engine
// emitted agree and that frame sequences run 1, 2, 3, ... across commands.
//
// Each command is sent on behalf of an owner (the engine's opaque OwnerTag,
// a session in the service; 0 unless given). The owner a report is for is
// not in its frame: Owners() lists those of the last command's reports.
#ifndef ORDERWIRE_TESTS_ENGINE_SCENARIO_H_
#define ORDERWIRE_TESTS_ENGINE_SCENARIO_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/command.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "gtest/gtest.h"

namespace orderwire::engine::testing {

using codec::Side;
using codec::TimeInForce;
inline constexpr Side kBuy = Side::kBuy;
inline constexpr Side kSell = Side::kSell;
inline constexpr TimeInForce kGtc = TimeInForce::kGoodTillCancel;
inline constexpr TimeInForce kIoc = TimeInForce::kImmediateOrCancel;
inline constexpr TimeInForce kFok = TimeInForce::kFillOrKill;
inline constexpr TimeInForce kPostOnly = TimeInForce::kPostOnly;

inline codec::Command Limit(std::uint64_t account, std::uint64_t coid,
                            std::uint32_t instrument, Side side,
                            TimeInForce tif, std::int64_t price,
                            std::uint64_t quantity) {
  return codec::Command::From(0, codec::NewLimit{.account_id = account,
                                                 .client_order_id = coid,
                                                 .instrument_id = instrument,
                                                 .side = side,
                                                 .time_in_force = tif,
                                                 .price = price,
                                                 .quantity = quantity});
}
inline codec::Command Market(std::uint64_t account, std::uint64_t coid,
                             std::uint32_t instrument, Side side,
                             std::uint64_t quantity) {
  return codec::Command::From(0, codec::NewMarket{.account_id = account,
                                                  .client_order_id = coid,
                                                  .instrument_id = instrument,
                                                  .side = side,
                                                  .quantity = quantity});
}
inline codec::Command CancelOrder(std::uint64_t account,
                                  std::uint64_t order_id) {
  return codec::Command::From(
      0, codec::CancelByOrder{.account_id = account, .order_id = order_id});
}
inline codec::Command CancelClient(std::uint64_t account, std::uint64_t coid) {
  return codec::Command::From(
      0, codec::CancelByClient{.account_id = account, .client_order_id = coid});
}
inline codec::Command Replace(std::uint64_t account, std::uint64_t order_id,
                              std::uint64_t new_coid, std::int64_t price,
                              std::uint64_t quantity) {
  return codec::Command::From(0, codec::Replace{.account_id = account,
                                                .order_id = order_id,
                                                .new_client_order_id = new_coid,
                                                .price = price,
                                                .quantity = quantity});
}

// A MassCancel (docs/CONTROLS.md): scope Account when `instrument` is 0,
// else Instrument; `side` 1 Buy, 2 Sell, 3 Both.
inline codec::Command MassCancel(std::uint64_t account, std::uint64_t request,
                                 std::uint32_t instrument,
                                 codec::MassCancelSide side) {
  return codec::Command::From(
      0, codec::MassCancel{.account_id = account,
                           .request_id = request,
                           .instrument_id = instrument,
                           .side = side,
                           .scope = instrument == 0
                                        ? codec::MassCancelScope::kAccount
                                        : codec::MassCancelScope::kInstrument});
}

// A Goodbye (docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect").
inline codec::Command Goodbye(std::uint64_t account, std::uint64_t request) {
  return codec::Command::From(
      0, codec::Goodbye{.account_id = account, .request_id = request});
}

// An OrderStatusRequest (docs/CONTROLS.md "Order status").
inline codec::Command StatusOf(std::uint64_t account, std::uint64_t order_id,
                               std::uint64_t client_order_id) {
  return codec::Command::From(
      0, codec::OrderStatusRequest{.account_id = account,
                                   .order_id = order_id,
                                   .client_order_id = client_order_id});
}

inline std::string TifName(TimeInForce tif) {
  switch (tif) {
    case kGtc:
      return "GTC";
    case kIoc:
      return "IOC";
    case kFok:
      return "FOK";
    case kPostOnly:
      return "PostOnly";
  }
  return absl::StrFormat("tif%d", static_cast<int>(tif));
}
template <typename E>
std::string EnumName(E value) {
  const std::string_view name = codec::Name(value);
  return name.empty() ? absl::StrFormat("?%d", static_cast<int>(value))
                      : std::string(name);
}

// One report frame as a line of text (every field).
inline std::string Render(std::span<const std::byte> frame) {
  const auto view = codec::FrameView::Parse(frame);
  if (!view.ok()) return "<unparsable frame>";
  std::string text;
  codec::VisitFrame(*view, [&](auto typed) {
    const auto m = typed.ToModel();
    using M = decltype(m);
    if constexpr (std::is_same_v<M, const codec::Accepted>) {
      text = absl::StrFormat(
          "Accepted #%d acct=%d coid=%d inst=%d %s %s px=%d qty=%d", m.order_id,
          m.account_id, m.client_order_id, m.instrument_id, EnumName(m.side),
          TifName(m.time_in_force), m.price, m.quantity);
    } else if constexpr (std::is_same_v<M, const codec::Rejected>) {
      text = absl::StrFormat("Rejected acct=%d coid=%d #%d %s %s", m.account_id,
                             m.client_order_id, m.order_id,
                             std::string(codec::Info(m.command_kind).name),
                             EnumName(m.reason));
    } else if constexpr (std::is_same_v<M, const codec::Filled>) {
      text = absl::StrFormat(
          "Filled #%d acct=%d coid=%d match=%d inst=%d %s %s px=%d qty=%d "
          "leaves=%d",
          m.order_id, m.account_id, m.client_order_id, m.match_id,
          m.instrument_id, EnumName(m.side), EnumName(m.liquidity), m.price,
          m.quantity, m.leaves_quantity);
    } else if constexpr (std::is_same_v<M, const codec::Cancelled>) {
      text = absl::StrFormat("Cancelled #%d acct=%d coid=%d inst=%d qty=%d %s",
                             m.order_id, m.account_id, m.client_order_id,
                             m.instrument_id, m.cancelled_quantity,
                             EnumName(m.reason));
    } else if constexpr (std::is_same_v<M, const codec::Replaced>) {
      text =
          absl::StrFormat("Replaced #%d acct=%d coid=%d px=%d qty=%d kept=%s",
                          m.order_id, m.account_id, m.client_order_id, m.price,
                          m.quantity, EnumName(m.priority_kept));
    } else if constexpr (std::is_same_v<M, const codec::MassCancelDone>) {
      text = absl::StrFormat(
          "MassCancelDone acct=%d req=%d inst=%d %s %s cancelled=%d",
          m.account_id, m.request_id, m.instrument_id, EnumName(m.side),
          EnumName(m.scope), m.cancelled_orders);
    } else if constexpr (std::is_same_v<M, const codec::OrderStatus>) {
      text = absl::StrFormat(
          "OrderStatus #%d acct=%d coid=%d inst=%d %s %s px=%d leaves=%d "
          "executed=%d",
          m.order_id, m.account_id, m.client_order_id, m.instrument_id,
          EnumName(m.side), EnumName(m.state), m.price, m.leaves_quantity,
          m.executed_quantity);
    } else if constexpr (std::is_same_v<M, const codec::SessionClosed>) {
      text = absl::StrFormat("SessionClosed acct=%d req=%d %s cancelled=%d",
                             m.account_id, m.request_id, EnumName(m.reason),
                             m.cancelled_orders);
    } else {
      text = "<not a report>";
    }
  });
  return text;
}

class Scenario {
 public:
  explicit Scenario(const EngineConfig& config = EngineConfig{})
      : engine_(std::make_unique<Engine>(config)) {}

  // Runs `command` (through its frame) for `owner` and returns its reports
  // as lines.
  std::vector<std::string> Send(const codec::Command& command,
                                OwnerTag owner = 0) {
    codec::Command numbered = command;
    numbered.sequence = ++sequence_;
    std::byte frame[codec::kMaxFrameSize];
    const auto size = codec::EncodeCommand(numbered, frame);
    EXPECT_TRUE(size.ok());
    codec::Command decoded{};
    const auto used =
        codec::DecodeCommand(std::span<const std::byte>(frame, *size), decoded);
    EXPECT_TRUE(used.ok());
    reports_.Clear();
    EXPECT_EQ(engine_->Execute(decoded, owner, reports_), ExecuteStatus::kOk);
    return Lines();
  }

  // The service's entry point for an unauthorized command.
  std::vector<std::string> SendUnauthorized(const codec::Command& command,
                                            OwnerTag owner = 0) {
    reports_.Clear();
    EXPECT_EQ(engine_->RejectUnauthorized(command, owner, reports_),
              ExecuteStatus::kOk);
    return Lines();
  }

  // The state machine's entry point for a Goodbye or a lapse (its record's
  // flags decide `reason` and `cancel_orders`).
  std::vector<std::string> Close(const codec::Command& command, OwnerTag owner,
                                 codec::SessionCloseReason reason,
                                 bool cancel_orders) {
    reports_.Clear();
    engine_->CloseSession(command, owner, reason, cancel_orders, reports_);
    return Lines();
  }

  // The owner (Report::owner) of each report of the last command, in order.
  [[nodiscard]] std::vector<OwnerTag> Owners() const {
    std::vector<OwnerTag> owners;
    for (const Report& report : reports_.reports()) {
      owners.push_back(report.owner);
    }
    return owners;
  }

  Engine& engine() { return *engine_; }
  [[nodiscard]] const ReportBuffer& reports() const { return reports_; }

 private:
  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < reports_.size(); ++i) {
      const std::span<const std::byte> frame = reports_.frame(i);
      const std::uint64_t sequence = codec::LoadLE<std::uint64_t>(frame.data());
      EXPECT_EQ(sequence, ++report_sequence_) << "report frames are numbered "
                                                 "1, 2, 3, ... in emission "
                                                 "order";
      // The record beside the frame names the frame's own kind and size.
      const auto parsed = codec::FrameView::Parse(frame);
      EXPECT_TRUE(parsed.ok() && parsed->kind() == reports_[i].kind &&
                  parsed->size() == reports_[i].frame_size)
          << "the record and the frame of report " << i
          << " disagree: " << Render(frame);
      lines.push_back(Render(frame));
    }
    const absl::Status invariants = engine_->CheckInvariants();
    EXPECT_TRUE(invariants.ok()) << invariants;
    return lines;
  }

  std::unique_ptr<Engine> engine_;
  ReportBuffer reports_;
  std::uint64_t sequence_ = 0;
  std::uint64_t report_sequence_ = 0;
};

}  // namespace orderwire::engine::testing

#endif  // ORDERWIRE_TESTS_ENGINE_SCENARIO_H_
