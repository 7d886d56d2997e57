// Packet capture for end-to-end tests: tshark records loopback traffic of chosen TCP ports into a
// pcap file; helpers then show what a reader of that file sees, with and without TLS keys.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/link_records.hpp"

namespace burrow::test {

class child_process;

// Every failure here (tshark missing, capture not permitted, a deadline passed) throws
// std::runtime_error with tshark's output, so a test fails saying why instead of skipping.
class capture {
 public:
  // Starts tshark on `lo` for the given TCP ports, writing `pcap`, and returns once packets are
  // really being recorded: a probe datagram sent after start-up has reached the file.
  capture(std::filesystem::path pcap, std::vector<std::uint16_t> tcp_ports,
          std::chrono::milliseconds deadline = std::chrono::seconds(10));
  // Ends tshark if stop() was not called (the pcap may then lack the last packets).
  ~capture();
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;

  // Waits until everything sent on loopback so far is in the file, then ends tshark with SIGINT
  // so the file is complete. Idempotent.
  void stop(std::chrono::milliseconds deadline = std::chrono::seconds(10));

  const std::filesystem::path& file() const { return pcap_; }

 private:
  // Sends a unique datagram to our own probe port and waits until the file holds it. The kernel
  // hands packets to tshark in order, so everything sent before is in the file too.
  void sync(std::chrono::steady_clock::time_point until);

  std::filesystem::path pcap_;
  int probe_fd_ = -1;  // UDP socket on 127.0.0.1, its port part of the filter
  std::unique_ptr<child_process> tshark_;
  bool stopped_ = false;
};

// All TCP payload bytes in `pcap` as they were on the wire: each direction of each stream as one
// run, so bytes split over segments stay together; only segments to or from `ports` when that is
// not empty.
std::string raw_bytes(const std::filesystem::path& pcap,
                      const std::vector<std::uint16_t>& ports = {});
// The same, one run per direction of each stream, in order of first appearance.
std::vector<tcp_direction> raw_directions(const std::filesystem::path& pcap,
                                          const std::vector<std::uint16_t>& ports = {});
// Only the bytes of each such run.
std::vector<std::string> raw_runs(const std::filesystem::path& pcap,
                                  const std::vector<std::uint16_t>& ports = {});

// The decrypted TLS application data of every TCP stream to or from `tls_ports`, each direction of
// each stream as one run, using the secrets in the NSS key log `keylog`: what tshark decrypts,
// then the links' own records (link_records.hpp). Empty when nothing could
// be decrypted (no handshake in the capture, or no keys for it).
std::string decrypted_bytes(const std::filesystem::path& pcap, const std::filesystem::path& keylog,
                            const std::vector<std::uint16_t>& tls_ports);

}  // namespace burrow::test
