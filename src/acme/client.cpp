// The RFC 8555 exchange as one coroutine over a small session that signs each POST, keeps the
// Replay-Nonce, and bounds every request and pause by the issuance's deadline.
#include "acme/client.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <optional>
#include <stdexcept>

#include "acme/https.hpp"
#include "acme/jws.hpp"
#include "acme/messages.hpp"
#include "acme/tls_alpn.hpp"

namespace burrow::acme {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

constexpr std::string_view bad_nonce = "urn:ietf:params:acme:error:badNonce";
constexpr std::string_view challenge_type = "tls-alpn-01";

struct acme_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string member(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// The "error" member of an order, authorization or challenge, as "TYPE: DETAIL".
std::string error_member(const json::object& o) {
  auto* e = o.if_contains("error");
  if (!e || !e->is_object()) return {};
  std::string type = printable(member(e->as_object(), "type"), 120);
  std::string detail = printable(member(e->as_object(), "detail"));
  return detail.empty() ? type : type + ": " + detail;
}

// A 2xx response's JSON object, else an acme_error saying what failed and the CA's problem.
json::object expect_object(const https_response& r, std::string_view what) {
  if (r.status < 200 || r.status > 299)
    throw acme_error(std::string(what) + ": " + describe_problem(r.status, r.body));
  boost::system::error_code ec;
  auto value = json::parse(r.body, ec);
  if (ec || !value.is_object())
    throw acme_error(std::string(what) + ": the response is not a JSON object");
  return std::move(value.as_object());
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_base64url(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_';
  });
}

// Removes the challenge certificate on every way out of the validation, cancellation included.
class installed_challenge {
 public:
  installed_challenge(const acme_request* request, std::string domain, tls::key_pair cert)
      : request_(request), domain_(std::move(domain)) {
    if (!request_->install_challenge) throw acme_error("no install_challenge hook was given");
    request_->install_challenge(domain_, std::move(cert));
  }
  ~installed_challenge() {
    try {
      if (request_->remove_challenge) request_->remove_challenge(domain_);
    } catch (const std::exception& e) {
      spdlog::error("ACME: removing the challenge for {}: {}", domain_, e.what());
    }
  }
  installed_challenge(const installed_challenge&) = delete;
  installed_challenge& operator=(const installed_challenge&) = delete;

 private:
  const acme_request* request_;
  std::string domain_;
};

class session {
 public:
  session(const acme_request* request, asio::ssl::context* tls, const account_key* key)
      : request_(request),
        tls_(tls),
        key_(key),
        deadline_(steady::now() + request->timeouts.total) {}

  std::string kid;  // the account URL once known; until then POSTs carry the JWK
  std::string new_nonce_url;

  // An unauthenticated GET or HEAD.
  asio::awaitable<https_response> fetch(std::string method, std::string url) {
    https_request request;
    request.method = std::move(method);
    request.url = parse_url(url);
    auto op = send(std::move(request));
    auto r = co_await std::move(op);
    keep_nonce(r);
    co_return r;
  }

  // A signed POST; an empty payload is POST-as-GET. Retried once on badNonce, as RFC 8555
  // section 6.5 asks, with the fresh nonce that came with the error.
  asio::awaitable<https_response> post(std::string url, std::string payload,
                                       std::string accept = {}) {
    https_url target = parse_url(url);
    for (int attempt = 0;; ++attempt) {
      if (nonce_.empty()) {
        auto head = fetch("HEAD", new_nonce_url);
        auto fresh = co_await std::move(head);
        if (nonce_.empty())
          throw acme_error("newNonce: no Replay-Nonce (" + describe_problem(fresh.status, "") +
                           ")");
      }
      https_request request{.method = "POST",
                            .url = target,
                            .body = sign_jws(*key_, payload, nonce_, url, kid),
                            .content_type = "application/jose+json",
                            .accept = accept};
      nonce_.clear();  // each nonce is good for one request
      auto op = send(std::move(request));
      auto r = co_await std::move(op);
      keep_nonce(r);
      if (attempt > 0 || r.status != 400 || problem_type(r.body) != bad_nonce) co_return r;
    }
  }

  // Waits before the next poll: Retry-After when the server sent one, within
  // [poll_interval, max_poll_interval]; throws when the deadline would pass first.
  asio::awaitable<void> pause(std::string retry_after, std::string waiting_for) {
    const auto& t = request_->timeouts;
    milliseconds wait = t.poll_interval;
    if (auto asked = parse_retry_after(retry_after))
      wait = std::min<milliseconds>(std::max<milliseconds>(*asked, t.poll_interval),
                                    t.max_poll_interval);
    if (steady::now() + wait >= deadline_)
      throw acme_error("gave up waiting for " + waiting_for + " after " +
                       std::to_string(t.total.count()) + " ms");
    asio::steady_timer timer(co_await asio::this_coro::executor, wait);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }

