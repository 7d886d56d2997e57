// `burrow forward`: local port forwarding, no relay.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "cli/options.hpp"
#include "core/address.hpp"
#include "forward/forward_settings.hpp"
#include "forward/forwarder.hpp"

namespace burrow::cli {

void add_forward_options(option_set& o, CLI::App& app) {
  o.add(app, "proxy-protocol",
        "send a PROXY protocol header (v1 or v2) to the target before the visitor's bytes, so it "
        "sees the visitor's address (default none)");
  o.add(app, "connect-timeout", "deadline to reach the target (default 10s)");
  o.add(app, "drain-timeout",
        "on SIGINT/SIGTERM, how long open connections may finish (default 10s)");
  o.add(app, "workers", "threads that move bytes (default: one per usable CPU)");
  add_source_limit_options(o, app);
  add_log_options(o, app);
}

std::string forward_keys_footer() {
  return "In -c FILE, each [[forward]] table takes listen, target and proxy_protocol; the other "
         "settings go at the top level.";
}

int run_forward(const layered_settings& s, const std::vector<settings_layer>& tables,
                const std::string& listen, const std::string& target) {
  auto config = forward::make_forward_config(s, tables, listen, target);
  const auto rules = config.rules;
  forward::forwarder f(std::move(config));
  f.bind();
  const auto endpoints = f.endpoints();
  for (std::size_t i = 0; i < rules.size(); ++i)
    std::printf("forwarding %s to %s\n",
                format_host_port(endpoints[i].address().to_string(), endpoints[i].port()).c_str(),
                rules[i].target.c_str());
  std::fflush(stdout);
  return f.run();
}

}  // namespace burrow::cli
