// End-to-end fixture: a real relay and real agents (the burrow binary) on 127.0.0.1 with
// kernel-chosen ports, each in a fresh state directory. Every wait has a deadline.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
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
  std::uint16_t https_port = 0;    // share URLs (0: no HTTPS listener)
  std::uint16_t http_port = 0;     // plain HTTP (0: none)
  std::uint16_t metrics_port = 0;  // with --metrics-listen 127.0.0.1:0
};

// GET http://127.0.0.1:PORT/metrics; empty on failure.
std::string fetch_metrics(std::uint16_t port);
// The value of one series (`name{labels}` exactly as rendered), or -1 when it is absent.
double metric_value(const std::string& text, const std::string& series);
// Reads the series from the relay's metrics every 50 ms until it equals `want` or `deadline`
// passes; returns the last value read (-1 when the series was absent or the fetch failed).
double wait_for_metric(std::uint16_t port, const std::string& series, double want,
                       std::chrono::milliseconds deadline);

struct agent_process {
  std::unique_ptr<child_process> proc;
  std::uint16_t public_port = 0;
};

struct e2ee_agent_process {
  std::unique_ptr<child_process> proc;
  std::string service;  // the name visitors ask the relay for
  std::string pin;      // the agent's end-to-end certificate fingerprint
};

struct connect_process {
  std::unique_ptr<child_process> proc;
  std::uint16_t port = 0;  // where `burrow connect` listens
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
  // End to end (the default mode): the agent keeps its key in dir_/agent.
  std::unique_ptr<child_process> spawn_e2ee_agent(const relay_process& relay, std::string target,
                                                  std::vector<std::string> extra);
  e2ee_agent_process start_e2ee_agent(const relay_process& relay, std::uint16_t target,
                                      std::vector<std::string> extra = {});
  // `burrow connect SERVICE --pin PIN` against `relay`, with `extra` flags.
  std::unique_ptr<child_process> spawn_connect(const relay_process& relay,
                                               const std::string& service, const std::string& pin,
                                               std::vector<std::string> extra,
                                               std::map<std::string, std::string> env = {});
  // `burrow connect` listening on a kernel-chosen loopback port.
  connect_process start_connect(const relay_process& relay, const e2ee_agent_process& agent,
                                std::vector<std::string> extra = {});

  // One request through `port`: writes `data`, half-closes, reads until EOF.
  std::optional<std::string> exchange(std::uint16_t port, std::string_view data,
                                      std::chrono::milliseconds deadline = 10s);
  // Repeats exchange(port, data) until it echoes `data` or `limit` passes (a tunnel coming back
  // after a restart); returns the last reply.
  std::optional<std::string> exchange_until_echoed(std::uint16_t port, const std::string& data,
                                                   std::chrono::milliseconds limit);
  // `visitors` connections to `port` (an echo service behind it), all open at once before any
  // sends its 1 KiB and half-closes; returns how many got their bytes back intact.
  int concurrent_echoes(std::uint16_t port, int visitors);
  // A healthy tunnel that must keep working through every attack: 4 MiB through `port` (an
  // echo service behind it) come back with the same SHA-256.
  void check_bystander(std::uint16_t port);

  std::filesystem::path dir_;
  std::filesystem::path state_dir_;
  std::size_t sanitizer_reports_at_start_ = 0;
};

}  // namespace burrow::test