 private:
  static https_url parse_url(const std::string& url) {
    auto parsed = parse_https_url(url);
    if (!parsed) throw acme_error("not an https URL: '" + printable(url, 200) + "'");
    return *parsed;
  }

  void keep_nonce(const https_response& r) {
    if (is_base64url(r.replay_nonce) && r.replay_nonce.size() <= 256) nonce_ = r.replay_nonce;
  }

  asio::awaitable<https_response> send(https_request request) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline_ - steady::now());
    if (left.count() <= 0)
      throw acme_error("ran out of time (" + std::to_string(request_->timeouts.total.count()) +
                       " ms)");
    auto op = https_exchange(tls_, request_->ca_file, std::move(request),
                             std::min(left, request_->timeouts.request));
    auto r = co_await std::move(op);
    if (!r.error.empty()) throw acme_error(r.error);
    co_return r;
  }

  const acme_request* request_;
  asio::ssl::context* tls_;
  const account_key* key_;
  steady::time_point deadline_;
  std::string nonce_;
};

// Validates one authorization by TLS-ALPN-01, unless the server already holds it valid.
asio::awaitable<void> authorize(session* s, const acme_request* request, const account_key* key,
                                std::string authz_url) {
  const std::string& domain = request->domain;
  auto fetch = s->post(authz_url, "");
  auto r = co_await std::move(fetch);
  auto authz = expect_object(r, "fetching the authorization");
  std::string status = member(authz, "status");
  if (status == "valid") co_return;
  if (status != "pending")
    throw acme_error("the authorization for " + domain + " is " + printable(status, 40));

  std::string token;
  std::string challenge_url;
  std::string offered;
  if (auto* list = authz.if_contains("challenges"); list && list->is_array()) {
    for (const auto& c : list->as_array()) {
      if (!c.is_object()) continue;
      std::string type = member(c.as_object(), "type");
      offered += (offered.empty() ? "" : ", ") + printable(type, 40);
      if (type != challenge_type) continue;
      token = member(c.as_object(), "token");
      challenge_url = member(c.as_object(), "url");
    }
  }
  if (challenge_url.empty())
    throw acme_error("the CA offers no tls-alpn-01 challenge for " + domain +
                     " (offers: " + offered + ")");
  if (!is_base64url(token) || token.size() > 256)
    throw acme_error("the tls-alpn-01 challenge's token is malformed");

  std::optional<installed_challenge> installed;
  installed.emplace(request, domain,
                    make_challenge_certificate(domain, key_authorization(token, *key)));
  spdlog::debug("ACME: answering tls-alpn-01 for {}", domain);
  auto respond = s->post(challenge_url, "{}");
  auto answer = co_await std::move(respond);
  expect_object(answer, "answering the tls-alpn-01 challenge");
  std::string retry_after = answer.retry_after;
  for (;;) {
    auto wait = s->pause(retry_after, "the validation of " + domain);
    co_await std::move(wait);
    auto poll = s->post(authz_url, "");
    auto p = co_await std::move(poll);
    auto now = expect_object(p, "polling the authorization");
    status = member(now, "status");
    if (status == "valid") co_return;
    if (status != "pending") {
      std::string why;
      if (auto* list = now.if_contains("challenges"); list && list->is_array())
        for (const auto& c : list->as_array())
          if (c.is_object() && member(c.as_object(), "type") == challenge_type)
            why = error_member(c.as_object());
      throw acme_error("validation of " + domain + " failed (" + printable(status, 40) + ")" +
                       (why.empty() ? "" : ": " + why));
    }
    retry_after = p.retry_after;
  }
}

// Polls the order until its status is `wanted`; "invalid" or any unexpected status ends it.
asio::awaitable<json::object> await_order(session* s, std::string order_url, json::object order,
                                          std::string retry_after, std::string wanted,
                                          std::string also_waiting) {
  for (;;) {
    std::string status = member(order, "status");
    if (status == wanted) co_return order;
    if (status != also_waiting && status != "processing") {
      std::string why = error_member(order);
      throw acme_error("the order is " + printable(status, 40) + " instead of " + wanted +
                       (why.empty() ? "" : ": " + why));
    }
    auto wait = s->pause(retry_after, "the order to become " + wanted);
    co_await std::move(wait);
    auto poll = s->post(order_url, "");
    auto r = co_await std::move(poll);
    order = expect_object(r, "polling the order");
    retry_after = r.retry_after;
  }
}

