// Graceful stop of a set of links living on other threads: go-away on each, wait for open
// streams to finish (up to a deadline), then close the links and let them flush.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace burrow::link {

class link;

// `active` counts the streams still open; `who` names the stopping side in logs and frames.
boost::asio::awaitable<void> drain_links(std::vector<std::shared_ptr<link>> links,
                                         const std::atomic<std::size_t>& active,
                                         std::chrono::milliseconds limit, std::string who);

}  // namespace burrow::link
