// JSON Lines form of frames; see jsonl.h.
#include "jsonl/jsonl.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace orderwire::jsonl {
namespace {

using codec::EncodeFrame;
using codec::ForEachMessage;
using codec::MessageTraits;
using codec::Result;
using codec::View;
using codec::VisitFrame;

// ---------------------------------------------------------------------------
// Writing.

template <typename T>
void AppendValue(std::string& out, T value) {
  if constexpr (std::is_enum_v<T>) {
    absl::StrAppend(&out, static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (sizeof(T) == 1) {
    absl::StrAppend(&out, static_cast<unsigned>(value));
  } else {
    absl::StrAppend(&out, value);
  }
}

template <typename Model>
std::string ViewToJson(const View<Model>& view) {
  std::string out;
  out.reserve(256);
  absl::StrAppendFormat(&out, "{\"kind\":\"%s\",\"sequence\":%d",
                        MessageTraits<Model>::kName, view.sequence());
  const Model model = view.ToModel();
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    absl::StrAppendFormat(&out, ",\"%s\":", field.name);
    AppendValue(out, model.*field.member);
  });
  out.push_back('}');
  return out;
}

// ---------------------------------------------------------------------------
// Reading: a flat object of string keys and string or integer values.

struct JsonValue {
  bool is_string = false;
  std::string_view text;  // string contents (no escapes) or number token
  std::size_t column = 0;
};

struct JsonMember {
  std::string_view key;
  std::size_t column;
  JsonValue value;
};

class FlatObjectParser {
 public:
  explicit FlatObjectParser(std::string_view text) : text_(text) {}

  absl::Status Parse(std::vector<JsonMember>& members) {
    SkipSpace();
    if (!Consume('{')) return Error("expected '{' to open a JSON object");
    SkipSpace();
    if (Consume('}')) return Finish();
    while (true) {
      SkipSpace();
      JsonMember member;
      member.column = pos_;
      std::string_view key;
      if (absl::Status s = ParseString(key); !s.ok()) return s;
      member.key = key;
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after a key");
      SkipSpace();
      member.value.column = pos_;
      if (Peek() == '"') {
        member.value.is_string = true;
        if (absl::Status s = ParseString(member.value.text); !s.ok()) return s;
      } else {
        const std::size_t start = pos_;
        while (pos_ < text_.size() &&
               (text_[pos_] == '-' || text_[pos_] == '+' ||
                text_[pos_] == '.' || text_[pos_] == 'e' ||
                text_[pos_] == 'E' ||
                (text_[pos_] >= '0' && text_[pos_] <= '9') ||
                (text_[pos_] >= 'a' && text_[pos_] <= 'z'))) {
          ++pos_;
        }
        if (start == pos_) {
          return Error("expected a value (an integer or a string)");
        }
        member.value.text = text_.substr(start, pos_ - start);
      }
      members.push_back(member);
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) return Finish();
      return Error("expected ',' or '}'");
    }
  }

 private:
  absl::Status Finish() {
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the object");
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string_view& out) {
    if (!Consume('"')) return Error("expected '\"' to open a string");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        return Error("escape sequences are not used by this format");
      }
      if (static_cast<unsigned char>(text_[pos_]) < 0x20) {
        return Error("control character inside a string");
      }
      ++pos_;
    }
    if (pos_ == text_.size()) return Error("unterminated string");
    out = text_.substr(start, pos_ - start);
    ++pos_;
    return absl::OkStatus();
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r' ||
            text_[pos_] == '\n')) {
      ++pos_;
    }
  }
  [[nodiscard]] char Peek() const {
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("column %d: %s", pos_, what));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// Parses `value` as an integer of type T (enums: their underlying type).
template <typename T>
absl::StatusOr<T> ParseInteger(std::string_view name, const JsonValue& value) {
  using I =
      typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                  std::type_identity<T>>::type;
  if (value.is_string) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "column %d: field \"%s\" must be an integer, not a string",
        value.column, name));
  }
  I parsed{};
  const char* const begin = value.text.data();
  const char* const end = begin + value.text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, parsed);
  // from_chars takes no minus sign for an unsigned type; a negative integer
  // is an out-of-range value of an unsigned field, not a non-integer.
  const bool negative_unsigned =
      std::is_unsigned_v<I> && value.text.size() > 1 && value.text[0] == '-' &&
      value.text.find_first_not_of("0123456789", 1) == std::string_view::npos;
  if (ec == std::errc::result_out_of_range || negative_unsigned) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "column %d: field \"%s\" value %s does not fit in %d bytes%s",
        value.column, name, value.text, sizeof(I),
        std::is_signed_v<I> ? " (signed)" : " (unsigned)"));
  }
  if (ec != std::errc() || ptr != end) {
    return absl::InvalidArgumentError(
        absl::StrFormat("column %d: field \"%s\" value %s is not an integer",
                        value.column, name, value.text));
  }
  return static_cast<T>(parsed);
}

