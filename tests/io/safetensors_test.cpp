#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::read_text;

const fs::path kPythonScript = fs::path(__FILE__).parent_path() / "read_safetensors.py";

fs::path test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return fresh_dir(std::string("io_safetensors_") + info->name() + "_" + std::to_string(::getpid()));
}

std::vector<std::byte> to_bytes(std::string_view text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

// A file made by hand: the header text as given (unpadded), then `data_bytes` bytes of data.
std::vector<std::byte> file_with_header(std::string_view header, std::size_t data_bytes, uint64_t length_field = 0) {
  std::string out(8, '\0');
  const uint64_t n = length_field != 0 ? length_field : header.size();
  std::memcpy(out.data(), &n, 8);
  out += header;
  out.append(data_bytes, '\x11');
  return to_bytes(out);
}

// The reason for refusing `bytes`, which must be a DataError naming the file.
std::string refusal(std::span<const std::byte> bytes) {
  try {
    parse_safetensors(bytes, "bad.safetensors");
  } catch (const DataError& e) {
    const std::string message = e.what();
    const std::string prefix = "bad.safetensors: not a valid safetensors file: ";
    EXPECT_EQ(message.substr(0, prefix.size()), prefix);
    return message.substr(std::min(prefix.size(), message.size()));
  }
  ADD_FAILURE() << "accepted a malformed file";
  return {};
}

std::string refusal(std::string_view header, std::size_t data_bytes) {
  return refusal(file_with_header(header, data_bytes));
}

struct Sample {
  std::vector<float> weight{0.5f, -1.25f, 3.0f, 1e-30f, -0.0f, 7.0f};
  std::vector<double> moments{0.1, -2.5e100, 3.0};
  std::vector<int64_t> step{-9007199254740993};
  std::vector<int32_t> counts{1, -2};
  std::vector<TensorView> views() const {
    return {{"layers.0.weight", {2, 3}, weight},
            {"adam.exp_avg", {3}, moments},
            {"step", {}, step},
            {"counts", {2, 1}, counts}};
  }
  std::map<std::string, std::string> metadata{{"epoch", "3"}, {"config", "{\"lr\": 0.01}"}, {"note", "ünïcode ✓"}};
};

TEST(Safetensors, RoundTripsFloatsDoublesIntegersAndMetadata) {
  const fs::path path = test_dir() / "round.safetensors";
  const Sample s;
  write_safetensors(path, s.views(), s.metadata);
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.metadata, s.metadata);
  ASSERT_EQ(file.tensors.size(), 4u);
  // File order is the reference's: 8-byte dtypes first (F64 before I64), then by name.
  EXPECT_EQ(file.tensors[0].name, "step");
  EXPECT_EQ(file.tensors[1].name, "adam.exp_avg");
  EXPECT_EQ(file.tensors[2].name, "layers.0.weight");
  EXPECT_EQ(file.tensors[3].name, "counts");

  const Tensor* weight = file.find("layers.0.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->dtype, Dtype::kF32);
  EXPECT_EQ(weight->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(weight->numel(), 6);
  EXPECT_EQ(std::memcmp(weight->values<float>().data(), s.weight.data(), 24), 0);  // -0.0 too
  EXPECT_EQ(file.find("adam.exp_avg")->values<double>(), s.moments);
  EXPECT_EQ(file.find("step")->values<int64_t>(), s.step);
  EXPECT_TRUE(file.find("step")->shape.empty());
  EXPECT_EQ(file.find("counts")->values<int32_t>(), s.counts);
  EXPECT_EQ(file.find("missing"), nullptr);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(Safetensors, WritingReplacesAnOlderFile) {
  const fs::path path = test_dir() / "twice.safetensors";
  const std::vector<float> first{1, 2}, second{3};
  write_safetensors(path, {{"a", {2}, first}}, {});
  write_safetensors(path, {{"b", {1}, second}}, {{"k", "v"}});
  const SafetensorsFile file = read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].name, "b");
  EXPECT_EQ(file.metadata.at("k"), "v");
}

// The reference implementation's own test vectors (safetensors/src/tensor.rs).
TEST(Safetensors, GoldenBytesMatchTheReferenceImplementation) {
  const std::vector<float> values{0, 1, 2, 3, 4, 5};
  const std::string one = serialize_safetensors({{"attn.0", {1, 2, 3}, values}}, {});
  const std::vector<uint8_t> expected{
      64,  0,  0,   0,  0,   0,  0,   0,   123, 34,  97,  116, 116, 110, 46,  48, 34, 58, 123, 34, 100, 116, 121, 112,
      101, 34, 58,  34, 70,  51, 50,  34,  44,  34,  115, 104, 97,  112, 101, 34, 58, 91, 49,  44, 50,  44,  51,  93,
      44,  34, 100, 97, 116, 97, 95,  111, 102, 102, 115, 101, 116, 115, 34,  58, 91, 48, 44,  50, 52,  93,  125, 125,
      0,   0,  0,   0,  0,   0,  128, 63,  0,   0,   0,   64,  0,   0,   64,  64, 0,  0,  128, 64, 0,   0,   160, 64};
  EXPECT_EQ(std::vector<uint8_t>(one.begin(), one.end()), expected);

  const std::string padded = serialize_safetensors({{"attn0", {1, 1, 2, 3}, values}}, {});
  EXPECT_EQ(padded.substr(0, 8), std::string("\x48\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(padded.substr(8, 72), R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       )");

  EXPECT_EQ(serialize_safetensors({}, {}), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  EXPECT_EQ(serialize_safetensors({}, {{"framework", "pt"}}),
            std::string("\x28\0\0\0\0\0\0\0", 8) + R"({"__metadata__":{"framework":"pt"}}     )");
}

TEST(Safetensors, GoldenLayoutOfSeveralDtypes) {
  const std::vector<float> f{1.5f};
  const std::vector<double> d{-2.0};
  const std::vector<int32_t> i{7, 8};
  const std::string out = serialize_safetensors({{"b", {1}, f}, {"a", {2}, i}, {"c", {1, 1}, d}}, {{"epoch", "2"}});
  const std::string header =
      R"({"__metadata__":{"epoch":"2"},"c":{"dtype":"F64","shape":[1,1],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},"a":{"dtype":"I32","shape":[2],"data_offsets":[12,20]}})";
  const std::string padding((8 - header.size() % 8) % 8, ' ');
  const uint64_t n = header.size() + padding.size();
  ASSERT_EQ(out.size(), 8 + n + 20);
  EXPECT_EQ(std::memcmp(out.data(), &n, 8), 0);
  EXPECT_EQ(out.substr(8, n), header + padding);
  EXPECT_EQ(std::memcmp(out.data() + 8 + n, d.data(), 8), 0);
  EXPECT_EQ(std::memcmp(out.data() + 8 + n + 8, f.data(), 4), 0);
  EXPECT_EQ(std::memcmp(out.data() + 8 + n + 12, i.data(), 8), 0);
}

TEST(Safetensors, RefusesMalformedFilesWithTheReason) {
  const auto entry = [](const std::string& body) { return R"({"t":{)" + body + "}}"; };
  const std::string ok_body = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  ASSERT_EQ(parse_safetensors(file_with_header(entry(ok_body), 8), "x").tensors.size(), 1u);

  EXPECT_EQ(refusal(to_bytes("1234567")), "the file is 7 bytes long, shorter than the 8-byte header length");
  EXPECT_EQ(refusal(to_bytes("")), "the file is 0 bytes long, shorter than the 8-byte header length");
  EXPECT_EQ(refusal(file_with_header("{}", 0, 3)), "the header length 3 reaches beyond the end of the file (10 bytes)");
  EXPECT_EQ(refusal(file_with_header("{}", 0, uint64_t{1} << 63)),
            "the header length 9223372036854775808 reaches beyond the end of the file (10 bytes)");
  EXPECT_EQ(refusal(file_with_header("{}", 0, ~uint64_t{0})),
            "the header length 18446744073709551615 reaches beyond the end of the file (10 bytes)");

  EXPECT_EQ(refusal("", 0),
            "the header is not valid JSON: parse error at line 1, column 1: syntax error while "
            "parsing value - unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(refusal(R"({"t":)", 0).substr(0, 29), "the header is not valid JSON:");
  EXPECT_EQ(refusal("{\"t\xff\":1}", 0).substr(0, 29), "the header is not valid JSON:");  // not UTF-8
  EXPECT_EQ(refusal("[1,2]", 0), "the header is not a JSON object");
  EXPECT_EQ(refusal("\"text\"", 0), "the header is not a JSON object");
  EXPECT_EQ(refusal(entry(ok_body) + "x", 8).substr(0, 29), "the header is not valid JSON:");

  EXPECT_EQ(refusal(R"({"t":[1]})", 0), "tensor 't': expected an object with dtype, shape and data_offsets");
  EXPECT_EQ(refusal(entry(R"("shape":[2],"data_offsets":[0,8])"), 8), "tensor 't': no 'dtype'");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","data_offsets":[0,8])"), 8), "tensor 't': no 'shape'");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2])"), 8), "tensor 't': no 'data_offsets'");
  EXPECT_EQ(refusal(entry(ok_body + R"(,"offsets":[0,8])"), 8), "tensor 't': unknown key 'offsets'");

  const std::string known = "BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64";
  EXPECT_EQ(refusal(entry(R"("dtype":"F33","shape":[2],"data_offsets":[0,8])"), 8),
            "tensor 't': unknown dtype \"F33\" (expected one of " + known + ")");
  EXPECT_EQ(refusal(entry(R"("dtype":4,"shape":[2],"data_offsets":[0,8])"), 8),
            "tensor 't': unknown dtype 4 (expected one of " + known + ")");

  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":2,"data_offsets":[0,8])"), 8),
            "tensor 't': shape is not a list of non-negative integers");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])"), 8),
            "tensor 't': shape [-2] is not a list of non-negative integers");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2.0],"data_offsets":[0,8])"), 8),
            "tensor 't': shape [2.0] is not a list of non-negative integers");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":["2"],"data_offsets":[0,8])"), 8),
            "tensor 't': shape [\"2\"] is not a list of non-negative integers");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[9223372036854775808,0],"data_offsets":[0,0])"), 0),
            "tensor 't': shape [9223372036854775808,0] is not a list of non-negative integers");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8])"), 8),
            "tensor 't': shape [1e+20] is not a list of non-negative integers");

  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8])"), 8),
            "tensor 't': data_offsets [8] is not two non-negative integers [begin, end]");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,8,8])"), 8),
            "tensor 't': data_offsets [0,8,8] is not two non-negative integers [begin, end]");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":[-1,7])"), 8),
            "tensor 't': data_offsets [-1,7] is not two non-negative integers [begin, end]");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":"0,8")"), 8),
            "tensor 't': data_offsets \"0,8\" is not two non-negative integers [begin, end]");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8,0])"), 8),
            "tensor 't': data_offsets [8, 0] begin after they end");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":[4,12])"), 8),
            "tensor 't': data_offsets [4, 12] reach beyond the data section of 8 bytes");
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615])"), 8),
            "tensor 't': data_offsets [0, 18446744073709551615] reach beyond the data section of 8 bytes");

  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[3],"data_offsets":[0,8])"), 8),
            "tensor 't': shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] hold 8");
  EXPECT_EQ(refusal(entry(R"("dtype":"F64","shape":[],"data_offsets":[0,4])"), 4),
            "tensor 't': shape [] of F64 needs 8 bytes, but data_offsets [0, 4] hold 4");
  // 2^62 * 4 bytes overflows 64 bits; 2^40 * 2^40 overflows before the 0 is reached.
  EXPECT_EQ(refusal(entry(R"("dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0])"), 0),
            "tensor 't': shape [4611686018427387904] of F32 has too many elements");
  EXPECT_EQ(refusal(entry(R"("dtype":"U8","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0])"), 0),
            "tensor 't': shape [1099511627776, 1099511627776, 0] of U8 has too many elements");

  const std::string two = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)";
  EXPECT_EQ(refusal(two + R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
            "tensor 'b' (bytes 4..8) overlaps tensor 'a' (bytes 0..8)");
  EXPECT_EQ(refusal(two + R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})", 16),
            "bytes 8..12 of the data section belong to no tensor (a gap before 'b')");
  EXPECT_EQ(refusal(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
            "bytes 0..4 of the data section belong to no tensor (a gap before 'b')");
  EXPECT_EQ(refusal(entry(ok_body), 11),
            "3 bytes after the last tensor's data (the data section has 11, the tensors cover 8)");
  EXPECT_EQ(refusal("{}", 1), "1 bytes after the last tensor's data (the data section has 1, the tensors cover 0)");
  EXPECT_EQ(refusal(two + R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8), "the header names 'a' twice");

  EXPECT_EQ(refusal(R"({"__metadata__":{"epoch":3}})", 0), "__metadata__ value of 'epoch' is not a string");
  EXPECT_EQ(refusal(R"({"__metadata__":{"a":"1","b":null}})", 0), "__metadata__ value of 'b' is not a string");
  EXPECT_EQ(refusal(R"({"__metadata__":["epoch"]})", 0), "__metadata__ is not a JSON object of strings");

  // A hostile header does not make a hostile message.
  const std::string long_name(1000, 'n');
  EXPECT_EQ(refusal(R"({")" + long_name + R"(":1})", 0),
            "tensor '" + long_name.substr(0, 80) + "...': expected an object with dtype, shape and data_offsets");
}

