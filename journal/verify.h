// Verifying the part of a journal that a bounded open does not read.
//
// JournalWriter::Open reads the journal from its checkpoint's group on, and
// a restart from a snapshot replays only the records after the snapshot:
// neither enters the groups before both, so damage there (a bit flipped in
// an old segment) would go unseen until a full replay, an audit or a
// standby seeded from the journal fails much later. VerifyPrefix reads
// those groups the way `orderwire replay --verify` does (every group's
// CRC32C, indexes, kinds, sizes and padding; every segment header), so that
// a start refuses such a journal at once, naming what is lost.
//
// Cost: one sequential pass over the bytes of the records verified (the
// reader's group check: CRC32C over the bytes plus a few loads per record;
// from a cold disk, bound by the disk's read bandwidth). Figures:
// docs/BENCHMARKS.md "Start-up verification". Cold; allocates the reader's
// segment list.
#ifndef ORDERWIRE_JOURNAL_VERIFY_H_
#define ORDERWIRE_JOURNAL_VERIFY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace orderwire::journal {

struct VerifiedPrefix {
  std::uint64_t first_index = 0;  // the journal's first index (1 unless
                                  // pruned); 0 when nothing was verified
  std::uint64_t last_index = 0;   // the last record verified
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;     // segment bytes passed
  std::uint64_t segments = 0;  // segments entered
  double seconds = 0;
};

// Reads every record of the journal in `directory` with an index below
// `end_index` (the first index the caller reads itself), from the
// journal's first index. end_index at or below the journal's first index
// verifies nothing. Errors: DataLoss naming the file, the offset, the last
// good index and the records that cannot be read (the reader's message,
// with "the journal holds index N, so M..N-1 would be lost"); the reader's
// Open errors (NotFound, an I/O errno, Unimplemented for an unknown
// format).
absl::StatusOr<VerifiedPrefix> VerifyPrefix(const std::string& directory,
                                            std::uint64_t end_index);

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_VERIFY_H_
