// Errors of the codec's hot path: a small enum, never an exception.
//
// Every way a frame or a datagram can be malformed has its own value, so the
// service can count drops by cause and a person reading a log learns why.
// `Name()` gives the CamelCase name used in logs, counters and JSON;
// `Describe()` a one-line explanation for error messages.
#ifndef ORDERWIRE_CODEC_ERROR_H_
#define ORDERWIRE_CODEC_ERROR_H_

#include <cstdint>
#include <string_view>

namespace orderwire::codec {

enum class CodecError : std::uint8_t {
  kOk = 0,
  // Frames.
  kTruncated,    // fewer bytes than the header or the kind's body needs
  kUnknownKind,  // the kind byte is not in the protocol
  kNotACommand,  // a report kind where a command was required
  kNotAReport,   // a command kind where a report was required
  kWrongKind,    // a typed view was asked of a frame of another kind
  // Datagrams.
  kBadMagic,        // the first two bytes are not 'O' 'W'
  kBadVersion,      // version is not 1
  kBadFlags,        // a flag bit this version does not define is set
  kBadReserved,     // the reserved header field is not 0
  kZeroFrameCount,  // frame_count is 0
  kCountMismatch,   // the bytes end, on a frame boundary, before frame_count
  kTrailingBytes,   // bytes remain after frame_count frames
  kOversize,        // longer than the 1472-byte datagram limit
  // Encoders.
  kBufferTooSmall,  // the caller's buffer cannot hold what is being written
  kTooManyFrames,   // a datagram cannot count more frames (u16 frame_count)
};

inline constexpr int kCodecErrorCount =
    static_cast<int>(CodecError::kTooManyFrames) + 1;

[[nodiscard]] constexpr std::string_view Name(CodecError e) noexcept {
  switch (e) {
    case CodecError::kOk:
      return "Ok";
    case CodecError::kTruncated:
      return "Truncated";
    case CodecError::kUnknownKind:
      return "UnknownKind";
    case CodecError::kNotACommand:
      return "NotACommand";
    case CodecError::kNotAReport:
      return "NotAReport";
    case CodecError::kWrongKind:
      return "WrongKind";
    case CodecError::kBadMagic:
      return "BadMagic";
    case CodecError::kBadVersion:
      return "BadVersion";
    case CodecError::kBadFlags:
      return "BadFlags";
    case CodecError::kBadReserved:
      return "BadReserved";
    case CodecError::kZeroFrameCount:
      return "ZeroFrameCount";
    case CodecError::kCountMismatch:
      return "CountMismatch";
    case CodecError::kTrailingBytes:
      return "TrailingBytes";
    case CodecError::kOversize:
      return "Oversize";
    case CodecError::kBufferTooSmall:
      return "BufferTooSmall";
    case CodecError::kTooManyFrames:
      return "TooManyFrames";
  }
  return "Invalid";
}

[[nodiscard]] constexpr std::string_view Describe(CodecError e) noexcept {
  switch (e) {
    case CodecError::kOk:
      return "no error";
    case CodecError::kTruncated:
      return "truncated: fewer bytes than the frame header or the kind's body "
             "needs";
    case CodecError::kUnknownKind:
      return "unknown frame kind";
    case CodecError::kNotACommand:
      return "a report kind where a command frame is required";
    case CodecError::kNotAReport:
      return "a command kind where a report frame is required";
    case CodecError::kWrongKind:
      return "frame is of another kind";
    case CodecError::kBadMagic:
      return "bad magic: datagram must start 'OW'";
    case CodecError::kBadVersion:
      return "unsupported protocol version";
    case CodecError::kBadFlags:
      return "unknown flag bits set";
    case CodecError::kBadReserved:
      return "reserved header field is not 0";
    case CodecError::kZeroFrameCount:
      return "frame_count is 0";
    case CodecError::kCountMismatch:
      return "datagram ends before frame_count frames";
    case CodecError::kTrailingBytes:
      return "bytes left over after frame_count frames";
    case CodecError::kOversize:
      return "datagram is longer than 1472 bytes";
    case CodecError::kBufferTooSmall:
      return "output buffer too small";
    case CodecError::kTooManyFrames:
      return "datagram frame_count would overflow";
  }
  return "invalid error value";
}

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_ERROR_H_
