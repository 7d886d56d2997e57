// The `replaced` message: an older agent process learns that a newer one with the same token
// took a service over, so it stops serving and claiming it instead of idling unnoticed.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace burrow::link {
class link;
}

namespace burrow::relay {

// Sends `replaced` for `name` on every live link of `links` (the older session's), each on its
// own link's thread. `by_session` is the newer session; the message carries its first 8 digits.
void tell_replaced(const std::vector<std::weak_ptr<link::link>>& links, const std::string& name,
                   const std::string& by_session);

}  // namespace burrow::relay
