// Compiles Asio (with SSL) once for the whole program; see BOOST_ASIO_SEPARATE_COMPILATION.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
