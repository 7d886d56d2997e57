// JSON encoding of control messages and open metadata, with strict, bounded decoding.
#include "proto/control.hpp"

#include <boost/json.hpp>

#include "proto/frame.hpp"

namespace burrow::proto {

namespace json = boost::json;

namespace {

constexpr std::size_t max_string = 4096;
constexpr std::size_t max_services = 1024;

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;  // clang before 17 does not deduce aggregates

// Typed field readers: absent fields keep their default, wrong types fail the decode.
struct reader {
  const json::object& o;
  bool ok = true;

  void str(std::string_view key, std::string& out) {
    auto* v = o.if_contains(key);
    if (!v) return;
    auto* s = v->if_string();
    if (!s || s->size() > max_string) {
      ok = false;
      return;
    }
    out.assign(s->data(), s->size());
  }
  template <class T>
  void num(std::string_view key, T& out) {
    auto* v = o.if_contains(key);
    if (!v) return;
    std::uint64_t n = 0;
    if (auto* u = v->if_uint64()) {
      n = *u;
    } else if (auto* i = v->if_int64(); i && *i >= 0) {
      n = static_cast<std::uint64_t>(*i);
    } else {
      ok = false;
      return;
    }
    if (n > std::numeric_limits<T>::max()) {
      ok = false;
      return;
    }
    out = static_cast<T>(n);
  }
  void boolean(std::string_view key, bool& out) {
    auto* v = o.if_contains(key);
    if (!v) return;
    if (auto* b = v->if_bool()) {
      out = *b;
    } else {
      ok = false;
    }
  }
  const json::array* array(std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v) return nullptr;
    auto* a = v->if_array();
    if (!a || a->size() > max_services) ok = false;
    return ok ? a : nullptr;
  }
  // An array of strings; any other element fails the whole message.
  void strings(std::string_view key, std::vector<std::string>& out) {
    auto* a = array(key);
    if (!a) return;
    for (auto& v : *a) {
      auto* s = v.if_string();
      if (!s || s->size() > max_string) {
        ok = false;
        return;
      }
      out.emplace_back(s->data(), s->size());
    }
  }
  // A nested object, read by `read`; absent leaves `out` as it is.
  template <class T, class Read>
  void object(std::string_view key, T& out, Read read) {
    auto* v = o.if_contains(key);
    if (!v) return;
    auto* sub_object = v->if_object();
    if (!sub_object) {
      ok = false;
      return;
    }
    reader sub{*sub_object};
    read(sub, out);
    if (!sub.ok) ok = false;
  }
  // An array of objects, each read into a T by `read`; any bad element fails the whole message.
  template <class T, class Read>
  void objects(std::string_view key, std::vector<T>& out, Read read) {
    auto* a = array(key);
    if (!a) return;
    for (auto& v : *a) {
      auto* element = v.if_object();
      if (!element) {
        ok = false;
        return;
      }
      reader sub{*element};
      T item;
      read(sub, item);
      if (!sub.ok) {
        ok = false;
        return;
      }
      out.push_back(std::move(item));
    }
  }
};

std::optional<json::object> parse_object(std::string_view text) {
  if (text.size() > max_control_payload) return std::nullopt;
  json::parse_options opts;
  opts.max_depth = 8;
  std::error_code ec;
  json::value v = json::parse(text, ec, {}, opts);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

json::object encode_service(const service_spec& s) {
  auto wire = to_wire(s.kind);
  json::object o{{"name", s.name}, {"kind", wire.kind}, {"remote_port", s.remote_port}};
  if (wire.e2ee) o["e2ee"] = true;
  if (!s.visitor_token_sha256.empty()) o["visitor_token_sha256"] = s.visitor_token_sha256;
  if (!wire.mode.empty()) o["mode"] = wire.mode;
  if (s.plain_http) o["plain_http"] = true;
  if (!s.access.empty()) {
    json::object a;
    json::array basic, bearer, headers, allow;
    for (auto& b : s.access.basic)
      basic.push_back(json::object{{"user", b.user}, {"secret", b.secret}, {"hashed", b.hashed}});
    for (auto& t : s.access.bearer_sha256) bearer.push_back(json::string(t));
    for (auto& h : s.access.headers)
      headers.push_back(json::object{{"name", h.name}, {"value_sha256", h.value_sha256}});
    for (auto& c : s.access.allow_ip) allow.push_back(json::string(c));
    a["basic"] = std::move(basic);
    a["bearer_sha256"] = std::move(bearer);
    a["headers"] = std::move(headers);
    a["allow_ip"] = std::move(allow);
    o["access"] = std::move(a);
  }
  return o;
}

json::object encode_result(const service_result& r) {
  json::object o{{"name", r.name}, {"ok", r.ok}, {"remote_port", r.remote_port}};
  if (!r.public_address.empty()) o["public_address"] = r.public_address;
  if (!r.code.empty()) o["code"] = r.code;
  if (!r.message.empty()) o["message"] = r.message;
  return o;
}

}  // namespace

std::string encode_control(const control_message& m) {
  json::object o = std::visit(
      overloaded{
          [](const hello& h) {
            json::array versions;
            for (auto v : h.versions) versions.push_back(v);
            json::object o{{"type", "hello"},       {"versions", versions},
                           {"role", h.role},        {"token", h.token},
                           {"session", h.session},  {"link_index", h.link_index},
                           {"software", h.software}};
            if (!h.link_encryption.empty()) o["link_encryption"] = h.link_encryption;
            if (h.sealed_frames) o["sealed_frames"] = true;
            if (h.own_records) o["own_records"] = true;
            return o;
          },
          [](const welcome& w) {
            json::object o{{"type", "welcome"},
                           {"version", w.version},
                           {"max_frame", w.max_frame},
                           {"initial_window", w.initial_window},
                           {"max_streams", w.max_streams},
                           {"ping_interval_ms", w.ping_interval_ms},
                           {"ping_timeout_ms", w.ping_timeout_ms}};
            if (!w.link_encryption.empty()) o["link_encryption"] = w.link_encryption;
            if (w.sealed_frames) o["sealed_frames"] = true;
            if (w.own_records) o["own_records"] = true;
            return o;
          },
          [](const register_services& r) {
            json::array a;
            for (auto& s : r.services) a.push_back(encode_service(s));
            return json::object{{"type", "register"}, {"services", a}};
          },
          [](const registered& r) {
            json::array a;
            for (auto& s : r.services) a.push_back(encode_result(s));
            return json::object{{"type", "registered"}, {"services", a}};
          },
          [](const link_error& e) {
            return json::object{{"type", "error"}, {"code", e.code}, {"message", e.message}};
          },
          [](const cert_request& c) {
            return json::object{{"type", "cert_request"}, {"name", c.name}, {"csr", c.csr}};
          },
          [](const certificate& c) {
            json::object o{{"type", "certificate"}, {"name", c.name}, {"ok", c.ok}};
            if (!c.cert.empty()) o["cert"] = c.cert;
            if (!c.ca.empty()) o["ca"] = c.ca;
            if (!c.code.empty()) o["code"] = c.code;
            if (!c.message.empty()) o["message"] = c.message;
            return o;
          },
          [](const unregister& u) {
            json::array a;
            for (auto& n : u.names) a.push_back(json::string(n));
            return json::object{{"type", "unregister"}, {"names", a}};
          },
          [](const replaced& r) {
            json::array a;
            for (auto& n : r.names) a.push_back(json::string(n));
            return json::object{{"type", "replaced"}, {"names", a}, {"by", r.by}};
          },
      },
      m);
  return json::serialize(o);
}

control_decode decode_control(std::string_view text) {
  control_decode out;
  auto obj = parse_object(text);
  if (!obj) {
    out.error = "control message is not a JSON object within limits";
    return out;
  }
  reader r{*obj};
  std::string type;
  r.str("type", type);
  if (type == "hello") {
    hello h;
    if (auto* a = r.array("versions")) {
      for (auto& v : *a) {
        if (!v.is_int64() && !v.is_uint64()) {
          r.ok = false;
          break;
        }
        auto n = v.is_int64() ? v.as_int64() : static_cast<std::int64_t>(v.as_uint64());
        if (n < 0 || n > 0xffff) {
          r.ok = false;
          break;
        }
        h.versions.push_back(static_cast<std::uint32_t>(n));
      }
    }
    r.str("role", h.role);
    r.str("token", h.token);
    r.str("session", h.session);
    r.num("link_index", h.link_index);
    r.str("software", h.software);
    r.str("link_encryption", h.link_encryption);
    r.boolean("sealed_frames", h.sealed_frames);
    r.boolean("own_records", h.own_records);
    if (r.ok) out.message = std::move(h);
  } else if (type == "welcome") {
    welcome w;
    r.num("version", w.version);
    r.num("max_frame", w.max_frame);
    r.num("initial_window", w.initial_window);
    r.num("max_streams", w.max_streams);
    r.num("ping_interval_ms", w.ping_interval_ms);
    r.num("ping_timeout_ms", w.ping_timeout_ms);
    r.str("link_encryption", w.link_encryption);
    r.boolean("sealed_frames", w.sealed_frames);
    r.boolean("own_records", w.own_records);
    if (r.ok) out.message = w;
  } else if (type == "register") {
    register_services reg;
    r.objects("services", reg.services, [](reader& sr, service_spec& s) {
      std::string kind = "tcp", mode;
      bool e2ee = false;
      sr.str("name", s.name);
      sr.str("kind", kind);
      sr.num("remote_port", s.remote_port);
      sr.boolean("e2ee", e2ee);
      sr.str("visitor_token_sha256", s.visitor_token_sha256);
      sr.str("mode", mode);
      if (auto k = from_wire(kind, e2ee, mode))
        s.kind = *k;
      else if (kind == "http")
        s.unsupported = {"unsupported_mode", "mode '" + mode.substr(0, 32) + "'"};
      else
        s.unsupported = {"unsupported_kind", "kind '" + kind.substr(0, 32) + "'"};
      sr.boolean("plain_http", s.plain_http);
      sr.object("access", s.access, [](reader& ar, access_spec& a) {
        ar.objects("basic", a.basic, [](reader& br, access_spec::basic_entry& b) {
          br.str("user", b.user);
          br.str("secret", b.secret);
          br.boolean("hashed", b.hashed);
        });
        ar.strings("bearer_sha256", a.bearer_sha256);
        ar.objects("headers", a.headers, [](reader& hr, access_spec::header_entry& h) {
          hr.str("name", h.name);
          hr.str("value_sha256", h.value_sha256);
        });
        ar.strings("allow_ip", a.allow_ip);
      });
    });
    if (r.ok) out.message = std::move(reg);
  } else if (type == "registered") {
    registered reg;
    r.objects("services", reg.services, [](reader& sr, service_result& s) {
      sr.str("name", s.name);
      sr.boolean("ok", s.ok);
      sr.num("remote_port", s.remote_port);
      sr.str("public_address", s.public_address);
      sr.str("code", s.code);
      sr.str("message", s.message);
    });
    if (r.ok) out.message = std::move(reg);
  } else if (type == "cert_request") {
    cert_request c;
    r.str("name", c.name);
    r.str("csr", c.csr);
    if (r.ok) out.message = std::move(c);
  } else if (type == "certificate") {
    certificate c;
    r.str("name", c.name);
    r.boolean("ok", c.ok);
    r.str("cert", c.cert);
    r.str("ca", c.ca);
    r.str("code", c.code);
    r.str("message", c.message);
    if (r.ok) out.message = std::move(c);
  } else if (type == "unregister") {
    unregister u;
    r.strings("names", u.names);
    if (r.ok) out.message = std::move(u);
  } else if (type == "replaced") {
    replaced m;
    r.strings("names", m.names);
    r.str("by", m.by);
    if (r.ok) out.message = std::move(m);
  } else if (type == "error") {
    link_error e;
    r.str("code", e.code);
    r.str("message", e.message);
    if (r.ok) out.message = std::move(e);
  } else {
    out.error = "unknown control message type";
    out.unknown_type = true;
    return out;
  }
  if (!out.message) out.error = "control message '" + type + "' has a field of the wrong type";
  return out;
}

std::string encode_open(const open_metadata& m) {
  json::object o{{"service", m.service},
                 {"visitor_address", m.visitor_address},
                 {"visitor_port", m.visitor_port},
                 {"relay_address", m.relay_address},
                 {"relay_port", m.relay_port}};
  if (!m.visitor_token.empty()) o["visitor_token"] = m.visitor_token;
  if (auto scheme = to_wire(m.scheme); !scheme.empty()) o["scheme"] = scheme;
  if (m.sealed) o["sealed"] = true;
  if (!m.e2ee_session.empty()) o["e2ee_session"] = m.e2ee_session;
  if (m.e2ee_stream != 0) o["e2ee_stream"] = m.e2ee_stream;
  return json::serialize(o);
}

std::optional<open_metadata> decode_open(std::string_view text) {
  auto obj = parse_object(text);
  if (!obj) return std::nullopt;
  reader r{*obj};
  open_metadata m;
  r.str("service", m.service);
  r.str("visitor_address", m.visitor_address);
  r.num("visitor_port", m.visitor_port);
  r.str("relay_address", m.relay_address);
  r.num("relay_port", m.relay_port);
  r.str("visitor_token", m.visitor_token);
  std::string scheme;
  r.str("scheme", scheme);
  r.boolean("sealed", m.sealed);
  r.str("e2ee_session", m.e2ee_session);
  r.num("e2ee_stream", m.e2ee_stream);
  auto known = scheme_from_wire(scheme);
  if (!r.ok || !known) return std::nullopt;
  m.scheme = *known;
  return m;
}

}  // namespace burrow::proto
