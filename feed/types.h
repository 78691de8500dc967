// Enumerations of the market-data feed, version 1 (docs/MARKETDATA.md), with
// their names.
//
// As in codec/types.h: every enum has a fixed underlying type equal to its
// wire width, so any byte that arrives can be held, and no valid value is 0.
// `Name()` returns the MARKETDATA.md spelling, or "" for a value the contract
// does not define. Everything here is constexpr: no allocation, no locking.
#ifndef ORDERWIRE_FEED_TYPES_H_
#define ORDERWIRE_FEED_TYPES_H_

#include <cstdint>
#include <string_view>

namespace orderwire::feed {

// The `type` byte of a packet header (MARKETDATA.md "Packets").
enum class PacketType : std::uint8_t {
  // Publisher and request server to subscribers.
  kData = 1,
  kHeartbeat = 2,
  kEndOfSession = 3,
  kSnapshot = 4,
  kRefused = 5,
  // Subscriber to request server.
  kRetransmitRequest = 0x11,
  kSnapshotRequest = 0x12,
};

// The `kind` byte of a message (MARKETDATA.md "Messages").
enum class MessageKind : std::uint8_t {
  kSystemEvent = 0x53,          // 'S'
  kInstrumentDirectory = 0x52,  // 'R'
  kTradingStatus = 0x48,        // 'H'
  kOrderAdded = 0x41,           // 'A'
  kOrderExecuted = 0x45,        // 'E'
  kOrderReduced = 0x58,         // 'X'
  kOrderDeleted = 0x44,         // 'D'
  kOrderReplaced = 0x55,        // 'U'
  kSnapshotStart = 0x47,        // 'G'
  kSnapshotEnd = 0x5A,          // 'Z'
  // 'P': reserved for a trade of a non-displayed order ("Trades"). Never
  // sent in version 1 and not in the kind table: a subscriber that meets it
  // skips it as an unknown kind.
  kReservedTrade = 0x50,
};

// SystemEvent.event.
enum class SystemEventCode : std::uint8_t {
  kStartOfFeed = 1,
  kEndOfFeed = 2,  // reserved: never sent in version 1
};

// TradingStatus.state. Version 1 sends Trading and Unlisted only.
enum class TradingState : std::uint8_t {
  kTrading = 1,
  kHalted = 2,
  kUnlisted = 3,
};

// Refused.reason. 7 and above are reserved and taken as Unavailable
// (EffectiveReason).
enum class RefusedReason : std::uint8_t {
  kNotRetained = 1,
  kBeyondEnd = 2,
  kWrongSession = 3,
  kRateLimited = 4,
  kUnknownInstrument = 5,
  kUnavailable = 6,
};

// Why a packet (or a request) was dropped: the causes of MARKETDATA.md
// "Checks", each counted by the subscriber (md_requests_malformed_total by
// cause on the request server). kOk (0) is no failure. An unknown message
// kind is not here: it is a counted skip (UnknownKind), not a failure.
enum class CheckCause : std::uint8_t {
  kOk = 0,
  kOversize,       // more than kMaxPacketBytes
  kTruncated,      // shorter than the header, a body or a block says
  kBadMagic,       // not 'O' 'M'
  kBadVersion,     // version is not 1
  kBadType,        // a type the receiver does not take
  kOtherSession,   // not the session followed (types 1 to 4)
  kBadToken,       // token 0 where a reply's is due, or not 0 where none is
  kBadSequence,    // sequence 0 where one is due (or not 0 where none is)
  kBadCount,       // count not 0 where the type has no messages
  kZeroCount,      // count 0 where the type has messages
  kCountMismatch,  // the blocks end, on a block boundary, before `count`
  kBadLength,      // a block length below 9 or below its known kind's size
  kMisplacedKind,  // a known kind in a packet type that may not carry it
  kTrailingBytes,  // bytes after the last block, the body or the header
};

inline constexpr int kCheckCauseCount =
    static_cast<int>(CheckCause::kTrailingBytes) + 1;

[[nodiscard]] constexpr std::string_view Name(PacketType v) noexcept {
  switch (v) {
    case PacketType::kData:
      return "Data";
    case PacketType::kHeartbeat:
      return "Heartbeat";
    case PacketType::kEndOfSession:
      return "EndOfSession";
    case PacketType::kSnapshot:
      return "Snapshot";
    case PacketType::kRefused:
      return "Refused";
    case PacketType::kRetransmitRequest:
      return "RetransmitRequest";
    case PacketType::kSnapshotRequest:
      return "SnapshotRequest";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(SystemEventCode v) noexcept {
  switch (v) {
    case SystemEventCode::kStartOfFeed:
      return "StartOfFeed";
    case SystemEventCode::kEndOfFeed:
      return "EndOfFeed";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(TradingState v) noexcept {
  switch (v) {
    case TradingState::kTrading:
      return "Trading";
    case TradingState::kHalted:
      return "Halted";
    case TradingState::kUnlisted:
      return "Unlisted";
  }
  return "";
}

[[nodiscard]] constexpr std::string_view Name(RefusedReason v) noexcept {
  switch (v) {
    case RefusedReason::kNotRetained:
      return "NotRetained";
    case RefusedReason::kBeyondEnd:
      return "BeyondEnd";
    case RefusedReason::kWrongSession:
      return "WrongSession";
    case RefusedReason::kRateLimited:
      return "RateLimited";
    case RefusedReason::kUnknownInstrument:
      return "UnknownInstrument";
    case RefusedReason::kUnavailable:
      return "Unavailable";
  }
  return "";
}

// The reason a subscriber acts on: a reserved value (7 and above) is taken
// as Unavailable. 0 is returned as it is: MARKETDATA.md does not say what a
// subscriber makes of it.
[[nodiscard]] constexpr RefusedReason EffectiveReason(
    RefusedReason v) noexcept {
  return static_cast<std::uint8_t>(v) >= 7 ? RefusedReason::kUnavailable : v;
}

[[nodiscard]] constexpr std::string_view Name(CheckCause v) noexcept {
  switch (v) {
    case CheckCause::kOk:
      return "Ok";
    case CheckCause::kOversize:
      return "Oversize";
    case CheckCause::kTruncated:
      return "Truncated";
    case CheckCause::kBadMagic:
      return "BadMagic";
    case CheckCause::kBadVersion:
      return "BadVersion";
    case CheckCause::kBadType:
      return "BadType";
    case CheckCause::kOtherSession:
      return "OtherSession";
    case CheckCause::kBadToken:
      return "BadToken";
    case CheckCause::kBadSequence:
      return "BadSequence";
    case CheckCause::kBadCount:
      return "BadCount";
    case CheckCause::kZeroCount:
      return "ZeroCount";
    case CheckCause::kCountMismatch:
      return "CountMismatch";
    case CheckCause::kBadLength:
      return "BadLength";
    case CheckCause::kMisplacedKind:
      return "MisplacedKind";
    case CheckCause::kTrailingBytes:
      return "TrailingBytes";
  }
  return "";
}

}  // namespace orderwire::feed

#endif  // ORDERWIRE_FEED_TYPES_H_
