// A fixture for share URL tests: curl with the share URL's name resolved to loopback, and an
// agent started with `burrow http` that waits for the URL it prints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {

class share_url_test : public tunnel_test {
 protected:
  // Runs a program to its end; its merged output, or nullopt if it did not exit with 0.
  std::optional<std::string> run(std::vector<std::string> argv, std::chrono::milliseconds limit);

  // curl to https://HOST:PORT/PATH with HOST resolved to loopback; prints the body, then
  // "status=CODE".
  std::optional<std::string> curl(const std::string& host, std::uint16_t port,
                                  std::vector<std::string> extra, const std::string& path = "/");

  // `burrow http PORT --name NAME --mode MODE` plus `extra`; sets share_port from the URL the
  // agent prints.
  std::unique_ptr<child_process> start_http_agent(const relay_process& relay, std::uint16_t port,
                                                  const std::string& name,
                                                  std::uint16_t& share_port,
                                                  const std::string& mode = "passthrough",
                                                  std::vector<std::string> extra = {});
};

}  // namespace burrow::test
