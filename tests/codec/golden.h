// The golden frames and the golden datagram of docs/PROTOCOL-GOLDEN.md.
//
// Copied by hand from docs/PROTOCOL-GOLDEN.md; they are the
// published vectors every encoder and decoder must reproduce byte for byte.
// The field values each frame encodes are typed out in golden_test.cc and
// json_test.cc, from the same section of docs/PROTOCOL.md, not derived from
// here. The fuzz seed corpus is built from these too (fuzz/make_corpus.cc).
#ifndef ORDERWIRE_TESTS_CODEC_GOLDEN_H_
#define ORDERWIRE_TESTS_CODEC_GOLDEN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codec/types.h"

namespace orderwire::codec::golden {

struct GoldenFrame {
  std::string_view name;  // e.g. "NewLimitBuy"
  Kind kind;
  std::size_t size;  // as stated by docs/PROTOCOL.md
  std::string_view hex;
};

// In docs/PROTOCOL-GOLDEN.md order (version 1's kinds in PROTOCOL.md
// order, then version 2's).
inline constexpr std::array<GoldenFrame, 22> kFrames = {{
    {"NewLimitBuy", Kind::kNewLimit, 47,
     "0100000000000000010700000000000000e9030000000000002a00000001014227000000"
     "0000002c01000000000000"},
    {"NewLimitSell", Kind::kNewLimit, 47,
     "0200000000000000010700000000000000ea030000000000002a0000000202fbffffffff"
     "ffffff0100000000000000"},
    {"NewMarket", Kind::kNewMarket, 38,
     "03000000000000000209000000000000004d000000000000002a00000002fa0000000000"
     "0000"},
    {"CancelByOrder", Kind::kCancelByOrder, 25,
     "04000000000000000307000000000000000807060504030201"},
    {"CancelByClient", Kind::kCancelByClient, 25,
     "0500000000000000040700000000000000e903000000000000"},
    {"Replace", Kind::kReplace, 49,
     "06000000000000000507000000000000000300000000000000eb03000000000000412700"
     "0000000000c800000000000000"},
    {"Accepted", Kind::kAccepted, 55,
     "01000000000000004103000000000000000700000000000000e9030000000000002a0000"
     "00010142270000000000002c01000000000000"},
    {"Rejected", Kind::kRejected, 36,
     "0200000000000000420700000000000000ea03000000000000000000000000000001040"
     "0"},
    {"Filled", Kind::kFilled, 71,
     "03000000000000004303000000000000000700000000000000e903000000000000010000"
     "00000000002a00000001014227000000000000fa00000000000000320000000000000"
     "0"},
    {"Cancelled", Kind::kCancelled, 46,
     "04000000000000004403000000000000000700000000000000e9030000000000002a0000"
     "00320000000000000001"},
    {"Replaced", Kind::kReplaced, 50,
     "05000000000000004503000000000000000700000000000000eb03000000000000412700"
     "0000000000c80000000000000002"},
    {"SequenceGap", Kind::kSequenceGap, 17,
     "0000000000000000461100000000000000"},
    {"ReportsGone", Kind::kReportsGone, 25,
     "00000000000000004705000000000000000900000000000000"},
    {"Busy", Kind::kBusy, 18, "000000000000000048110000000000000001"},
    {"MassCancel", Kind::kMassCancel, 31,
     "07000000000000000607000000000000002a00000000000000000000000301"},
    {"MassCancelDone", Kind::kMassCancelDone, 35,
     "06000000000000004907000000000000002a0000000000000000000000030102000000"},
    {"Heartbeat", Kind::kHeartbeat, 17, "0000000000000000070807060504030201"},
    {"HeartbeatAck", Kind::kHeartbeatAck, 33,
     "00000000000000004a080706050403020108000000000000000c00000000000000"},
    {"Goodbye", Kind::kGoodbye, 25,
     "08000000000000000807000000000000002b00000000000000"},
    {"SessionClosed", Kind::kSessionClosed, 30,
     "07000000000000004b07000000000000002b000000000000000102000000"},
    {"OrderStatusRequest", Kind::kOrderStatusRequest, 33,
     "09000000000000000907000000000000000300000000000000eb03000000000000"},
    {"OrderStatus", Kind::kOrderStatus, 63,
     "08000000000000004c03000000000000000700000000000000eb030000000000002a0000"
     "0001014127000000000000c8000000000000006400000000000000"},
}};

// Session 0xCAFE: the first NewLimit above (sequence 1), then CancelByClient
// account 7, client_order_id 1001, sequence 2. 84 bytes.
inline constexpr std::string_view kDatagramHex =
    "4f570100feca0000020000000100000000000000010700000000000000e9030000000000"
    "002a000000010142270000000000002c010000000000000200000000000000040700000000"
    "000000e903000000000000";
inline constexpr std::size_t kDatagramSize = 84;
inline constexpr std::uint32_t kDatagramSessionId = 0xCAFE;

// The same datagram authenticated (flag 0x01) with the key 0x00..0x1f: its
// 84 bytes with byte 3 = 01, then the 16-byte keyed BLAKE2b MAC. 100 bytes.
inline constexpr std::string_view kAuthenticatedDatagramHex =
    "4f570101feca0000020000000100000000000000010700000000000000e9030000000000"
    "002a000000010142270000000000002c010000000000000200000000000000040700000000"
    "000000e903000000000000644b7c681822eb36aedd4bb52122e530";

}  // namespace orderwire::codec::golden

#endif  // ORDERWIRE_TESTS_CODEC_GOLDEN_H_
