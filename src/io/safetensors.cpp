#include "io/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/check.h"
#include "base/excerpt.h"
#include "io/read_file.h"
#include "log/file_io.h"

namespace ddp {
namespace {

using nlohmann::json;

// The reference refuses headers above 100 MB; so do we, before allocating anything.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};
constexpr std::array<DtypeInfo, 15> kDtypes{{
    {Dtype::kBool, "BOOL", 1},
    {Dtype::kU8, "U8", 1},
    {Dtype::kI8, "I8", 1},
    {Dtype::kF8E5M2, "F8_E5M2", 1},
    {Dtype::kF8E4M3, "F8_E4M3", 1},
    {Dtype::kI16, "I16", 2},
    {Dtype::kU16, "U16", 2},
    {Dtype::kF16, "F16", 2},
    {Dtype::kBF16, "BF16", 2},
    {Dtype::kI32, "I32", 4},
    {Dtype::kU32, "U32", 4},
    {Dtype::kF32, "F32", 4},
    {Dtype::kF64, "F64", 8},
    {Dtype::kI64, "I64", 8},
    {Dtype::kU64, "U64", 8},
}};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// product(shape) * element_size, or false when it overflows int64 (as the reference,
// the product is taken left to right, so [2^40, 2^40, 0] overflows before the 0).
bool byte_count(const std::vector<int64_t>& shape, std::size_t element_size, uint64_t& bytes) {
  uint64_t count = 1;
  for (const int64_t dim : shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count)) return false;
    if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  }
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(element_size), &bytes)) return false;
  return bytes <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Text from a file, cut short: a hostile header must not make a megabyte-long message.
std::string brief(std::string text) {
  constexpr std::size_t kMax = 80;
  if (text.size() > kMax) return printable(text.substr(0, kMax)) + "...";
  return printable(text);
}

// A parsed header entry, before its bytes are copied.
struct Entry {
  Tensor tensor;
  uint64_t begin = 0, end = 0;
};

class Parser {
 public:
  Parser(std::span<const std::byte> bytes, std::string_view name) : bytes_(bytes), name_(name) {}

  SafetensorsFile parse() {
    if (bytes_.size() < 8) {
      fail(fmt::format("the file is {} bytes long, shorter than the 8-byte header length", bytes_.size()));
    }
    uint64_t header_bytes = 0;
    std::memcpy(&header_bytes, bytes_.data(), 8);
    if (header_bytes > bytes_.size() - 8) {
      fail(fmt::format("the header length {} reaches beyond the end of the file ({} bytes)", header_bytes,
                       bytes_.size()));
    }
    if (header_bytes > kMaxHeaderBytes) {
      fail(fmt::format("the header length {} is above the limit of {} bytes", header_bytes, kMaxHeaderBytes));
    }
    const auto* text = reinterpret_cast<const char*>(bytes_.data()) + 8;
    const json header = parse_json(std::string_view(text, header_bytes));
    if (!header.is_object()) fail("the header is not a JSON object");

    const std::span<const std::byte> data = bytes_.subspan(8 + header_bytes);
    SafetensorsFile file;
    std::vector<Entry> entries;
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") {
        file.metadata = parse_metadata(value);
      } else {
        entries.push_back(parse_entry(key, value, data.size()));
      }
    }
    check_layout(entries, data.size());
    for (Entry& entry : entries) {
      const auto* begin = data.data() + entry.begin;
      entry.tensor.bytes.assign(begin, begin + (entry.end - entry.begin));
      file.tensors.push_back(std::move(entry.tensor));
    }
    return file;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const {
    throw DataError(fmt::format("{}: not a valid safetensors file: {}", name_, reason));
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& reason) const {
    fail(fmt::format("tensor '{}': {}", brief(tensor), reason));
  }

  json parse_json(std::string_view text) const {
    // The parser keeps the last of two equal keys; a header naming one tensor twice is
    // ambiguous, so the callback sees every key of the top-level object first.
    std::set<std::string> seen;
    std::string duplicate;
    const json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second &&
          duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
      return true;
    };
    json header;
    try {
      header = json::parse(text.begin(), text.end(), on_event);
    } catch (const json::exception& e) {
      // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
      const std::string_view what = e.what();
      const std::size_t bracket = what.find("] ");
      fail("the header is not valid JSON: " +
           std::string(bracket == std::string_view::npos ? what : what.substr(bracket + 2)));
    }
    if (!duplicate.empty()) fail(fmt::format("the header names '{}' twice", brief(duplicate)));
    return header;
  }

  std::map<std::string, std::string> parse_metadata(const json& value) const {
    if (!value.is_object()) fail("__metadata__ is not a JSON object of strings");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
      if (!item.is_string()) fail(fmt::format("__metadata__ value of '{}' is not a string", brief(key)));
      metadata.emplace(key, item.get<std::string>());
    }
    return metadata;
  }

  Entry parse_entry(const std::string& name, const json& value, uint64_t data_bytes) const {
    if (!value.is_object()) fail(name, "expected an object with dtype, shape and data_offsets");
    for (const auto& [key, item] : value.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        fail(name, fmt::format("unknown key '{}'", brief(key)));
    }
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(key)) fail(name, fmt::format("no '{}'", key));
    }
    Entry entry;
    entry.tensor.name = name;

    const json& dtype = value["dtype"];
    const DtypeInfo* info = dtype.is_string() ? find_dtype(dtype.get_ref<const std::string&>()) : nullptr;
    if (info == nullptr) {
      std::vector<std::string_view> known;
      for (const DtypeInfo& d : kDtypes) known.push_back(d.name);
      fail(name, fmt::format("unknown dtype {} (expected one of {})", brief(dtype.dump()), fmt::join(known, ", ")));
    }
    entry.tensor.dtype = info->dtype;

    const json& shape = value["shape"];
    if (!shape.is_array()) fail(name, "shape is not a list of non-negative integers");
    for (const json& dim : shape) {
      if (!dim.is_number_unsigned() ||
          dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(name, fmt::format("shape {} is not a list of non-negative integers", brief(shape.dump())));
      }
      entry.tensor.shape.push_back(dim.get<int64_t>());
    }

    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      fail(name, fmt::format("data_offsets {} is not two non-negative integers [begin, end]", brief(offsets.dump())));
    }
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    if (entry.begin > entry.end)
      fail(name, fmt::format("data_offsets [{}, {}] begin after they end", entry.begin, entry.end));
    if (entry.end > data_bytes) {
      fail(name, fmt::format("data_offsets [{}, {}] reach beyond the data section of {} bytes", entry.begin, entry.end,
                             data_bytes));
    }
    uint64_t expected = 0;
    if (!byte_count(entry.tensor.shape, info->size, expected)) {
      fail(name, fmt::format("shape {} of {} has too many elements", shape_text(entry.tensor.shape), info->name));
    }
    if (expected != entry.end - entry.begin) {
      fail(name, fmt::format("shape {} of {} needs {} bytes, but data_offsets [{}, {}] hold {}",
                             shape_text(entry.tensor.shape), info->name, expected, entry.begin, entry.end,
                             entry.end - entry.begin));
    }
    return entry;
  }

  // The tensors must tile the data section exactly, as the reference requires: bytes that
  // belong to two tensors or to none are a corrupt or hand-made file.
  void check_layout(std::vector<Entry>& entries, uint64_t data_bytes) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
    uint64_t covered = 0;
    const Entry* previous = nullptr;
    for (const Entry& entry : entries) {
      if (entry.begin < covered) {
        fail(fmt::format("tensor '{}' (bytes {}..{}) overlaps tensor '{}' (bytes {}..{})", brief(entry.tensor.name),
                         entry.begin, entry.end, brief(previous->tensor.name), previous->begin, previous->end));
      }
      if (entry.begin > covered) {
        fail(fmt::format("bytes {}..{} of the data section belong to no tensor (a gap before '{}')", covered,
                         entry.begin, brief(entry.tensor.name)));
      }
      covered = entry.end;
      previous = &entry;
    }
    if (covered != data_bytes) {
      fail(fmt::format("{} bytes after the last tensor's data (the data section has {}, the tensors cover {})",
                       data_bytes - covered, data_bytes, covered));
    }
  }

  std::span<const std::byte> bytes_;
  std::string_view name_;
};

}  // namespace

