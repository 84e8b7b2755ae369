#include "log/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <stdexcept>

namespace ddp {

std::string gzip(std::string_view text) {
  z_stream z{};
  // 15 + 16: the largest window, with gzip's header and trailer.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib could not start compressing");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int code = Z_OK;
  // deflate takes at most 4 GiB a call.
  while (code == Z_OK) {
    const std::size_t left = text.size() - static_cast<std::size_t>(z.total_in);
    z.avail_in = static_cast<uInt>(std::min<std::size_t>(left, 1U << 30));
    code = deflate(&z, z.avail_in == left ? Z_FINISH : Z_NO_FLUSH);
  }
  const std::size_t written = z.total_out;
  deflateEnd(&z);
  if (code != Z_STREAM_END) throw std::runtime_error("zlib could not compress the text");
  out.resize(written);
  return out;
}

}  // namespace ddp
