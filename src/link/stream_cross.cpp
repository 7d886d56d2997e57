// The join across two threads: each stream is only ever touched on its own link's executor, and
// what crosses (a chunk of bytes, word that it was sent, a half-close, a reset) crosses by a post.
// One chunk per direction is in flight at a time, its credit given back as it leaves, so the
// sender goes on meanwhile: a direction holds at most its window queued and one chunk in flight,
// as the coroutine bridge this replaces did.
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <utility>

#include "link/link.hpp"
#include "link/stream.hpp"

namespace burrow::link {

namespace asio = boost::asio;

namespace {
// What one post carries at most: all that is queued, up to this (credit bounds it anyway).
constexpr std::size_t cross_chunk = 256 * 1024;
}  // namespace

void stream::join_across(const std::shared_ptr<stream>& a, const std::shared_ptr<stream>& b,
                         std::function<void()> done) {
  auto shared = std::make_shared<cross_done>();
  shared->done = std::move(done);
  a->cross_ = std::make_unique<cross_state>();
  a->cross_->peer = b;
  a->cross_->shared = shared;
  // `b` takes its part on its own thread; whatever `a` posts to it comes after.
  asio::post(b->executor(), [b, a, shared] { b->start_cross(a, shared); });
  a->cross_start();
}

void stream::start_cross(std::shared_ptr<stream> peer, std::shared_ptr<cross_done> shared) {
  cross_ = std::make_unique<cross_state>();
  cross_->peer = std::move(peer);
  cross_->shared = std::move(shared);
  cross_start();
}

void stream::cross_start() {
  if (reset_) {  // before the join: the other stream goes too
    cross_reset_peer();
    cross_end();
    return;
  }
  cross_pass();  // what waited already (a first flight), or a half-close
}

void stream::cross_pass() {
  auto& c = *cross_;
  if (c.in_flight || c.fin_passed || cap_waiting_ || reset_) return;
  if (!inbound_.empty()) {
    std::size_t n = std::min(inbound_.size(), cross_chunk);
    std::vector<std::uint8_t> chunk(inbound_.data(), inbound_.data() + n);
    inbound_.consume(n);
    give_back_small_queue();
    cross_post(std::move(chunk));
    return;
  }
  if (!inbound_fin_) return;
  c.fin_passed = true;  // after the bytes: none is in flight
  asio::post(c.peer->executor(), [peer = c.peer] { peer->cross_take_fin(); });
  cross_check_done();
}

void stream::cross_post(std::vector<std::uint8_t> chunk) {
  const std::size_t n = chunk.size();
  cross_->in_flight = true;
  touch();
  asio::post(cross_->peer->executor(), [peer = cross_->peer, chunk = std::move(chunk)]() mutable {
    peer->cross_take(std::move(chunk));
  });
  // The credit goes back now, or once this stream's cap has waited out the chunk.
  auto wait = throttled() ? limiter_->charge(n) : std::chrono::nanoseconds::zero();
  if (wait.count() > 0)
    wait_cap(wait, n);
  else
    consumed(n);
}

void stream::cross_take(std::vector<std::uint8_t> chunk) {
  if (!cross_ || reset_) return;  // a reset is on its way to the other stream
  cross_->out = std::move(chunk);
  cross_->out_at = 0;
  cross_send();
}

void stream::cross_send() {
  auto& c = *cross_;
  if (c.out.empty() || reset_) return;
  while (c.out_at < c.out.size()) {
    if (send_.available() == 0) return;  // on_window calls again
    if (link_->write_blocked()) {
      if (!waiting_room_) {
        waiting_room_ = true;
        link_->when_writable(weak_from_this());  // on_link_writable calls again
      }
      return;
    }
    std::size_t n = std::min<std::size_t>(
        {c.out.size() - c.out_at, send_.available(), std::size_t{link_->limits().max_frame}});
    send_now({c.out.data() + c.out_at, n});
    c.out_at += n;
  }
  const std::size_t n = c.out.size();
  // This stream's cap is charged here, on its thread; the other stream waits it out with its own.
  auto wait = throttled() ? limiter_->charge(n) : std::chrono::nanoseconds::zero();
  std::vector<std::uint8_t>().swap(c.out);
  c.out_at = 0;
  asio::post(c.peer->executor(), [peer = c.peer, wait] { peer->cross_sent(wait); });
}

void stream::cross_sent(std::chrono::nanoseconds wait) {
  if (!cross_ || reset_) return;
  cross_->in_flight = false;
  if (wait.count() > 0) {  // the other stream's cap: the next chunk waits it out too
    if (cap_waiting_)
      cap_until_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
    else
      wait_cap(wait, 0);
    return;
  }
  cross_pass();
}

void stream::cross_take_fin() {
  if (!cross_ || reset_) return;
  shutdown_send();
  cross_check_done();
}

void stream::cross_check_done() {
  if (cross_ && cross_->fin_passed && outbound_fin_) cross_end();
}

void stream::cross_reset_peer() {
  asio::post(cross_->peer->executor(), [peer = cross_->peer] {
    if (peer->cross_ && !peer->reset_) peer->reset(proto::stream_status::cancelled);
  });
}

void stream::cross_end() {
  auto self = shared_from_this();  // finish() lets the link forget this stream
  auto c = std::move(cross_);
  if (!c) return;
  cap_waiting_ = false;
  if (cap_timer_) cap_timer_->cancel();
  finish();
  // The other stream is let go on its own thread: this may be the last hold on it.
  auto ex = c->peer->executor();
  asio::post(ex, [peer = std::move(c->peer)] {});
  if (--c->shared->left == 0 && c->shared->done) c->shared->done();
}

}  // namespace burrow::link
