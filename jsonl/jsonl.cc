// JSON Lines form of frames; see jsonl.h.
#include "jsonl/jsonl.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "feed/kind_table.h"
#include "feed/messages.h"
#include "simdjson.h"

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

// A feed message of kind Model: "sequence", "kind", then its layout's
// fields (timestamp first), as MARKETDATA.md "Text form" orders them.
template <typename Model>
std::string FeedViewToJson(std::uint64_t sequence,
                           const feed::MessageView<Model>& view) {
  std::string out;
  out.reserve(256);
  absl::StrAppendFormat(&out, "{\"sequence\":%d,\"kind\":\"%s\"", sequence,
                        feed::MessageTraits<Model>::kName);
  const Model model = view.ToModel();
  feed::MessageTraits<Model>::kLayout.ForEach(
      [&](const auto& field, std::size_t) {
        absl::StrAppendFormat(&out, ",\"%s\":", field.name);
        AppendValue(out, model.*field.member);
      });
  out.push_back('}');
  return out;
}

// ---------------------------------------------------------------------------
// Reading, with simdjson's on-demand parser.
//
// simdjson finds the tokens and parses the numbers; this file adds the
// format's rules on top: one flat object, every key known and present once,
// values that are integers (or the kind's name), each in its field's range.
//
// The line is parsed as the only element of an array, "[" line "]", in a
// buffer padded with SIMDJSON_PADDING spaces (simdjson reads that far past a
// document's end). Why the array: for a document that is an object, simdjson
// first checks that the last token is its "}" and reports any line that ends
// otherwise ("{...} x", "{...},", "{...") as one error without a position;
// as an element of an array the object is read token by token, so the first
// token that does not belong is found where it is, and everything after the
// object's "}" other than our closing "]" is text after the object.

// One parser and one padded buffer per thread, reused: after the first lines
// of the longest size seen, parsing a line allocates nothing in simdjson.
struct ParserState {
  simdjson::ondemand::parser parser;
  std::string buffer;
};

ParserState& ThreadParserState() {
  thread_local ParserState state;
  return state;
}

absl::Status ColumnError(std::size_t column, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("column %d: %s", column, what));
}

// The line inside the buffer, to turn simdjson's pointers into columns.
class WrappedLine {
 public:
  // The buffer holds "[" line "]" and padding.
  WrappedLine(std::string_view line, const char* buffer)
      : line_(line), start_(buffer + 1) {}

  [[nodiscard]] std::size_t ColumnOf(const char* at) const {
    return static_cast<std::size_t>(at - start_);
  }
  [[nodiscard]] const char* End() const { return start_ + line_.size(); }
  [[nodiscard]] std::size_t size() const { return line_.size(); }

  // A syntax error that simdjson found at its current token.
  [[nodiscard]] absl::Status SyntaxError(simdjson::ondemand::document& doc,
                                         simdjson::error_code error) const {
    const char* at = End();
    if (doc.current_location().get(at) != simdjson::SUCCESS || at > End()) {
      at = End();
    }
    const std::size_t column = ColumnOf(at);
    const std::string found = column >= line_.size()
                                  ? std::string("the end of the line")
                                  : absl::StrFormat("'%c'", line_[column]);
    return ColumnError(column,
                       absl::StrFormat("malformed JSON at %s (%s)", found,
                                       simdjson::error_message(error)));
  }

  // The contents of the string whose opening quote is at `quote`: this
  // format has no escapes and no control characters in its strings.
  // (simdjson has checked that the string is closed.)
  [[nodiscard]] absl::StatusOr<std::string_view> PlainString(
      const char* quote) const {
    const char* const begin = quote + 1;
    const char* at = begin;
    for (; *at != '"'; ++at) {
      if (*at == '\\') {
        return ColumnError(ColumnOf(at),
                           "escape sequences are not used by this format");
      }
      if (static_cast<unsigned char>(*at) < 0x20) {
        return ColumnError(ColumnOf(at), "control character inside a string");
      }
    }
    return std::string_view(begin, static_cast<std::size_t>(at - begin));
  }

 private:
  std::string_view line_;
  const char* start_;
};

