// Single-thread SGEMM on the seed's training shapes for OpenBLAS, BLIS and oneDNN: the
// measurement behind gemm_backend_for() (docs/performance.md, "GEMM: choosing the BLAS").
//
//   build/release/bench/gemm_bench            # defaults below; prints a markdown summary last
//   build/release/bench/gemm_bench --benchmark_filter=onednn --benchmark_repetitions=3
//
// Shapes, row-major, for batch B and a layer in->out with W (out,in):
//   fwd  Y[B,out] = X[B,in] * W^T   M=B,   N=out, K=in
//   dX   dX[B,in] = dY[B,out] * W   M=B,   N=in,  K=out
//   dW   dW[out,in] += dY^T * X     M=out, N=in,  K=B
//
// BLIS is loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): it exports cblas_sgemm too, and
// linking it would let it and OpenBLAS resolve each other's symbols.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "ddpscope/buffer.h"
#include "tensor/gemm.h"

namespace ddp {
namespace {

// The CBLAS ABI as BLIS 0.9 (Debian, 32-bit integers) exports it.
using CblasSgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc);
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;
constexpr int kCblasTrans = 112;

CblasSgemm blis_sgemm = nullptr;

std::string onednn_isa_name() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

void load_blis() {
  void* handle = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) {
    std::fprintf(stderr, "gemm_bench: BLIS not benchmarked: %s\n", dlerror());
    return;
  }
  blis_sgemm = reinterpret_cast<CblasSgemm>(dlsym(handle, "cblas_sgemm"));
  // Which kernel set each library picked for this CPU explains most of the differences.
  using ArchQuery = int (*)();
  using ArchString = const char* (*)(int);
  auto arch_query = reinterpret_cast<ArchQuery>(dlsym(handle, "bli_arch_query_id"));
  auto arch_string = reinterpret_cast<ArchString>(dlsym(handle, "bli_arch_string"));
  if (arch_query != nullptr && arch_string != nullptr) {
    benchmark::AddCustomContext("blis_arch", arch_string(arch_query()));
  }
  // BLIS is single-threaded unless BLIS_NUM_THREADS says otherwise; make sure of it.
  using SetThreads = void (*)(int64_t);
  if (auto set_threads = reinterpret_cast<SetThreads>(dlsym(handle, "bli_thread_set_num_threads"))) {
    set_threads(1);
  }
  if (blis_sgemm == nullptr) std::fprintf(stderr, "gemm_bench: libblis.so.4 has no cblas_sgemm\n");
}

enum class Library { kOpenBlas, kBlis, kOneDnn };
constexpr Library kLibraries[] = {Library::kOpenBlas, Library::kBlis, Library::kOneDnn};
constexpr const char* kLibraryNames[] = {"openblas", "blis", "onednn"};

struct Layer {
  const char* name;
  int64_t in;
  int64_t out;
  int copies;  // how many of the seed's 4 layers have this shape
  bool first;  // the first layer needs no dX
};
constexpr Layer kLayers[] = {
    {"10->256", 10, 256, 1, true}, {"256->256", 256, 256, 2, false}, {"256->1", 256, 1, 1, false}};
constexpr int64_t kBatches[] = {16, 85, 256, 768};

