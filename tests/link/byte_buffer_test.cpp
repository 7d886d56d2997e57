// The byte buffer: its bytes survive growth, moves and consumption from the front, and its
// smallest size comes from and goes back to the thread's spare buffers.
#include "link/byte_buffer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/spare_buffers.hpp"

namespace burrow::link {
namespace byte_buffer_test {

// Holds every spare this thread had, so that the next one given back is the next one taken.
struct spares_emptied {
  std::vector<void*> held;
  spares_emptied() {
    for (int i = 0; i < 64; ++i) held.push_back(take_spare_buffer());
  }
  ~spares_emptied() {
    for (void* b : held) give_spare_buffer(b);
  }
};

std::string text(const byte_buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

TEST(ByteBuffer, KeepsItsBytesAsItGrowsAndMoves) {
  byte_buffer b;
  std::string expected;
  for (int i = 0; i < 3000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    b.append(piece.data(), piece.size());
    expected += piece;
  }
  EXPECT_GT(b.capacity(), spare_buffer_size);
  EXPECT_EQ(text(b), expected);
  b.consume(5);
  byte_buffer moved(std::move(b));
  EXPECT_EQ(b.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(text(moved), expected.substr(5));
  byte_buffer assigned;
  assigned.append("x", 1);
  assigned = std::move(moved);
  EXPECT_EQ(text(assigned), expected.substr(5));
  std::swap(assigned, b);
  EXPECT_EQ(text(b), expected.substr(5));
  EXPECT_TRUE(assigned.empty());
}

TEST(ByteBuffer, ItsFirstSizeIsASpareBufferAndGoesBackToTheSpares) {
  spares_emptied emptied;
  byte_buffer b;
  b.append("hello", 5);
  ASSERT_EQ(b.capacity(), spare_buffer_size);
  const void* storage = b.data();
  b.consume(5);
  b.release();
  EXPECT_EQ(b.capacity(), 0u);
  // The thread's next spare is the one the buffer gave back.
  void* next = take_spare_buffer();
  EXPECT_EQ(next, storage);
  give_spare_buffer(next);
  // Growing past it gives it back as well, with the bytes moved into the larger buffer.
  b.append("abc", 3);
  const void* small = b.data();
  std::string big(spare_buffer_size, 'z');
  b.append(big.data(), big.size());
  EXPECT_EQ(text(b), "abc" + big);
  next = take_spare_buffer();
  EXPECT_EQ(next, small);
  give_spare_buffer(next);
}

TEST(ByteBuffer, AnExactFirstReservationIsKeptAsAsked) {
  byte_buffer b;
  b.reserve_first(100);
  EXPECT_EQ(b.capacity(), 100u);
  b.append("0123456789", 10);
  b.trim(50);  // not empty: kept
  EXPECT_EQ(b.capacity(), 100u);
  b.clear();
  b.trim(50);
  EXPECT_EQ(b.capacity(), 0u);
  b.reserve_first(spare_buffer_size);  // a spare, and given back as one (ASan checks the pairing)
  EXPECT_EQ(b.capacity(), spare_buffer_size);
}

}  // namespace byte_buffer_test
}  // namespace burrow::link