// The offset of the first byte of `line` that is not part of valid UTF-8
// (simdjson rejects such a document without saying where).
std::size_t FirstInvalidUtf8(std::string_view line) {
  std::size_t at = 0;
  while (at < line.size()) {
    const auto lead = static_cast<unsigned char>(line[at]);
    std::size_t length = 1;
    if (lead >= 0xF0) {
      length = 4;
    } else if (lead >= 0xE0) {
      length = 3;
    } else if (lead >= 0xC0) {
      length = 2;
    }
    if (at + length > line.size() ||
        !simdjson::validate_utf8(line.data() + at, length)) {
      return at;
    }
    at += length;
  }
  return line.size();
}

// The offset of the first control character inside a string of `line`
// (simdjson rejects such a document without saying where). A backslash
// skips the character after it, as in JSON.
std::size_t FirstControlCharacterInAString(std::string_view line) {
  bool in_string = false;
  for (std::size_t at = 0; at < line.size(); ++at) {
    const char c = line[at];
    if (!in_string) {
      in_string = c == '"';
    } else if (c == '\\') {
      ++at;
    } else if (c == '"') {
      in_string = false;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      return at;
    }
  }
  return line.size();
}

// A value token without the whitespace simdjson leaves after it.
std::string_view TokenText(std::string_view raw) {
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t' ||
                          raw.back() == '\r' || raw.back() == '\n')) {
    raw.remove_suffix(1);
  }
  return raw;
}

// Parses the integer `value` (raw token `raw`, with the whitespace after it,
// at `column`) as a T (enums: their underlying type).
template <typename T>
absl::StatusOr<T> ParseInteger(std::string_view name,
                               simdjson::ondemand::value& value,
                               std::string_view raw, std::size_t column) {
  using I =
      typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                  std::type_identity<T>>::type;
  if (raw.front() == '"') {
    return ColumnError(
        column,
        absl::StrFormat("field \"%s\" must be an integer, not a string", name));
  }
  // (Built only on failure: formatting is most of a line's cost otherwise.)
  const auto not_an_integer = [&] {
    const std::string_view token = TokenText(raw);
    return ColumnError(
        column, absl::StrFormat("field \"%s\" value %s is not an integer", name,
                                token));
  };
  const auto does_not_fit = [&] {
    const std::string_view token = TokenText(raw);
    return ColumnError(
        column,
        absl::StrFormat("field \"%s\" value %s does not fit in %d bytes%s",
                        name, token, sizeof(I),
                        std::is_signed_v<I> ? " (signed)" : " (unsigned)"));
  };
  // An integer token (an optional minus and digits): simdjson's number type
  // says so without parsing; anything else (a fraction, an exponent, "true",
  // "+1") is not an integer.
  simdjson::ondemand::number_type type{};
  if (value.get_number_type().get(type) != simdjson::SUCCESS ||
      type == simdjson::ondemand::number_type::floating_point_number) {
    return not_an_integer();
  }
  // An integer token that simdjson cannot read as a 64-bit integer of the
  // field's signedness is out of range (negative for an unsigned field,
  // beyond 64 bits), except a malformed one (a leading zero): NUMBER_ERROR.
  if constexpr (std::is_unsigned_v<I>) {
    std::uint64_t parsed = 0;
    const simdjson::error_code error = value.get_uint64().get(parsed);
    if (error == simdjson::NUMBER_ERROR) return not_an_integer();
    if (error != simdjson::SUCCESS || parsed > std::numeric_limits<I>::max()) {
      return does_not_fit();
    }
    return static_cast<T>(static_cast<I>(parsed));
  } else {
    std::int64_t parsed = 0;
    const simdjson::error_code error = value.get_int64().get(parsed);
    if (error == simdjson::NUMBER_ERROR) return not_an_integer();
    if (error != simdjson::SUCCESS || parsed > std::numeric_limits<I>::max() ||
        parsed < std::numeric_limits<I>::min()) {
      return does_not_fit();
    }
    return static_cast<T>(static_cast<I>(parsed));
  }
}

// The document's only element, the line's object. The caller has checked
// that the line's first non-blank character is "{".
absl::StatusOr<simdjson::ondemand::object> LineObject(
    simdjson::ondemand::document& doc, const WrappedLine& line) {
  simdjson::ondemand::array wrapper;
  if (simdjson::error_code e = doc.get_array().get(wrapper)) {
    return line.SyntaxError(doc, e);
  }
  simdjson::ondemand::array_iterator element;
  if (simdjson::error_code e = wrapper.begin().get(element)) {
    return line.SyntaxError(doc, e);
  }
  simdjson::ondemand::object object;
  if (simdjson::error_code e = (*element).get_object().get(object)) {
    return line.SyntaxError(doc, e);
  }
  return object;
}

