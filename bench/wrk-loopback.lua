-- wrk -s bench/wrk-loopback.lua https://NAME.burrow.localhost:PORT/...
-- Connects to 127.0.0.1:PORT whatever the URL's host, which does not need to resolve and
-- stays the TLS SNI and the Host header (the relay routes HTTPS share URLs by SNI).
-- Replaces wrk's own resolver (wrk.lua in wrk 4.1 and 4.2); no request/response
-- functions, so wrk keeps its static, script-free request path.
wrk.resolve = function(host, service)
   wrk.addrs = wrk.lookup("127.0.0.1", service)
end
