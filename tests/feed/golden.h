// The golden packets and messages of docs/MARKETDATA-GOLDEN.md,
// as hex, and the small hex helpers the feed tests share.
//
// Copied by hand from docs/MARKETDATA-GOLDEN.md; they are the published vectors
// every encoder and parser must reproduce byte for byte. The field values
// each one encodes are typed out in golden_test.cc from the same section,
// not derived from here. The fuzz seed corpus is built from these too
// (fuzz/make_corpus.cc).
#ifndef ORDERWIRE_TESTS_FEED_GOLDEN_H_
#define ORDERWIRE_TESTS_FEED_GOLDEN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orderwire::feed::golden {

struct GoldenBytes {
  std::string_view name;
  std::size_t size;  // as stated by docs/MARKETDATA-GOLDEN.md
  std::string_view hex;
};

// The session and the two receive times of the golden journal.
inline constexpr std::uint64_t kSession = 0x0123456789ABCDEF;
inline constexpr std::uint64_t kT1 = 1700000000000000000;
inline constexpr std::uint64_t kT2 = 1700000000000250000;

// "Other kinds at T2, message bytes only", in the document's order.
inline constexpr GoldenBytes kOrderReduced{
    "OrderReduced", 29,
    "5890d02d36fe9c971702000000000000002a0000002800000000000000"};
inline constexpr GoldenBytes kOrderDeleted{
    "OrderDeleted", 21, "4490d02d36fe9c971702000000000000002a000000"};
inline constexpr GoldenBytes kOrderReplaced{
    "OrderReplaced", 37,
    "5590d02d36fe9c971702000000000000002a0000003d270000000000009600000000"
    "000000"};
inline constexpr GoldenBytes kTradingStatusHalted{
    "TradingStatusHalted", 14, "4890d02d36fe9c97172a00000002"};

// "Packets", in the document's order.
inline constexpr GoldenBytes kStartOfFeed{
    "StartOfFeed", 139,
    "4f4d0101efcdab89674523010100000000000000040000000a005300002a36fe9c9717"
    "012d005200002a36fe9c97172a000000010000000000000000ca9a3b00000000010000"
    "000000000000ca9a3b000000000e004800002a36fe9c97172a0000000126004100002a"
    "36fe9c971701000000000000002a0000000142270000000000002c01000000000000"};
inline constexpr GoldenBytes kExecutedAdded{
    "ExecutedAdded", 112,
    "4f4d0101efcdab89674523010500000000000000020000002e004590d02d36fe9c9717"
    "01000000000000002a00000001010000000000000042270000000000002c0100000000"
    "000026004190d02d36fe9c971702000000000000002a00000002382700000000000064"
    "00000000000000"};
inline constexpr GoldenBytes kHeartbeat{
    "Heartbeat", 24, "4f4d0102efcdab8967452301070000000000000000000000"};
inline constexpr GoldenBytes kEndOfSession{
    "EndOfSession", 24, "4f4d0103efcdab8967452301070000000000000000000000"};
inline constexpr GoldenBytes kRetransmitRequest5{
    "RetransmitRequest5", 24,
    "4f4d0111efcdab8967452301050000000000000002000700"};
inline constexpr GoldenBytes kRetransmitRequest9{
    "RetransmitRequest9", 24,
    "4f4d0111efcdab8967452301090000000000000004000900"};
inline constexpr GoldenBytes kRefusedBeyondEnd{
    "RefusedBeyondEnd", 41,
    "4f4d0105efcdab89674523010900000000000000000009000201000000000000000700"
    "000000000000"};
inline constexpr GoldenBytes kRetransmitRequest1{
    "RetransmitRequest1", 24,
    "4f4d0111efcdab896745230101000000000000000a000a00"};
inline constexpr GoldenBytes kRefusedNotRetained{
    "RefusedNotRetained", 41,
    "4f4d0105efcdab8967452301010000000000000000000a000105000000000000000700"
    "000000000000"};
inline constexpr GoldenBytes kSnapshotRequest{
    "SnapshotRequest", 28,
    "4f4d0112efcdab89674523010000000000000000000008002a000000"};
inline constexpr GoldenBytes kSnapshotReply{
    "SnapshotReply", 173,
    "4f4d0104efcdab896745230101000000000000000500080019004790d02d36fe9c9717"
    "06000000000000002a000000050000002d005290d02d36fe9c97172a00000001000000"
    "0000000000ca9a3b00000000010000000000000000ca9a3b000000000e004890d02d36"
    "fe9c97172a0000000126004190d02d36fe9c971702000000000000002a000000023827"
    "000000000000640000000000000011005a90d02d36fe9c97170600000000000000"};

// The packets a subscriber receives, and the requests a server receives.
inline constexpr std::array<GoldenBytes, 7> kSubscriberPackets = {
    kStartOfFeed,      kExecutedAdded,      kHeartbeat,    kEndOfSession,
    kRefusedBeyondEnd, kRefusedNotRetained, kSnapshotReply};
inline constexpr std::array<GoldenBytes, 4> kRequests = {
    kRetransmitRequest5, kRetransmitRequest9, kRetransmitRequest1,
    kSnapshotRequest};
inline constexpr std::array<GoldenBytes, 4> kMessages = {
    kOrderReduced, kOrderDeleted, kOrderReplaced, kTradingStatusHalted};

// Bytes from lower- or upper-case hex digits (test data: well formed).
inline std::vector<std::byte> FromHex(std::string_view hex) {
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return c - 'A' + 10;
  };
  std::vector<std::byte> out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(nibble(hex[2 * i]) * 16 +
                                    nibble(hex[2 * i + 1]));
  }
  return out;
}

}  // namespace orderwire::feed::golden

#endif  // ORDERWIRE_TESTS_FEED_GOLDEN_H_
