// Secrets and their files: random tokens, SHA-256, constant-time comparison, and private files
// written atomically with mode 0600.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace burrow {

// "brw_" followed by 43 base64url characters (32 random bytes, no padding).
std::string random_token();

std::array<std::uint8_t, 32> sha256(std::string_view data);

// Lowercase hexadecimal.
std::string hex(std::span<const std::uint8_t> bytes);

// Decodes hexadecimal (either case) into the front of `out`: the number of bytes, or 0 when
// `text` is empty, not whole bytes of hex digits, or longer than `out` holds.
std::size_t from_hex(std::string_view text, std::span<std::uint8_t> out);

// Compares in time independent of the contents; inputs of different lengths compare unequal
// without revealing where they first differ.
bool constant_time_equal(std::string_view a, std::string_view b);

// Replaces `path` atomically with a file of mode 0600 holding `content`.
void write_private_file(const std::filesystem::path& path, std::string_view content);

inline constexpr std::size_t max_read_file_size = 1024 * 1024;

// Reads a whole file of at most max_read_file_size bytes; throws std::runtime_error otherwise.
std::string read_file(const std::filesystem::path& path);

}  // namespace burrow
