// The readable depth table that `orderwire match --book N` and
// `orderwire replay --book N` print. Cold path.
#ifndef ORDERWIRE_CLI_BOOK_TEXT_H_
#define ORDERWIRE_CLI_BOOK_TEXT_H_

#include <cstddef>
#include <string>

#include "engine/engine.h"

namespace orderwire::cli {

// The top `levels` levels of each side of one book, with the total quantity
// and order count of each level.
std::string DepthTable(const engine::Engine::BookView& book,
                       std::size_t levels);

// DepthTable of every non-empty book of `engine`, in instrument order, or
// "every book is empty\n".
std::string DepthTables(const engine::Engine& engine, std::size_t levels);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_BOOK_TEXT_H_
