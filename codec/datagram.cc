// Datagram parsing and building; see datagram.h.
#include "codec/datagram.h"

#include <cstring>

namespace orderwire::codec {
namespace {

CodecError Fail(CodecError error, std::size_t offset,
                std::size_t* error_offset) noexcept {
  if (error_offset != nullptr) *error_offset = offset;
  return error;
}

template <auto Member>
auto HeaderField(const std::byte* data) noexcept {
  using T = typename internal::MemberPointerTraits<decltype(Member)>::ValueType;
  return LoadLE<T>(data + DatagramOffsetOf<Member>());
}

template <auto Member, typename T>
void SetHeaderField(std::byte* data, T value) noexcept {
  using F = typename internal::MemberPointerTraits<decltype(Member)>::ValueType;
  StoreLE<F>(data + DatagramOffsetOf<Member>(), static_cast<F>(value));
}

}  // namespace

Result<DatagramView> DatagramView::Parse(std::span<const std::byte> bytes,
                                         FrameFilter filter,
                                         std::size_t* error_offset) noexcept {
  const std::byte* const data = bytes.data();
  const std::size_t size = bytes.size();
  if (size > kMaxDatagramSize) {
    return Fail(CodecError::kOversize, kMaxDatagramSize, error_offset);
  }
  if (size < kDatagramHeaderSize) {
    return Fail(CodecError::kTruncated, size, error_offset);
  }
  if (HeaderField<&DatagramHeader::magic>(data) != kDatagramMagic) {
    return Fail(CodecError::kBadMagic,
                DatagramOffsetOf<&DatagramHeader::magic>(), error_offset);
  }
  if (HeaderField<&DatagramHeader::version>(data) != kProtocolVersion) {
    return Fail(CodecError::kBadVersion,
                DatagramOffsetOf<&DatagramHeader::version>(), error_offset);
  }
  const std::uint8_t flags = HeaderField<&DatagramHeader::flags>(data);
  if ((flags & ~kKnownFlags) != 0) {
    return Fail(CodecError::kBadFlags,
                DatagramOffsetOf<&DatagramHeader::flags>(), error_offset);
  }
  if (HeaderField<&DatagramHeader::reserved>(data) != 0) {
    return Fail(CodecError::kBadReserved,
                DatagramOffsetOf<&DatagramHeader::reserved>(), error_offset);
  }
  const std::size_t count = HeaderField<&DatagramHeader::frame_count>(data);
  if (count == 0) {
    return Fail(CodecError::kZeroFrameCount,
                DatagramOffsetOf<&DatagramHeader::frame_count>(), error_offset);
  }
  // With the Authenticated flag, the frames end where the trailer begins.
  std::size_t frames_end = size;
  if ((flags & kFlagAuthenticated) != 0) {
    if (size < kDatagramHeaderSize + kMacSize) {
      return Fail(CodecError::kTruncated, size, error_offset);
    }
    frames_end = size - kMacSize;
  }
  const std::span<const std::byte> framed = bytes.first(frames_end);
  std::size_t pos = kDatagramHeaderSize;
  for (std::size_t i = 0; i < count; ++i) {
    if (pos == frames_end) {
      return Fail(CodecError::kCountMismatch, pos, error_offset);
    }
    const Result<FrameView> frame = FrameView::Parse(framed.subspan(pos));
    if (!frame.ok()) return Fail(frame.error(), pos, error_offset);
    const KindClass kind_class = frame->info().kind_class;
    if (filter == FrameFilter::kCommands && kind_class != KindClass::kCommand &&
        kind_class != KindClass::kClientControl) {
      return Fail(CodecError::kNotACommand, pos, error_offset);
    }
    if (filter == FrameFilter::kReports && kind_class != KindClass::kReport) {
      return Fail(CodecError::kNotAReport, pos, error_offset);
    }
    pos += frame->size();
  }
  if (pos != frames_end) {
    return Fail(CodecError::kTrailingBytes, pos, error_offset);
  }
  return DatagramView(data, static_cast<std::uint32_t>(size),
                      static_cast<std::uint32_t>(frames_end));
}

DatagramHeader DatagramView::header() const noexcept {
  DatagramHeader header{};
  MessageTraits<DatagramHeader>::kLayout.ForEach(
      [&](const auto& field, std::size_t offset) {
        using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
        header.*field.member = LoadLE<T>(data_ + offset);
      });
  return header;
}

DatagramBuilder::DatagramBuilder(std::span<std::byte> buffer,
                                 std::uint32_t session_id,
                                 bool authenticated) noexcept
    : buffer_(buffer.first(std::min(buffer.size(), kMaxDatagramSize))),
      frames_limit_(buffer_.size() - (authenticated ? kMacSize : 0)) {
  Reset(session_id);
}

std::span<const std::byte> DatagramBuilder::Seal(
    std::span<const std::byte, kMacSize> mac) noexcept {
  std::memcpy(buffer_.data() + size_, mac.data(), kMacSize);
  return buffer_.first(size_ + kMacSize);
}

void DatagramBuilder::Reset(std::uint32_t session_id) noexcept {
  std::byte* const data = buffer_.data();
  SetHeaderField<&DatagramHeader::magic>(data, kDatagramMagic);
  SetHeaderField<&DatagramHeader::version>(data, kProtocolVersion);
  SetHeaderField<&DatagramHeader::flags>(
      data, authenticated() ? kFlagAuthenticated : 0);
  SetHeaderField<&DatagramHeader::session_id>(data, session_id);
  SetHeaderField<&DatagramHeader::frame_count>(data, 0);
  SetHeaderField<&DatagramHeader::reserved>(data, 0);
  size_ = kDatagramHeaderSize;
  frame_count_ = 0;
}

CodecError DatagramBuilder::AppendFrame(
    std::span<const std::byte> frame) noexcept {
  const Result<FrameView> view = FrameView::Parse(frame);
  if (!view.ok()) return view.error();
  if (view->size() != frame.size()) return CodecError::kTrailingBytes;
  if (frame_count_ == UINT16_MAX) return CodecError::kTooManyFrames;
  if (frame.size() > frames_limit_ - size_) {
    return CodecError::kBufferTooSmall;
  }
  std::memcpy(buffer_.data() + size_, frame.data(), frame.size());
  Commit(frame.size());
  return CodecError::kOk;
}

void DatagramBuilder::Commit(std::size_t frame_size) noexcept {
  size_ += frame_size;
  ++frame_count_;
  SetHeaderField<&DatagramHeader::frame_count>(buffer_.data(), frame_count_);
}

}  // namespace orderwire::codec
