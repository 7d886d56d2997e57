// libFuzzer target: control messages and open metadata as a peer could send them. Decoding must
// never crash, and whatever decodes must encode and decode again to the same message.
#include <string_view>

#include "fuzz_check.hpp"
#include "proto/control.hpp"
#include "proto/frame.hpp"

using burrow::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = burrow::proto::decode_control(text);
  if (decoded.message) {
    // Defaults filled in can make the encoding longer than the input; only those within the
    // limit can be decoded again.
    auto encoded = burrow::proto::encode_control(*decoded.message);
    if (encoded.size() > burrow::proto::max_control_payload) return 0;
    auto again = burrow::proto::decode_control(encoded);
    check(again.message && again.message->index() == decoded.message->index(),
          "round trip changed the message");
  } else {
    check(!decoded.error.empty(), "refusal without a reason");
  }
  if (auto open = burrow::proto::decode_open(text))
    check(burrow::proto::decode_open(burrow::proto::encode_open(*open)).has_value(),
          "open metadata round trip failed");
  return 0;
}
