// The depth table; see book_text.h.
#include "cli/book_text.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"

namespace orderwire::cli {

std::string DepthTable(const engine::Engine::BookView& book,
                       std::size_t levels) {
  std::vector<engine::LevelInfo> bids(levels);
  std::vector<engine::LevelInfo> asks(levels);
  bids.resize(book.Depth(codec::Side::kBuy, bids));
  asks.resize(book.Depth(codec::Side::kSell, asks));
  const std::size_t bid_levels = book.level_count(codec::Side::kBuy);
  const std::size_t ask_levels = book.level_count(codec::Side::kSell);
  std::string out = absl::StrFormat(
      "instrument %d: %d bid level%s, %d ask level%s (top %d shown)\n",
      book.instrument_id().value(), bid_levels, bid_levels == 1 ? "" : "s",
      ask_levels, ask_levels == 1 ? "" : "s", levels);
  absl::StrAppendFormat(&out, "  %10s %14s %12s | %-12s %14s %10s\n", "orders",
                        "bid qty", "bid price", "ask price", "ask qty",
                        "orders");
  for (std::size_t i = 0; i < std::max(bids.size(), asks.size()); ++i) {
    if (i < bids.size()) {
      absl::StrAppendFormat(&out, "  %10d %14d %12d |", bids[i].order_count,
                            bids[i].quantity.value(), bids[i].price.value());
    } else {
      absl::StrAppendFormat(&out, "  %10s %14s %12s |", "", "", "");
    }
    if (i < asks.size()) {
      absl::StrAppendFormat(&out, " %-12d %14d %10d", asks[i].price.value(),
                            asks[i].quantity.value(), asks[i].order_count);
    }
    out += "\n";
  }
  return out;
}

std::string DepthTables(const engine::Engine& engine, std::size_t levels) {
  std::string depth;
  const engine::EngineConfig& config = engine.config();
  for (std::uint64_t id = config.min_instrument; id <= config.max_instrument;
       ++id) {
    const auto book =
        engine.Book(codec::InstrumentId(static_cast<std::uint32_t>(id)));
    if (book.empty()) continue;
    depth += DepthTable(book, levels);
  }
  return depth.empty() ? "every book is empty\n" : depth;
}

}  // namespace orderwire::cli
