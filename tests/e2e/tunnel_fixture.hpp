// End-to-end fixture: a real relay and real agents (the burrow binary) on 127.0.0.1 with
// kernel-chosen ports, each in a fresh state directory. Every wait has a deadline.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/net.hpp"
#include "harness/process.hpp"

namespace burrow::test {

using namespace std::chrono_literals;

struct relay_process {
  std::unique_ptr<child_process> proc;
  std::uint16_t agent_port = 0;
  std::string fingerprint;
  std::string token;
};

struct agent_process {
  std::unique_ptr<child_process> proc;
  std::uint16_t public_port = 0;
};

class tunnel_test : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Starts a relay; `agent_port` 0 lets the kernel choose (pass the old one to restart in place);
  // `env` is added to the relay's environment.
  relay_process start_relay(std::vector<std::string> extra = {}, std::uint16_t agent_port = 0,
                            std::map<std::string, std::string> env = {});
  // Starts `burrow tcp TARGET` against `relay` and waits for its public address.
  agent_process start_agent(const relay_process& relay, std::uint16_t target,
                            std::vector<std::string> extra = {});
  // Starts an agent that is expected to fail or not to print a public address.
  std::unique_ptr<child_process> spawn_agent(const relay_process& relay, std::string target,
                                             std::vector<std::string> extra);

  // One request through `port`: writes `data`, half-closes, reads until EOF.
  std::optional<std::string> exchange(std::uint16_t port, std::string_view data,
                                      std::chrono::milliseconds deadline = 10s);

  std::filesystem::path dir_;
  std::filesystem::path state_dir_;
};

// A port that was free a moment ago (for tests that must choose a public port themselves).
std::uint16_t free_port();

}  // namespace burrow::test
