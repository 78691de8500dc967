// Verifying the prefix of a journal; see verify.h.
#include "journal/verify.h"

#include <chrono>
#include <memory>

#include "absl/strings/str_format.h"
#include "journal/reader.h"
#include "journal/start.h"

namespace orderwire::journal {

absl::StatusOr<VerifiedPrefix> VerifyPrefix(const std::string& directory,
                                            std::uint64_t end_index) {
  const auto start = std::chrono::steady_clock::now();
  // The checkpoint is the caller's (Open holds the journal's end against
  // it); this pass reads what lies before that end.
  absl::StatusOr<std::unique_ptr<JournalReader>> opened =
      JournalReader::Open(directory, ReaderOptions{.use_checkpoint = false});
  if (!opened.ok()) return opened.status();
  JournalReader& reader = **opened;
  VerifiedPrefix out;
  if (end_index <= reader.first_index()) return out;
  out.first_index = reader.first_index();
  Record record;
  ReadResult result = ReadResult::kEnd;
  while (reader.last_index() + 1 < end_index &&
         (result = reader.Next(record)) == ReadResult::kRecord) {
    ++out.records;
  }
  out.last_index = reader.last_index();
  out.bytes = reader.bytes_done();
  out.segments = reader.segments().size();
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (result == ReadResult::kError) {
    return absl::DataLossError(absl::StrFormat(
        "%s; the journal holds records up to index %s at least, so records "
        "%s..%s cannot be read",
        reader.status().message(), GroupedDigits(end_index - 1),
        GroupedDigits(out.last_index + 1), GroupedDigits(end_index - 1)));
  }
  if (out.last_index + 1 < end_index) {
    return absl::DataLossError(absl::StrFormat(
        "journal %s ends at index %s, before index %s where the rest of it "
        "was read: records %s..%s are missing",
        directory, GroupedDigits(out.last_index), GroupedDigits(end_index),
        GroupedDigits(out.last_index + 1), GroupedDigits(end_index - 1)));
  }
  return out;
}

}  // namespace orderwire::journal