// What the first pass learns: where "kind" is, and its name.
struct KindKey {
  int count = 0;
  std::size_t second_key_column = 0;  // the repeated "kind", if any
  bool is_string = false;
  std::string_view name;
  std::size_t value_column = 0;
};

// The first pass: every token of the line, so that a syntax error anywhere
// is reported before any rule of the format; every key and string value is
// plain; every value is a string or a scalar token (not an object, an array
// or a missing value); nothing follows the object.
absl::StatusOr<KindKey> CheckSyntaxAndFindKind(
    simdjson::ondemand::document& doc, const WrappedLine& line) {
  absl::StatusOr<simdjson::ondemand::object> object = LineObject(doc, line);
  if (!object.ok()) return object.status();
  KindKey kind;
  for (auto field_result : *object) {
    simdjson::ondemand::field field;
    if (simdjson::error_code e = std::move(field_result).get(field)) {
      return line.SyntaxError(doc, e);
    }
    const char* const key_quote =
        reinterpret_cast<const char*>(field.key().raw()) - 1;
    const absl::StatusOr<std::string_view> key = line.PlainString(key_quote);
    if (!key.ok()) return key.status();
    const std::string_view token = field.value().raw_json_token();
    const std::size_t column = line.ColumnOf(token.data());
    const char first = token.empty() ? '\0' : token.front();
    if (first == '{' || first == '[' || first == '}' || first == ']' ||
        first == ',' || first == ':' || first == '\0') {
      return ColumnError(column, "expected a value (an integer or a string)");
    }
    std::string_view text;
    if (first == '"') {
      const absl::StatusOr<std::string_view> s = line.PlainString(token.data());
      if (!s.ok()) return s.status();
      text = *s;
    }
    if (*key == "kind") {
      if (++kind.count == 1) {
        kind.is_string = first == '"';
        kind.name = text;
        kind.value_column = column;
      } else if (kind.count == 2) {
        kind.second_key_column = line.ColumnOf(key_quote);
      }
    }
  }
  // After the object's "}" the next token must be our closing "]".
  const char* after = nullptr;
  if (doc.current_location().get(after) != simdjson::SUCCESS) {
    return line.SyntaxError(doc, simdjson::TAPE_ERROR);
  }
  if (after != line.End()) {
    return ColumnError(line.ColumnOf(after),
                       "unexpected text after the object");
  }
  return kind;
}

