// The JSON Lines form: FrameToJson of every golden frame (expected text typed
// from docs/PROTOCOL.md's values), JsonToFrame round trips of every kind with
// extreme values, and every way JsonToFrame rejects a line, each with the
// field or column named in the message.
#include "jsonl/jsonl.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codec/golden.h"
#include "tests/codec/test_support.h"

namespace orderwire::jsonl::test {
namespace {

using ::orderwire::codec::DatagramView;
using ::orderwire::codec::EncodeFrame;
using ::orderwire::codec::FrameView;
using ::orderwire::codec::kFrameSize;
using ::orderwire::codec::kMaxFrameSize;
using ::orderwire::codec::MessageTraits;
using ::orderwire::codec::Result;
using ::orderwire::codec::test::AllModels;
using ::orderwire::codec::test::ModelName;
using ::orderwire::codec::test::RandomModel;
using ::orderwire::codec::test::RandomValue;
using ::orderwire::test_support::FromHex;
using ::orderwire::test_support::Hex;
namespace golden = ::orderwire::codec::golden;

using Rng = ::orderwire::codec::testing::SplitMix64;
using ::testing::HasSubstr;

// The JSON of each golden frame, in golden::kFrames order.
constexpr std::array<std::string_view, 22> kGoldenJson = {
    R"({"kind":"NewLimit","sequence":1,"account_id":7,"client_order_id":1001,)"
    R"("instrument_id":42,"side":1,"time_in_force":1,"price":10050,)"
    R"("quantity":300})",
    R"({"kind":"NewLimit","sequence":2,"account_id":7,"client_order_id":1002,)"
    R"("instrument_id":42,"side":2,"time_in_force":2,"price":-5,"quantity":1})",
    R"({"kind":"NewMarket","sequence":3,"account_id":9,"client_order_id":77,)"
    R"("instrument_id":42,"side":2,"quantity":250})",
    R"({"kind":"CancelByOrder","sequence":4,"account_id":7,)"
    R"("order_id":72623859790382856})",
    R"({"kind":"CancelByClient","sequence":5,"account_id":7,)"
    R"("client_order_id":1001})",
    R"({"kind":"Replace","sequence":6,"account_id":7,"order_id":3,)"
    R"("new_client_order_id":1003,"price":10049,"quantity":200})",
    R"({"kind":"Accepted","sequence":1,"order_id":3,"account_id":7,)"
    R"("client_order_id":1001,"instrument_id":42,"side":1,"time_in_force":1,)"
    R"("price":10050,"quantity":300})",
    R"({"kind":"Rejected","sequence":2,"account_id":7,"client_order_id":1002,)"
    R"("order_id":0,"command_kind":1,"reason":4})",
    R"({"kind":"Filled","sequence":3,"order_id":3,"account_id":7,)"
    R"("client_order_id":1001,"match_id":1,"instrument_id":42,"side":1,)"
    R"("liquidity":1,"price":10050,"quantity":250,"leaves_quantity":50})",
    R"({"kind":"Cancelled","sequence":4,"order_id":3,"account_id":7,)"
    R"("client_order_id":1001,"instrument_id":42,"cancelled_quantity":50,)"
    R"("reason":1})",
    R"({"kind":"Replaced","sequence":5,"order_id":3,"account_id":7,)"
    R"("client_order_id":1003,"price":10049,"quantity":200,"priority_kept":2})",
    R"({"kind":"SequenceGap","sequence":0,"expected_sequence":17})",
    R"({"kind":"ReportsGone","sequence":0,"resend_command":5,"resend_from":9})",
    R"({"kind":"Busy","sequence":0,"expected_sequence":17,"cause":1})",
    R"({"kind":"MassCancel","sequence":7,"account_id":7,"request_id":42,)"
    R"("instrument_id":0,"side":3,"scope":1})",
    R"({"kind":"MassCancelDone","sequence":6,"account_id":7,"request_id":42,)"
    R"("instrument_id":0,"side":3,"scope":1,"cancelled_orders":2})",
    R"({"kind":"Heartbeat","sequence":0,"nonce":72623859790382856})",
    R"({"kind":"HeartbeatAck","sequence":0,"nonce":72623859790382856,)"
    R"("expected_sequence":8,"next_report":12})",
    R"({"kind":"Goodbye","sequence":8,"account_id":7,"request_id":43})",
    R"({"kind":"SessionClosed","sequence":7,"account_id":7,"request_id":43,)"
    R"("reason":1,"cancelled_orders":2})",
    R"({"kind":"OrderStatusRequest","sequence":9,"account_id":7,"order_id":3,)"
    R"("client_order_id":1003})",
    R"({"kind":"OrderStatus","sequence":8,"order_id":3,"account_id":7,)"
    R"("client_order_id":1003,"instrument_id":42,"side":1,"state":1,)"
    R"("price":10049,"leaves_quantity":200,"executed_quantity":100})",
};

constexpr std::string_view kNewLimitJson = kGoldenJson[0];

// JsonToFrame into a buffer of the largest frame size; the frame's hex.
absl::StatusOr<std::string> JsonToHex(std::string_view line) {
  std::array<std::byte, kMaxFrameSize> out{};
  absl::StatusOr<std::size_t> size = JsonToFrame(line, out);
  if (!size.ok()) return size.status();
  return Hex(std::span(out).first(*size));
}

// `line` must be rejected with InvalidArgument, a message that contains each
// of `needles`.
void ExpectInvalid(std::string_view line,
                   std::initializer_list<std::string> needles) {
  SCOPED_TRACE(line);
  std::array<std::byte, kMaxFrameSize> out{};
  const absl::StatusOr<std::size_t> size = JsonToFrame(line, out);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument)
      << size.status();
  const std::string message(size.status().message());
  for (const std::string& needle : needles) {
    EXPECT_THAT(message, HasSubstr(needle));
  }
}

// `line` with `length` bytes at `at` replaced by `with`. (Built by appending:
// std::string::replace trips a false -Wrestrict in GCC 12.)
std::string Splice(std::string_view line, std::size_t at, std::size_t length,
                   std::string_view with) {
  std::string out(line.substr(0, at));
  out.append(with);
  out.append(line.substr(at + length));
  return out;
}

// "column N" for the first occurrence of `what` in `line` (after `from`).
std::string ColumnOf(std::string_view line, std::string_view what,
                     std::size_t from = 0) {
  const std::size_t at = line.find(what, from);
  if (at == std::string_view::npos) std::abort();
  return absl::StrFormat("column %d:", at);
}

TEST(FrameToJsonTest, GoldenFramesGiveTheirExpectedJson) {
  for (std::size_t i = 0; i < golden::kFrames.size(); ++i) {
    SCOPED_TRACE(golden::kFrames[i].name);
    const std::vector<std::byte> bytes = FromHex(golden::kFrames[i].hex);
    const Result<FrameView> frame = FrameView::Parse(bytes);
    ASSERT_TRUE(frame.ok());
    EXPECT_EQ(FrameToJson(*frame), kGoldenJson[i]);
  }
}

TEST(JsonToFrameTest, GoldenJsonGivesTheGoldenBytes) {
  for (std::size_t i = 0; i < golden::kFrames.size(); ++i) {
    SCOPED_TRACE(golden::kFrames[i].name);
    const absl::StatusOr<std::string> hex = JsonToHex(kGoldenJson[i]);
    ASSERT_TRUE(hex.ok()) << hex.status();
    EXPECT_EQ(*hex, golden::kFrames[i].hex);
  }
}

TEST(DatagramHeaderToJsonTest, DescribesTheGoldenDatagramHeader) {
  const std::vector<std::byte> bytes = FromHex(golden::kDatagramHex);
  const Result<DatagramView> datagram = DatagramView::Parse(bytes);
  ASSERT_TRUE(datagram.ok());
  EXPECT_EQ(DatagramHeaderToJson(*datagram),
            R"({"kind":"Datagram","magic":"OW","version":1,"flags":0,)"
            R"("session_id":51966,"frame_count":2,"reserved":0,"size":84})");
}

template <typename Model>
class JsonKindTest : public ::testing::Test {};
TYPED_TEST_SUITE(JsonKindTest, AllModels, ModelName);

TYPED_TEST(JsonKindTest, RoundTripsRandomAndExtremeValues) {
  using Model = TypeParam;
  Rng rng(0x15 + static_cast<std::uint8_t>(MessageTraits<Model>::kKind));
  for (int i = 0; i < 2000; ++i) {
    const bool extreme = (i % 2) == 1;
    const Model model = RandomModel<Model>(rng, extreme);
    const std::uint64_t sequence = RandomValue<std::uint64_t>(rng, extreme);
    std::array<std::byte, kFrameSize<Model>> frame{};
    ASSERT_TRUE(EncodeFrame(sequence, model, frame).ok());
    const std::string json = FrameToJson(*FrameView::Parse(frame));
    std::array<std::byte, kMaxFrameSize> out{};
    const absl::StatusOr<std::size_t> size = JsonToFrame(json, out);
    ASSERT_TRUE(size.ok()) << size.status() << "\n" << json;
    ASSERT_EQ(*size, frame.size());
    ASSERT_EQ(Hex(std::span(out).first(*size)), Hex(frame)) << json;
  }
}

// The reader takes keys in any order and whitespace anywhere JSON allows.
TYPED_TEST(JsonKindTest, AcceptsKeysInAnyOrderAndWhitespace) {
  using Model = TypeParam;
  Rng rng(77);
  const Model model = RandomModel<Model>(rng, true);
  std::array<std::byte, kFrameSize<Model>> frame{};
  ASSERT_TRUE(EncodeFrame(1234, model, frame).ok());
  // Fields in reverse wire order, then sequence, then kind.
  std::vector<std::string> members;
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    using I = std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                 std::type_identity<T>>;
    const auto value = static_cast<typename I::type>(model.*field.member);
    members.insert(
        members.begin(),
        absl::StrFormat(
            "\t\"%s\" :\r\n %d ", field.name,
            static_cast<std::conditional_t<std::is_signed_v<typename I::type>,
                                           std::int64_t, std::uint64_t>>(
                value)));
  });
  std::string json = " {\n";
  for (const std::string& m : members) json += m + ",";
  absl::StrAppendFormat(&json, "\"sequence\":1234 , \"kind\" : \"%s\"} \r\n",
                        MessageTraits<Model>::kName);
  const absl::StatusOr<std::string> hex = JsonToHex(json);
  ASSERT_TRUE(hex.ok()) << hex.status() << "\n" << json;
  EXPECT_EQ(*hex, Hex(frame));
}

