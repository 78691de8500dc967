// The readable depth table that `orderwire match --book N`, `orderwire
// replay --book N` (the engine's books) and `orderwire md watch --book N`
// (a feed subscriber's books) print, in one format, so the two can be
// compared with diff. Cold path.
#ifndef ORDERWIRE_CLI_BOOK_TEXT_H_
#define ORDERWIRE_CLI_BOOK_TEXT_H_

#include <cstddef>
#include <string>

#include "engine/engine.h"
#include "marketdata/book.h"

namespace orderwire::cli {

// The top `levels` levels of each side of one book, with the total quantity
// and order count of each level.
std::string DepthTable(const engine::Engine::BookView& book,
                       std::size_t levels);

// DepthTable of every non-empty book of `engine`, in instrument order, or
// "every book is empty\n".
std::string DepthTables(const engine::Engine& engine, std::size_t levels);

// The same of every instrument of `book` with resting orders: the same text
// as the engine's for the same books.
std::string DepthTables(const marketdata::Book& book, std::size_t levels);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_BOOK_TEXT_H_
