// Posting `replaced` to an older agent session's links.
#include "relay/replaced_notice.hpp"

#include <boost/asio/post.hpp>

#include "link/link.hpp"
#include "proto/control.hpp"

namespace burrow::relay {

void tell_replaced(const std::vector<std::weak_ptr<link::link>>& links, const std::string& name,
                   const std::string& by_session) {
  proto::replaced message{{name}, by_session.substr(0, 8)};
  for (auto& weak : links) {
    auto l = weak.lock();
    if (!l) continue;
    boost::asio::post(l->executor(), [l, message] { l->send_control(message); });
  }
}

}  // namespace burrow::relay
