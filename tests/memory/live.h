/* SPDX-License-Identifier: Apache-2.0 */
/* The bytes a process has allocated and not freed: what a buffer that kept its capacity shows,
 * the same under ASan (its allocator's count; quarantine and shadow are not in it) as without
 * (glibc's in-use bytes, mapped blocks included). For tests that include cmocka. */
#ifndef ACP_TESTS_MEMORY_LIVE_H
#define ACP_TESTS_MEMORY_LIVE_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifdef SANITIZED
/* <sanitizer/allocator_interface.h>, which not every compiler installs */
size_t __sanitizer_get_current_allocated_bytes(void);
static inline size_t live(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static inline size_t live(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}
#endif

/* Fails when more than margin bytes stayed allocated since before. */
static inline void assert_back(size_t before, size_t margin, const char *what)
{
    size_t now = live();
    if (now > before + margin)
        fail_msg("%s: %zu bytes still allocated (margin %zu)", what, now - before, margin);
}

#endif
