// The input format of fuzz_journal: a recipe of damage applied to a valid
// journal. Shared by the target and by the seed corpus generator, so that
// the seeds and the target read the bytes the same way.
//
// CRC32C catches every random change to a group, so random bytes would
// never get past the checksum. The fuzzer therefore does not get the
// journal's bytes: it gets a list of operations on a small valid journal
// built once, and the operations can re-seal what they changed (recompute
// a group's or a segment header's checksum), which lets mutations reach the
// structural checks behind the checksum.
//
//   input = op*            each op: one opcode byte (taken modulo kOpCount)
//                          then its operands, little-endian
//
//   opcode               operands                  effect
//   kXorInGroup        g u8, offset u16, x u8      byte (group g's start +
//                                                  offset % (extent + 64)) ^= x
//   kXorAt             offset u24, x u8            byte offset % (all bytes)
//                                                  of the files back to back
//   kXorInHeader       file u8, offset u8, x u8    byte offset % 128 ^= x
//   kZeroInGroup       g u8, offset u16, len u16   zero len bytes from group
//                                                  g's start + offset % extent
//   kTruncateInGroup   g u8, offset u16            cut g's file at its start +
//                                                  offset % (extent + 1)
//   kTruncateFile      file u8, length u24         cut at length % (size + 1)
//   kResealGroup       file u8, block u8           recompute the CRC of the
//                                                  group at block % blocks
//   kResealHeader      file u8                     recompute the header CRC
//                                                  (and the metadata CRC)
//   kRemoveFile        file u8                     delete the file
//   kRenameFile        file u8, name u8            rename to next.owj.prep
//                                                  (name 0) or to the segment
//                                                  name of index `name`
//   kCopyGroup         g u8, file u8, block u8     write group g's original
//                                                  bytes at block % blocks
//   kZeroAt            file u8, offset u24,        zero len bytes from
//                      len u16                     offset % size (a lost
//                                                  sector, a header that
//                                                  never arrived)
//
// `g` picks one of the valid journal's groups (modulo their count), located
// in the file that holds it now (followed through renames; skipped if that
// file is gone); `extent` is its 40 + records_bytes bytes. `file` picks one
// of the directory's files (modulo their count, in name order). An op whose
// operands are cut off by the end of the input, or whose target does not
// exist, does nothing. At most kMaxOps ops are applied.
#ifndef ORDERWIRE_FUZZ_JOURNAL_RECIPE_H_
#define ORDERWIRE_FUZZ_JOURNAL_RECIPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace orderwire::fuzz {

enum class JournalOp : std::uint8_t {
  kXorInGroup,
  kXorAt,
  kXorInHeader,
  kZeroInGroup,
  kTruncateInGroup,
  kTruncateFile,
  kResealGroup,
  kResealHeader,
  kRemoveFile,
  kRenameFile,
  kCopyGroup,
  kZeroAt,
};
inline constexpr std::size_t kOpCount = 12;
inline constexpr std::size_t kMaxOps = 64;

// Operand bytes of each op, in JournalOp order.
inline constexpr std::array<std::size_t, kOpCount> kOperandBytes = {
    4, 4, 3, 5, 3, 4, 2, 1, 1, 2, 3, 6};

// One decoded op: its opcode and up to six operand bytes.
struct RecipeStep {
  JournalOp op = JournalOp::kXorInGroup;
  std::array<std::uint8_t, 6> operand{};

  // Operand bytes [at, at + n) as a little-endian integer.
  [[nodiscard]] std::uint32_t Le(std::size_t at, std::size_t n) const {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < n; ++i) {
      value |= std::uint32_t{operand[at + i]} << (8 * i);
    }
    return value;
  }
};

// Decodes a recipe; stops at the first op cut off by the end of `input`.
inline std::vector<RecipeStep> ParseRecipe(
    std::span<const std::uint8_t> input) {
  std::vector<RecipeStep> steps;
  std::size_t pos = 0;
  while (pos < input.size() && steps.size() < kMaxOps) {
    RecipeStep step;
    const std::size_t code = input[pos] % kOpCount;
    step.op = static_cast<JournalOp>(code);
    const std::size_t n = kOperandBytes[code];
    if (input.size() - pos - 1 < n) break;
    for (std::size_t i = 0; i < n; ++i) step.operand[i] = input[pos + 1 + i];
    steps.push_back(step);
    pos += 1 + n;
  }
  return steps;
}

// Builds recipes (for seeds): each call appends one op.
class RecipeWriter {
 public:
  RecipeWriter& XorInGroup(std::uint8_t g, std::uint16_t offset,
                           std::uint8_t x) {
    return Op(JournalOp::kXorInGroup).Le(g, 1).Le(offset, 2).Le(x, 1);
  }
  RecipeWriter& XorAt(std::uint32_t offset, std::uint8_t x) {
    return Op(JournalOp::kXorAt).Le(offset, 3).Le(x, 1);
  }
  RecipeWriter& XorInHeader(std::uint8_t file, std::uint8_t offset,
                            std::uint8_t x) {
    return Op(JournalOp::kXorInHeader).Le(file, 1).Le(offset, 1).Le(x, 1);
  }
  RecipeWriter& ZeroInGroup(std::uint8_t g, std::uint16_t offset,
                            std::uint16_t length) {
    return Op(JournalOp::kZeroInGroup).Le(g, 1).Le(offset, 2).Le(length, 2);
  }
  RecipeWriter& TruncateInGroup(std::uint8_t g, std::uint16_t offset) {
    return Op(JournalOp::kTruncateInGroup).Le(g, 1).Le(offset, 2);
  }
  RecipeWriter& TruncateFile(std::uint8_t file, std::uint32_t length) {
    return Op(JournalOp::kTruncateFile).Le(file, 1).Le(length, 3);
  }
  RecipeWriter& ResealGroup(std::uint8_t file, std::uint8_t block) {
    return Op(JournalOp::kResealGroup).Le(file, 1).Le(block, 1);
  }
  RecipeWriter& ResealHeader(std::uint8_t file) {
    return Op(JournalOp::kResealHeader).Le(file, 1);
  }
  RecipeWriter& RemoveFile(std::uint8_t file) {
    return Op(JournalOp::kRemoveFile).Le(file, 1);
  }
  RecipeWriter& RenameFile(std::uint8_t file, std::uint8_t name) {
    return Op(JournalOp::kRenameFile).Le(file, 1).Le(name, 1);
  }
  RecipeWriter& CopyGroup(std::uint8_t g, std::uint8_t file,
                          std::uint8_t block) {
    return Op(JournalOp::kCopyGroup).Le(g, 1).Le(file, 1).Le(block, 1);
  }
  RecipeWriter& ZeroAt(std::uint8_t file, std::uint32_t offset,
                       std::uint16_t length) {
    return Op(JournalOp::kZeroAt).Le(file, 1).Le(offset, 3).Le(length, 2);
  }

  [[nodiscard]] const std::vector<std::uint8_t>& bytes() const {
    return bytes_;
  }

 private:
  RecipeWriter& Op(JournalOp op) {
    bytes_.push_back(static_cast<std::uint8_t>(op));
    return *this;
  }
  RecipeWriter& Le(std::uint32_t value, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      bytes_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    }
    return *this;
  }

  std::vector<std::uint8_t> bytes_;
};

}  // namespace orderwire::fuzz

#endif  // ORDERWIRE_FUZZ_JOURNAL_RECIPE_H_