struct Shape {
  int64_t batch;
  const Layer* layer;
  const char* op;
  Trans trans_a, trans_b;
  int64_t m, n, k, lda, ldb, ldc;
  float beta;
  int step_count;  // times this GEMM runs in one training micro-batch
  double flop() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

std::vector<Shape> seed_shapes() {
  std::vector<Shape> shapes;
  for (int64_t b : kBatches) {
    for (const Layer& l : kLayers) {
      shapes.push_back({b, &l, "fwd", Trans::kNo, Trans::kYes, b, l.out, l.in, l.in, l.in, l.out, 0.0f, l.copies});
      shapes.push_back(
          {b, &l, "dX", Trans::kNo, Trans::kNo, b, l.in, l.out, l.out, l.in, l.in, 0.0f, l.first ? 0 : l.copies});
      // Backward accumulates into the zeroed gradient buffer, hence beta = 1.
      shapes.push_back({b, &l, "dW", Trans::kYes, Trans::kNo, l.out, l.in, b, l.out, l.in, l.in, 1.0f, l.copies});
    }
  }
  return shapes;
}

void run_gemm(Library library, const Shape& s, const float* a, const float* b, float* c) {
  switch (library) {
    case Library::kOpenBlas:
      gemm_with(GemmBackend::kOpenBlas, s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a, s.lda, b, s.ldb, s.beta, c,
                s.ldc);
      return;
    case Library::kOneDnn:
      gemm_with(GemmBackend::kOneDnn, s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a, s.lda, b, s.ldb, s.beta, c, s.ldc);
      return;
    case Library::kBlis:
      blis_sgemm(kCblasRowMajor, s.trans_a == Trans::kYes ? kCblasTrans : kCblasNoTrans,
                 s.trans_b == Trans::kYes ? kCblasTrans : kCblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
                 static_cast<int>(s.k), 1.0f, a, static_cast<int>(s.lda), b, static_cast<int>(s.ldb), s.beta, c,
                 static_cast<int>(s.ldc));
      return;
  }
}

Buffer random_buffer(int64_t size, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Buffer buffer(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = dist(rng);
  return buffer;
}

void bm_sgemm(benchmark::State& state, Library library, Shape s) {
  std::mt19937 rng(1);
  const int64_t a_rows = s.trans_a == Trans::kYes ? s.k : s.m;
  const int64_t b_rows = s.trans_b == Trans::kYes ? s.n : s.k;
  const Buffer a = random_buffer(a_rows * s.lda, rng);
  const Buffer b = random_buffer(b_rows * s.ldb, rng);
  Buffer c = random_buffer(s.m * s.ldc, rng);
  for (auto _ : state) {
    run_gemm(library, s, a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  // In GFLOP so that the console shows "98.6/s" for 98.6 GFLOP/s.
  state.counters["GFLOP/s"] = benchmark::Counter(s.flop() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string benchmark_name(Library library, const Shape& s) {
  return std::string("sgemm/") + kLibraryNames[static_cast<int>(library)] + "/B:" + std::to_string(s.batch) + "/" +
         s.layer->name + "/" + s.op + "/M:" + std::to_string(s.m) + "/N:" + std::to_string(s.n) +
         "/K:" + std::to_string(s.k);
}

// The console output, plus a markdown summary at the end: per-shape GFLOP/s (median over
// repetitions) and the GEMM time of one training micro-batch per library, for the rule in
// gemm_backend_for(), and for the best library of each shape.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  // Colour only on a terminal: a custom display reporter does not see --benchmark_color.
  explicit SummaryReporter(std::vector<Shape> shapes)
      : ConsoleReporter(isatty(STDOUT_FILENO) != 0 ? OO_ColorTabular : OO_Tabular), shapes_(std::move(shapes)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> shown;
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const auto counter = run.counters.find("GFLOP/s");
      if (counter == run.counters.end()) continue;
      Measured& m = measured_[run.run_name.function_name];
      if (run.run_type == Run::RT_Iteration) {
        m.repetitions.push_back(counter->second.value);
        shown.push_back(run);
      } else if (run.aggregate_name == "median") {
        m.median = counter->second.value;
        shown.push_back(run);
      } else if (run.aggregate_name == "cv") {
        m.cv = counter->second.value;  // a fraction
      }
    }
    if (!shown.empty()) ConsoleReporter::ReportRuns(shown);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    print("\n| B | layer | op | M | N | K | openblas | blis | onednn | best | rule |\n");
    print("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Shape& s : shapes_) {
      if (best_library(s) < 0) continue;  // filtered out
      print("| %lld | %s | %s | %lld | %lld | %lld |", static_cast<long long>(s.batch), s.layer->name, s.op,
            static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k));
      for (Library library : kLibraries) print(" %s |", format_rate(rate(library, s)).c_str());
      const int best = best_library(s);
      print(" %s | %s |\n", best < 0 ? "-" : kLibraryNames[best], kLibraryNames[static_cast<int>(rule_library(s))]);
    }

    print(
        "\nGEMM time of one training micro-batch (fwd of 4 layers, dW of 4, dX of layers 2-4), "
        "us (GFLOP/s):\n\n| B | GEMM FLOP | openblas | blis | onednn | rule | best per shape |\n");
    print("|---|---|---|---|---|---|---|\n");
    for (int64_t batch : kBatches) {
      double flop = 0, seconds[5] = {0, 0, 0, 0, 0};
      for (const Shape& s : shapes_) {
        if (s.batch != batch || s.step_count == 0) continue;
        flop += s.step_count * s.flop();
        for (Library library : kLibraries) seconds[static_cast<int>(library)] += s.step_count * time_of(library, s);
        seconds[3] += s.step_count * time_of(rule_library(s), s);
        const int best = best_library(s);
        seconds[4] += s.step_count * (best < 0 ? NAN : time_of(kLibraries[best], s));
      }
      if (std::isnan(seconds[4])) continue;  // some shape of this batch was filtered out
      print("| %lld | %.2f M |", static_cast<long long>(batch), flop * 1e-6);
      for (double t : seconds) print(" %.1f (%.1f) |", t * 1e6, flop / t * 1e-9);
      print("\n");
    }

    double worst_cv = 0;
    std::string worst;
    for (const auto& [name, m] : measured_) {
      if (m.cv > worst_cv) {
        worst_cv = m.cv;
        worst = name;
      }
    }
    if (!worst.empty())
      print("\nlargest coefficient of variation of GFLOP/s over repetitions: %.1f %% (%s)\n", worst_cv * 100,
            worst.c_str());
  }

 private:
  // To the reporter's stream, which std::printf would overtake when stdout is a pipe.
  [[gnu::format(printf, 2, 3)]] void print(const char* format, ...) {
    char text[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    GetOutputStream() << text;
  }

  struct Measured {
    std::vector<double> repetitions;
    double median = NAN;
    double cv = 0;
  };

  static Library rule_library(const Shape& s) {
    return gemm_backend_for(s.m, s.n, s.k) == GemmBackend::kOneDnn ? Library::kOneDnn : Library::kOpenBlas;
  }

  // GFLOP/s: the median aggregate when there were repetitions, else the median of the runs.
  double rate(Library library, const Shape& s) const {
    const auto it = measured_.find(benchmark_name(library, s));
    if (it == measured_.end()) return NAN;
    if (!std::isnan(it->second.median)) return it->second.median;
    std::vector<double> v = it->second.repetitions;
    if (v.empty()) return NAN;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }

  double time_of(Library library, const Shape& s) const { return s.flop() * 1e-9 / rate(library, s); }

  int best_library(const Shape& s) const {
    int best = -1;
    for (Library library : kLibraries) {
      const double r = rate(library, s);
      if (!std::isnan(r) && (best < 0 || r > rate(kLibraries[best], s))) best = static_cast<int>(library);
    }
    return best;
  }

  static std::string format_rate(double r) {
    if (std::isnan(r)) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", r);
    return text;
  }

  std::vector<Shape> shapes_;
  std::map<std::string, Measured> measured_;
};

}  // namespace
}  // namespace ddp

int main(int argc, char** argv) {
  // Defaults that keep a full run near two minutes on a noisy shared machine: short runs,
  // repeated in random order so that background load hits every library alike. Flags given
  // on the command line come later and win.
  std::vector<char*> args(argv, argv + argc);
  char min_time[] = "--benchmark_min_time=0.05";
  char repetitions[] = "--benchmark_repetitions=5";
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {min_time, repetitions, interleave, aggregates});
  int arg_count = static_cast<int>(args.size());
  benchmark::Initialize(&arg_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(arg_count, args.data())) return 1;

  ddp::set_gemm_threads(1);
  ddp::load_blis();
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("onednn_isa", ddp::onednn_isa_name());
  const std::vector<ddp::Shape> shapes = ddp::seed_shapes();
  for (const ddp::Shape& s : shapes) {
    for (ddp::Library library : ddp::kLibraries) {
      if (library == ddp::Library::kBlis && ddp::blis_sgemm == nullptr) continue;
      // Process CPU time: preemption by other work on the machine is not counted, and any
      // helper thread a library starts despite the one-thread setting would be.
      benchmark::RegisterBenchmark(ddp::benchmark_name(library, s).c_str(), ddp::bm_sgemm, library, s)
          ->MeasureProcessCPUTime();
    }
  }
  ddp::SummaryReporter reporter(shapes);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
