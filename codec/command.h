// Command: one trivially-copyable value that holds any of the command kinds,
// and the branch-free decoder that produces it from frame bytes.
//
// The engine consumes Commands. Rather than a tagged union of the models,
// a Command is the normalized superset of their fields: every command has an
// account; the other fields are present where the kind has them and zero
// where it does not (see the comments). Because every kind fills the same
// fields, one straight-line decoder serves all kinds (kind_table.h explains
// the recipes), and the engine reads a field without first asking the kind.
//
// Replace's `new_client_order_id` is carried in `client_order_id`;
// MassCancel's and Goodbye's `request_id` in `client_order_id`, MassCancel's
// `side` (a MassCancelSide: 3 Both) in `side` and its `scope` in
// `time_in_force`.
#ifndef ORDERWIRE_CODEC_COMMAND_H_
#define ORDERWIRE_CODEC_COMMAND_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "codec/error.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/result.h"
#include "codec/strong.h"
#include "codec/wire.h"

namespace orderwire::codec {

struct Command {
  std::uint64_t sequence;
  AccountId account_id;           // every kind
  ClientOrderId client_order_id;  // NewLimit, NewMarket, CancelByClient;
                                  // Replace: new_client_order_id;
                                  // MassCancel, Goodbye: request_id;
                                  // OrderStatusRequest
  OrderId order_id;               // CancelByOrder, Replace,
                                  // OrderStatusRequest
  Price price;                    // NewLimit, Replace
  Quantity quantity;              // NewLimit, NewMarket, Replace
  InstrumentId instrument_id;     // NewLimit, NewMarket, MassCancel
  Kind kind;
  Side side;                  // NewLimit, NewMarket; MassCancel: its side
  TimeInForce time_in_force;  // NewLimit; MassCancel: scope

  // The value of one normalized slot, widened to 64 bits.
  [[nodiscard]] constexpr std::uint64_t Slot(CommandSlot slot) const noexcept;
  // Writes one normalized slot (narrowed to the slot's width).
  constexpr void SetSlot(CommandSlot slot, std::uint64_t value) noexcept;

  // The command as its kind's Model. Precondition: kind matches Model.
  template <typename Model>
  [[nodiscard]] constexpr Model As() const noexcept;

  // A Command holding `model` under `sequence`.
  template <typename Model>
  [[nodiscard]] static constexpr Command From(std::uint64_t sequence,
                                              const Model& model) noexcept;
};

static_assert(std::is_trivially_copyable_v<Command>);
static_assert(std::is_standard_layout_v<Command>);
// The strong types are their integers byte for byte (strong.h), so the
// decoders' recipes and byte permutation (command.cc) see the same layout.
static_assert(sizeof(Command) == 56);

namespace internal {

// The integer a slot's type is carried as: the Rep of a strong type, the
// underlying type of an enum, else the type itself.
template <typename T>
struct SlotRep : std::type_identity<T> {};
template <typename Tag, typename Rep>
struct SlotRep<Strong<Tag, Rep>> : std::type_identity<Rep> {};

// One slot of `frame` as a T (a strong type is built from its integer: the
// same load and mask, nothing more).
template <CommandSlot kSlot, typename T>
[[nodiscard]] inline T LoadSlot(const std::byte* frame,
                                const CommandRecipe& recipe) noexcept {
  constexpr auto s = static_cast<std::size_t>(kSlot) - 1;
  using R = typename SlotRep<T>::type;
  using U = std::make_unsigned_t<typename std::conditional_t<
      std::is_enum_v<R>, std::underlying_type<R>, std::type_identity<R>>::type>;
  const U raw = LoadLE<U>(frame + recipe.offset[s]);
  return T(static_cast<R>(raw & static_cast<U>(recipe.mask[s])));
}

// Why the bytes at `bytes` are not a command frame. Cold.
[[nodiscard]] inline CodecError DiagnoseCommand(
    std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < kFrameHeaderSize) return CodecError::kTruncated;
  const KindInfo& info = kKindTable[LoadLE<std::uint8_t>(bytes.data() + 8)];
  if (info.kind_class == KindClass::kUnknown) return CodecError::kUnknownKind;
  if (info.kind_class != KindClass::kCommand) return CodecError::kNotACommand;
  return CodecError::kTruncated;
}

}  // namespace internal

