// The agent's sessions: each stream number once, none too far behind, none of another service,
// none after the session closed or grew too old, and no more sessions than the bound.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <stdexcept>
#include <thread>

#include "e2ee/session_registry.hpp"

namespace burrow::e2ee {
namespace session_registry_test {

TEST(E2eeReplayWindow, EachNumberOnceInAnyOrderWithinTheWindow) {
  replay_window w;
  EXPECT_FALSE(w.take(0));
  EXPECT_TRUE(w.take(5));
  EXPECT_FALSE(w.take(5));
  EXPECT_TRUE(w.take(3));  // late, but within the window
  EXPECT_FALSE(w.take(3));
  EXPECT_TRUE(w.take(4));
  EXPECT_TRUE(w.take(1));
  EXPECT_TRUE(w.take(2));
  EXPECT_TRUE(w.take(6));
  for (std::uint64_t n = 1; n <= 6; ++n) EXPECT_FALSE(w.take(n)) << n;
}

TEST(E2eeReplayWindow, NumbersTooFarBehindAreRefused) {
  replay_window w;
  const std::uint64_t top = 10 * replay_window::size;
  EXPECT_TRUE(w.take(top));
  EXPECT_TRUE(w.take(top - replay_window::size + 1));   // the oldest the window still holds
  EXPECT_FALSE(w.take(top - replay_window::size));      // one older: cannot be told from a replay
  EXPECT_TRUE(w.take(top + 1));                         // moves on by one
  EXPECT_FALSE(w.take(top - replay_window::size + 1));  // now behind it
  // A jump past the whole window forgets it, and what it held is behind the new top.
  EXPECT_TRUE(w.take(top + 3 * replay_window::size));
  EXPECT_FALSE(w.take(top + 1));
  EXPECT_TRUE(w.take(top + 3 * replay_window::size - 1));
}

TEST(E2eeReplayWindow, TheHighestNumberEverCanBeTakenOnce) {
  replay_window w;
  const auto max = std::numeric_limits<std::uint64_t>::max();
  EXPECT_TRUE(w.take(max));
  EXPECT_FALSE(w.take(max));
  EXPECT_TRUE(w.take(max - 1));
}

std::shared_ptr<const session_keys> keys_numbered(std::uint8_t n) {
  std::array<std::uint8_t, session_id_size> id{};
  id[0] = n;
  std::array<std::uint8_t, 32> secret{};
  secret[0] = n;
  return session_keys::from_secret(id, link::record_cipher::aes_128_gcm, secret);
}

using verdict = session_registry::verdict;

TEST(E2eeSessionRegistry, AStreamNumberOnceWhileTheSessionIsOpen) {
  session_registry r;
  auto k = keys_numbered(1);
  EXPECT_EQ(r.take(k->id(), 1, 0).outcome, verdict::unknown);
  ASSERT_TRUE(r.add(k, 0));
  EXPECT_FALSE(r.add(k, 0));  // the id is taken
  auto first = r.take(k->id(), 1, 0);
  EXPECT_EQ(first.outcome, verdict::ok);
  EXPECT_EQ(first.keys, k);
  EXPECT_EQ(r.take(k->id(), 1, 0).outcome, verdict::replayed);
  EXPECT_EQ(r.take(k->id(), 2, 0).outcome, verdict::ok);
  EXPECT_EQ(r.take(k->id(), 3, 1).outcome, verdict::unknown);  // another service's streams
  EXPECT_EQ(r.take(k->id(), 3, 0).outcome, verdict::ok);       // and 3 was still free
  r.remove(k->id());
  EXPECT_EQ(r.take(k->id(), 4, 0).outcome, verdict::unknown);
  EXPECT_EQ(r.size(), 0u);
}

TEST(E2eeSessionRegistry, BoundedInNumberAndInAge) {
  session_registry r(2, std::chrono::milliseconds(50));
  auto a = keys_numbered(1), b = keys_numbered(2), c = keys_numbered(3);
  EXPECT_TRUE(r.add(a, 0));
  EXPECT_TRUE(r.add(b, 0));
  EXPECT_FALSE(r.add(c, 0));
  EXPECT_EQ(r.size(), 2u);
  r.remove(a->id());
  EXPECT_TRUE(r.add(c, 0));
  EXPECT_EQ(r.take(c->id(), 1, 0).outcome, verdict::ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(r.take(c->id(), 2, 0).outcome, verdict::expired);
}

TEST(E2eeSessionKeys, OnlyAnIdAndSecretOfTheirSizesMakeKeys) {
  std::array<std::uint8_t, 15> short_id{};
  std::array<std::uint8_t, 32> secret{};
  EXPECT_THROW(session_keys::from_secret(short_id, link::record_cipher::aes_128_gcm, secret),
               std::invalid_argument);
  auto k = keys_numbered(7);
  EXPECT_EQ(k->id(), "07000000000000000000000000000000");
  EXPECT_THROW(k->stream(0, true), std::runtime_error);
  EXPECT_NE(k->stream(1, true), nullptr);
}

}  // namespace session_registry_test
}  // namespace burrow::e2ee