void check_chain(const acme_request& request, const std::string& chain) {
  if (chain.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    throw acme_error("the downloaded certificate is not a PEM chain");
  if (!tls::key_matches({chain, request.cert_key_pem}))
    throw acme_error("the issued certificate is not for our key");
  auto names = tls::subject_alt_names(chain);
  std::string wanted = lowercase(request.domain);
  if (std::none_of(names.begin(), names.end(),
                   [&](const std::string& n) { return lowercase(n) == wanted; }))
    throw acme_error("the issued certificate does not name " + request.domain);
}

asio::awaitable<std::string> issue(session* s, const acme_request* request,
                                   const account_key* key) {
  auto get_directory = s->fetch("GET", request->directory_url);
  auto d = co_await std::move(get_directory);
  auto directory = expect_object(d, "fetching the directory");
  s->new_nonce_url = member(directory, "newNonce");
  std::string new_account = member(directory, "newAccount");
  std::string new_order = member(directory, "newOrder");
  if (s->new_nonce_url.empty() || new_account.empty() || new_order.empty())
    throw acme_error("the directory lacks newNonce, newAccount or newOrder");
  if (auto* meta = directory.if_contains("meta"); meta && meta->is_object())
    if (auto* eab = meta->as_object().if_contains("externalAccountRequired");
        eab && eab->is_bool() && eab->as_bool())
      throw acme_error("the CA requires external account binding, which is not supported");

  // With the same key, newAccount finds the existing account (200) or creates one (201).
  json::object account_payload{{"termsOfServiceAgreed", true}};
  if (!request->contact.empty()) {
    json::array contact;
    for (const auto& c : request->contact) contact.emplace_back(c);
    account_payload["contact"] = std::move(contact);
  }
  auto make_account = s->post(new_account, json::serialize(account_payload));
  auto a = co_await std::move(make_account);
  auto account = expect_object(a, "registering the account");
  if (std::string st = member(account, "status"); !st.empty() && st != "valid")
    throw acme_error("the ACME account is " + printable(st, 40));
  if (a.location.empty()) throw acme_error("registering the account: no account URL");
  s->kid = a.location;

  json::object identifier{{"type", "dns"}, {"value", request->domain}};
  json::object order_payload{{"identifiers", json::array{identifier}}};
  auto make_order = s->post(new_order, json::serialize(order_payload));
  auto o = co_await std::move(make_order);
  auto order = expect_object(o, "creating the order");
  std::string order_url = o.location;
  std::string finalize = member(order, "finalize");
  if (order_url.empty() || finalize.empty())
    throw acme_error("creating the order: no order or finalize URL");
  std::vector<std::string> authorizations;
  if (auto* list = order.if_contains("authorizations"); list && list->is_array())
    for (const auto& url : list->as_array())
      if (url.is_string()) authorizations.emplace_back(url.as_string());
  if (authorizations.size() > 1)
    throw acme_error("the order holds more authorizations than the one name asked for");

  for (const auto& url : authorizations) {
    auto done = authorize(s, request, key, url);
    co_await std::move(done);
  }

  auto refetch = s->post(order_url, "");
  auto fresh = co_await std::move(refetch);
  auto ready_wait = await_order(s, order_url, expect_object(fresh, "fetching the order"),
                                fresh.retry_after, "ready", "pending");
  order = co_await std::move(ready_wait);

  json::object csr{{"csr", base64url(make_order_csr(request->cert_key_pem, request->domain))}};
  auto finalizing = s->post(finalize, json::serialize(csr));
  auto f = co_await std::move(finalizing);
  auto valid_wait = await_order(s, order_url, expect_object(f, "finalizing the order"),
                                f.retry_after, "valid", "ready");
  order = co_await std::move(valid_wait);
  std::string certificate = member(order, "certificate");
  if (certificate.empty()) throw acme_error("the valid order has no certificate URL");

  auto download = s->post(certificate, "", "application/pem-certificate-chain");
  auto c = co_await std::move(download);
  if (c.status != 200)
    throw acme_error("downloading the certificate: " + describe_problem(c.status, c.body));
  check_chain(*request, c.body);
  co_return std::move(c.body);
}

}  // namespace

asio::awaitable<acme_result> obtain_certificate(acme_request request) {
  acme_result result;
  try {
    if (request.domain.empty() || request.cert_key_pem.empty())
      throw acme_error("a domain and the key to certify are required");
    auto tls = make_acme_client_context();
    account_key key(request.account_key_pem);
    session s(&request, &tls, &key);
    auto op = issue(&s, &request, &key);
    result.chain_pem = co_await std::move(op);
    result.account_url = s.kid;
  } catch (const std::exception& e) {
    result.chain_pem.clear();
    result.error = std::string("ACME: ") + e.what();
  }
  co_return result;
}

}  // namespace burrow::acme
