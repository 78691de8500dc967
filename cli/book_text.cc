// The depth table; see book_text.h.
#include "cli/book_text.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"

namespace orderwire::cli {
namespace {

// One level as the table prints it, from either book's LevelInfo.
struct Row {
  std::int64_t price;
  std::uint64_t quantity;
  std::uint32_t orders;
};

template <typename Level>
std::vector<Row> Rows(std::span<const Level> levels) {
  std::vector<Row> rows;
  rows.reserve(levels.size());
  for (const Level& l : levels) {
    rows.push_back({l.price.value(), l.quantity.value(), l.order_count});
  }
  return rows;
}

std::string Table(std::uint32_t instrument_id, const std::vector<Row>& bids,
                  const std::vector<Row>& asks, std::size_t bid_levels,
                  std::size_t ask_levels, std::size_t levels) {
  std::string out = absl::StrFormat(
      "instrument %d: %d bid level%s, %d ask level%s (top %d shown)\n",
      instrument_id, bid_levels, bid_levels == 1 ? "" : "s", ask_levels,
      ask_levels == 1 ? "" : "s", levels);
  absl::StrAppendFormat(&out, "  %10s %14s %12s | %-12s %14s %10s\n", "orders",
                        "bid qty", "bid price", "ask price", "ask qty",
                        "orders");
  for (std::size_t i = 0; i < std::max(bids.size(), asks.size()); ++i) {
    if (i < bids.size()) {
      absl::StrAppendFormat(&out, "  %10d %14d %12d |", bids[i].orders,
                            bids[i].quantity, bids[i].price);
    } else {
      absl::StrAppendFormat(&out, "  %10s %14s %12s |", "", "", "");
    }
    if (i < asks.size()) {
      absl::StrAppendFormat(&out, " %-12d %14d %10d", asks[i].price,
                            asks[i].quantity, asks[i].orders);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string DepthTable(const engine::Engine::BookView& book,
                       std::size_t levels) {
  std::vector<engine::LevelInfo> bids(levels);
  std::vector<engine::LevelInfo> asks(levels);
  bids.resize(book.Depth(codec::Side::kBuy, bids));
  asks.resize(book.Depth(codec::Side::kSell, asks));
  return Table(book.instrument_id().value(),
               Rows(std::span<const engine::LevelInfo>(bids)),
               Rows(std::span<const engine::LevelInfo>(asks)),
               book.level_count(codec::Side::kBuy),
               book.level_count(codec::Side::kSell), levels);
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

std::string DepthTables(const marketdata::Book& book, std::size_t levels) {
  std::string depth;
  std::vector<marketdata::LevelInfo> bids(levels);
  std::vector<marketdata::LevelInfo> asks(levels);
  book.ForEachInstrument([&](const marketdata::InstrumentInfo& info) {
    const codec::InstrumentId id = info.instrument_id;
    if (book.order_count(id) == 0) return;
    bids.resize(levels);
    asks.resize(levels);
    bids.resize(book.Depth(id, codec::Side::kBuy, bids));
    asks.resize(book.Depth(id, codec::Side::kSell, asks));
    depth +=
        Table(id.value(), Rows(std::span<const marketdata::LevelInfo>(bids)),
              Rows(std::span<const marketdata::LevelInfo>(asks)),
              book.level_count(id, codec::Side::kBuy),
              book.level_count(id, codec::Side::kSell), levels);
  });
  return depth.empty() ? "every book is empty\n" : depth;
}

}  // namespace orderwire::cli
