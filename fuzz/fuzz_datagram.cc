// Fuzz target: datagram parsing on arbitrary bytes.
//
// DatagramView::Parse is run with each FrameFilter. A datagram that parses
// must hold exactly frame_count frames whose sizes add up to its length, of
// the kinds its filter allows; rebuilt frame by frame with
// DatagramBuilder::AppendFrame it must give back exactly its bytes. A
// filter never accepts what kAny rejects, and every rejection names an offset
// inside the datagram (or the 1472-byte limit). With the Authenticated flag
// the last 16 bytes are the trailer: the frames end before it, and the
// rebuilt datagram (an authenticated builder, sealed with the same trailer)
// is again exactly its bytes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "fuzz/fuzz_check.h"

namespace orderwire::codec {
namespace {

struct Outcome {
  bool ok;
  CodecError error;
};

Outcome CheckWithFilter(std::span<const std::byte> bytes, FrameFilter filter) {
  std::size_t error_offset = SIZE_MAX;
  const Result<DatagramView> view =
      DatagramView::Parse(bytes, filter, &error_offset);
  if (!view.ok()) {
    FUZZ_CHECK(view.error() != CodecError::kOk);
    FUZZ_CHECK(error_offset != SIZE_MAX);
    if (view.error() == CodecError::kOversize) {
      FUZZ_CHECK(bytes.size() > kMaxDatagramSize);
      FUZZ_CHECK(error_offset == kMaxDatagramSize);
    } else {
      FUZZ_CHECK(error_offset <= bytes.size());
    }
    return {false, view.error()};
  }
  FUZZ_CHECK(error_offset == SIZE_MAX);  // untouched on success
  FUZZ_CHECK(bytes.size() <= kMaxDatagramSize);
  FUZZ_CHECK(view->bytes().data() == bytes.data());
  FUZZ_CHECK(view->bytes().size() == bytes.size());
  FUZZ_CHECK(view->frame_count() >= 1);
  FUZZ_CHECK(view->header().frame_count == view->frame_count());
  FUZZ_CHECK(view->header().session_id == view->session_id());

  const bool authenticated = view->authenticated();
  const std::size_t trailer = authenticated ? kMacSize : 0;
  FUZZ_CHECK(authenticated ==
             ((std::to_integer<unsigned>(bytes[3]) & kFlagAuthenticated) != 0));
  FUZZ_CHECK(view->mac().size() == trailer);
  FUZZ_CHECK(view->authenticated_bytes().size() + trailer == bytes.size());
  FUZZ_CHECK(view->mac().data() == bytes.data() + bytes.size() - trailer);
  std::array<std::byte, kMaxDatagramSize> buffer{};
  DatagramBuilder builder(buffer, view->session_id(), authenticated);
  std::size_t total = kDatagramHeaderSize;
  std::size_t frames = 0;
  for (auto it = view->begin(); it != view->end(); ++it) {
    const FrameView frame = *it;
    FUZZ_CHECK(it.OffsetFrom(bytes.data()) == total);
    FUZZ_CHECK(frame.size() == frame.info().frame_size);
    if (filter == FrameFilter::kCommands) FUZZ_CHECK(frame.to_service());
    if (filter == FrameFilter::kReports) FUZZ_CHECK(!frame.to_service());
    FUZZ_CHECK(builder.AppendFrame(frame.bytes()) == CodecError::kOk);
    total += frame.size();
    ++frames;
    FUZZ_CHECK(total + trailer <= bytes.size());
  }
  FUZZ_CHECK(total + trailer == bytes.size());
  FUZZ_CHECK(frames == view->frame_count());
  FUZZ_CHECK(builder.frame_count() == frames);
  FUZZ_CHECK(builder.size() + trailer == bytes.size());
  std::span<const std::byte> rebuilt = builder.bytes();
  if (authenticated) {
    rebuilt = builder.Seal(view->mac().first<kMacSize>());
  }
  FUZZ_CHECK(rebuilt.size() == bytes.size());
  FUZZ_CHECK(std::memcmp(rebuilt.data(), bytes.data(), bytes.size()) == 0);
  return {true, CodecError::kOk};
}

}  // namespace
}  // namespace orderwire::codec

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using orderwire::codec::CheckWithFilter;
  using orderwire::codec::CodecError;
  using orderwire::codec::FrameFilter;
  const std::span<const std::byte> bytes(
      reinterpret_cast<const std::byte*>(data), size);
  const auto any = CheckWithFilter(bytes, FrameFilter::kAny);
  const auto commands = CheckWithFilter(bytes, FrameFilter::kCommands);
  const auto reports = CheckWithFilter(bytes, FrameFilter::kReports);
  if (!any.ok) {
    // A filter only adds checks: the datagram still fails, for the same
    // reason or because the filter met a frame of the other class first.
    FUZZ_CHECK(!commands.ok && (commands.error == any.error ||
                                commands.error == CodecError::kNotACommand));
    FUZZ_CHECK(!reports.ok && (reports.error == any.error ||
                               reports.error == CodecError::kNotAReport));
  } else {
    FUZZ_CHECK(commands.ok || commands.error == CodecError::kNotACommand);
    FUZZ_CHECK(reports.ok || reports.error == CodecError::kNotAReport);
    FUZZ_CHECK(!(commands.ok && reports.ok));  // frame_count >= 1
  }
  return 0;
}
