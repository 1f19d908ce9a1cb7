// ThreadSanitizer cannot see the synchronisation inside libtbb (Debian's is not instrumented), so
// every hand-off of a task between TBB workers is reported as a race inside TBB's own headers
// (blocked_range splitting, check_being_stolen). Rather than suppress reports whose stacks run
// through our kernels, test processes built with TSan run TBB on one thread: parallel_for bodies
// run on the thread that calls them, and TSan checks what these builds are for — actors on their
// strands and threads, and the messages between them. (Kernel parallelism is checked against the
// scalar references in tests/kernels, and under ASan.)
#if defined(__SANITIZE_THREAD__)
#define PAGEDSERVE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PAGEDSERVE_TSAN 1
#endif
#endif

#ifdef PAGEDSERVE_TSAN
#include <tbb/global_control.h>

namespace {

const tbb::global_control tsan_tbb_one_thread(tbb::global_control::max_allowed_parallelism, 1);

}  // namespace
#endif
