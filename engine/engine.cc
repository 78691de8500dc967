// The engine: BasicEngine instantiated with its chosen structures.
#include "engine/engine.h"

#include "engine/internal/engine_impl.h"

namespace orderwire::engine {

template class BasicEngine<DefaultTraits>;

}  // namespace orderwire::engine
