// libFuzzer target: control messages and open metadata as a peer could send them. Decoding must
// never crash, and whatever decodes must encode and decode again to the same message.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "proto/control.hpp"
#include "proto/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = burrow::proto::decode_control(text);
  if (decoded.message) {
    // Defaults filled in can make the encoding longer than the input; only those within the
    // limit can be decoded again.
    auto encoded = burrow::proto::encode_control(*decoded.message);
    if (encoded.size() > burrow::proto::max_control_payload) return 0;
    auto again = burrow::proto::decode_control(encoded);
    if (!again.message || again.message->index() != decoded.message->index()) {
      std::fprintf(stderr, "control_fuzz: round trip changed the message\n");
      std::abort();
    }
  } else if (decoded.error.empty()) {
    std::fprintf(stderr, "control_fuzz: refusal without a reason\n");
    std::abort();
  }
  if (auto open = burrow::proto::decode_open(text)) {
    if (!burrow::proto::decode_open(burrow::proto::encode_open(*open))) {
      std::fprintf(stderr, "control_fuzz: open metadata round trip failed\n");
      std::abort();
    }
  }
  return 0;
}