TEST(Safetensors, AcceptsWhatTheReferenceAccepts) {
  // Zero-sized tensors, scalars, any key order, whitespace, tensors listed out of data order.
  const std::string header =
      R"( { "z" : {"data_offsets":[0,8], "shape":[], "dtype":"F64"}, "__metadata__":{},)"
      R"( "e":{"shape":[0,5],"dtype":"F32","data_offsets":[8,8]}, "a":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]} }   )";
  const SafetensorsFile file = parse_safetensors(file_with_header(header, 10), "ok");
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_EQ(file.tensors[0].name, "z");
  EXPECT_EQ(file.tensors[1].name, "e");
  EXPECT_EQ(file.tensors[1].numel(), 0);
  EXPECT_EQ(file.tensors[2].dtype, Dtype::kBF16);
  EXPECT_TRUE(file.metadata.empty());
}

TEST(Safetensors, RefusesAHeaderAboveTheLimitBeforeParsingIt) {
  const uint64_t n = 100'000'001;
  std::vector<std::byte> bytes(8 + n, std::byte{' '});
  std::memcpy(bytes.data(), &n, 8);
  EXPECT_EQ(refusal(bytes), "the header length 100000001 is above the limit of 100000000 bytes");
}

TEST(Safetensors, ReadingNamesTheFile) {
  const fs::path dir = test_dir();
  const fs::path bad = dir / "bad.safetensors";
  std::ofstream(bad) << "garbage";
  try {
    read_safetensors(bad);
    FAIL() << "accepted garbage";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), bad.string() +
                                         ": not a valid safetensors file: the file is 7 bytes long, "
                                         "shorter than the 8-byte header length");
    EXPECT_EQ(e.code(), ExitCode::kData);
  }
  EXPECT_THROW(
      {
        try {
          read_safetensors(dir / "missing.safetensors");
        } catch (const DataError& e) {
          EXPECT_EQ(std::string(e.what()),
                    (dir / "missing.safetensors").string() + ": cannot open: No such file or directory");
          throw;
        }
      },
      DataError);
  EXPECT_THROW(read_safetensors(dir), DataError);
}

