#include "train/loop/validation_means.h"

#include <cstring>
#include <string>

#include "dist/gather.h"

namespace ddp {
namespace {

template <typename T>
void put(std::vector<std::byte>& out, const T& value) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <typename T>
T take(const std::vector<std::byte>& in, std::size_t& at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

// Each entry: name length (uint64), the name's bytes, weighted sum and weight (doubles).
std::vector<std::byte> pack(const std::vector<MetricSink::Entry>& entries) {
  std::vector<std::byte> out;
  for (const MetricSink::Entry& e : entries) {
    put<uint64_t>(out, e.name.size());
    const auto* name = reinterpret_cast<const std::byte*>(e.name.data());
    out.insert(out.end(), name, name + e.name.size());
    put(out, e.weighted_sum);
    put(out, e.weight);
  }
  return out;
}

void unpack_into(const std::vector<std::byte>& in, MetricSink& merged) {
  for (std::size_t at = 0; at < in.size();) {
    const auto length = take<uint64_t>(in, at);
    const std::string name(reinterpret_cast<const char*>(in.data() + at), length);
    at += length;
    const double weighted_sum = take<double>(in, at);
    merged.add_sums(name, weighted_sum, take<double>(in, at));
  }
}

}  // namespace

Metrics validation_means(Communicator& comm, const std::vector<MetricSink::Entry>& mine) {
  MetricSink merged;
  if (comm.size() == 1) {
    for (const MetricSink::Entry& e : mine) merged.add_sums(e.name, e.weighted_sum, e.weight);
  } else {
    for (const std::vector<std::byte>& part : gather_at_every_rank(comm, pack(mine))) unpack_into(part, merged);
  }
  Metrics means;
  for (const MetricSink::Entry& e : merged.entries()) {
    means.emplace_back(e.name, e.weight > 0 ? e.weighted_sum / e.weight : 0.0);
  }
  return means;
}

}  // namespace ddp
