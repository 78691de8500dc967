#include "engine/report.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "codec/kind_table.h"

namespace orderwire::engine {

ReportBuffer::ReportBuffer(std::size_t reserve_reports)
    : reports_(std::max<std::size_t>(reserve_reports, 16)),
      frames_(reports_.size() * codec::kMaxFrameSize),
      capacity_(reports_.size()) {}

void ReportBuffer::Grow() {
  if (reports_.size() * 2 * codec::kMaxFrameSize >
      std::numeric_limits<std::uint32_t>::max()) {
    // A frame offset would not fit in Report::frame_offset: the caller never
    // cleared the buffer (see report.h). A broken precondition, not input.
    std::fputs("orderwire: ReportBuffer over 4 GiB without Clear()\n", stderr);
    std::abort();
  }
  reports_.resize(reports_.size() * 2);
  frames_.resize(
      std::max(frames_.size() * 2, reports_.size() * codec::kMaxFrameSize));
  capacity_ = reports_.size();
}

void ReportBuffer::WrongKind(codec::Kind actual, codec::Kind wanted) {
  const std::string_view a = codec::Name(actual);
  const std::string_view w = codec::Name(wanted);
  std::fprintf(stderr, "orderwire: a report of kind %.*s read as %.*s\n",
               static_cast<int>(a.size()), a.data(), static_cast<int>(w.size()),
               w.data());
  std::abort();
}

}  // namespace orderwire::engine
