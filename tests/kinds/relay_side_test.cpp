// The relay's side of the tunnel kinds: each handler sends a visitor at each door where the
// kind's documentation says it goes.
#include <gtest/gtest.h>

#include "kinds/registry.hpp"

namespace burrow::kinds {
namespace {

using proto::tunnel_kind;
using relay::door;
using relay::door_action;

door_action at(tunnel_kind k, door d, bool plain_http = false) {
  relay::name_registry::route r;
  r.found = true;
  r.kind = k;
  r.plain_http = plain_http;
  return action_at(d, r);
}

TEST(KindsRelaySide, EachDoorLeadsWhereTheKindIsServed) {
  EXPECT_EQ(at(tunnel_kind::tcp_e2ee, door::connect), door_action::carry);
  EXPECT_EQ(at(tunnel_kind::tcp_e2ee, door::https), door_action::not_here);
  EXPECT_EQ(at(tunnel_kind::tcp_e2ee, door::http), door_action::not_here);
  for (auto d : {door::connect, door::https, door::http})
    EXPECT_EQ(at(tunnel_kind::tcp_port, d), door_action::not_here);  // reached by port only

  EXPECT_EQ(at(tunnel_kind::share_blind, door::https), door_action::carry);
  EXPECT_EQ(at(tunnel_kind::share_passthrough, door::https), door_action::carry);
  EXPECT_EQ(at(tunnel_kind::share_inspect, door::https), door_action::end_tls);
  EXPECT_EQ(at(tunnel_kind::share_blind, door::http), door_action::redirect);
  EXPECT_EQ(at(tunnel_kind::share_blind, door::http, true), door_action::forward_http);
  EXPECT_EQ(at(tunnel_kind::share_passthrough, door::http, true), door_action::redirect);
  EXPECT_EQ(at(tunnel_kind::share_inspect, door::http, true), door_action::redirect);
  for (auto k :
       {tunnel_kind::share_blind, tunnel_kind::share_inspect, tunnel_kind::share_passthrough})
    EXPECT_EQ(at(k, door::connect), door_action::not_here) << describe(k);

  relay::name_registry::route nobody;  // a name no one holds
  EXPECT_EQ(action_at(door::https, nobody), door_action::not_here);
}

TEST(KindsRelaySide, OnlyBlindShareUrlsGetTheRelaysCertificates) {
  for (const auto& e : all_kinds())
    EXPECT_EQ(e.relay_side().signs_certificates(), e.kind == tunnel_kind::share_blind)
        << describe(e.kind);
}

}  // namespace
}  // namespace burrow::kinds
