// Datagrams: the UDP payload that carries whole frames (PROTOCOL.md
// "Datagram"), its all-or-nothing parser and a builder that packs frames into
// a caller-owned buffer.
//
//   0     2   3   4          8       10      12
//   +-----+---+---+----------+-------+-------+------------------------+----------+
//   |"OW" |ver|flg|session_id|count  |reserv.| count whole frames,    | MAC, 16
//   | |     | 1 |0/1|   u32    |  u16  | 0 u16 | back to back, no more  | if
//   flg=1 |
//   +-----+---+---+----------+-------+-------+------------------------+----------+
//
// Flag 0x01 (Authenticated): a 16-byte MAC trailer follows the frames. The
// codec knows only its place and size: it exposes the authenticated bytes
// (header and frames) and the trailer, and the builder leaves room for it;
// computing and checking the MAC is orderwire::auth's (auth/mac.h).
//
// A datagram counts as valid only when every check passes: header fields,
// every frame whole and of a known kind, exactly frame_count frames and no
// byte after them, at most 1472 bytes in all. Otherwise none of its frames
// may be applied. The parser checks everything once; iterating the frames of
// a parsed datagram then needs no further checks.
#ifndef ORDERWIRE_CODEC_DATAGRAM_H_
#define ORDERWIRE_CODEC_DATAGRAM_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>

#include "codec/error.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/layout.h"
#include "codec/result.h"
#include "codec/wire.h"

namespace orderwire::codec {

struct DatagramHeader {
  std::uint16_t magic;  // bytes 'O' 'W', i.e. 0x574F little-endian
  std::uint8_t version;
  std::uint8_t flags;
  std::uint32_t session_id;
  std::uint16_t frame_count;
  std::uint16_t reserved;
};

template <>
struct MessageTraits<DatagramHeader> {
  static constexpr std::string_view kName = "DatagramHeader";
  static constexpr auto kLayout =
      MakeLayout(Field{"magic", &DatagramHeader::magic},
                 Field{"version", &DatagramHeader::version},
                 Field{"flags", &DatagramHeader::flags},
                 Field{"session_id", &DatagramHeader::session_id},
                 Field{"frame_count", &DatagramHeader::frame_count},
                 Field{"reserved", &DatagramHeader::reserved});
};

inline constexpr std::size_t kDatagramHeaderSize =
    MessageTraits<DatagramHeader>::kLayout.kSize;
// Largest datagram: 1500-byte Ethernet MTU - 20 (IPv4) - 8 (UDP).
inline constexpr std::size_t kMaxDatagramSize = 1472;
inline constexpr std::uint16_t kDatagramMagic = 0x574F;  // "OW"
inline constexpr std::uint8_t kProtocolVersion = 1;
// Flag bit 0: a MAC trailer of kMacSize bytes follows the frames.
inline constexpr std::uint8_t kFlagAuthenticated = 0x01;
// Flag bits defined by this version.
inline constexpr std::uint8_t kKnownFlags = kFlagAuthenticated;
// The size of the MAC trailer of an authenticated datagram.
inline constexpr std::size_t kMacSize = 16;

template <auto Member>
consteval std::size_t DatagramOffsetOf() {
  return OffsetOf<MessageTraits<DatagramHeader>::kLayout, Member>();
}

static_assert(kDatagramHeaderSize == 12);
static_assert(DatagramOffsetOf<&DatagramHeader::session_id>() == 4);
static_assert(DatagramOffsetOf<&DatagramHeader::frame_count>() == 8);

// Which frame kinds a datagram may hold.
enum class FrameFilter : std::uint8_t {
  kAny,       // any known kind
  kCommands,  // client to service (commands, Heartbeat): a report kind is
              // kNotACommand
  kReports,   // service to client: a command kind or Heartbeat is
              // kNotAReport
};

// Iterates the frames of a parsed datagram (or any run of frames already
// checked to be whole and of known kinds).
class FrameIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = FrameView;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = FrameView;

  FrameIterator() = default;
  FrameIterator(const std::byte* pos, const std::byte* end) noexcept
      : pos_(pos), end_(end) {}

  [[nodiscard]] FrameView operator*() const noexcept {
    return *FrameView::Parse({pos_, end_});
  }
  FrameIterator& operator++() noexcept {
    pos_ += kKindTable[LoadLE<std::uint8_t>(pos_ + kKindOffset)].frame_size;
    return *this;
  }
  FrameIterator operator++(int) noexcept {
    FrameIterator before = *this;
    ++*this;
    return before;
  }
  // Byte offset of the current frame from `base`.
  [[nodiscard]] std::size_t OffsetFrom(const std::byte* base) const noexcept {
    return static_cast<std::size_t>(pos_ - base);
  }
  friend bool operator==(const FrameIterator& a,
                         const FrameIterator& b) noexcept {
    return a.pos_ == b.pos_;
  }

 private:
  const std::byte* pos_ = nullptr;
  const std::byte* end_ = nullptr;
};

// A datagram that passed every check.
class DatagramView {
 public:
  // Checks the whole datagram, all or nothing. On failure, if `error_offset`
  // is not null it receives the byte offset where the problem was found.
  // With the Authenticated flag the last kMacSize bytes are the trailer
  // (not checked here: auth/ verifies it) and the frames end before them.
  // Errors: kTruncated (also: the flag set and no room for the trailer),
  // kOversize, kBadMagic, kBadVersion, kBadFlags, kBadReserved,
  // kZeroFrameCount, kUnknownKind, kNotACommand, kNotAReport,
  // kCountMismatch, kTrailingBytes. Hot path: O(frames), no allocation.
  [[nodiscard]] static Result<DatagramView> Parse(
      std::span<const std::byte> bytes, FrameFilter filter = FrameFilter::kAny,
      std::size_t* error_offset = nullptr) noexcept;

