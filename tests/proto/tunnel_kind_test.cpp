// Tunnel kinds and visitor schemes against their wire names.
#include "proto/tunnel_kind.hpp"

#include <gtest/gtest.h>

namespace burrow::proto {
namespace {

TEST(TunnelKind, EveryKindReadsBackFromItsWireName) {
  for (auto k : {tunnel_kind::tcp_port, tunnel_kind::tcp_e2ee, tunnel_kind::share_blind,
                 tunnel_kind::share_inspect, tunnel_kind::share_passthrough}) {
    auto w = to_wire(k);
    EXPECT_EQ(from_wire(w.kind, w.e2ee, w.mode), k) << describe(k);
  }
  EXPECT_EQ(from_wire("http", false, ""), tunnel_kind::share_blind);
  EXPECT_FALSE(from_wire("udp", false, ""));
  EXPECT_FALSE(from_wire("http", false, "mirror"));
  EXPECT_FALSE(from_wire("tcp", false, "blind"));
  EXPECT_FALSE(from_wire("", false, ""));
}

TEST(TunnelKind, SchemesReadBackAndUnknownOnesAreRefused) {
  for (auto s : {visitor_scheme::own_tls, visitor_scheme::https_ended, visitor_scheme::plain_http})
    EXPECT_EQ(scheme_from_wire(to_wire(s)), s);
  EXPECT_FALSE(scheme_from_wire("HTTP"));
}

}  // namespace
}  // namespace burrow::proto
