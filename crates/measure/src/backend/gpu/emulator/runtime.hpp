/* stackbench's GPU kernel source, run on the CPU (see emulator/mod.rs for why).
 *
 * Semantics this runtime gives the kernels, CUDA's:
 * - every thread of a block is a fiber (its own stack and registers, ucontext), and the
 *   block's fibers run one at a time between synchronisation points, in thread order or
 *   in reverse (the launch says which): a kernel that reads another thread's shared
 *   memory without a barrier in between sees a stale value under one of the two orders;
 * - __syncthreads() is a barrier over the block's live threads;
 * - warps are 32 consecutive threads; a shuffle is an exchange through a per-warp buffer
 *   between two warp barriers, so every live lane of the warp must reach it (as
 *   __shfl_*_sync(0xffffffff) requires);
 * - __shared__ variables are function statics: one copy, shared by the block's threads.
 *   That is why blocks run one after another and launches never overlap (a global lock).
 * Threads that wait at different barriers can never all arrive: the scheduler sees that
 * exactly and fails the launch with the block's coordinates, instead of hanging.
 *
 * A fiber is entered the first time through its ucontext (makecontext, setcontext), and
 * every later switch, to the scheduler and back, is _setjmp/_longjmp, which leave the
 * signal mask alone: swapcontext saves and restores it with two rt_sigprocmask system
 * calls per switch, and a shuffle is four switches per lane. Profiled under perf on
 * tests/gpu_kernels_emulated.rs, swapcontext and its system calls were more than half of
 * the whole test's CPU time, the compiler's included. A longjmp between two stacks is what
 * glibc's fortified longjmp (_FORTIFY_SOURCE, on by default in some distributions'
 * compilers) refuses as an "uninitialized stack frame", so this unit turns it off. */
#undef _FORTIFY_SOURCE
#include <cmath>
#include <math.h>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <setjmp.h>
#include <type_traits>
#include <ucontext.h>
#include <utility>
#include <vector>

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };

/* Plain globals: only the scheduler switches fibers, and it sets these before each switch. */
uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace sb {

enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
    ucontext_t context; /* the first entry only */
    jmp_buf resume;     /* where the fiber goes on after a wait */
    bool started = false;
    State state = State::Ready;
};

constexpr std::size_t STACK_BYTES = 64 * 1024;

struct Scheduler {
    jmp_buf home; /* where the scheduler goes on when the running fiber waits or ends */
    std::vector<Fiber> fibers;
    std::vector<char> stacks;
    std::vector<double> lanes; /* 32 exchange slots per warp */
    unsigned current = 0;
    void (*entry)() = nullptr;
};

static Scheduler* sched = nullptr;
static void (*kernel_thunk)(void*) = nullptr;
static void* kernel_closure = nullptr;

/* Back to the scheduler, waiting in `state` until it releases this thread. */
inline void wait_as(State state) {
    Fiber& f = sched->fibers[sched->current];
    f.state = state;
    if (_setjmp(f.resume) == 0) _longjmp(sched->home, 1);
}

/* Runs fiber `t` until it waits or ends. Its own frame, so that the scheduler's loop
 * variables are never live across the _setjmp. */
__attribute__((noinline)) void run_fiber(Scheduler& s, unsigned t) {
    Fiber& f = s.fibers[t];
    if (_setjmp(s.home) != 0) return;
    if (!f.started) {
        f.started = true;
        setcontext(&f.context);
    }
    _longjmp(f.resume, 1);
}

inline void fiber_main() {
    kernel_thunk(kernel_closure);
    wait_as(State::Done);
}

/* Every lane publishes its value, then reads lane `src`'s: f32 and f64 both travel exactly
 * in a double. The second barrier keeps a lane from overwriting a value another lane has
 * not read yet. */
template <class T> T shuffle(T v, unsigned src) {
    double* lanes = &sched->lanes[(threadIdx.x / 32) * 32];
    lanes[threadIdx.x % 32] = (double)v;
    wait_as(State::AtWarpBarrier);
    T out = (T)lanes[src % 32];
    wait_as(State::AtWarpBarrier);
    return out;
}

/* Releases the barriers every live thread of (a warp or the block) has reached. Returns
 * false when some threads wait and none can ever be released: a divergent barrier. */
inline bool release(std::vector<Fiber>& fibers) {
    const unsigned n = (unsigned)fibers.size();
    bool any_ready = false, any_waiting = false;
    for (unsigned w = 0; w < n; w += 32) {
        unsigned end = w + 32 < n ? w + 32 : n, live = 0, arrived = 0;
        for (unsigned t = w; t < end; ++t) {
            live += fibers[t].state != State::Done;
            arrived += fibers[t].state == State::AtWarpBarrier;
        }
        if (arrived > 0 && arrived == live)
            for (unsigned t = w; t < end; ++t)
                if (fibers[t].state == State::AtWarpBarrier) fibers[t].state = State::Ready;
    }
    unsigned live = 0, at_block = 0;
    for (Fiber& f : fibers) {
        live += f.state != State::Done;
        at_block += f.state == State::AtBlockBarrier;
    }
    if (at_block > 0 && at_block == live)
        for (Fiber& f : fibers)
            if (f.state == State::AtBlockBarrier) f.state = State::Ready;
    for (Fiber& f : fibers) {
        any_ready |= f.state == State::Ready;
        any_waiting |= f.state == State::AtBlockBarrier || f.state == State::AtWarpBarrier;
    }
    return any_ready || !any_waiting;
}

