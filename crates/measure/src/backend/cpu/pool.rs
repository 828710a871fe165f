//! A static thread pool in the OpenMP `schedule(static)` sense: worker `t` always runs
//! part `t` of the work, pinned to one CPU. Bandwidth kernels need this: the thread that
//! first touches a page decides which NUMA node it lives on, so the same thread must touch
//! the same chunk at initialisation and in every timed pass. A work-stealing pool (rayon)
//! would move chunks between threads and measure remote memory instead.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// A job borrowed for the duration of one [`StaticPool::run`] call.
type JobRef = &'static (dyn Fn(usize) + Sync);

struct State {
    generation: u64,
    job: Option<JobRef>,
    pending: usize,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    start: Condvar,
    done: Condvar,
    panicked: AtomicBool,
}

impl Shared {
    fn idle() -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(State {
                generation: 0,
                job: None,
                pending: 0,
                shutdown: false,
            }),
            start: Condvar::new(),
            done: Condvar::new(),
            panicked: AtomicBool::new(false),
        })
    }
}

/// `threads` dedicated workers, each pinned to one allowed CPU. The calling thread is never
/// pinned: threads inherit their creator's affinity, so pinning it would confine every
/// thread spawned later (rayon's pool for GEMM among them) to one CPU.
pub struct StaticPool {
    threads: usize,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl StaticPool {
    /// Fails only when the operating system refuses a thread (limits, memory); the workers
    /// already started are stopped again by `Drop`.
    pub fn new(threads: usize) -> std::io::Result<StaticPool> {
        let threads = threads.max(1);
        let shared = Shared::idle();
        // Read once, before any pinning, so every worker picks from the full set.
        let cpus = allowed_cpus();
        let mut pool = StaticPool {
            threads,
            shared,
            workers: Vec::with_capacity(threads),
        };
        for index in 0..threads {
            let shared = Arc::clone(&pool.shared);
            let cpu = cpus.as_ref().map(|c| c[index % c.len()]);
            let worker = std::thread::Builder::new()
                .name(format!("stackbench-worker-{index}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        pin_current_thread(cpu);
                    }
                    worker_loop(index, &shared)
                })?;
            pool.workers.push(worker);
        }
        Ok(pool)
    }

    /// A pool with no worker threads: `run` calls `job(0)` on the calling thread. Counting
    /// mode needs it: Callgrind counts only the thread that entered the timed routine, so
    /// work handed to a worker would be missing from the count.
    pub fn inline() -> StaticPool {
        StaticPool {
            threads: 1,
            shared: Shared::idle(),
            workers: Vec::new(),
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Whether [`StaticPool::run`] runs its job on the calling thread ([`StaticPool::inline`]).
    pub fn is_inline(&self) -> bool {
        self.workers.is_empty()
    }

    /// Runs `job(t)` on every worker `t` and returns when all have finished.
    pub fn run<F: Fn(usize) + Sync>(&self, job: F) {
        if self.is_inline() {
            // No lock, no condition variable: nothing that would show another thread.
            return job(0);
        }
        let job_ref: &(dyn Fn(usize) + Sync) = &job;
        // SAFETY: the reference is only used by workers between this point and the wait
        // in the guard's drop (reached on every exit path), so it never outlives `job`.
        let job_static: JobRef =
            unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), JobRef>(job_ref) };
        let guard = WaitGuard(&self.shared);
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
            state.generation += 1;
            state.job = Some(job_static);
            state.pending = self.threads;
        }
        self.shared.start.notify_all();
        drop(guard);
        if self.shared.panicked.swap(false, Ordering::SeqCst) {
            panic!("a stackbench worker thread panicked");
        }
    }

    /// The half-open range of `len` elements that worker `t` owns, with boundaries on
    /// multiples of `align` elements (a cache line of f64 is 8).
    pub fn chunk(&self, t: usize, len: usize, align: usize) -> std::ops::Range<usize> {
        chunk_range(t, self.threads, len, align)
    }
}

pub fn chunk_range(t: usize, threads: usize, len: usize, align: usize) -> std::ops::Range<usize> {
    let align = align.max(1);
    let blocks = len.div_ceil(align);
    let bound = |i: usize| (blocks * i / threads * align).min(len);
    bound(t)..bound(t + 1)
}

/// Waits for the workers to finish the current job, on every exit path of `run`.
struct WaitGuard<'a>(&'a Shared);

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.pending > 0 {
            state = self.0.done.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.job = None;
    }
}

fn worker_loop(index: usize, shared: &Shared) {
    pin_current_thread(index);
    let mut seen = 0u64;
    loop {
        let job = {
            let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            while state.generation == seen && !state.shutdown {
                state = shared.start.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            if state.shutdown {
                return;
            }
            seen = state.generation;
            state.job
        };
        if let Some(job) = job
            && std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(index))).is_err()
        {
            shared.panicked.store(true, Ordering::SeqCst);
        }
        let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
        state.pending -= 1;
        if state.pending == 0 {
            shared.done.notify_all();
        }
    }
}

impl Drop for StaticPool {
    fn drop(&mut self) {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .shutdown = true;
        self.shared.start.notify_all();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

/// The CPUs this process may run on (Linux affinity mask); `None` where it cannot be read.
fn allowed_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    // SAFETY: cpu_set_t is plain data; the calls only read and write it.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) != 0 {
            return None;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &allowed))
            .collect();
        (!cpus.is_empty()).then_some(cpus)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Pins the calling thread to `cpu`. Best effort: where affinity cannot be set
/// (containers that forbid it, non-Linux) the thread simply floats.
fn pin_current_thread(cpu: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: as above.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn chunks_cover_the_range_once_and_align() {
        for threads in 1..6 {
            for len in [0, 1, 7, 8, 100, 1001] {
                let mut next = 0;
                for t in 0..threads {
                    let r = chunk_range(t, threads, len, 8);
                    assert_eq!(r.start, next);
                    assert!(r.start.is_multiple_of(8) || r.start == len);
                    next = r.end;
                }
                assert_eq!(next, len);
            }
        }
    }

    #[test]
    fn the_calling_thread_keeps_every_cpu() {
        let before = allowed_cpus();
        let pool = StaticPool::new(2).unwrap();
        pool.run(|_| ());
        assert_eq!(
            allowed_cpus(),
            before,
            "threads spawned later inherit the caller's affinity"
        );
    }

    #[test]
    fn an_inline_pool_runs_the_whole_job_on_the_calling_thread() {
        let pool = StaticPool::inline();
        assert_eq!(pool.threads(), 1);
        assert!(pool.is_inline());
        let caller = std::thread::current().id();
        let ran = std::sync::Mutex::new(Vec::new());
        pool.run(|t| {
            ran.lock().unwrap().push((t, std::thread::current().id()));
        });
        assert_eq!(ran.into_inner().unwrap(), vec![(0, caller)]);
        assert_eq!(
            pool.chunk(0, 1001, 8),
            0..1001,
            "one part holds all the work"
        );
        assert!(!StaticPool::new(2).unwrap().is_inline());
    }

    #[test]
    fn every_worker_runs_every_job() {
        let pool = StaticPool::new(3).unwrap();
        let hits = AtomicUsize::new(0);
        for _ in 0..100 {
            pool.run(|t| {
                hits.fetch_add(t + 1, Ordering::SeqCst);
            });
        }
        assert_eq!(hits.load(Ordering::SeqCst), 100 * (1 + 2 + 3));
    }
}
