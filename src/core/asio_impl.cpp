// Compiles Asio (with SSL) once for the whole program; see BOOST_ASIO_SEPARATE_COMPILATION.
// descriptor_slab.hpp comes first: it declares where asio's reactor takes its per-socket state
// from, which must be known before the reactor's code below is compiled.
#include "core/descriptor_slab.hpp"

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
