// The journal stream's description (replication/journal_stream.h), which
// names the journal the stream carries: "orderwire journal <journal_id>",
// 16 lowercase hex digits. No NATS.
#include "replication/journal_stream.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::replication {
namespace {

using ::testing::HasSubstr;

TEST(JournalStreamDescription, NamesTheJournalIdInSixteenHexDigits) {
  EXPECT_EQ(JournalStreamDescription(0x0123456789abcdefULL),
            "orderwire journal 0123456789abcdef");
  EXPECT_EQ(JournalStreamDescription(0x5eed),
            "orderwire journal 0000000000005eed");
  for (const std::uint64_t id :
       {std::uint64_t{1}, std::uint64_t{0x5eed}, ~std::uint64_t{0}}) {
    absl::StatusOr<std::uint64_t> parsed =
        ParseJournalStreamDescription(JournalStreamDescription(id));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, id);
  }
}

TEST(JournalStreamDescription, AnEmptyOneNamesNoJournal) {
  absl::StatusOr<std::uint64_t> parsed = ParseJournalStreamDescription("");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, 0u);
}

TEST(JournalStreamDescription, AnythingElseIsRefusedQuoted) {
  for (const std::string bad : {
           "orderwire journal",
           "orderwire journal ",
           "orderwire journal 0123456789abcde",    // 15 digits
           "orderwire journal 0123456789abcdef0",  // 17
           "orderwire journal 0123456789ABCDEF",   // upper case
           "orderwire journal 0x23456789abcdef",   // a prefix
           "orderwire journal 0000000000000000",   // 0 is no journal
           "orderwire journal  123456789abcdef",   // a space
           "Orderwire journal 0123456789abcdef",
           "my stream",
       }) {
    absl::StatusOr<std::uint64_t> parsed = ParseJournalStreamDescription(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("'" + bad + "'"));
  }
  // A long one is quoted cut short.
  const std::string long_one(200, 'x');
  absl::StatusOr<std::uint64_t> parsed =
      ParseJournalStreamDescription(long_one);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("'" + std::string(80, 'x') + "...'"));
}

}  // namespace
}  // namespace orderwire::replication
