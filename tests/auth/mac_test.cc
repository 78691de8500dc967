// orderwire::auth: the MAC of docs/PROTOCOL.md "Authenticated datagrams"
// (golden vector first), that any change of any byte, of the key or of the
// tag fails verification, and key parsing and key files.
#include "auth/mac.h"

#include <sys/stat.h>

#include <string>

#include "codec/datagram.h"
#include "gtest/gtest.h"
#include "tests/codec/golden.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::auth {
namespace {

using test_support::Bytes;
using test_support::FromHex;
using test_support::Hex;

// docs/PROTOCOL-GOLDEN.md: the authenticated datagram
// (tests/codec/golden.h) and its key.
constexpr std::string_view kGoldenAuthenticatedHex =
    codec::golden::kAuthenticatedDatagramHex;
constexpr std::string_view kGoldenKeyHex =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

Key GoldenKey() { return *ParseKeyHex(kGoldenKeyHex); }

TEST(MacTest, ComputesTheGoldenTagOfProtocolMd) {
  const Bytes datagram = FromHex(kGoldenAuthenticatedHex);
  const Mac mac(GoldenKey());
  const std::span<const std::byte> covered(datagram.data(),
                                           datagram.size() - kTagSize);
  const Tag tag = mac.Compute(covered);
  EXPECT_EQ(Hex(tag), "644b7c681822eb36aedd4bb52122e530");
  const auto view = codec::DatagramView::Parse(datagram);
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(VerifyDatagram(mac, *view));
}

TEST(MacTest, RejectsTheGoldenDatagramWithAnyBitOfAnyByteChanged) {
  const Bytes golden = FromHex(kGoldenAuthenticatedHex);
  const Mac mac(GoldenKey());
  for (std::size_t i = 0; i < golden.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes d = golden;
      d[i] ^= static_cast<std::byte>(1 << bit);
      const std::span<const std::byte> covered(d.data(), d.size() - kTagSize);
      const std::span<const std::byte> tag(d.data() + d.size() - kTagSize,
                                           kTagSize);
      EXPECT_FALSE(mac.Verify(covered, tag)) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(MacTest, RejectsAnotherKeyAndATagOfTheWrongSize) {
  const Bytes d = FromHex(kGoldenAuthenticatedHex);
  const std::span<const std::byte> covered(d.data(), d.size() - kTagSize);
  const std::span<const std::byte> tag(d.data() + d.size() - kTagSize,
                                       kTagSize);
  Key other = GoldenKey();
  other.bytes[31] ^= std::byte{1};
  EXPECT_FALSE(Mac(other).Verify(covered, tag));
  const Mac mac(GoldenKey());
  EXPECT_TRUE(mac.Verify(covered, tag));
  EXPECT_FALSE(mac.Verify(covered, tag.first(15)));
  EXPECT_FALSE(mac.Verify(covered, {}));
}

TEST(MacTest, DatagramWithoutTheFlagDoesNotVerify) {
  Bytes d = FromHex(kGoldenAuthenticatedHex);
  d.resize(d.size() - kTagSize);
  d[3] = std::byte{0};
  const auto view = codec::DatagramView::Parse(d);
  ASSERT_TRUE(view.ok());
  EXPECT_FALSE(VerifyDatagram(Mac(GoldenKey()), *view));
}

TEST(MacTest, SealDatagramProducesTheGoldenDatagram) {
  const Bytes golden = FromHex(kGoldenAuthenticatedHex);
  const auto view = codec::DatagramView::Parse(golden);
  ASSERT_TRUE(view.ok());
  std::array<std::byte, codec::kMaxDatagramSize> buffer{};
  codec::DatagramBuilder builder(buffer, 0xCAFE, /*authenticated=*/true);
  for (const codec::FrameView frame : *view) {
    ASSERT_EQ(builder.AppendFrame(frame.bytes()), codec::CodecError::kOk);
  }
  EXPECT_EQ(Hex(SealDatagram(Mac(GoldenKey()), builder)),
            kGoldenAuthenticatedHex);
}

TEST(KeyTest, ParsesHexInEitherCaseAndPrintsItBack) {
  const auto lower = ParseKeyHex(kGoldenKeyHex);
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ(KeyToHex(*lower), kGoldenKeyHex);
  std::string upper(kGoldenKeyHex);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  const auto parsed = ParseKeyHex("  " + upper + "\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(KeyToHex(*parsed), kGoldenKeyHex);
}

TEST(KeyTest, RejectsWrongLengthsAndNonHexCharactersSayingWhy) {
  const std::string good(kGoldenKeyHex);
  const auto short_key = ParseKeyHex(good.substr(0, 63));
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.status().message().find("63 characters"),
            std::string::npos)
      << short_key.status();
  EXPECT_FALSE(ParseKeyHex(good + "0").ok());
  EXPECT_FALSE(ParseKeyHex("").ok());
  std::string bad = good;
  bad[10] = 'g';
  const auto non_hex = ParseKeyHex(bad);
  ASSERT_FALSE(non_hex.ok());
  EXPECT_NE(non_hex.status().message().find("character 11"), std::string::npos)
      << non_hex.status();
}

TEST(KeyFileTest, ReadsOneKeyWithCommentsAndWarnsWhenOthersCanRead) {
  test_support::ScratchDir dir;
  const std::string path = dir.Sub("session.key");
  test_support::WriteText(
      path, "# session 7\n\n" + std::string(kGoldenKeyHex) + "\n");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::string warning;
  const auto key = LoadKeyFile(path, &warning);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(KeyToHex(*key), kGoldenKeyHex);
  EXPECT_TRUE(warning.empty()) << warning;
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_TRUE(LoadKeyFile(path, &warning).ok());
  EXPECT_NE(warning.find("chmod 600"), std::string::npos) << warning;
}

TEST(KeyFileTest, ErrorsNameTheFileAndTheLine) {
  test_support::ScratchDir dir;
  const std::string path = dir.Sub("bad.key");
  test_support::WriteText(path, "# comment\nnot-a-key\n");
  const auto bad = LoadKeyFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":2:"), std::string::npos)
      << bad.status();
  test_support::WriteText(path, std::string(kGoldenKeyHex) + "\n" +
                                    std::string(kGoldenKeyHex) + "\n");
  const auto twice = LoadKeyFile(path);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find(path + ":2: a second key"),
            std::string::npos)
      << twice.status();
  test_support::WriteText(path, "# nothing\n");
  const auto empty = LoadKeyFile(path);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no key"), std::string::npos);
  const auto missing = LoadKeyFile(dir.Sub("absent.key"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace orderwire::auth
