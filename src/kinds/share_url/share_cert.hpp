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
  std::chrono::steady_clock::time_point renew_at;  // renewal_time(), from now
};

// Two thirds into the certificate's life, as a steady-clock time (now, if that has passed). Its
// life starts at notBefore, or at `issued` if that is later: CAs backdate notBefore, which for a
// short-lived certificate would put the renewal in the past.
std::chrono::steady_clock::time_point renewal_time(
    const std::string& cert_pem,
    std::chrono::system_clock::time_point issued = std::chrono::system_clock::time_point::min());

// Throws std::runtime_error ("it does not name HOST", ...) unless `pair` is a certificate for
// `host`, with the agent's key, still valid.
void check_share_cert(const tls::key_pair& pair, std::string_view host);

// Checks the relay's answer: it must be a certificate for `host`, for the agent's key, still
// valid. Throws std::runtime_error saying what is wrong.
share_cert accept_share_cert(const proto::certificate& answer, const tls::key_pair& key,
                             std::string_view host);

// The user's own --cert and --key files (PEM; the certificate file may hold the chain after the
// leaf). Throws std::runtime_error naming the file at fault.
share_cert load_share_cert(const std::string& cert_file, const std::string& key_file);

}  // namespace burrow::kinds::share_url
