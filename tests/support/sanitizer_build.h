#pragma once
// Whether this test is built with a sanitizer. Instrumented code runs several times slower,
// and by how much depends on the machine, so a test that measures a rate or a time checks it
// in the release build and, under the sanitizers, only runs it (for memory errors and
// undefined behaviour).
namespace ddp::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

}  // namespace ddp::testing
