// Enumerations of wire protocol version 2 (PROTOCOL.md, CONTROLS.md), with
// their names.
//
// Every enum has a fixed underlying type equal to its wire width, so any byte
// that arrives can be held (an invalid side is decoded, and the engine rejects
// it with InvalidSide). No valid value is 0: a zeroed buffer never decodes
// into a plausible command. `Name()` returns the PROTOCOL.md spelling, or ""
// for a value the protocol does not define.
#ifndef ORDERWIRE_CODEC_TYPES_H_
#define ORDERWIRE_CODEC_TYPES_H_

#include <cstdint>
#include <string_view>

namespace orderwire::codec {

// The kind byte of a frame.
enum class Kind : std::uint8_t {
  // Commands, client to engine.
  kNewLimit = 0x01,
  kNewMarket = 0x02,
  kCancelByOrder = 0x03,
  kCancelByClient = 0x04,
  kReplace = 0x05,
  kMassCancel = 0x06,  // version 2 (docs/CONTROLS.md)
  // A control frame of the command direction, never a command (version 2).
  kHeartbeat = 0x07,
  kGoodbye = 0x08,             // version 2
  kOrderStatusRequest = 0x09,  // version 2
  // Reports, engine to client.
  kAccepted = 0x41,
  kRejected = 0x42,
  kFilled = 0x43,
  kCancelled = 0x44,
  kReplaced = 0x45,
  kSequenceGap = 0x46,
  kReportsGone = 0x47,
  kBusy = 0x48,
  kMassCancelDone = 0x49,  // version 2
  kHeartbeatAck = 0x4A,    // version 2
  kSessionClosed = 0x4B,   // version 2
  kOrderStatus = 0x4C,     // version 2
};

enum class Side : std::uint8_t { kBuy = 1, kSell = 2 };

enum class TimeInForce : std::uint8_t {
  kGoodTillCancel = 1,
  kImmediateOrCancel = 2,
  kFillOrKill = 3,
  kPostOnly = 4,
};

enum class RejectReason : std::uint16_t {
  kUnknownInstrument = 1,
  kInvalidSide = 2,
  kInvalidTimeInForce = 3,
  kInvalidPrice = 4,
  kInvalidQuantity = 5,
  kDuplicateClientOrderId = 6,
  kUnknownOrder = 7,
  kNotOwner = 8,
  kWouldCross = 9,
  kBookFull = 10,
  kUnauthorized = 11,
  kInvalidMassCancelScope = 12,  // version 2
};

enum class CancelReason : std::uint8_t {
  kRequested = 1,
  kImmediateOrCancel = 2,
  kFillOrKill = 3,
  kSelfTrade = 4,
  kNoLiquidity = 5,
  kReplacedAway = 6,  // reserved by PROTOCOL.md; never emitted
  kMassCancel = 7,    // version 2: cancelled by a MassCancel
  // Version 2: its session closed (Goodbye or lapse) with cancel-on-
  // disconnect (docs/CONTROLS.md).
  kCancelOnDisconnect = 8,
};

enum class Liquidity : std::uint8_t { kMaker = 1, kTaker = 2 };

// Replaced.priority_kept: 1 yes, 2 no.
enum class PriorityKept : std::uint8_t { kYes = 1, kNo = 2 };

// Busy.cause: why the service takes no commands for now.
enum class BusyCause : std::uint8_t { kJournalFull = 1 };

// MassCancel.scope: every instrument of the account, or one.
enum class MassCancelScope : std::uint8_t { kAccount = 1, kInstrument = 2 };

// MassCancel.side: which side's orders go. Carried in the command's `side`
// slot (command.h), so a Side may hold kBoth's value.
enum class MassCancelSide : std::uint8_t { kBuy = 1, kSell = 2, kBoth = 3 };

// SessionClosed.reason: the session said Goodbye, or it lapsed (silent past
// its liveness timeout).
enum class SessionCloseReason : std::uint8_t { kGoodbye = 1, kLapsed = 2 };

// OrderStatus.state: the order rests, or the service holds no live order by
// that id (filled, cancelled or never entered alike).
enum class OrderState : std::uint8_t { kLive = 1, kNotLive = 2 };

[[nodiscard]] constexpr std::string_view Name(Side v) noexcept {
  switch (v) {
    case Side::kBuy:
      return "Buy";
    case Side::kSell:
      return "Sell";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(TimeInForce v) noexcept {
  switch (v) {
    case TimeInForce::kGoodTillCancel:
      return "GoodTillCancel";
    case TimeInForce::kImmediateOrCancel:
      return "ImmediateOrCancel";
    case TimeInForce::kFillOrKill:
      return "FillOrKill";
    case TimeInForce::kPostOnly:
      return "PostOnly";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(RejectReason v) noexcept {
  switch (v) {
    case RejectReason::kUnknownInstrument:
      return "UnknownInstrument";
    case RejectReason::kInvalidSide:
      return "InvalidSide";
    case RejectReason::kInvalidTimeInForce:
      return "InvalidTimeInForce";
    case RejectReason::kInvalidPrice:
      return "InvalidPrice";
    case RejectReason::kInvalidQuantity:
      return "InvalidQuantity";
    case RejectReason::kDuplicateClientOrderId:
      return "DuplicateClientOrderId";
    case RejectReason::kUnknownOrder:
      return "UnknownOrder";
    case RejectReason::kNotOwner:
      return "NotOwner";
    case RejectReason::kWouldCross:
      return "WouldCross";
    case RejectReason::kBookFull:
      return "BookFull";
    case RejectReason::kUnauthorized:
      return "Unauthorized";
    case RejectReason::kInvalidMassCancelScope:
      return "InvalidMassCancelScope";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(CancelReason v) noexcept {
  switch (v) {
    case CancelReason::kRequested:
      return "Requested";
    case CancelReason::kImmediateOrCancel:
      return "ImmediateOrCancel";
    case CancelReason::kFillOrKill:
      return "FillOrKill";
    case CancelReason::kSelfTrade:
      return "SelfTrade";
    case CancelReason::kNoLiquidity:
      return "NoLiquidity";
    case CancelReason::kReplacedAway:
      return "ReplacedAway";
    case CancelReason::kMassCancel:
      return "MassCancel";
    case CancelReason::kCancelOnDisconnect:
      return "CancelOnDisconnect";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(Liquidity v) noexcept {
  switch (v) {
    case Liquidity::kMaker:
      return "Maker";
    case Liquidity::kTaker:
      return "Taker";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(PriorityKept v) noexcept {
  switch (v) {
    case PriorityKept::kYes:
      return "Yes";
    case PriorityKept::kNo:
      return "No";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(BusyCause v) noexcept {
  switch (v) {
    case BusyCause::kJournalFull:
      return "JournalFull";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(MassCancelScope v) noexcept {
  switch (v) {
    case MassCancelScope::kAccount:
      return "Account";
    case MassCancelScope::kInstrument:
      return "Instrument";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(MassCancelSide v) noexcept {
  switch (v) {
    case MassCancelSide::kBuy:
      return "Buy";
    case MassCancelSide::kSell:
      return "Sell";
    case MassCancelSide::kBoth:
      return "Both";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(SessionCloseReason v) noexcept {
  switch (v) {
    case SessionCloseReason::kGoodbye:
      return "Goodbye";
    case SessionCloseReason::kLapsed:
      return "Lapsed";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(OrderState v) noexcept {
  switch (v) {
    case OrderState::kLive:
      return "Live";
    case OrderState::kNotLive:
      return "NotLive";
  }
  return "";
}

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_TYPES_H_
