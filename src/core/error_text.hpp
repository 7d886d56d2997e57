// One line of reason for an exception, for users: a system error's message without the source
// location Boost appends ("Address already in use", not "bind: Address already in use
// [system:98 at /usr/include/boost/asio/detail/...]").
#pragma once

#include <boost/system/system_error.hpp>
#include <exception>
#include <string>
#include <system_error>

namespace burrow {

inline std::string error_text(const std::exception& e) {
  if (auto* boost_error = dynamic_cast<const boost::system::system_error*>(&e))
    return boost_error->code().message();
  if (auto* std_error = dynamic_cast<const std::system_error*>(&e))
    return std_error->code().message();
  return e.what();
}

}  // namespace burrow
