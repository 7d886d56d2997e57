// Compiles Boost.JSON once for the whole program (header-only mode, one translation unit).
#include <boost/json/src.hpp>