TEST(JsonToFrameTest, RejectsAMissingKeyNamingIt) {
  ExpectInvalid(
      R"({"kind":"NewLimit","sequence":1,"account_id":7,"client_order_id":1,)"
      R"("instrument_id":42,"side":1,"time_in_force":1,"quantity":300})",
      {"price", "missing"});
  ExpectInvalid(
      R"({"kind":"NewMarket","sequence":1,"account_id":7,"client_order_id":1,)"
      R"("instrument_id":42,"quantity":300})",
      {"\"side\"", "missing"});
  ExpectInvalid(R"({"kind":"CancelByOrder","account_id":7,"order_id":1})",
                {"\"sequence\""});
  ExpectInvalid(R"({"sequence":1,"account_id":7,"order_id":1})", {"\"kind\""});
  ExpectInvalid(R"({})", {"\"kind\""});
}

TEST(JsonToFrameTest, RejectsAnUnknownKeyNamingItAndItsColumn) {
  const std::string line =
      R"({"kind":"CancelByOrder","sequence":1,"account_id":7,"order_id":1,)"
      R"("colour":3})";
  ExpectInvalid(line, {"\"colour\"", ColumnOf(line, "\"colour\"")});
  // A field of another kind is unknown here too.
  const std::string other =
      R"({"kind":"CancelByOrder","sequence":1,"account_id":7,"order_id":1,)"
      R"("price":3})";
  ExpectInvalid(other, {"\"price\"", ColumnOf(other, "\"price\"")});
}