// The second pass, over the same tokens with the kind known: every key is
// one of Model's fields or "sequence" (or "kind"), once; every value parses
// into its field; none is missing.
template <typename Model>
absl::StatusOr<std::size_t> EncodeFromObject(simdjson::ondemand::document& doc,
                                             const WrappedLine& line,
                                             std::span<std::byte> out) {
  doc.rewind();
  absl::StatusOr<simdjson::ondemand::object> object = LineObject(doc, line);
  if (!object.ok()) return object.status();
  Model model{};
  std::optional<std::uint64_t> sequence;
  constexpr std::size_t kFieldCount = MessageTraits<Model>::kLayout.kFieldCount;
  std::array<bool, kFieldCount> seen{};
  for (auto field_result : *object) {
    simdjson::ondemand::field field;
    if (simdjson::error_code e = std::move(field_result).get(field)) {
      return line.SyntaxError(doc, e);
    }
    // Keys were checked to be plain strings by the first pass, so comparing
    // the raw key with a name (and its closing quote) is exact; the key's
    // text is only needed for a message.
    const simdjson::ondemand::raw_json_string key = field.key();
    const char* const key_quote = reinterpret_cast<const char*>(key.raw()) - 1;
    const auto key_text = [&] { return *line.PlainString(key_quote); };
    const std::size_t key_column = line.ColumnOf(key_quote);
    simdjson::ondemand::value& value = field.value();
    const std::string_view token = value.raw_json_token();
    const std::size_t column = line.ColumnOf(token.data());
    if (key.unsafe_is_equal("kind")) continue;
    if (key.unsafe_is_equal("sequence")) {
      if (sequence.has_value()) {
        return ColumnError(key_column, "key \"sequence\" appears twice");
      }
      absl::StatusOr<std::uint64_t> v =
          ParseInteger<std::uint64_t>("sequence", value, token, column);
      if (!v.ok()) return v.status();
      sequence = *v;
      continue;
    }
    bool known = false;
    absl::Status status;
    std::size_t index = 0;
    MessageTraits<Model>::kLayout.ForEach([&](const auto& f, std::size_t) {
      const std::size_t i = index++;
      if (known || !key.unsafe_is_equal(f.name)) return;
      known = true;
      using T = typename std::remove_cvref_t<decltype(f)>::ValueType;
      if (seen[i]) {
        status = ColumnError(
            key_column,
            absl::StrFormat("key \"%s\" appears twice", key_text()));
        return;
      }
      seen[i] = true;
      absl::StatusOr<T> v = ParseInteger<T>(f.name, value, token, column);
      if (!v.ok()) {
        status = v.status();
        return;
      }
      model.*f.member = *v;
    });
    if (!status.ok()) return status;
    if (!known) {
      return ColumnError(
          key_column, absl::StrFormat("%s has no field \"%s\"",
                                      MessageTraits<Model>::kName, key_text()));
    }
  }
  if (!sequence.has_value()) {
    return absl::InvalidArgumentError("missing key \"sequence\"");
  }
  std::size_t index = 0;
  std::string missing;
  MessageTraits<Model>::kLayout.ForEach([&](const auto& f, std::size_t) {
    if (!seen[index++]) {
      absl::StrAppendFormat(&missing, "%s\"%s\"", missing.empty() ? "" : ", ",
                            f.name);
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
  // The object must open at the first non-blank character.
  const std::size_t first = line.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || line[first] != '{') {
    return ColumnError(first == std::string_view::npos ? line.size() : first,
                       "expected '{' to open a JSON object");
  }
  ParserState& state = ThreadParserState();
  // "[" line "]" and the padding simdjson may read.
  state.buffer.clear();
  state.buffer.reserve(line.size() + 2 + simdjson::SIMDJSON_PADDING);
  state.buffer.push_back('[');
  state.buffer.append(line);
  state.buffer.push_back(']');
  const std::size_t document_size = state.buffer.size();
  state.buffer.append(simdjson::SIMDJSON_PADDING, ' ');
  const WrappedLine wrapped(line, state.buffer.data());

  simdjson::ondemand::document doc;
  if (simdjson::error_code e =
          state.parser
              .iterate(state.buffer.data(), document_size, state.buffer.size())
              .get(doc)) {
    if (e == simdjson::UNCLOSED_STRING) {
      return ColumnError(line.size(), "unterminated string");
    }
    if (e == simdjson::UNESCAPED_CHARS) {
      return ColumnError(FirstControlCharacterInAString(line),
                         "control character inside a string");
    }
    if (e == simdjson::UTF8_ERROR) {
      return ColumnError(FirstInvalidUtf8(line), "not valid UTF-8");
    }
    return ColumnError(0, absl::StrFormat("cannot parse the line (%s)",
                                          simdjson::error_message(e)));
  }
  const absl::StatusOr<KindKey> kind = CheckSyntaxAndFindKind(doc, wrapped);
  if (!kind.ok()) return kind.status();
  if (kind->count > 1) {
    return ColumnError(kind->second_key_column, "key \"kind\" appears twice");
  }
  if (kind->count == 0) {
    return absl::InvalidArgumentError("missing key \"kind\"");
  }
  if (!kind->is_string) {
    return ColumnError(kind->value_column,
                       "\"kind\" must be a string such as \"NewLimit\"");
  }
  std::optional<absl::StatusOr<std::size_t>> result;
  ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if (kind->name == MessageTraits<Model>::kName) {
      result = EncodeFromObject<Model>(doc, wrapped, out);
    }
  });
  if (!result.has_value()) {
    return ColumnError(kind->value_column,
                       absl::StrFormat("unknown kind \"%s\"", kind->name));
  }
  return *std::move(result);
}

std::string FeedMessageToJson(std::uint64_t sequence,
                              feed::MessageBlock block) {
  std::string out;
  feed::ForEachMessage([&](auto model) {
    using Model = typename decltype(model)::type;
    if (block.kind() != feed::MessageTraits<Model>::kKind) return;
    const auto view = feed::MessageView<Model>::FromBlock(block);
    if (view.ok()) out = FeedViewToJson(sequence, *view);
  });
  if (out.empty()) {
    out = absl::StrFormat(
        "{\"sequence\":%d,\"kind\":\"Unknown\",\"kind_byte\":%d,"
        "\"timestamp\":%d,\"length\":%d}",
        sequence, static_cast<unsigned>(block.kind()), block.timestamp(),
        block.length());
  }
  return out;
}

}  // namespace orderwire::jsonl
