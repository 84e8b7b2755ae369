#include "analyze/gzip_inflater.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "ddpscope/error.h"

#if DDPSCOPE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

namespace ddp {
namespace {

[[noreturn]] void damaged(const std::string& path, const char* what) {
  throw DataError(fmt::format("{}: damaged or truncated (gzip: {})", path, what));
}

bool gzip_magic(const unsigned char* bytes, std::size_t count) {
  return count >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

}  // namespace

#if DDPSCOPE_ISAL

struct GzipInflater::State {
  inflate_state s{};
  bool member_ended = false;  // the last member's trailer read
  bool done = false;          // ended, and what followed is no further member
  State() { reset(); }
  void reset() {
    isal_inflate_init(&s);
    s.crc_flag = ISAL_GZIP;
    member_ended = false;
  }
};

namespace {

const char* isal_error(int code) {
  switch (code) {
    case ISAL_INVALID_BLOCK:
      return "invalid block type";
    case ISAL_INVALID_SYMBOL:
      return "invalid code";
    case ISAL_INVALID_LOOKBACK:
      return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER:
      return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD:
      return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM:
      return "incorrect data check";
    default:
      return "unreadable data";
  }
}

}  // namespace

GzipInflater::GzipInflater() : state_(std::make_unique<State>()) {}
GzipInflater::~GzipInflater() = default;

void GzipInflater::give(const unsigned char* bytes, std::size_t count) {
  state_->s.next_in = const_cast<unsigned char*>(bytes);  // ISA-L's API takes them mutable, reads only
  state_->s.avail_in = static_cast<uint32_t>(std::min<std::size_t>(count, UINT32_MAX));
}

bool GzipInflater::needs_input() const { return state_->s.avail_in == 0; }

std::size_t GzipInflater::unconsumed() const { return state_->s.avail_in; }

std::size_t GzipInflater::inflate(char* into, std::size_t count, const std::string& path) {
  State& st = *state_;
  std::size_t done = 0;
  while (done < count && !st.done) {
    if (st.member_ended) {
      if (st.s.avail_in == 0) break;  // another member may follow in the next bytes
      if (st.s.avail_in >= 2 && !gzip_magic(st.s.next_in, st.s.avail_in)) {
        st.done = true;
        break;
      }
      if (st.s.avail_in < 2) break;  // too little to tell: wait for more
      const unsigned char* next = st.s.next_in;
      const uint32_t left = st.s.avail_in;
      st.reset();
      give(next, left);
    }
    st.s.next_out = reinterpret_cast<uint8_t*>(into + done);
    st.s.avail_out = static_cast<uint32_t>(std::min<std::size_t>(count - done, UINT32_MAX));
    const uint32_t before = st.s.avail_out;
    const int code = isal_inflate(&st.s);
    if (code < 0) damaged(path, isal_error(code));
    done += before - st.s.avail_out;
    if (st.s.block_state == ISAL_BLOCK_FINISH) {
      st.member_ended = true;
    } else if (before == st.s.avail_out && st.s.avail_in == 0) {
      break;  // wants more input
    }
  }
  return done;
}

bool GzipInflater::ignores_the_rest() const { return state_->done; }

void GzipInflater::check_complete(const std::string& path) const {
  if (!state_->done && !state_->member_ended) damaged(path, "unexpected end of file");
}

#else  // zlib

struct GzipInflater::State {
  z_stream z{};
  bool member_ended = false;
  bool done = false;
  State() {
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
  }
  ~State() { inflateEnd(&z); }
};

GzipInflater::GzipInflater() : state_(std::make_unique<State>()) {}
GzipInflater::~GzipInflater() = default;

void GzipInflater::give(const unsigned char* bytes, std::size_t count) {
  state_->z.next_in = const_cast<unsigned char*>(bytes);  // zlib's API takes them mutable, reads only
  state_->z.avail_in = static_cast<uInt>(std::min<std::size_t>(count, UINT_MAX));
}

bool GzipInflater::needs_input() const { return state_->z.avail_in == 0; }

std::size_t GzipInflater::unconsumed() const { return state_->z.avail_in; }

std::size_t GzipInflater::inflate(char* into, std::size_t count, const std::string& path) {
  State& st = *state_;
  std::size_t done = 0;
  while (done < count && !st.done) {
    if (st.member_ended) {
      if (st.z.avail_in < 2) break;
      if (!gzip_magic(st.z.next_in, st.z.avail_in)) {
        st.done = true;
        break;
      }
      inflateReset(&st.z);
      st.member_ended = false;
    }
    st.z.next_out = reinterpret_cast<Bytef*>(into + done);
    st.z.avail_out = static_cast<uInt>(std::min<std::size_t>(count - done, UINT_MAX));
    const uInt before = st.z.avail_out;
    const int code = ::inflate(&st.z, Z_NO_FLUSH);
    done += before - st.z.avail_out;
    if (code == Z_STREAM_END) {
      st.member_ended = true;
    } else if (code == Z_BUF_ERROR || (code == Z_OK && before == st.z.avail_out && st.z.avail_in == 0)) {
      break;  // wants more input
    } else if (code != Z_OK) {
      damaged(path, st.z.msg != nullptr ? st.z.msg : "unreadable data");
    }
  }
  return done;
}

bool GzipInflater::ignores_the_rest() const { return state_->done; }

void GzipInflater::check_complete(const std::string& path) const {
  if (!state_->done && !state_->member_ended) damaged(path, "unexpected end of file");
}

#endif

}  // namespace ddp
