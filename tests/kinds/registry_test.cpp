// The table of tunnel kinds: one entry per kind, each making a service that registers as that
// kind and takes sealed streams only where its own end authenticates the bytes.
#include "kinds/registry.hpp"

#include "core/secret.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <vector>

namespace burrow::kinds {
namespace {

namespace fs = std::filesystem;
using proto::tunnel_kind;

const std::vector<tunnel_kind> every_kind{tunnel_kind::tcp_port, tunnel_kind::tcp_e2ee,
                                          tunnel_kind::share_blind, tunnel_kind::share_inspect,
                                          tunnel_kind::share_passthrough};

struct scratch_state_dir {
  fs::path path = fs::temp_directory_path() / ("burrow-kinds-test-" + random_token().substr(4));
  ~scratch_state_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// An agent's context for the factories, with its own state directory.
class KindRegistryServices : public ::testing::Test {
 protected:
  KindRegistryServices() { config.state_dir = dir.path; }
  scratch_state_dir dir;
  agent::agent_config config;
  workers threads{1};
  std::atomic<bool> stopping{false};
  agent::service_context ctx{config, threads, stopping};
};

TEST(KindRegistry, OneEntryPerTunnelKind) {
  EXPECT_EQ(all_kinds().size(), every_kind.size());
  for (auto k : every_kind) {
    auto n = std::count_if(all_kinds().begin(), all_kinds().end(),
                           [k](const kind_entry& e) { return e.kind == k; });
    EXPECT_EQ(n, 1) << proto::describe(k);
    EXPECT_EQ(entry_for(k).kind, k);
    EXPECT_NE(entry_for(k).make_agent_service, nullptr) << proto::describe(k);
  }
}

TEST_F(KindRegistryServices, EachFactoryMakesItsKind) {
  proto::open_metadata own_tls, ended;
  ended.scheme = proto::visitor_scheme::https_ended;
  for (auto k : every_kind) {
    agent::service_config svc;
    svc.name = "svc";
    svc.name_given = true;
    svc.local_port = 8080;
    svc.kind = k;
    auto made = entry_for(k).make_agent_service(ctx, svc);
    ASSERT_NE(made, nullptr) << proto::describe(k);
    EXPECT_EQ(made->name(), "svc");
    auto spec = made->registration();
    ASSERT_TRUE(spec) << proto::describe(k);
    EXPECT_EQ(spec->kind, k);
    EXPECT_EQ(spec->name, "svc");
    EXPECT_FALSE(made->expired());
    // What the relay reads (a public port, inspect mode) is never sealed; a visitor's own TLS is
    // where this agent or its service ends it.
    bool own_end = k != tunnel_kind::tcp_port && k != tunnel_kind::share_inspect;
    EXPECT_EQ(made->accepts_sealed(own_tls), own_end) << proto::describe(k);
    EXPECT_FALSE(made->accepts_sealed(ended)) << proto::describe(k);
  }
}

TEST_F(KindRegistryServices, NamesMadeUniqueForAllButPublicPorts) {
  for (auto k : every_kind) {
    agent::service_config svc;
    svc.name = "web";
    svc.local_port = 8080;
    svc.kind = k;
    auto made = entry_for(k).make_agent_service(ctx, svc);
    if (k == tunnel_kind::tcp_port) {
      EXPECT_EQ(made->name(), "web");
    } else {  // "web-" and 8 hex digits of this agent's fingerprint
      EXPECT_EQ(made->name().size(), 12u) << proto::describe(k);
      EXPECT_TRUE(made->name().starts_with("web-")) << made->name();
    }
  }
}

}  // namespace
}  // namespace burrow::kinds