std::string_view dtype_name(Dtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)].name; }
std::size_t dtype_size(Dtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)].size; }

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const Tensor& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

std::string serialize_safetensors(const std::vector<TensorView>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorView*> order;
  for (const TensorView& tensor : tensors) order.push_back(&tensor);
  std::sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
    return a->dtype != b->dtype ? a->dtype > b->dtype : a->name < b->name;
  });

  // ordered_json keeps insertion order: "__metadata__" first, then the tensors in data
  // order, each as {dtype, shape, data_offsets}, which is the reference's layout.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const TensorView& tensor = *order[i];
    DDP_CHECK_NE(tensor.name, "__metadata__", "a tensor may not be named __metadata__");
    DDP_CHECK(!header.contains(tensor.name), "two tensors with one name");
    DDP_CHECK(std::all_of(tensor.shape.begin(), tensor.shape.end(), [](int64_t d) { return d >= 0; }),
              "negative dimension");
    uint64_t bytes = 0;
    DDP_CHECK(byte_count(tensor.shape, dtype_size(tensor.dtype), bytes), "tensor shape overflows 64 bits");
    DDP_CHECK_EQ(bytes, tensor.bytes.size(), "tensor bytes disagree with its shape and dtype");
    header[tensor.name] = {{"dtype", std::string(dtype_name(tensor.dtype))},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw Error(ExitCode::kOther, fmt::format("cannot write a safetensors header: tensor names and metadata must "
                                              "be valid UTF-8 ({})",
                                              e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the reference pads so the data is 8-byte aligned

  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t header_bytes = text.size();
  out.append(reinterpret_cast<const char*>(&header_bytes), 8);
  out += text;
  for (const TensorView* tensor : order)
    out.append(reinterpret_cast<const char*>(tensor->bytes.data()), tensor->bytes.size());
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, serialize_safetensors(tensors, metadata));
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view name_for_messages) {
  return Parser(bytes, name_for_messages).parse();
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  const std::string bytes = read_input_file(path.string(), "a safetensors file");
  return parse_safetensors(std::as_bytes(std::span(bytes)), path.string());
}

}  // namespace ddp
