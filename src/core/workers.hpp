// A fixed set of io_contexts, one per thread, as the relay and the agent run them: the calling
// thread runs the first; SIGINT or SIGTERM starts a graceful stop, a second one stops at once.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace burrow {

// The CPUs this process may run on: the size of its affinity mask (taskset, a container's
// cpuset), else std::thread::hardware_concurrency(); at least 1.
unsigned usable_cores();

// Threads for a process that keeps `links` links to the relay: one per link, but no more than
// usable_cores(). Links beyond that share threads; more threads than CPUs only adds context
// switches between them.
unsigned threads_for_links(unsigned links);

// The default number of links an agent or `burrow connect` keeps: 2, so work spreads over two
// cores, or 1 when this process may run on one CPU only. There a second link buys no
// parallelism and halves how many streams' frames each link write and read carries.
unsigned default_links();

// Logs "keeping N links to relay R on T threads", so a user sees what the defaults chose.
void log_link_plan(unsigned links, std::size_t threads, const std::string& relay);

class workers {
 public:
  explicit workers(unsigned count);
  std::size_t size() const { return contexts_.size(); }
  boost::asio::io_context& at(std::size_t i) { return *contexts_[i]; }
  boost::asio::io_context& next() { return *contexts_[next_++ % contexts_.size()]; }

  // Runs every context until stop(); `graceful` runs on the first context on the first signal.
  void run(std::function<void()> graceful);
  void stop();  // thread-safe

 private:
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace burrow
