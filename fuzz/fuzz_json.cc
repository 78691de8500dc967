// Fuzz target: the JSON Lines reader (jsonl::JsonToFrame, simdjson's
// on-demand parser with the format's rules) on arbitrary text.
//
// JsonToFrame must never crash or read past the text (ASan: the text is
// libFuzzer's exact-size buffer; the reader copies it into a padded buffer
// of its own for simdjson). When it accepts a line the frame it wrote must
// parse, and FrameToJson of that frame (the canonical text) must read back
// (JsonToFrame) to the same bytes and print the same JSON again. When it
// rejects a line the status is InvalidArgument with a message that names a
// column or a key (the output buffer always has room for any frame, so
// OutOfRange cannot happen).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "fuzz/fuzz_check.h"
#include "jsonl/jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  namespace codec = orderwire::codec;
  namespace jsonl = orderwire::jsonl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::array<std::byte, codec::kMaxFrameSize> out{};
  const absl::StatusOr<std::size_t> written = jsonl::JsonToFrame(text, out);
  if (!written.ok()) {
    FUZZ_CHECK(written.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(!written.status().message().empty());
    const std::string message(written.status().message());
    FUZZ_CHECK(message.starts_with("column ") ||
               message.find('"') != std::string::npos);
    return 0;
  }
  FUZZ_CHECK(*written <= out.size());
  const std::span<const std::byte> frame_bytes = std::span(out).first(*written);
  const auto frame = codec::FrameView::Parse(frame_bytes);
  FUZZ_CHECK(frame.ok());
  FUZZ_CHECK(frame->size() == *written);

  const std::string json = jsonl::FrameToJson(*frame);
  std::array<std::byte, codec::kMaxFrameSize> again{};
  const absl::StatusOr<std::size_t> rewritten = jsonl::JsonToFrame(json, again);
  FUZZ_CHECK(rewritten.ok());
  FUZZ_CHECK(*rewritten == *written);
  FUZZ_CHECK(std::memcmp(again.data(), out.data(), *written) == 0);
  const auto frame_again =
      codec::FrameView::Parse(std::span(again).first(*rewritten));
  FUZZ_CHECK(frame_again.ok());
  FUZZ_CHECK(jsonl::FrameToJson(*frame_again) == json);
  return 0;
}