TEST(JsonToFrameTest, RejectsARepeatedKeyAtItsSecondColumn) {
  const std::string field =
      R"({"kind":"CancelByOrder","sequence":1,"account_id":7,"order_id":1,)"
      R"("account_id":8})";
  ExpectInvalid(field,
                {"\"account_id\"", ColumnOf(field, "\"account_id\"", 40)});
  const std::string sequence =
      R"({"kind":"CancelByOrder","sequence":1,"sequence":2,"account_id":7,)"
      R"("order_id":1})";
  ExpectInvalid(sequence,
                {"\"sequence\"", ColumnOf(sequence, "\"sequence\"", 30)});
  const std::string kind =
      R"({"kind":"CancelByOrder","sequence":1,"account_id":7,"order_id":1,)"
      R"("kind":"CancelByOrder"})";
  ExpectInvalid(kind, {"\"kind\"", ColumnOf(kind, "\"kind\"", 10)});
}

TEST(JsonToFrameTest, RejectsAStringWhereAnIntegerBelongs) {
  const std::string line =
      R"({"kind":"CancelByOrder","sequence":1,"account_id":"7","order_id":1})";
  ExpectInvalid(line, {"\"account_id\"", ColumnOf(line, "\"7\""), "string"});
  const std::string sequence =
      R"({"kind":"CancelByOrder","sequence":"1","account_id":7,"order_id":1})";
  ExpectInvalid(sequence, {"\"sequence\"", ColumnOf(sequence, "\"1\"")});
  const std::string kind = R"({"kind":1,"sequence":1})";
  ExpectInvalid(kind, {"\"kind\"", ColumnOf(kind, "1")});
}

