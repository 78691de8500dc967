// Deterministic random command frames; see random_commands.h.
#include "codec/testing/random_commands.h"

#include <limits>

namespace orderwire::codec::testing {
namespace {

constexpr std::array<Kind, 5> kCommandKinds = {
    Kind::kNewLimit, Kind::kNewMarket, Kind::kCancelByOrder,
    Kind::kCancelByClient, Kind::kReplace};

template <typename T>
T Extreme(SplitMix64& rng) {
  using U = internal::WireUnsigned<T>;
  constexpr U kMax = std::numeric_limits<U>::max();
  switch (rng.Below(6)) {
    case 0:
      return static_cast<T>(U{0});
    case 1:
      return static_cast<T>(U{1});
    case 2:
      return static_cast<T>(static_cast<U>(kMax - 1));
    case 3:
      return static_cast<T>(kMax);
    case 4:
      return static_cast<T>(static_cast<U>(kMax / 2 + 1));  // sign bit
    default:
      return static_cast<T>(static_cast<U>(rng.Next()));
  }
}

}  // namespace

Command RandomCommand(SplitMix64& rng, Kind kind, bool extreme_values) {
  Command c{};
  c.kind = kind;
  if (extreme_values) {
    c.sequence = Extreme<std::uint64_t>(rng);
  } else {
    c.sequence = 1 + rng.Below(1'000'000);
  }
  const KindInfo& info = Info(kind);
  for (std::size_t s = 0; s < kCommandSlotCount; ++s) {
    if (info.recipe.mask[s] == 0) continue;
    const auto slot = static_cast<CommandSlot>(s + 1);
    std::uint64_t v = 0;
    if (extreme_values) {
      switch (slot) {
        case CommandSlot::kInstrumentId:
          v = Extreme<std::uint32_t>(rng);
          break;
        case CommandSlot::kSide:
        case CommandSlot::kTimeInForce:
          v = Extreme<std::uint8_t>(rng);
          break;
        default:
          v = Extreme<std::uint64_t>(rng);
          break;
      }
    } else {
      switch (slot) {
        case CommandSlot::kAccountId:
          v = 1 + rng.Below(64);
          break;
        case CommandSlot::kClientOrderId:
        case CommandSlot::kOrderId:
          v = 1 + rng.Below(1'000'000'000);
          break;
        case CommandSlot::kInstrumentId:
          v = 1 + rng.Below(8);
          break;
        case CommandSlot::kSide:
          v = 1 + rng.Below(2);
          break;
        case CommandSlot::kTimeInForce:
          v = 1 + rng.Below(4);
          break;
        case CommandSlot::kPrice:
          v = 99'950 + rng.Below(100);
          break;
        case CommandSlot::kQuantity:
          v = 1 + rng.Below(100);
          break;
        case CommandSlot::kNone:
          break;
      }
    }
    c.SetSlot(slot, v);
  }
  return c;
}

Kind RandomKind(SplitMix64& rng, const CommandMix& mix) {
  std::uint64_t roll = rng.Below(100);
  for (std::size_t i = 0; i < kCommandKinds.size(); ++i) {
    if (roll < mix.percent[i]) return kCommandKinds[i];
    roll -= mix.percent[i];
  }
  return kCommandKinds.back();
}

std::vector<std::byte> EncodeRandomStream(std::size_t count, std::uint64_t seed,
                                          const CommandMix& mix,
                                          std::vector<Kind>* kinds) {
  SplitMix64 rng(seed);
  std::vector<std::byte> out(count * kMaxFrameSize);
  std::size_t pos = 0;
  if (kinds != nullptr) kinds->clear();
  for (std::size_t i = 0; i < count; ++i) {
    Command c = RandomCommand(rng, RandomKind(rng, mix), false);
    c.sequence = i + 1;
    const Result<std::size_t> written =
        EncodeCommand(c, std::span<std::byte>(out).subspan(pos));
    pos += *written;
    if (kinds != nullptr) kinds->push_back(c.kind);
  }
  out.resize(pos);
  return out;
}

}  // namespace orderwire::codec::testing