TEST(Safetensors, EveryTruncationIsRefused) {
  const Sample s;
  const std::string whole = serialize_safetensors(s.views(), s.metadata);
  const std::vector<std::byte> bytes = to_bytes(whole);
  ASSERT_NO_THROW(parse_safetensors(bytes, "whole"));
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE("prefix of " + std::to_string(length) + " bytes");
    EXPECT_THROW(parse_safetensors(std::span(bytes).first(length), "cut"), DataError);
  }
  // And from a file on disk, at a few points.
  const fs::path path = test_dir() / "cut.safetensors";
  for (const std::size_t length : {std::size_t{0}, std::size_t{5}, std::size_t{8}, std::size_t{40}, bytes.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(whole.data(), static_cast<std::streamsize>(length));
    EXPECT_THROW(read_safetensors(path), DataError);
  }
}

TEST(Safetensors, FlippedHeaderBytesNeverCrash) {
  const Sample s;
  const std::vector<std::byte> good = to_bytes(serialize_safetensors(s.views(), s.metadata));
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, good.data(), 8);
  int refused = 0, accepted = 0;
  for (std::size_t i = 0; i < 8 + header_bytes; ++i) {
    for (const uint8_t mask : {0x01, 0x02, 0x10, 0x80, 0xFF}) {
      std::vector<std::byte> bytes = good;
      bytes[i] ^= std::byte{mask};
      try {
        const SafetensorsFile file = parse_safetensors(bytes, "flipped");
        // What is accepted is consistent: every tensor holds numel * size bytes, and the
        // tensors exactly cover the data section.
        std::size_t total = 0;
        for (const Tensor& t : file.tensors) {
          int64_t numel = 1;
          for (const int64_t d : t.shape) numel *= d;
          EXPECT_EQ(t.bytes.size(), static_cast<std::size_t>(numel) * dtype_size(t.dtype)) << "byte " << i;
          total += t.bytes.size();
        }
        EXPECT_EQ(total, good.size() - 8 - header_bytes) << "byte " << i;
        ++accepted;
      } catch (const DataError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // e.g. a flipped letter in a tensor name or metadata value
}

std::string run_python(const std::string& args, const fs::path& dir) {
  const fs::path out = dir / "python_out.json", err = dir / "python_err.txt";
  const std::string command =
      "/usr/bin/python3 '" + kPythonScript.string() + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command << "\n"
                       << read_text(err)
                       << "(the independent reader needs Debian's numpy: apt-get install python3-numpy)";
  return read_text(out);
}

TEST(Safetensors, AnIndependentPythonReaderReadsOurFiles) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "ours.safetensors";
  const Sample s;
  write_safetensors(path, s.views(), s.metadata);
  const nlohmann::json got = nlohmann::json::parse(run_python("read '" + path.string() + "'", dir));

  EXPECT_EQ(got["metadata"].get<decltype(s.metadata)>(), s.metadata);
  const nlohmann::json& tensors = got["tensors"];
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors[0]["name"], "step");
  EXPECT_EQ(tensors[0]["dtype"], "I64");
  EXPECT_EQ(tensors[0]["shape"], nlohmann::json::array());
  EXPECT_EQ(tensors[0]["values"], nlohmann::json(s.step));
  EXPECT_EQ(tensors[1]["name"], "adam.exp_avg");
  EXPECT_EQ(tensors[1]["values"].get<std::vector<double>>(), s.moments);
  EXPECT_EQ(tensors[2]["name"], "layers.0.weight");
  EXPECT_EQ(tensors[2]["dtype"], "F32");
  EXPECT_EQ(tensors[2]["shape"], nlohmann::json({2, 3}));
  const std::vector<double> weight = tensors[2]["values"].get<std::vector<double>>();
  ASSERT_EQ(weight.size(), s.weight.size());
  for (std::size_t i = 0; i < weight.size(); ++i) {
    EXPECT_EQ(static_cast<float>(weight[i]), s.weight[i]);
    EXPECT_EQ(std::signbit(weight[i]), std::signbit(s.weight[i]));
  }
  EXPECT_EQ(tensors[3]["name"], "counts");
  EXPECT_EQ(tensors[3]["shape"], nlohmann::json({2, 1}));
  EXPECT_EQ(tensors[3]["values"], nlohmann::json(s.counts));
}