TEST(JsonToFrameTest, RejectsValuesOutOfTheirFieldsRange) {
  struct Case {
    std::string_view key;
    std::string_view value;
  };
  // Fields of NewLimit; the other fields keep the golden values.
  const Case cases[] = {
      {"side", "256"},
      {"time_in_force", "-1"},
      {"quantity", "-1"},
      {"quantity", "18446744073709551616"},
      {"price", "9223372036854775808"},
      {"price", "-9223372036854775809"},
      {"instrument_id", "4294967296"},
      {"sequence", "18446744073709551616"},
      {"account_id", "-5"},
  };
  for (const Case& c : cases) {
    const std::string key = absl::StrFormat("\"%s\":", c.key);
    const std::size_t at = kNewLimitJson.find(key) + key.size();
    const std::size_t end = kNewLimitJson.find_first_of(",}", at);
    const std::string line = Splice(kNewLimitJson, at, end - at, c.value);
    ExpectInvalid(line, {absl::StrFormat("\"%s\"", c.key),
                         absl::StrFormat("column %d:", at), "does not fit"});
  }
  // Rejected.reason is a u16 and command_kind a u8.
  const std::string reason =
      R"({"kind":"Rejected","sequence":2,"account_id":7,"client_order_id":1,)"
      R"("order_id":0,"command_kind":1,"reason":65536})";
  ExpectInvalid(reason, {"\"reason\"", ColumnOf(reason, "65536")});
  const std::string command_kind =
      R"({"kind":"Rejected","sequence":2,"account_id":7,"client_order_id":1,)"
      R"("order_id":0,"command_kind":300,"reason":1})";
  ExpectInvalid(command_kind,
                {"\"command_kind\"", ColumnOf(command_kind, "300")});
}

