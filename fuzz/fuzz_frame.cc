// Fuzz target: frame decoding on arbitrary bytes.
//
// FrameView::Parse, View<Model>::Parse, DecodeCommand and DecodeCommands must
// agree with each other and with the kind table, never read past the input
// (libFuzzer hands over a heap block of exactly `size` bytes, so AddressSan-
// itizer sees any overread), and a frame that parses must re-encode through
// its model, and through the normalized Command for a command, to exactly its
// bytes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "codec/command.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "fuzz/fuzz_check.h"

namespace orderwire::codec {
namespace {

bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// One frame at the start of `bytes`: every decoder's view of it.
void CheckFirstFrame(std::span<const std::byte> bytes) {
  const Result<FrameView> frame = FrameView::Parse(bytes);
  Command command;
  const Result<std::size_t> decoded = DecodeCommand(bytes, command);

  if (!frame.ok()) {
    FUZZ_CHECK(frame.error() == CodecError::kTruncated ||
               frame.error() == CodecError::kUnknownKind);
    FUZZ_CHECK(!decoded.ok());
    if (frame.error() == CodecError::kUnknownKind) {
      FUZZ_CHECK(decoded.error() == CodecError::kUnknownKind);
    } else {
      FUZZ_CHECK(decoded.error() == CodecError::kTruncated ||
                 decoded.error() == CodecError::kNotACommand);
    }
    return;
  }

  const KindInfo& info = frame->info();
  FUZZ_CHECK(info.frame_size != 0);
  FUZZ_CHECK(frame->size() == info.frame_size);
  FUZZ_CHECK(frame->size() <= bytes.size());
  FUZZ_CHECK(frame->bytes().data() == bytes.data());
  const std::span<const std::byte> frame_bytes = bytes.first(frame->size());

  // The typed view, its model, and the model encoded again.
  int visits = 0;
  VisitFrame(*frame, [&](auto view) {
    ++visits;
    using Model = std::remove_cvref_t<decltype(view.ToModel())>;
    const Result<View<Model>> typed = View<Model>::Parse(bytes);
    FUZZ_CHECK(typed.ok());
    FUZZ_CHECK(typed->sequence() == frame->sequence());
    const Model model = typed->ToModel();
    std::array<std::byte, kMaxFrameSize> out{};
    const Result<std::size_t> written =
        EncodeFrame(frame->sequence(), model, out);
    FUZZ_CHECK(written.ok() && *written == frame->size());
    FUZZ_CHECK(SameBytes(std::span(out).first(*written), frame_bytes));
    if constexpr (kIsCommand<Model>) {
      FUZZ_CHECK(decoded.ok() && *decoded == frame->size());
      FUZZ_CHECK(command.kind == frame->kind());
      FUZZ_CHECK(command.sequence == frame->sequence());
      // As<Model> gives the same model; From(As) gives the same Command.
      const Model again = command.As<Model>();
      std::array<std::byte, kMaxFrameSize> via_as{};
      FUZZ_CHECK(EncodeFrame(command.sequence, again, via_as).ok());
      FUZZ_CHECK(SameBytes(std::span(via_as).first(*written), frame_bytes));
      std::array<std::byte, kMaxFrameSize> via_command{};
      const Result<std::size_t> encoded = EncodeCommand(command, via_command);
      FUZZ_CHECK(encoded.ok() && *encoded == frame->size());
      FUZZ_CHECK(
          SameBytes(std::span(via_command).first(*encoded), frame_bytes));
      const Command from = Command::From(command.sequence, model);
      FUZZ_CHECK(from.account_id == command.account_id &&
                 from.client_order_id == command.client_order_id &&
                 from.order_id == command.order_id &&
                 from.price == command.price &&
                 from.quantity == command.quantity &&
                 from.instrument_id == command.instrument_id &&
                 from.side == command.side &&
                 from.time_in_force == command.time_in_force);
    } else {
      FUZZ_CHECK(!decoded.ok() && decoded.error() == CodecError::kNotACommand);
    }
  });
  FUZZ_CHECK(visits == 1);
}

// DecodeCommands over the whole input agrees with DecodeCommand frame by
// frame, and each decoded command encodes back to its input bytes.
void CheckStream(std::span<const std::byte> bytes) {
  std::array<Command, 32> out;
  const DecodeBatch batch = DecodeCommands(bytes, out);
  FUZZ_CHECK(batch.frames <= out.size());
  FUZZ_CHECK(batch.bytes <= bytes.size());
  if (batch.error == CodecError::kOk && batch.frames < out.size()) {
    FUZZ_CHECK(batch.bytes == bytes.size());
  }
  std::size_t pos = 0;
  for (std::size_t i = 0; i < batch.frames; ++i) {
    Command one;
    const Result<std::size_t> size = DecodeCommand(bytes.subspan(pos), one);
    FUZZ_CHECK(size.ok());
    FUZZ_CHECK(one.kind == out[i].kind && one.sequence == out[i].sequence);
    std::array<std::byte, kMaxFrameSize> encoded{};
    const Result<std::size_t> written = EncodeCommand(out[i], encoded);
    FUZZ_CHECK(written.ok() && *written == *size);
    FUZZ_CHECK(SameBytes(std::span(encoded).first(*written),
                         bytes.subspan(pos, *size)));
    pos += *size;
  }
  FUZZ_CHECK(pos == batch.bytes);
  if (batch.error != CodecError::kOk) {
    Command one;
    const Result<std::size_t> size = DecodeCommand(bytes.subspan(pos), one);
    FUZZ_CHECK(!size.ok() && size.error() == batch.error);
  }
}

}  // namespace
}  // namespace orderwire::codec

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::span<const std::byte> bytes(
      reinterpret_cast<const std::byte*>(data), size);
  orderwire::codec::CheckFirstFrame(bytes);
  orderwire::codec::CheckStream(bytes);
  return 0;
}
