// Certificates for blind share URLs: TLS ends at the agent with a certificate for NAME.DOMAIN.
// By default the relay's CA signs it from a request made with the agent's own key (the key never
// leaves the agent), short-lived and renewed after two thirds of its life; or the user brings one.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "proto/control.hpp"
#include "tls/certs.hpp"

namespace burrow::kinds::share_url {

// "https://NAME.DOMAIN[:PORT]" -> "NAME.DOMAIN"; empty when it is not such a URL.
std::string share_url_host(std::string_view public_address);

proto::cert_request make_share_cert_request(const std::string& name, const tls::key_pair& key);

struct share_cert {
  std::shared_ptr<boost::asio::ssl::context> tls;  // a web server context presenting it
  std::chrono::system_clock::time_point not_after;
  std::chrono::steady_clock::time_point renew_at;  // two thirds of the way from now to not_after
};

// Checks the relay's answer: it must be a certificate for `host`, for the agent's key, still
// valid. Throws std::runtime_error saying what is wrong.
share_cert accept_share_cert(const proto::certificate& answer, const tls::key_pair& key,
                             std::string_view host);

// The user's own --cert and --key files (PEM; the certificate file may hold the chain after the
// leaf). Throws std::runtime_error naming the file at fault.
share_cert load_share_cert(const std::string& cert_file, const std::string& key_file);

}  // namespace burrow::kinds::share_url