TEST(Safetensors, ReadsAFileWrittenByPythonAsPyTorchsSafetensorsDoes) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "python.safetensors";
  run_python("write '" + path.string() + "'", dir);
  const SafetensorsFile file = read_safetensors(path);

  // The sample of read_safetensors.py, value for value.
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "ünïcode ✓"}}));
  ASSERT_EQ(file.tensors.size(), 6u);
  const Tensor* weight = file.find("layers.0.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(weight->values<float>(), (std::vector<float>{-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(file.find("layers.0.bias")->values<float>(), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(file.find("adam.exp_avg")->values<double>(), (std::vector<double>{0.1, 1e-300, -3.0}));
  EXPECT_EQ(file.find("step")->values<int64_t>(), (std::vector<int64_t>{1234567890123}));
  EXPECT_TRUE(file.find("step")->shape.empty());
  EXPECT_EQ(file.find("counts")->dtype, Dtype::kI32);
  EXPECT_EQ(file.find("counts")->shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(file.find("counts")->values<int32_t>(), (std::vector<int32_t>{-1, 7}));
  EXPECT_EQ(file.find("empty")->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(file.find("empty")->numel(), 0);

  // Both writers lay the data out alike (by alignment, then by name): only the header's
  // key order differs, so re-serialising gives the same data section.
  std::vector<TensorView> views;
  for (const Tensor& t : file.tensors) views.emplace_back(t.name, t.dtype, t.shape, t.bytes);
  const std::string ours = serialize_safetensors(views, file.metadata);
  const std::string theirs = read_text(path);
  uint64_t n_ours = 0, n_theirs = 0;
  std::memcpy(&n_ours, ours.data(), 8);
  std::memcpy(&n_theirs, theirs.data(), 8);
  EXPECT_EQ(ours.substr(8 + n_ours), theirs.substr(8 + n_theirs));
}

}  // namespace
}  // namespace ddp