template <typename Model>
absl::StatusOr<std::size_t> EncodeFromMembers(
    const std::vector<JsonMember>& members, std::span<std::byte> out) {
  Model model{};
  std::optional<std::uint64_t> sequence;
  constexpr std::size_t kFieldCount = MessageTraits<Model>::kLayout.kFieldCount;
  std::array<bool, kFieldCount> seen{};
  for (const JsonMember& member : members) {
    if (member.key == "kind") continue;
    if (member.key == "sequence") {
      if (sequence.has_value()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "column %d: key \"sequence\" appears twice", member.column));
      }
      absl::StatusOr<std::uint64_t> v =
          ParseInteger<std::uint64_t>("sequence", member.value);
      if (!v.ok()) return v.status();
      sequence = *v;
      continue;
    }
    bool known = false;
    absl::Status status;
    std::size_t index = 0;
    MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
      const std::size_t i = index++;
      if (known || field.name != member.key) return;
      known = true;
      using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
      if (seen[i]) {
        status = absl::InvalidArgumentError(absl::StrFormat(
            "column %d: key \"%s\" appears twice", member.column, member.key));
        return;
      }
      seen[i] = true;
      absl::StatusOr<T> v = ParseInteger<T>(field.name, member.value);
      if (!v.ok()) {
        status = v.status();
        return;
      }
      model.*field.member = *v;
    });
    if (!status.ok()) return status;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrFormat("column %d: %s has no field \"%s\"", member.column,
                          MessageTraits<Model>::kName, member.key));
    }
  }
  if (!sequence.has_value()) {
    return absl::InvalidArgumentError("missing key \"sequence\"");
  }
  std::size_t index = 0;
  std::string missing;
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    if (!seen[index++]) {
      absl::StrAppendFormat(&missing, "%s\"%s\"", missing.empty() ? "" : ", ",
                            field.name);
    }
  });
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is missing field(s) %s", MessageTraits<Model>::kName, missing));
  }
  const Result<std::size_t> written = EncodeFrame(*sequence, model, out);
  if (!written.ok()) {
    return absl::OutOfRangeError("output buffer too small for the frame");
  }
  return *written;
}

}  // namespace

std::string FrameToJson(codec::FrameView frame) {
  std::string json;
  VisitFrame(frame, [&](const auto& view) { json = ViewToJson(view); });
  return json;
}

std::string DatagramHeaderToJson(const codec::DatagramView& datagram) {
  const codec::DatagramHeader h = datagram.header();
  return absl::StrFormat(
      "{\"kind\":\"Datagram\",\"magic\":\"OW\",\"version\":%d,\"flags\":%d,"
      "\"session_id\":%d,\"frame_count\":%d,\"reserved\":%d,\"size\":%d}",
      h.version, h.flags, h.session_id, h.frame_count, h.reserved,
      datagram.bytes().size());
}

absl::StatusOr<std::size_t> JsonToFrame(std::string_view line,
                                        std::span<std::byte> out) {
  std::vector<JsonMember> members;
  members.reserve(16);
  FlatObjectParser parser(line);
  if (absl::Status s = parser.Parse(members); !s.ok()) return s;
  const JsonMember* kind = nullptr;
  for (const JsonMember& member : members) {
    if (member.key != "kind") continue;
    if (kind != nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "column %d: key \"kind\" appears twice", member.column));
    }
    kind = &member;
  }
  if (kind == nullptr) {
    return absl::InvalidArgumentError("missing key \"kind\"");
  }
  if (!kind->value.is_string) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "column %d: \"kind\" must be a string such as \"NewLimit\"",
        kind->value.column));
  }
  absl::StatusOr<std::size_t> result = absl::InvalidArgumentError(
      absl::StrFormat("column %d: unknown kind \"%s\"", kind->value.column,
                      kind->value.text));
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if (kind->value.text == MessageTraits<Model>::kName) {
      result = EncodeFromMembers<Model>(members, out);
    }
  });
  return result;
}

}  // namespace orderwire::jsonl
