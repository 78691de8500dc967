// CodecError names and descriptions, and Result<T>.
#include "codec/error.h"

#include <set>
#include <string>
#include <string_view>

#include "codec/result.h"
#include "gtest/gtest.h"

namespace orderwire::codec::test {
namespace {

TEST(ErrorTest, EveryErrorHasADistinctNameAndDescription) {
  std::set<std::string_view> names;
  std::set<std::string_view> descriptions;
  for (int i = 0; i < kCodecErrorCount; ++i) {
    const auto e = static_cast<CodecError>(i);
    EXPECT_NE(Name(e), "Invalid") << i;
    EXPECT_FALSE(Name(e).empty()) << i;
    EXPECT_FALSE(Describe(e).empty()) << i;
    names.insert(Name(e));
    descriptions.insert(Describe(e));
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kCodecErrorCount));
  EXPECT_EQ(descriptions.size(), static_cast<std::size_t>(kCodecErrorCount));
  EXPECT_EQ(Name(CodecError::kOk), "Ok");
  EXPECT_EQ(Name(CodecError::kTruncated), "Truncated");
  EXPECT_EQ(Name(CodecError::kTooManyFrames), "TooManyFrames");
}

TEST(ErrorTest, AValueBeyondTheEnumIsNamedInvalid) {
  const auto beyond = static_cast<CodecError>(kCodecErrorCount);
  EXPECT_EQ(Name(beyond), "Invalid");
  EXPECT_EQ(Describe(beyond), "invalid error value");
}

TEST(ResultTest, HoldsAValueOrAnError) {
  const Result<int> value = 42;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value.error(), CodecError::kOk);
  EXPECT_EQ(*value, 42);
  EXPECT_EQ(value.value(), 42);
  const Result<int> error = CodecError::kBadFlags;
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.error(), CodecError::kBadFlags);
  static_assert(std::is_trivially_copyable_v<Result<int>>);
}

}  // namespace
}  // namespace orderwire::codec::test
