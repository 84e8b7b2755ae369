// Recording spans costs no allocation in the training loop: counted with a replaced
// global operator new.
#include "observe/span_buffer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "observe/phase_clock.h"

namespace {
std::atomic<long> allocations{0};
}

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace ddp {
namespace {

TEST(SpanBuffer, PhaseSwitchesRecordSpansWithoutAllocating) {
  SpanBuffer spans(50000);
  PhaseClock clock;
  clock.start();
  clock.record_spans(&spans);
  const long before = allocations.load();
  for (int i = 0; i < 10000; ++i) {
    clock.enter(Phase::kData);
    clock.enter(Phase::kForward);
    clock.enter(Phase::kBackward);
    clock.enter(Phase::kOptimizer);
  }
  EXPECT_EQ(allocations.load() - before, 0);
  EXPECT_EQ(spans.size(), 40000u);
  EXPECT_EQ(spans.begin()[0].name, static_cast<uint16_t>(Phase::kStartup));
  EXPECT_EQ(spans.begin()[1].name, static_cast<uint16_t>(Phase::kData));
  for (const Span* s = spans.begin(); s + 1 != spans.end(); ++s) {
    EXPECT_LE(s->start_ns, s->end_ns);
    EXPECT_EQ(s->end_ns, (s + 1)->start_ns);  // contiguous: no time unaccounted
  }
}

TEST(SpanBuffer, AFullBufferCountsDroppedSpansInsteadOfGrowing) {
  SpanBuffer spans(3);
  const long before = allocations.load();
  for (int i = 0; i < 10; ++i) spans.add({i, i + 1});
  EXPECT_EQ(allocations.load() - before, 0);
  EXPECT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans.dropped(), 7u);
}

}  // namespace
}  // namespace ddp
