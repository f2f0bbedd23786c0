// Which sanitizer runtimes a test binary runs under (the asan and fuzz presets), for the few tests
// whose condition a sanitizer's runtime defeats: those skip there and say why, and stay strict in
// the dev, quick and release builds.
#pragma once

namespace fleetscope::test_support {

// AddressSanitizer: its shadow memory and quarantine count in the process's RSS and address space,
// so a bound on either (a peak RSS, a --memory-limit budget) measures the sanitizer, not the code.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

// UndefinedBehaviorSanitizer (FLEETSCOPE_UNDER_UBSAN, set by tests/CMakeLists.txt from the build's
// flags: GCC has no macro for it). Its vptr check reads the vtable only after probing it through a
// pipe(2) of its own (IsAccessibleMemoryRange in the sanitizer runtime); with no descriptor left
// the probe fails and it reports "object has invalid vptr" on a sound object, and a suppression
// cannot help: -fno-sanitize-recover ignores location suppressions, and a type suppression needs
// that same probe. So a test that uses up the descriptors cannot run under it.
#if defined(FLEETSCOPE_UNDER_UBSAN)
inline constexpr bool kUnderUndefinedBehaviorSanitizer = true;
#else
inline constexpr bool kUnderUndefinedBehaviorSanitizer = false;
#endif

inline constexpr const char* kVptrCheckNeedsADescriptor =
    "UBSan's vptr check opens a pipe to probe the vtable, so with no descriptor left it reports a "
    "sound exception object as 'invalid vptr' (tests/support/sanitizers.h); this test runs in the "
    "dev, quick and release builds";

}  // namespace fleetscope::test_support