// Decodes the command frame at the start of `bytes` into `out` and returns
// its size, so the caller can step to the next frame. Errors: kTruncated,
// kUnknownKind, kNotACommand (then `out` is unspecified). Hot path: no
// allocation, no exception, and no branch on the kind: ~20 loads and stores
// whatever the kind. Never reads past `bytes`.
[[nodiscard]] inline Result<std::size_t> DecodeCommand(
    std::span<const std::byte> bytes, Command& out) noexcept {
  const std::byte* const p = bytes.data();
  if (bytes.size() < kFrameHeaderSize) [[unlikely]] {
    return CodecError::kTruncated;
  }
  const std::uint8_t kind = LoadLE<std::uint8_t>(p + kKindOffset);
  const std::size_t size = kCommandFrameSize[kind];
  if (size == 0 || bytes.size() < size) [[unlikely]] {
    return internal::DiagnoseCommand(bytes);
  }
  const CommandRecipe& r = kKindTable[kind].recipe;
  using internal::LoadSlot;
  out.sequence = LoadLE<std::uint64_t>(p + kSequenceOffset);
  out.account_id = LoadSlot<CommandSlot::kAccountId, AccountId>(p, r);
  out.client_order_id =
      LoadSlot<CommandSlot::kClientOrderId, ClientOrderId>(p, r);
  out.order_id = LoadSlot<CommandSlot::kOrderId, OrderId>(p, r);
  out.price = LoadSlot<CommandSlot::kPrice, Price>(p, r);
  out.quantity = LoadSlot<CommandSlot::kQuantity, Quantity>(p, r);
  out.instrument_id = LoadSlot<CommandSlot::kInstrumentId, InstrumentId>(p, r);
  out.kind = static_cast<Kind>(kind);
  out.side = LoadSlot<CommandSlot::kSide, Side>(p, r);
  out.time_in_force = LoadSlot<CommandSlot::kTimeInForce, TimeInForce>(p, r);
  return size;
}

// What DecodeCommands did: how many frames it decoded, how many bytes they
// took, and why it stopped early (kOk if it stopped because `bytes` ended
// exactly on a frame boundary or `out` is full).
struct DecodeBatch {
  std::size_t frames;
  std::size_t bytes;
  CodecError error;
};

// Decodes consecutive command frames from the start of `bytes` into `out`,
// until `out` is full, `bytes` is used up, or a frame is bad (then `error`
// says why and `bytes` is that frame's offset). Commands in `out` after the
// decoded ones may be overwritten. Hot path: no allocation, no branch on the
// kind; two frames per step of the length chain, and AVX-512 VBMI where the
// CPU has it (chosen at run time; command.cc explains). Figures:
// docs/BENCHMARKS.md "Codec".
[[nodiscard]] DecodeBatch DecodeCommands(std::span<const std::byte> bytes,
                                         std::span<Command> out) noexcept;

// What EncodeCommands did: commands encoded, bytes written, and why it
// stopped early (kOk if every command was encoded).
struct EncodeBatch {
  std::size_t commands;
  std::size_t bytes;
  CodecError error;
};

// Encodes `commands` back to back at the start of `out`, stopping at the
// first that is not a command (kNotACommand) or does not fit
// (kBufferTooSmall; nothing of it is written). Hot path: no allocation; with
// AVX-512 VBMI one permutation and one masked store per command, no branch
// on the kind.
[[nodiscard]] EncodeBatch EncodeCommands(std::span<const Command> commands,
                                         std::span<std::byte> out) noexcept;

