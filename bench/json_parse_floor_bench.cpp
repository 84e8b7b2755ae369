// The floor under `ddpscope analyze`'s read: RapidJSON's SAX parse of a whole file with a
// handler that keeps nothing, the file already in memory. bench/analyze_trace.sh runs it beside
// analyze and Python's json.load: what no handler, event store or stream could go below.
//   json_parse_floor_bench FILE   -> one JSON line: megabytes, and seconds per way of parsing
#define RAPIDJSON_SSE42  // the SIMD whitespace and string scans, for in-memory streams only
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Discard : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Discard> {};

template <typename Parse>
double seconds(Parse parse) {
  const auto start = std::chrono::steady_clock::now();
  if (!parse()) {
    std::fprintf(stderr, "json_parse_floor_bench: the file is not valid JSON\n");
    std::exit(3);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: json_parse_floor_bench FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "json_parse_floor_bench: cannot read %s\n", argv[1]);
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  // As analyze parses (iterative, a stream with an end), and the fastest RapidJSON has (in
  // place, on a copy: it writes into the text).
  const double iterative = seconds([&] {
    Discard sink;
    rapidjson::Reader reader;
    rapidjson::MemoryStream stream(text.data(), text.size());
    return !reader.Parse<rapidjson::kParseIterativeFlag>(stream, sink).IsError();
  });
  std::vector<char> copy(text.begin(), text.end());
  copy.push_back('\0');
  const double in_place = seconds([&] {
    Discard sink;
    rapidjson::Reader reader;
    rapidjson::InsituStringStream stream(copy.data());
    return !reader.Parse<rapidjson::kParseInsituFlag>(stream, sink).IsError();
  });
  std::printf("{\"megabytes\": %.1f, \"iterative_seconds\": %.3f, \"in_place_seconds\": %.3f}\n",
              static_cast<double>(text.size()) / 1e6, iterative, in_place);
  return 0;
}