/* Runs one block to completion. Returns false on a divergent barrier. */
inline bool run_block(Scheduler& s, unsigned threads, bool reverse) {
    for (unsigned t = 0; t < threads; ++t) {
        Fiber& f = s.fibers[t];
        f.state = State::Ready;
        f.started = false;
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = &s.stacks[t * STACK_BYTES];
        f.context.uc_stack.ss_size = STACK_BYTES;
        f.context.uc_link = nullptr;
        makecontext(&f.context, (void (*)())fiber_main, 0);
    }
    for (;;) {
        bool ran = false;
        for (unsigned i = 0; i < threads; ++i) {
            unsigned t = reverse ? threads - 1 - i : i;
            if (s.fibers[t].state != State::Ready) continue;
            s.current = t;
            threadIdx = uint3{t, 0, 0};
            run_fiber(s, t);
            ran = true;
        }
        if (!release(s.fibers)) return false;
        if (!ran) {
            bool all_done = true;
            for (Fiber& f : s.fibers) all_done &= f.state == State::Done;
            if (all_done) return true;
        }
    }
}

} // namespace sb

inline void __syncthreads() { sb::wait_as(sb::State::AtBlockBarrier); }
template <class T> inline T __shfl_xor_sync(unsigned, T v, int mask) { return sb::shuffle(v, (threadIdx.x % 32) ^ (unsigned)mask); }
template <class T> inline T __shfl_sync(unsigned, T v, int lane) { return sb::shuffle(v, (unsigned)lane); }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
/* expf and fmaxf come from math.h, as the device library provides them. */

/* The platform prelude, as kernels.rs's CUDA and HIP preludes provide it. */
struct alignas(16) D2 { double x, y; };
inline D2 load2(const D2* p) { return *p; }
inline void store2(D2* p, D2 v) { *p = v; }
struct alignas(16) V4 { unsigned u[4]; };
inline V4 load16(const V4* p) { return *p; }
inline void store16(V4* p, V4 v) { *p = v; }
#define SHFL_XOR(v, o) __shfl_xor_sync(0xffffffffu, (v), (o))
#define SHFL(v, l) __shfl_sync(0xffffffffu, (v), (l))
typedef unsigned short u16;
struct F16 {
    typedef u16 T;
    static inline float load(u16 v) { return (float)__builtin_bit_cast(_Float16, v); }
    static inline u16 store(float f) { return __builtin_bit_cast(u16, (_Float16)f); }
};

namespace sb {

/* The argument kinds of emulator.rs's `Arg`: p pointer, u u64, i i32, f f32, d f64. */
template <class A> constexpr char tag_of() {
    if constexpr (std::is_pointer_v<A>) return 'p';
    else if constexpr (std::is_same_v<A, unsigned long long>) return 'u';
    else if constexpr (std::is_same_v<A, int>) return 'i';
    else if constexpr (std::is_same_v<A, float>) return 'f';
    else if constexpr (std::is_same_v<A, double>) return 'd';
    else return '?';
}

static std::mutex launch_lock;

template <class... A, std::size_t... I>
void call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<A>*>(args[I])...);
}

template <class... A> struct Bound {
    void (*kernel)(A...);
    void** args;
    static void thunk(void* self) {
        Bound* b = static_cast<Bound*>(self);
        call(b->kernel, b->args, std::index_sequence_for<A...>{});
    }
};

/* Checks the launch's arguments against the kernel's parameters before any thread runs
 * (a wrong count or kind is the launch code's bug and must not reach the kernel), then
 * runs the grid block by block. */
template <class... A>
int launch(const char* name, void (*kernel)(A...), dim3 grid, unsigned threads, bool reverse,
           void** args, const char* tags, int nargs, char* err, unsigned errlen) {
    const char expected[] = {tag_of<A>()..., '\0'};
    if (nargs != (int)sizeof...(A) || std::strncmp(tags, expected, sizeof...(A)) != 0) {
        std::snprintf(err, errlen, "%s takes (%s), the launch passed (%.*s)", name, expected, nargs, tags);
        return 2;
    }
    if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0) {
        std::snprintf(err, errlen, "%s: invalid launch shape grid (%u, %u, %u) x %u threads", name,
                      grid.x, grid.y, grid.z, threads);
        return 3;
    }
    std::lock_guard<std::mutex> guard(launch_lock);
    Scheduler s;
    s.fibers.resize(threads);
    s.stacks.resize(threads * STACK_BYTES);
    s.lanes.assign(((threads + 31) / 32) * 32, 0.0);
    Bound<A...> bound{kernel, args};
    sched = &s;
    kernel_thunk = &Bound<A...>::thunk;
    kernel_closure = &bound;
    blockDim = dim3{threads, 1, 1};
    gridDim = grid;
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                blockIdx = uint3{x, y, z};
                if (!run_block(s, threads, reverse)) {
                    std::snprintf(err, errlen,
                                  "%s: block (%u, %u, %u): threads wait at different barriers "
                                  "(a __syncthreads or shuffle that not every thread reaches)",
                                  name, x, y, z);
                    sched = nullptr;
                    return 4;
                }
            }
    sched = nullptr;
    return 0;
}

} // namespace sb

#define SB_BEGIN_KERNELS                                                                    \
    extern "C" int stackbench_emulator_launch(const char* name, unsigned gx, unsigned gy,   \
                                              unsigned gz, unsigned threads, int reverse,   \
                                              void** args,                                  \
                                              const char* tags, int nargs, char* err,       \
                                              unsigned errlen) {                            \
        const dim3 grid{gx, gy, gz};
#define SB_KERNEL(k)                                                                        \
        if (std::strcmp(name, #k) == 0)                                                     \
            return sb::launch(#k, k, grid, threads, reverse != 0, args, tags, nargs, err, errlen);
#define SB_END_KERNELS                                                                      \
        std::snprintf(err, errlen, "no kernel named %s in the module", name);               \
        return 1;                                                                           \
    }
