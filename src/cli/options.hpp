// Glue between CLI11 and layered settings: options bound to strings, collected into the flags
// layer only when given on the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/settings.hpp"

namespace burrow::cli {

class option_set {
 public:
  // Adds --NAME bound to a string; `key` defaults to NAME.
  CLI::Option* add(CLI::App& app, const std::string& name, const std::string& help);
  // Repeatable --NAME, joined with commas in the flags layer.
  CLI::Option* add_list(CLI::App& app, const std::string& name, const std::string& help);
  settings_layer given() const;

 private:
  struct bound {
    CLI::Option* option;
    std::unique_ptr<std::string> value;
    std::unique_ptr<std::vector<std::string>> values;
  };
  std::map<std::string, bound> options_;
};

// How --NAME's value looks in --help (DURATION, HOST:PORT, FILE, ...); TEXT if the table has no
// entry for it (tests/cli/help_test.cpp fails then).
std::string_view value_shape(std::string_view name);

// Every option of `app` and its subcommands that CLI11 would show as TEXT gets its shape.
void shape_values(CLI::App& app);

// The --help footer that names the BURROW_* variables and the config file, with --example's
// variable as the instance.
std::string settings_footer(const std::string& example);

// The environment layer for `keys`, read from the real environment.
settings_layer environment_layer(const std::vector<std::string>& keys);

// Sets up logging from the layered settings; throws config_error on bad values.
void init_logging_from(const layered_settings& s);

void add_log_options(option_set& o, CLI::App& app);
// --source-connections, --source-rate, --source-burst: the relay's and `burrow forward`'s.
void add_source_limit_options(option_set& o, CLI::App& app);
// What every dialler of the relay takes (agent and connect): where it is, how to trust it, how
// many links, how to redial.
void add_relay_link_options(option_set& o, CLI::App& app);
void add_relay_options(option_set& o, CLI::App& app);
// `reread`, if set, is how SIGHUP reads the settings again (file, environment, flags).
int run_relay(const layered_settings& s, std::function<layered_settings()> reread = {});
// `burrow relay ca`: the CA certificate visitors trust for the relay's own pages (and, later,
// the share URLs' certificates it signs).
int print_relay_ca(const layered_settings& s);
int run_agent(const layered_settings& s, std::vector<settings_layer> services);
// `burrow relay token add|list|revoke` (relay_token_command.cpp).
struct token_add_request {
  std::string label;
  std::vector<std::string> names, ports;
  std::string max_services, bandwidth;
};
int relay_token_add(const layered_settings& s, const token_add_request& req);
int relay_token_list(const layered_settings& s);
int relay_token_revoke(const layered_settings& s, const std::string& id);
void add_connect_options(option_set& o, CLI::App& app);
int run_connect(const layered_settings& s, std::string service, bool stdio);
void add_forward_options(option_set& o, CLI::App& app);
std::string forward_keys_footer();
int run_forward(const layered_settings& s, const std::vector<settings_layer>& tables,
                const std::string& listen, const std::string& target);

}  // namespace burrow::cli
