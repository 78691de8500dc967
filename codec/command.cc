// Command encoding; see command.h.
#include "codec/command.h"

namespace orderwire::codec {

DecodeBatch DecodeCommands(std::span<const std::byte> bytes,
                           std::span<Command> out) noexcept {
  DecodeBatch batch{0, 0, CodecError::kOk};
  while (batch.frames < out.size() && batch.bytes < bytes.size()) {
    const Result<std::size_t> size =
        DecodeCommand(bytes.subspan(batch.bytes), out[batch.frames]);
    if (!size.ok()) {
      batch.error = size.error();
      break;
    }
    batch.bytes += *size;
    ++batch.frames;
  }
  return batch;
}

Result<std::size_t> EncodeCommand(const Command& command,
                                  std::span<std::byte> out) noexcept {
  Result<std::size_t> result = CodecError::kNotACommand;
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if constexpr (kIsCommand<Model>) {
      if (command.kind == MessageTraits<Model>::kKind) {
        result = EncodeFrame(command.sequence, command.As<Model>(), out);
      }
    }
  });
  return result;
}

}  // namespace orderwire::codec
