// A real OpenSSH session through `burrow connect --stdio` as ssh's ProxyCommand, to a real sshd
// on loopback behind an end-to-end agent.
#include <pwd.h>
#include <unistd.h>

#include <fstream>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace {

bool run_quietly(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  auto p = child_process::start(argv.front(), argv);
  return p && p->wait_exit(limit) == 0;
}

TEST_F(tunnel_test, SshThroughConnectStdio) {
  const std::string keygen = "/usr/bin/ssh-keygen";
  ASSERT_TRUE(std::filesystem::exists("/usr/sbin/sshd"))
      << "openssh-server is installed by setup.sh";
  auto ssh_dir = dir_ / "ssh";
  std::filesystem::create_directories(ssh_dir);
  std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation directory
  auto host_key = (ssh_dir / "host").string();
  auto client_key = (ssh_dir / "client").string();
  ASSERT_TRUE(run_quietly({keygen, "-q", "-t", "ed25519", "-N", "", "-f", host_key}, 10s));
  ASSERT_TRUE(run_quietly({keygen, "-q", "-t", "ed25519", "-N", "", "-f", client_key}, 10s));
  std::filesystem::copy_file(client_key + ".pub", ssh_dir / "authorized_keys");

  auto port = free_port();
  auto config = ssh_dir / "sshd_config";
  {
    std::ofstream out(config);
    out << "ListenAddress 127.0.0.1\nPort " << port << "\nHostKey " << host_key
        << "\nAuthorizedKeysFile " << (ssh_dir / "authorized_keys").string()
        << "\nPidFile none\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n"
        << "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n";
  }
  auto sshd = child_process::start("sshd", {"/usr/sbin/sshd", "-D", "-e", "-f", config.string()});
  ASSERT_TRUE(sshd->wait_for_line(std::regex("Server listening on 127.0.0.1"), 10s))
      << sshd->output();

  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, port, {"--name", "ssh"});
  ASSERT_EQ(agent.service, "ssh");

  std::string proxy = std::string(BURROW_BINARY) +
                      " connect ssh --relay 127.0.0.1:" + std::to_string(relay.agent_port) +
                      " --relay-pin " + relay.fingerprint + " --pin " + agent.pin +
                      " --stdio --log-level warn";
  const passwd* pw = ::getpwuid(::getuid());
  ASSERT_NE(pw, nullptr);
  std::string marker = "ssh-through-burrow-" + std::to_string(::getpid());
  auto ssh = child_process::start(
      "ssh",
      {"/usr/bin/ssh", "-F", "/dev/null", "-i", client_key, "-o", "BatchMode=yes", "-o",
       "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=15",
       "-o", "ProxyCommand=" + proxy, std::string(pw->pw_name) + "@ssh", "echo " + marker});
  EXPECT_TRUE(ssh->wait_for_line(std::regex("^" + marker + "$"), 30s)) << ssh->output();
  EXPECT_EQ(ssh->wait_exit(30s), 0) << ssh->output();
}

}  // namespace
}  // namespace burrow::test
