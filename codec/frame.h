// Views over frame bytes, and the frame encoder.
//
// A view is a pointer into bytes the caller owns: nothing is copied and
// nothing is allocated. It can only be made by a Parse function, which checks
// the length once against the kind-dispatch table; after that every accessor
// is an unchecked little-endian load from a constant offset derived from the
// layout. A view is valid only as long as the bytes it points at.
//
//   auto frame = FrameView::Parse(bytes);        // any known kind
//   if (!frame.ok()) return frame.error();
//   auto limit = View<NewLimit>::Parse(bytes);   // this kind only
//   std::int64_t price = limit->Get<&NewLimit::price>();
//
// The encoder writes a frame into a caller-owned span and returns the number
// of bytes written, or kBufferTooSmall; it never allocates.
#ifndef ORDERWIRE_CODEC_FRAME_H_
#define ORDERWIRE_CODEC_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/error.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/result.h"
#include "codec/wire.h"

namespace orderwire::codec {

// A frame of any known kind. Covers exactly the frame's bytes.
class FrameView {
 public:
  // Checks that `bytes` starts with a whole frame of a known kind. Bytes after
  // the frame are ignored (size() says where the next frame starts). Errors:
  // kTruncated, kUnknownKind. Hot path, O(1), never reads past `bytes`.
  [[nodiscard]] static Result<FrameView> Parse(
      std::span<const std::byte> bytes) noexcept {
    if (bytes.size() < kFrameHeaderSize) return CodecError::kTruncated;
    const KindInfo& info =
        kKindTable[LoadLE<std::uint8_t>(bytes.data() + kKindOffset)];
    if (info.frame_size == 0) return CodecError::kUnknownKind;
    if (bytes.size() < info.frame_size) return CodecError::kTruncated;
    return FrameView(bytes.data(), info.frame_size);
  }

  [[nodiscard]] std::uint64_t sequence() const noexcept {
    return LoadLE<std::uint64_t>(data_ + kSequenceOffset);
  }
  [[nodiscard]] Kind kind() const noexcept {
    return LoadLE<Kind>(data_ + kKindOffset);
  }
  [[nodiscard]] const KindInfo& info() const noexcept { return Info(kind()); }
  [[nodiscard]] bool is_command() const noexcept {
    return info().kind_class == KindClass::kCommand;
  }
  // A frame of the command direction: a command or a Heartbeat.
  [[nodiscard]] bool to_service() const noexcept {
    return info().kind_class == KindClass::kCommand ||
           info().kind_class == KindClass::kClientControl;
  }
  // The whole frame, header included: what is journaled and sent verbatim.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, size_};
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  FrameView(const std::byte* data, std::uint32_t size) noexcept
      : data_(data), size_(size) {}

  const std::byte* data_;
  std::uint32_t size_;
};

// A frame of one kind, with typed access to its fields.
template <typename Model>
class View {
 public:
  static constexpr Kind kKind = MessageTraits<Model>::kKind;
  static constexpr std::size_t kSize = kFrameSize<Model>;

  // Checks that `bytes` starts with a whole frame of this kind. Errors:
  // kTruncated, kUnknownKind, kWrongKind. Hot path, O(1).
  [[nodiscard]] static Result<View> Parse(
      std::span<const std::byte> bytes) noexcept {
    const Result<FrameView> frame = FrameView::Parse(bytes);
    if (!frame.ok()) return frame.error();
    return FromFrame(*frame);
  }

  // A typed view of an already parsed frame. Error: kWrongKind.
  [[nodiscard]] static Result<View> FromFrame(FrameView frame) noexcept {
    if (frame.kind() != kKind) return CodecError::kWrongKind;
    return View(frame.bytes().data());
  }

  [[nodiscard]] std::uint64_t sequence() const noexcept {
    return LoadLE<std::uint64_t>(data_ + kSequenceOffset);
  }

  // Reads the field carried by `Member` in place, e.g. Get<&NewLimit::price>.
  template <auto Member>
  [[nodiscard]] auto Get() const noexcept {
    using T =
        typename internal::MemberPointerTraits<decltype(Member)>::ValueType;
    return LoadLE<T>(data_ + FrameOffsetOf<Member>());
  }

  // Copies every field into a Model value.
  [[nodiscard]] Model ToModel() const noexcept {
    Model model{};
    MessageTraits<Model>::kLayout.ForEach(
        [&](const auto& field, std::size_t offset) {
          using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
          model.*field.member = LoadLE<T>(data_ + kFrameHeaderSize + offset);
        });
    return model;
  }

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {data_, kSize};
  }

 private:
  explicit View(const std::byte* data) noexcept : data_(data) {}

  const std::byte* data_;
};

// Writes the frame (sequence, kind, body of `model`) at the start of `out`.
// Returns the frame size, or kBufferTooSmall (and writes nothing) if `out` is
// shorter. Hot path: no allocation, one store per field; always inlined, so
// that a model built in the call goes from registers straight into `out`.
template <typename Model>
[[nodiscard, gnu::always_inline]] inline Result<std::size_t> EncodeFrame(
    std::uint64_t sequence, const Model& model,
    std::span<std::byte> out) noexcept {
  constexpr std::size_t kSize = kFrameSize<Model>;
  if (out.size() < kSize) return CodecError::kBufferTooSmall;
  std::byte* const dst = out.data();
  StoreLE(dst + kSequenceOffset, sequence);
  StoreLE(dst + kKindOffset, MessageTraits<Model>::kKind);
  MessageTraits<Model>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        StoreLE(dst + kFrameHeaderSize + offset, model.*field.member);
      });
  return kSize;
}

// Calls `fn(View<Model>)` with the typed view of `frame`'s kind. Cold path
// (one branch per kind): for text forms, tools and tests, not for decoding
// commands in bulk (see command.h).
template <typename Fn>
void VisitFrame(FrameView frame, Fn&& fn) {
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if (frame.kind() == MessageTraits<Model>::kKind) {
      fn(*View<Model>::FromFrame(frame));
    }
  });
}

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_FRAME_H_
