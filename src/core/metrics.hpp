// Counters and gauges in the Prometheus text format. Hot paths look a counter up once and keep
// the reference; rendering takes one lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace burrow {

class metrics {
 public:
  using counter = std::atomic<std::uint64_t>;

  // Declares a family: its help text and type ("counter" or "gauge").
  void describe(const std::string& name, std::string help, std::string type = "counter");
  // The counter `name{labels}` (labels as Prometheus writes them: `listener="https"`), created at
  // zero. The reference lives as long as this object.
  counter& get(const std::string& name, const std::string& labels = "");
  // A gauge read when the metrics are rendered.
  void gauge(const std::string& name, const std::string& labels, std::function<double()> read);

  std::string render() const;

 private:
  struct family {
    std::string help;
    std::string type = "counter";
    std::map<std::string, std::unique_ptr<counter>> counters;  // by labels
    std::map<std::string, std::function<double()>> gauges;
  };
  mutable std::mutex mutex_;
  std::map<std::string, family> families_;
};

}  // namespace burrow
