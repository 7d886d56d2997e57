// The command line as a new user meets it: --help pages, mistyped commands, `relay ca`, and
// `cmake --install`.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "agent/agent_config.hpp"
#include "harness/process.hpp"
#include "harness/scratch_dir.hpp"

namespace burrow::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

program_run burrow_cli(std::vector<std::string> args) {
  args.insert(args.begin(), BURROW_BINARY);
  return run_program(std::move(args), 20s);
}

const std::vector<std::vector<std::string>> help_pages{
    {"relay"},
    {"relay", "ca"},
    {"relay", "token", "add"},
    {"relay", "token", "revoke"},
    {"tcp"},
    {"http"},
    {"up"},
    {"connect"},
};

TEST(CliHelp, EveryOptionSaysWhatItsValueLooks) {
  for (auto page : help_pages) {
    page.push_back("--help");
    auto r = burrow_cli(page);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.find("TEXT"), std::string::npos) << page[0] << ": " << r.output;
  }
  auto tcp = burrow_cli({"tcp", "--help"});
  EXPECT_NE(tcp.output.find("--drain-timeout DURATION"), std::string::npos) << tcp.output;
  EXPECT_NE(tcp.output.find("--relay HOST:PORT"), std::string::npos) << tcp.output;
  EXPECT_NE(tcp.output.find("--links N"), std::string::npos) << tcp.output;
}

TEST(CliHelp, PagesNameTheEnvironmentVariables) {
  for (auto [page, variable] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"relay", "--help"}, "BURROW_STATE_DIR"},
           {{"tcp", "--help"}, "BURROW_TOKEN"},
           {{"http", "--help"}, "BURROW_TOKEN"},
           {{"up", "--help"}, "BURROW_TOKEN"},
           {{"connect", "--help"}, "BURROW_RELAY_PIN"}}) {
    auto r = burrow_cli(page);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find(variable), std::string::npos) << page[0] << ": " << r.output;
  }
}

TEST(CliHelp, UpListsEveryServiceKey) {
  auto r = burrow_cli({"up", "--help"});
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_EQ(agent::service_key_help().size(), agent::service_setting_keys().size());
  for (auto& key : agent::service_setting_keys())
    EXPECT_TRUE(std::regex_search(r.output, std::regex("\n  " + key + " +\\S")))
        << key << " missing from:\n"
        << r.output;
}

TEST(CliHelp, RelayCaShowsItsOptions) {
  auto r = burrow_cli({"relay", "ca", "--help"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--state-dir DIR"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--config FILE"), std::string::npos) << r.output;
}

TEST(CliErrors, AnUnknownCommandIsNamed) {
  auto r = burrow_cli({"udp", "22"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("unknown command 'udp'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("relay, tcp, http, up, connect"), std::string::npos) << r.output;

  auto nested = burrow_cli({"relay", "token", "ad"});
  EXPECT_NE(nested.code, 0);
  EXPECT_NE(nested.output.find("unknown command 'ad' for 'burrow relay token'"), std::string::npos)
      << nested.output;
  EXPECT_NE(nested.output.find("add, list, revoke"), std::string::npos) << nested.output;

  // A missing command, with nothing mistyped, still says that a command is required.
  auto none = burrow_cli({});
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.output.find("A subcommand is required"), std::string::npos) << none.output;
}

TEST(CliInstall, CmakeInstallPutsARunnableBurrowInBin) {
  scratch_dir scratch("burrow-install");
  const auto& prefix = scratch.path();
  auto installed =
      run_program({BURROW_CMAKE, "--install", BURROW_BUILD_DIR, "--prefix", prefix.string()}, 60s);
  ASSERT_EQ(installed.code, 0) << installed.output;
  auto version = run_program({(prefix / "bin" / "burrow").string(), "--version"}, 20s);
  EXPECT_EQ(version.code, 0) << version.output;
  EXPECT_NE(version.output.find("burrow "), std::string::npos) << version.output;
}

class RelayCa : public ::testing::Test {
 protected:
  scratch_dir scratch_{"burrow-relay-ca"};
  const fs::path& dir_ = scratch_.path();
};

TEST_F(RelayCa, RefusesADirectoryWithoutRelayStateAndCreatesNothing) {
  auto r = burrow_cli({"relay", "ca", "--state-dir", dir_.string()});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no relay state in " + dir_.string()), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("BEGIN CERTIFICATE"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(RelayCa, PrintsTheCaOfTheRelayStateAndSaysWhere) {
  // A relay that starts once creates the state; `ca` then prints its ca.pem, on stdout alone.
  auto relay = child_process::start(
      "relay", {BURROW_BINARY, "relay", "--state-dir", dir_.string(), "--listen", "127.0.0.1:0",
                "--public-bind", "127.0.0.1", "--port-range", "0", "--https-listen", "127.0.0.1:0",
                "--http-listen", "127.0.0.1:0"});
  ASSERT_TRUE(relay);
  ASSERT_TRUE(relay->wait_for_line(std::regex("relay ready"), 30s)) << relay->output();
  relay->signal(SIGTERM);
  ASSERT_TRUE(relay->wait_exit(30s).has_value());

  auto stdout_only = run_program(
      {"/bin/bash", "-c",
       std::string(BURROW_BINARY) + " relay ca --state-dir '" + dir_.string() + "' 2>/dev/null"},
      20s);
  ASSERT_EQ(stdout_only.code, 0) << stdout_only.output;
  auto pem = read_text_file(dir_ / "ca.pem");
  ASSERT_FALSE(pem.empty());
  EXPECT_EQ(stdout_only.output, pem + "\n");

  auto both = burrow_cli({"relay", "ca", "--state-dir", dir_.string()});
  ASSERT_EQ(both.code, 0) << both.output;
  EXPECT_NE(
      both.output.find("the CA certificate of the relay state in " + dir_.string() + " (sha256:"),
      std::string::npos)
      << both.output;
  // The same through `relay`'s own --state-dir, as before.
  auto through_relay = burrow_cli({"relay", "--state-dir", dir_.string(), "ca"});
  EXPECT_EQ(through_relay.code, 0) << through_relay.output;
}

}  // namespace
}  // namespace burrow::test
