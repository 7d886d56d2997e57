// A real ACME CA on loopback for tests: pebble, with pebble-challtestsrv answering every DNS
// name with 127.0.0.1, validating TLS-ALPN-01 on a port the test chooses.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace burrow::test {

class child_process;

class pebble_server {
 public:
  static bool available();  // /usr/bin/pebble and pebble-challtestsrv are installed

  // Starts both in `dir` (which must exist); pebble connects to 127.0.0.1:`tls_port` to validate
  // TLS-ALPN-01. Throws std::runtime_error if either does not start.
  // `validity`: the lifetime of the certificates it issues (0: pebble's default, 5 years).
  pebble_server(std::filesystem::path dir, std::uint16_t tls_port,
                std::chrono::seconds validity = std::chrono::seconds(0));
  ~pebble_server();
  pebble_server(const pebble_server&) = delete;
  pebble_server& operator=(const pebble_server&) = delete;

  std::string directory_url() const;  // https://127.0.0.1:PORT/dir
  std::string ca_file() const;        // the CA that pebble's own HTTPS API chains to
  std::string root_pem();             // the root pebble signs with in this run ("" on failure)
  child_process& process() { return *pebble_; }

 private:
  std::filesystem::path dir_;
  std::uint16_t api_port_ = 0;
  std::uint16_t management_port_ = 0;
  std::unique_ptr<child_process> dns_;
  std::unique_ptr<child_process> pebble_;
};

// A loopback port free for both TCP and UDP a moment ago (the mock DNS serves both).
std::uint16_t free_dual_port();

}  // namespace burrow::test
