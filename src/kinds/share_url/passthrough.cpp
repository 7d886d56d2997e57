// Passthrough mode: the visitors' TLS goes on to the local service, which presents its own
// certificate; the agent hands each stream's bytes over as they are.
#include "agent/local_stream.hpp"
#include "kinds/share_url/agent_side.hpp"
#include "kinds/share_url/share_url.hpp"
#include "link/stream.hpp"

namespace burrow::kinds::share_url {

namespace {

class passthrough_side final : public share_url_side {
 public:
  using share_url_side::share_url_side;

  // The visitor's own TLS, which the local service ends.
  bool accepts_sealed(const proto::open_metadata& meta) const override {
    return meta.scheme == proto::visitor_scheme::own_tls;
  }

  boost::asio::awaitable<void> serve(std::shared_ptr<link::link> l, std::shared_ptr<link::stream> s,
                                     proto::open_metadata meta) override {
    auto counted = ctx_.count_stream();
    touch();  // each visitor connection counts as activity for expiry
    auto socket = co_await agent::accept_with_local(ctx_, config_, target_, *l, *s);
    if (!socket) co_return;
    if (!co_await agent::send_proxy_header(*socket, config_, meta, *l, *s)) co_return;
    co_await s->pump(*socket);
  }
};

}  // namespace

std::unique_ptr<agent::service> make_passthrough_side(agent::service_context& ctx,
                                                      agent::service_config config) {
  return std::make_unique<passthrough_side>(ctx, std::move(config));
}

}  // namespace burrow::kinds::share_url