TEST(JsonToFrameTest, AcceptsTheExtremesOfEachWidth) {
  const std::string line =
      R"({"kind":"NewLimit","sequence":18446744073709551615,)"
      R"("account_id":0,"client_order_id":18446744073709551615,)"
      R"("instrument_id":4294967295,"side":255,"time_in_force":0,)"
      R"("price":-9223372036854775808,"quantity":18446744073709551615})";
  const absl::StatusOr<std::string> hex = JsonToHex(line);
  ASSERT_TRUE(hex.ok()) << hex.status();
  EXPECT_EQ(*hex,
            "ffffffffffffffff01"
            "0000000000000000"
            "ffffffffffffffff"
            "ffffffff"
            "ff"
            "00"
            "0000000000000080"
            "ffffffffffffffff");
}

TEST(JsonToFrameTest, RejectsNumbersThatAreNotIntegers) {
  for (std::string_view value :
       {"1.5", "1e3", "true", "null", "+1", "-", "0x10", "1-2"}) {
    const std::size_t at = kNewLimitJson.find("\"account_id\":") + 13;
    const std::string line =
        Splice(kNewLimitJson, at, 1, value);  // replaces the "7"
    ExpectInvalid(line, {"\"account_id\"", absl::StrFormat("column %d:", at)});
  }
}

TEST(JsonToFrameTest, RejectsBadJsonSyntaxNamingTheColumn) {
  struct Case {
    std::string_view line;
    std::size_t column;
  };
  const Case cases[] = {
      {"", 0},
      {"   ", 3},
      {"[1]", 0},
      {R"({"kind" "NewLimit"})", 8},
      {R"({"kind":"NewLimit",})", 19},
      {R"({"kind":"NewLimit")", 18},
      {R"({"kind":"NewLimit)", 17},
      {R"({kind:"NewLimit"})", 1},
      {R"({"kind":})", 8},
      {R"({"kind":"New\nLimit"})", 12},
      {R"({"kind":"NewLimit" "sequence":1})", 19},
  };
  for (const Case& c : cases) {
    ExpectInvalid(c.line, {absl::StrFormat("column %d:", c.column)});
  }
}

TEST(JsonToFrameTest, RejectsAnUnknownKindNamingIt) {
  const std::string line = R"({"kind":"NewStop","sequence":1})";
  ExpectInvalid(line, {"\"NewStop\"", ColumnOf(line, "\"NewStop\""), "kind"});
  // Names are case-sensitive.
  ExpectInvalid(R"({"kind":"newlimit","sequence":1})", {"\"newlimit\""});
}

TEST(JsonToFrameTest, RejectsTextAfterTheObject) {
  for (std::string_view tail : {" x", "{}", ",", " }", "\n{\"kind\":1}"}) {
    const std::string line = absl::StrFormat("%s%s", kNewLimitJson, tail);
    const std::size_t at = line.find_first_not_of(" \n", kNewLimitJson.size());
    ExpectInvalid(line, {absl::StrFormat("column %d:", at), "after"});
  }
}

// A repeated key is rejected whatever the kind and wherever the second one
// is, also when both carry the same value (simdjson's on-demand reader keeps
// duplicates; this format counts them).
TEST(JsonToFrameTest, RejectsARepeatedKeyOfEveryKindWithTheSameValue) {
  for (std::string_view json : kGoldenJson) {
    // Repeat the last member: `..."name":value}` -> `...,"name":value}`.
    const std::size_t comma = json.rfind(',');
    const std::string member(json.substr(comma + 1, json.size() - comma - 2));
    const std::string line =
        absl::StrFormat("%s,%s}", json.substr(0, json.size() - 1), member);
    const std::string key = member.substr(0, member.find(':'));
    ExpectInvalid(line, {key, "appears twice",
                         absl::StrFormat("column %d:", json.size())});
  }
}

