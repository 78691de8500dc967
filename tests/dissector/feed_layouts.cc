// feed_layouts: prints, as one JSON object on stdout, what the market-data
// dissector test (md_dissector_test.py) checks tools/wireshark/orderwire_md.lua
// against, all derived from the one source of each fact:
//
//   * "header", "refused", "snapshot_request": the packet header and the two
//     bodies, from feed/packet.h's layouts;
//   * "kinds": every message kind of the feed kind table (feed/kind_table.h,
//     built from feed/messages.h): code, name, size, the packet types that
//     may carry it, and its fields after the kind byte, `timestamp` first
//     (name, offset in the message, width, signedness, enumeration);
//   * "message_header": the kind byte and timestamp every message starts
//     with;
//   * "enums": the MARKETDATA.md names of every enumeration value, from the
//     Name() functions of feed/types.h and codec/types.h;
//   * "causes": the check causes in feed/types.h's order (CheckCause);
//   * "limits": packet size limit, magic, version;
//   * "golden": the golden packets and messages of MARKETDATA-GOLDEN.md, from
//     tests/feed/golden.h.
//
// So the Lua dissector cannot drift from the C++ layouts unnoticed: the test
// compares every decoded field's name, position and width with this output.
// No input; exit status 0. Single-threaded; a test tool, not a library.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "codec/types.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "tests/feed/golden.h"

namespace {

using orderwire::feed::MessageTraits;

// The enumeration a field's type is, by the name the JSON gives it; "" for
// a plain integer.
template <typename T>
constexpr std::string_view EnumName() {
  namespace feed = orderwire::feed;
  if constexpr (std::is_same_v<T, orderwire::codec::Side>) return "side";
  if constexpr (std::is_same_v<T, feed::SystemEventCode>) return "event";
  if constexpr (std::is_same_v<T, feed::TradingState>) return "state";
  if constexpr (std::is_same_v<T, feed::RefusedReason>) return "reason";
  if constexpr (std::is_same_v<T, feed::PacketType>) return "type";
  if constexpr (std::is_same_v<T, feed::MessageKind>) return "kind";
  return "";
}

template <typename T>
constexpr bool IsSigned() {
  if constexpr (std::is_enum_v<T>) {
    return std::is_signed_v<std::underlying_type_t<T>>;
  } else {
    return std::is_signed_v<T>;
  }
}

// The fields of `layout` as a JSON array; offsets start at `base`.
template <typename Layout>
std::string Fields(const Layout& layout, std::size_t base) {
  std::string out = "[";
  bool first = true;
  layout.ForEach([&](const auto& field, std::size_t offset) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s{\"name\": \"%.*s\", \"offset\": %zu, \"size\": %zu, "
                  "\"signed\": %s, \"enum\": \"%.*s\"}",
                  first ? "" : ", ", static_cast<int>(field.name.size()),
                  field.name.data(), base + offset, sizeof(T),
                  IsSigned<T>() ? "true" : "false",
                  static_cast<int>(EnumName<T>().size()), EnumName<T>().data());
    out += line;
    first = false;
  });
  return out + "]";
}

// {"value": "name", ...} for every value 0..255 `name_of` names.
template <typename E, typename NameOf>
std::string Names(NameOf name_of) {
  std::string out = "{";
  bool first = true;
  for (int v = 0; v < 256; ++v) {
    std::string_view name = name_of(static_cast<E>(v));
    if (name.empty()) continue;
    out += std::string(first ? "" : ", ") + "\"" + std::to_string(v) +
           "\": \"" + std::string(name) + "\"";
    first = false;
  }
  return out + "}";
}

std::string Kinds() {
  namespace feed = orderwire::feed;
  std::string out = "[";
  bool first = true;
  feed::ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    using Traits = MessageTraits<Model>;
    const feed::KindInfo& info = feed::Info(Traits::kKind);
    out += std::string(first ? "" : ", ") +
           "{\"code\": " + std::to_string(static_cast<int>(Traits::kKind)) +
           ", \"name\": \"" + std::string(info.name) +
           "\", \"size\": " + std::to_string(info.size) + ", \"in_data\": " +
           ((info.carriers & feed::kInData) != 0 ? "true" : "false") +
           ", \"in_snapshot\": " +
           ((info.carriers & feed::kInSnapshot) != 0 ? "true" : "false") +
           ", \"fields\": " + Fields(Traits::kLayout, feed::kModelOffset) + "}";
    first = false;
  });
  return out + "]";
}

std::string Enums() {
  namespace feed = orderwire::feed;
  auto side = [](orderwire::codec::Side v) {
    return orderwire::codec::Name(v);
  };
  auto event = [](feed::SystemEventCode v) { return feed::Name(v); };
  auto state = [](feed::TradingState v) { return feed::Name(v); };
  auto reason = [](feed::RefusedReason v) { return feed::Name(v); };
  auto type = [](feed::PacketType v) { return feed::Name(v); };
  auto kind = [](feed::MessageKind v) { return feed::Name(v); };
  return "{\"side\": " + Names<orderwire::codec::Side>(side) +
         ", \"event\": " + Names<feed::SystemEventCode>(event) +
         ", \"state\": " + Names<feed::TradingState>(state) +
         ", \"reason\": " + Names<feed::RefusedReason>(reason) +
         ", \"type\": " + Names<feed::PacketType>(type) +
         ", \"kind\": " + Names<feed::MessageKind>(kind) + "}";
}

std::string Causes() {
  namespace feed = orderwire::feed;
  std::string out = "[";
  for (int v = 1; v < feed::kCheckCauseCount; ++v) {
    out += std::string(v == 1 ? "" : ", ") + "\"" +
           std::string(feed::Name(static_cast<feed::CheckCause>(v))) + "\"";
  }
  return out + "]";
}

std::string Golden() {
  namespace golden = orderwire::feed::golden;
  std::string out = "{";
  bool first = true;
  auto add = [&](const golden::GoldenBytes& g) {
    out += std::string(first ? "" : ", ") + "\"" + std::string(g.name) +
           "\": \"" + std::string(g.hex) + "\"";
    first = false;
  };
  for (const auto& g : golden::kSubscriberPackets) add(g);
  for (const auto& g : golden::kRequests) add(g);
  for (const auto& g : golden::kMessages) add(g);
  return out + "}";
}

}  // namespace

int main() {
  namespace feed = orderwire::feed;
  std::printf(
      "{\"header\": %s,\n \"refused\": %s,\n \"snapshot_request\": %s,\n"
      " \"message_header\": %s,\n \"kinds\": %s,\n \"enums\": %s,\n "
      "\"causes\": %s,\n"
      " \"limits\": {\"max_packet\": %zu, \"magic\": %u, \"version\": %u, "
      "\"min_message\": %zu},\n \"golden\": %s}\n",
      Fields(MessageTraits<feed::PacketHeader>::kLayout, 0).c_str(),
      Fields(MessageTraits<feed::RefusedBody>::kLayout, feed::kPacketHeaderSize)
          .c_str(),
      Fields(MessageTraits<feed::SnapshotRequestBody>::kLayout,
             feed::kPacketHeaderSize)
          .c_str(),
      Fields(MessageTraits<feed::MessageHeader>::kLayout, 0).c_str(),
      Kinds().c_str(), Enums().c_str(), Causes().c_str(), feed::kMaxPacketBytes,
      static_cast<unsigned>(feed::kPacketMagic),
      static_cast<unsigned>(feed::kFeedVersion), feed::kMinMessageLength,
      Golden().c_str());
  return 0;
}
