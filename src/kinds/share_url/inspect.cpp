// Inspect mode: the relay ends the visitors' TLS, checks each request against the access rules
// it is given here, logs it, and passes it on in the clear.
#include "kinds/share_url/agent_side.hpp"
#include "kinds/share_url/share_url.hpp"

namespace burrow::kinds::share_url {

namespace {

class inspect_side final : public share_url_side {
 public:
  using share_url_side::share_url_side;

  std::optional<proto::service_spec> registration() const override {
    auto spec = share_url_side::registration();
    if (spec && config_.rules) spec->access = config_.rules->to_spec();
    return spec;
  }

  // The relay read these bytes: nothing here authenticates them.
  bool accepts_sealed(const proto::open_metadata&) const override { return false; }

  boost::asio::awaitable<void> serve(std::shared_ptr<link::link> l, std::shared_ptr<link::stream> s,
                                     proto::open_metadata meta) override {
    auto serving = web_session(std::move(l), std::move(s), std::move(meta), true);
    co_await std::move(serving);
  }

 private:
  std::string visitor_note() const override {
    return "visitors trust the relay's CA (`burrow relay ca` prints it); the relay ends TLS and "
           "logs each request\n";
  }
};

}  // namespace

std::unique_ptr<agent::service> make_inspect_side(agent::service_context& ctx,
                                                  agent::service_config config) {
  return std::make_unique<inspect_side>(ctx, std::move(config));
}

}  // namespace burrow::kinds::share_url