TEST(JsonToFrameTest, RejectsAnObjectOrArrayValueNamingTheColumn) {
  for (std::string_view value : {"{}", "[7]", "{\"a\":1}", "[]"}) {
    const std::size_t at = kNewLimitJson.find("\"account_id\":") + 13;
    const std::string line = Splice(kNewLimitJson, at, 1, value);
    ExpectInvalid(line,
                  {absl::StrFormat("column %d:", at), "expected a value"});
  }
}

TEST(JsonToFrameTest, RejectsIntegersWithLeadingZeros) {
  for (std::string_view value : {"07", "-01", "00"}) {
    const std::size_t at = kNewLimitJson.find("\"price\":") + 8;
    const std::size_t end = kNewLimitJson.find(',', at);
    const std::string line = Splice(kNewLimitJson, at, end - at, value);
    ExpectInvalid(line, {"\"price\"", absl::StrFormat("column %d:", at),
                         "is not an integer"});
  }
}

TEST(JsonToFrameTest, RejectsEscapesAndControlCharactersInKeysAndStrings) {
  // An escape in a key (even one that would spell a known key).
  const std::string escaped_key =
      R"({"kind":"CancelByOrder","sequence":1,"account\u005fid":7,)"
      R"("order_id":1})";
  ExpectInvalid(escaped_key, {ColumnOf(escaped_key, "\\"), "escape"});
  // A raw tab inside a string value and inside a key.
  const std::string tab_value =
      "{\"kind\":\"Cancel\tByOrder\",\"sequence\":1,\"account_id\":7,"
      "\"order_id\":1}";
  ExpectInvalid(tab_value, {ColumnOf(tab_value, "\t"), "control character"});
  const std::string tab_key =
      "{\"kind\":\"CancelByOrder\",\"seq\tuence\":1,\"account_id\":7,"
      "\"order_id\":1}";
  ExpectInvalid(tab_key, {ColumnOf(tab_key, "\t"), "control character"});
}

TEST(JsonToFrameTest, RejectsInvalidUtf8NamingItsColumn) {
  // "é" (valid UTF-8) in an unknown key, then a lone continuation byte.
  const std::string valid = "{\"kind\":\"NewLimit\",\"\xc3\xa9\":1}";
  ExpectInvalid(valid, {ColumnOf(valid, "\"\xc3\xa9\""), "no field"});
  const std::string invalid = "{\"kind\":\"NewLimit\",\"\xc3\xa9\xa9\":1}";
  ExpectInvalid(
      invalid,
      {absl::StrFormat("column %d:", invalid.find('\xc3') + 2), "UTF-8"});
}

// The reader never reads past the end of its input (simdjson needs padding
// after a document; the reader copies the line into a padded buffer of its
// own): a line that ends on the last byte before an inaccessible page is
// read, accepted or rejected, without a fault.
TEST(JsonToFrameTest, ReadsNothingPastTheEndOfTheLine) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* const map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  char* const guard = static_cast<char*>(map) + page;
  ASSERT_EQ(mprotect(guard, page, PROT_NONE), 0);
  std::array<std::byte, kMaxFrameSize> out{};
  const std::string unterminated(kNewLimitJson.substr(0, 40));
  for (std::string_view text : {kNewLimitJson, std::string_view(unterminated),
                                std::string_view("{\"kind\":\"NewLi")}) {
    SCOPED_TRACE(text);
    char* const start = guard - text.size();
    std::memcpy(start, text.data(), text.size());
    const absl::StatusOr<std::size_t> size =
        JsonToFrame(std::string_view(start, text.size()), out);
    EXPECT_EQ(size.ok(), text == kNewLimitJson) << size.status();
  }
  munmap(map, 2 * page);
}

TEST(JsonToFrameTest, ReportsOutOfRangeWhenTheOutputIsTooSmall) {
  std::array<std::byte, 46> out{};  // NewLimit needs 47
  const absl::StatusOr<std::size_t> size = JsonToFrame(kNewLimitJson, out);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace orderwire::jsonl::test