  [[nodiscard]] std::uint32_t session_id() const noexcept {
    return LoadLE<std::uint32_t>(
        data_ + DatagramOffsetOf<&DatagramHeader::session_id>());
  }
  [[nodiscard]] std::uint16_t frame_count() const noexcept {
    return LoadLE<std::uint16_t>(
        data_ + DatagramOffsetOf<&DatagramHeader::frame_count>());
  }
  [[nodiscard]] DatagramHeader header() const noexcept;
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, size_};
  }
  // Whether the Authenticated flag is set (a MAC trailer follows the
  // frames).
  [[nodiscard]] bool authenticated() const noexcept {
    return frames_end_ != size_;
  }
  // What the MAC covers: the header (as received) and the frames, without
  // the trailer. For a datagram without the flag: all of it.
  [[nodiscard]] std::span<const std::byte> authenticated_bytes()
      const noexcept {
    return {data_, frames_end_};
  }
  // The MAC trailer: kMacSize bytes, or empty without the flag.
  [[nodiscard]] std::span<const std::byte> mac() const noexcept {
    return {data_ + frames_end_, size_ - frames_end_};
  }
  // The frames, back to back, without the header (and the trailer).
  [[nodiscard]] std::span<const std::byte> frame_bytes() const noexcept {
    return authenticated_bytes().subspan(kDatagramHeaderSize);
  }
  [[nodiscard]] FrameIterator begin() const noexcept {
    return {data_ + kDatagramHeaderSize, data_ + frames_end_};
  }
  [[nodiscard]] FrameIterator end() const noexcept {
    return {data_ + frames_end_, data_ + frames_end_};
  }

 private:
  DatagramView(const std::byte* data, std::uint32_t size,
               std::uint32_t frames_end) noexcept
      : data_(data), size_(size), frames_end_(frames_end) {}

  const std::byte* data_;
  std::uint32_t size_;
  std::uint32_t frames_end_;  // == size_ unless authenticated
};

// Packs frames into a caller-owned buffer, header first. Frames are encoded
// in place (Append), so the bytes that go on the wire are the bytes that were
// encoded; AppendFrame copies an already encoded frame. The buffer always
// holds a well-formed datagram once it has one frame. Never allocates.
//
// Authenticated datagrams: with `authenticated`, the header carries the flag
// and the builder keeps kMacSize bytes free at the end; once the frames are
// in, the caller computes the MAC over bytes() and calls Seal(mac), which
// writes the trailer and returns the whole datagram.
class DatagramBuilder {
 public:
  // Uses at most kMaxDatagramSize bytes of `buffer`. Writes the header.
  // Precondition: buffer.size() >= kDatagramHeaderSize (+ kMacSize when
  // authenticated).
  DatagramBuilder(std::span<std::byte> buffer, std::uint32_t session_id,
                  bool authenticated = false) noexcept;

  // Encodes a frame at the end of the datagram. Errors: kBufferTooSmall (the
  // frame does not fit; nothing is written), kTooManyFrames.
  template <typename Model>
  CodecError Append(std::uint64_t sequence, const Model& model) noexcept {
    if (frame_count_ == UINT16_MAX) return CodecError::kTooManyFrames;
    const Result<std::size_t> written = EncodeFrame(
        sequence, model, buffer_.subspan(size_, frames_limit_ - size_));
    if (!written.ok()) return written.error();
    Commit(*written);
    return CodecError::kOk;
  }

  // Copies one whole, already encoded frame. Errors: kBufferTooSmall,
  // kTooManyFrames, and the FrameView::Parse errors if `frame` is not exactly
  // one whole frame of a known kind.
  CodecError AppendFrame(std::span<const std::byte> frame) noexcept;

  // Whether a frame of `frame_size` bytes still fits (leaving room for the
  // trailer of an authenticated datagram).
  [[nodiscard]] bool Fits(std::size_t frame_size) const noexcept {
    return frame_size <= frames_limit_ - size_ && frame_count_ < UINT16_MAX;
  }
  [[nodiscard]] std::size_t frame_count() const noexcept {
    return frame_count_;
  }
  [[nodiscard]] bool empty() const noexcept { return frame_count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // The datagram so far (header and frames): for an authenticated datagram,
  // the bytes its MAC covers.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return buffer_.first(size_);
  }
  [[nodiscard]] bool authenticated() const noexcept {
    return frames_limit_ != buffer_.size();
  }
  // Writes `mac` as the trailer after the frames and returns the whole
  // datagram (header, frames, trailer). Only for an authenticated builder;
  // appending after Seal is allowed, and Seal must then be called again.
  std::span<const std::byte> Seal(
      std::span<const std::byte, kMacSize> mac) noexcept;
  // Starts a new datagram in the same buffer.
  void Reset(std::uint32_t session_id) noexcept;

 private:
  void Commit(std::size_t frame_size) noexcept;

  std::span<std::byte> buffer_;
  std::size_t frames_limit_ = 0;  // buffer_.size(), less the trailer's room
  std::size_t size_ = 0;
  std::uint16_t frame_count_ = 0;
};

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_DATAGRAM_H_