namespace internal {
// The two implementations behind DecodeCommands, exposed for tests, the
// differential fuzz target and benchmarks: the portable one (the pair step
// with the scalar body) and the AVX-512 VBMI one (the pair step with the
// VBMI body, prefetching ahead) where the CPU has it; elsewhere
// DecodeCommandsSimd is the portable one (HaveSimdDecoder says which).
// DecodeCommands picks at run time. All give the same DecodeBatch and the
// same first batch.frames Commands for any input; Commands after those may
// be overwritten.
[[nodiscard]] DecodeBatch DecodeCommandsScalar(std::span<const std::byte> bytes,
                                               std::span<Command> out) noexcept;
[[nodiscard]] DecodeBatch DecodeCommandsSimd(std::span<const std::byte> bytes,
                                             std::span<Command> out) noexcept;
[[nodiscard]] bool HaveSimdDecoder() noexcept;
// Baselines for codec_bench, also checked by the differential tests: the pair
// step without prefetch (with the VBMI body where the CPU has it), and the
// same with the scalar body whatever the CPU.
[[nodiscard]] DecodeBatch DecodeCommandsPairStep(
    std::span<const std::byte> bytes, std::span<Command> out) noexcept;
[[nodiscard]] DecodeBatch DecodeCommandsPairStepScalar(
    std::span<const std::byte> bytes, std::span<Command> out) noexcept;
// EncodeCommand without the AVX-512 path (for tests).
[[nodiscard]] Result<std::size_t> EncodeCommandPortable(
    const Command& command, std::span<std::byte> out) noexcept;
}  // namespace internal

// Encodes `command` as a frame of its kind into `out` (see EncodeFrame).
// Errors: kBufferTooSmall, kNotACommand. Hot path: with AVX-512 VBMI one
// byte permutation (the inverse of the decoder's) and one masked store,
// whatever the kind; elsewhere a switch on the kind.
[[nodiscard]] Result<std::size_t> EncodeCommand(
    const Command& command, std::span<std::byte> out) noexcept;

// ---------------------------------------------------------------------------
// Implementation.

constexpr std::uint64_t Command::Slot(CommandSlot slot) const noexcept {
  switch (slot) {
    case CommandSlot::kNone:
      return 0;
    case CommandSlot::kAccountId:
      return account_id.value();
    case CommandSlot::kClientOrderId:
      return client_order_id.value();
    case CommandSlot::kOrderId:
      return order_id.value();
    case CommandSlot::kInstrumentId:
      return instrument_id.value();
    case CommandSlot::kSide:
      return static_cast<std::uint8_t>(side);
    case CommandSlot::kTimeInForce:
      return static_cast<std::uint8_t>(time_in_force);
    case CommandSlot::kPrice:
      return static_cast<std::uint64_t>(price.value());
    case CommandSlot::kQuantity:
      return quantity.value();
  }
  return 0;
}

constexpr void Command::SetSlot(CommandSlot slot, std::uint64_t v) noexcept {
  switch (slot) {
    case CommandSlot::kNone:
      break;
    case CommandSlot::kAccountId:
      account_id = AccountId(v);
      break;
    case CommandSlot::kClientOrderId:
      client_order_id = ClientOrderId(v);
      break;
    case CommandSlot::kOrderId:
      order_id = OrderId(v);
      break;
    case CommandSlot::kInstrumentId:
      instrument_id = InstrumentId(static_cast<std::uint32_t>(v));
      break;
    case CommandSlot::kSide:
      side = static_cast<Side>(v);
      break;
    case CommandSlot::kTimeInForce:
      time_in_force = static_cast<TimeInForce>(v);
      break;
    case CommandSlot::kPrice:
      price = Price(static_cast<std::int64_t>(v));
      break;
    case CommandSlot::kQuantity:
      quantity = Quantity(v);
      break;
  }
}

template <typename Model>
constexpr Model Command::As() const noexcept {
  static_assert(kIsCommand<Model>);
  Model model{};
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    model.*field.member = static_cast<T>(Slot(field.slot));
  });
  return model;
}

template <typename Model>
constexpr Command Command::From(std::uint64_t sequence,
                                const Model& model) noexcept {
  static_assert(kIsCommand<Model>);
  Command command{};
  command.sequence = sequence;
  command.kind = MessageTraits<Model>::kKind;
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    using U = internal::WireUnsigned<T>;
    command.SetSlot(field.slot, static_cast<U>(model.*field.member));
  });
  return command;
}

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_COMMAND_H_
