// The agent's side of an end-to-end TCP service, reached by name through `burrow connect`: TLS
// runs between the visitor and this agent (or streams are keyed from a session, session.cpp).
#pragma once

#include <memory>

#include "agent/agent_config.hpp"
#include "agent/local_stream.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"
#include "link/record_protection.hpp"

namespace burrow::kinds::tcp_e2ee {

std::unique_ptr<agent::service> make_agent_side(agent::service_context& ctx,
                                                agent::service_config config);

class agent_side final : public agent::service {
 public:
  agent_side(agent::service_context& ctx, agent::service_config config);

  const std::string& name() const override { return config_.name; }
  std::optional<proto::service_spec> registration() const override;
  void on_accepted(link::link& l, const proto::service_result& r) override;
  std::optional<proto::service_spec> on_refused(const proto::service_result&) override {
    return std::nullopt;
  }
  bool accepts_sealed(const proto::open_metadata& meta) const override;
  boost::asio::awaitable<void> serve(std::shared_ptr<link::link> l, std::shared_ptr<link::stream> s,
                                     proto::open_metadata meta) override;

 private:
  // Session keys (session.cpp, docs/protocol.md section 6c): a session stream's handshake and
  // lifetime; the keys of a stream that names a session, or null once it has been refused.
  boost::asio::awaitable<void> session_stream(std::shared_ptr<link::link> l,
                                              std::shared_ptr<link::stream> s,
                                              proto::open_metadata meta);
  std::unique_ptr<link::record_protection> keyed_stream(link::link& l, link::stream& s,
                                                        const proto::open_metadata& meta);
  void announce() const;

  agent::service_context& ctx_;
  agent::local_target target_;
  agent::agent_identity& identity_;
  const agent::service_config config_;
  const std::size_t session_owner_;  // how ctx_.e2ee_sessions tells this service's sessions
  bool announced_ = false;           // guarded by the context's mutex
};

}  // namespace burrow::kinds::tcp_e2ee
