// The JSON Lines reader (jsonl::JsonToFrame, simdjson's on-demand parser)
// against the hand-written reader it replaced, in the same run: 100,000 JSON
// Lines of the codec benchmark's command mix (50/5/25/5/15 NewLimit,
// NewMarket, CancelByOrder, CancelByClient, Replace; seed 1), each parsed
// into its frame. Figures: ns per line (items = lines), and, under callgrind,
// instructions per line:
//
//   taskset -c 1 build/release/bench/jsonl_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true          (one command line)
//   valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=cg.out
//       build/release/bench/jsonl_bench --callgrind simdjson   (one line;
//       or: --callgrind handwritten)
//   callgrind_annotate cg.out | head   # total Ir / 100,000 = per line
//
// The --callgrind mode makes the lines, parses them once untimed (the
// parser's buffers grow), then parses them once more between
// CALLGRIND_START/STOP_INSTRUMENTATION, so the count is the reader's alone.
//
// The hand-written reader (jsonl/jsonl.cc before simdjson, commit 1a8c856) is
// kept here only, as this benchmark's baseline; nothing else uses it.
#include <valgrind/callgrind.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/testing/random_commands.h"
#include "jsonl/jsonl.h"

namespace orderwire::bench {
namespace handwritten_baseline {

using codec::EncodeFrame;
using codec::ForEachMessage;
using codec::MessageTraits;
using codec::Result;

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

}  // namespace handwritten_baseline

namespace {

constexpr std::size_t kLines = 100'000;
constexpr std::uint64_t kSeed = 1;

// The JSON Lines of kLines random commands of the codec benchmark's mix.
const std::vector<std::string>& Lines() {
  static const std::vector<std::string> lines = [] {
    const std::vector<std::byte> stream = codec::testing::EncodeRandomStream(
        kLines, kSeed, codec::testing::kDecodeBenchMix);
    std::vector<std::string> out;
    out.reserve(kLines);
    std::span<const std::byte> rest(stream);
    while (!rest.empty()) {
      const codec::Result<codec::FrameView> frame =
          codec::FrameView::Parse(rest);
      if (!frame.ok()) std::abort();
      out.push_back(jsonl::FrameToJson(*frame));
      rest = rest.subspan(frame->size());
    }
    return out;
  }();
  return lines;
}

using Reader = absl::StatusOr<std::size_t> (*)(std::string_view,
                                               std::span<std::byte>);

// Parses every line with `read`; the total frame bytes (a checksum that the
// work is used). Aborts on a line that does not parse.
std::size_t ParseAll(Reader read, const std::vector<std::string>& lines) {
  std::array<std::byte, codec::kMaxFrameSize> frame{};
  std::size_t bytes = 0;
  for (const std::string& line : lines) {
    const absl::StatusOr<std::size_t> size = read(line, frame);
    if (!size.ok()) std::abort();
    benchmark::DoNotOptimize(frame.data());
    bytes += *size;
  }
  return bytes;
}

void BM_Read(benchmark::State& state, Reader read) {
  const std::vector<std::string>& lines = Lines();
  std::size_t text_bytes = 0;
  for (const std::string& line : lines) text_bytes += line.size() + 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ParseAll(read, lines));
  }
  const auto n = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(n * static_cast<std::int64_t>(lines.size()));
  state.SetBytesProcessed(n * static_cast<std::int64_t>(text_bytes));
  state.counters["ns_per_line"] = benchmark::Counter(
      static_cast<double>(lines.size()) * static_cast<double>(n) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(BM_Read, jsonl_simdjson, &jsonl::JsonToFrame)
    ->Name("jsonl/read/simdjson")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, handwritten_baseline,
                  &handwritten_baseline::JsonToFrame)
    ->Name("jsonl/read/handwritten-baseline")
    ->Unit(benchmark::kMillisecond);

// Both readers give the same frames for every line (checked before timing).
bool ReadersAgree() {
  std::array<std::byte, codec::kMaxFrameSize> a{};
  std::array<std::byte, codec::kMaxFrameSize> b{};
  for (const std::string& line : Lines()) {
    const absl::StatusOr<std::size_t> sa = jsonl::JsonToFrame(line, a);
    const absl::StatusOr<std::size_t> sb =
        handwritten_baseline::JsonToFrame(line, b);
    if (!sa.ok() || !sb.ok() || *sa != *sb ||
        std::memcmp(a.data(), b.data(), *sa) != 0) {
      std::fprintf(stderr, "jsonl_bench: readers differ on %s\n", line.c_str());
      return false;
    }
  }
  return true;
}

int RunCallgrindPass(std::string_view which) {
  Reader read = nullptr;
  if (which == "simdjson") read = &jsonl::JsonToFrame;
  if (which == "handwritten") read = &handwritten_baseline::JsonToFrame;
  if (read == nullptr) {
    std::fprintf(stderr,
                 "usage: jsonl_bench --callgrind simdjson|handwritten\n");
    return 2;
  }
  const std::vector<std::string>& lines = Lines();
  benchmark::DoNotOptimize(ParseAll(read, lines));  // buffers grow
  CALLGRIND_START_INSTRUMENTATION;
  benchmark::DoNotOptimize(ParseAll(read, lines));
  CALLGRIND_STOP_INSTRUMENTATION;
  std::printf("%zu lines\n", lines.size());
  return 0;
}

}  // namespace
}  // namespace orderwire::bench

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--callgrind") {
    return orderwire::bench::RunCallgrindPass(argv[2]);
  }
  if (!orderwire::bench::ReadersAgree()) return 1;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
