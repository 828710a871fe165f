//! The host allocator: the process's own `malloc`/`free` (glibc on Linux), timed on a
//! pattern's rounds, and its state read where the pattern has left its holes.
//!
//! Two parts, for two reasons:
//! - [`HostAllocWorkload`] times rounds in the bench process, against the heap that process
//!   has: that is what a program pays. Blocks are not touched inside the timed window (a
//!   first-touch page fault is memory bandwidth's cost, not the allocator's); `verify`
//!   writes each block's first and last byte once, before timing.
//! - The figures that describe the heap (peak reserved against peak allocated, the largest
//!   free block against the total free) would mix in whatever earlier benchmarks and
//!   Criterion left in that heap, and differ with the order ids ran in. So they are read in
//!   a fresh child process ([`observe_in_child`]): the bench executable started again with
//!   [`OBSERVE_ENV`], which runs one warm-up round (glibc raises its mmap threshold when an
//!   mmapped block is freed, so the first round differs from the rest) and then one
//!   observed round on the main thread's arena, reading `mallinfo2` after every call and
//!   `malloc_info` at the probe point. The same pattern gives the same figures every time.
//!
//! Reading the state must not change it: `malloc_info` writes into a buffer opened before
//! the round (`fmemopen`, unbuffered, so stdio allocates nothing), and the report is parsed
//! only after the round. The parsed free bytes must equal `mallinfo2`'s at the same point,
//! or the observation fails: a disagreement means one of the readings is wrong.

use super::malloc_info::MallocInfo;
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::BenchId;
use crate::workload::alloc::{self, AllocPattern, Op, Program, notes};
use crate::workload::ids::{format_bytes_id, parse_bytes_id};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Set in the child: `<pattern>/<size>` (`out_of_order/1MiB`) to observe.
pub const OBSERVE_ENV: &str = "STACKBENCH_ALLOC_OBSERVE";
/// The child's result line on stdout: this marker, a space, the [`Observation`] as JSON.
pub const OBSERVATION_MARKER: &str = "STACKBENCH_ALLOC_OBSERVATION";
/// The child's error line: this marker, a space, the message.
pub const OBSERVATION_ERROR_MARKER: &str = "STACKBENCH_ALLOC_OBSERVATION_ERROR";
/// Room for one `malloc_info` report (about 100 bytes per non-empty bin).
const REPORT_CAPACITY: usize = 1 << 20;

/// What the observed round showed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// The allocator, with its version where known (`glibc malloc 2.36`).
    pub allocator: String,
    pub peak_requested_bytes: u64,
    /// Most bytes the allocator counted in use during the round (`uordblks + hblkhd`: with
    /// chunk headers and rounding), the process's whole heap.
    pub peak_allocated_bytes: Option<u64>,
    /// Most bytes it held from the OS during the round (`arena + hblkhd`).
    pub peak_reserved_bytes: Option<u64>,
    /// The same two figures just before the observed round (after the warm-up round):
    /// what the peaks stand on.
    pub allocated_before_bytes: Option<u64>,
    pub reserved_before_bytes: Option<u64>,
    /// Blocks live at the probe point, and how many of them glibc served by their own mmap.
    pub live_blocks_at_probe: usize,
    pub mmapped_blocks_at_probe: Option<u64>,
    /// Free bytes of every arena at the probe point, and the largest free block.
    pub total_free_bytes: Option<u64>,
    pub largest_free_bytes: Option<u64>,
    pub fragmentation: Option<f64>,
    /// Why a figure is absent or what it does not cover.
    pub fragmentation_note: Option<String>,
    pub peaks_note: Option<String>,
}

impl Observation {
    /// The observation as benchmark notes (absent figures stay absent, their notes say why).
    pub fn notes(&self) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        out.insert(notes::ALLOCATOR.into(), self.allocator.clone().into());
        out.insert(
            notes::PEAK_REQUESTED.into(),
            self.peak_requested_bytes.into(),
        );
        let optional = [
            (
                notes::PEAK_ALLOCATED,
                self.peak_allocated_bytes.map(Value::from),
            ),
            (
                notes::PEAK_RESERVED,
                self.peak_reserved_bytes.map(Value::from),
            ),
            (
                "allocated_before_bytes",
                self.allocated_before_bytes.map(Value::from),
            ),
            (
                "reserved_before_bytes",
                self.reserved_before_bytes.map(Value::from),
            ),
            (notes::TOTAL_FREE, self.total_free_bytes.map(Value::from)),
            (
                notes::LARGEST_FREE,
                self.largest_free_bytes.map(Value::from),
            ),
            (notes::FRAGMENTATION, self.fragmentation.map(Value::from)),
            (
                "mmapped_blocks_at_probe",
                self.mmapped_blocks_at_probe.map(Value::from),
            ),
            (
                notes::FRAGMENTATION_NOTE,
                self.fragmentation_note.clone().map(Value::from),
            ),
            (notes::PEAKS_NOTE, self.peaks_note.clone().map(Value::from)),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                out.insert(key.into(), value);
            }
        }
        out.insert(
            "live_blocks_at_probe".into(),
            self.live_blocks_at_probe.into(),
        );
        out.insert(
            "observed_in".into(),
            "a fresh child process: one warm-up round, then one observed round".into(),
        );
        out
    }
}

/// How to start the observing child: an executable whose `main` calls
/// [`serve_observation_request`] before anything else, and its arguments.
#[derive(Clone, Debug)]
pub struct Observer {
    pub exe: PathBuf,
    pub args: Vec<String>,
}

impl Observer {
    /// This executable, started again with no arguments (the bench target's `main` serves
    /// the request first).
    pub fn this_executable() -> Result<Observer, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this executable to observe in: {e}"))?;
        Ok(Observer {
            exe,
            args: Vec::new(),
        })
    }
}

static OBSERVER: OnceLock<Observer> = OnceLock::new();

/// Sets the child the host allocator's workloads observe in (once per process).
pub fn install_observer(observer: Observer) {
    let _ = OBSERVER.set(observer);
}

/// In the observing child: runs the observation `OBSERVE_ENV` asks for, prints its line
/// and returns the exit code; `None` when this process is not such a child.
pub fn serve_observation_request() -> Option<ExitCode> {
    let request = std::env::var(OBSERVE_ENV).ok()?;
    let result = parse_request(&request).and_then(|(pattern, size)| observe(pattern, size));
    Some(
        match result.and_then(|o| serde_json::to_string(&o).map_err(|e| e.to_string())) {
            Ok(json) => {
                println!("{OBSERVATION_MARKER} {json}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                println!("{OBSERVATION_ERROR_MARKER} {}", error.replace('\n', " "));
                ExitCode::FAILURE
            }
        },
    )
}

fn parse_request(request: &str) -> Result<(AllocPattern, usize), String> {
    let bad = || format!("{OBSERVE_ENV}={request:?}: expected <pattern>/<size>, e.g. steady/4KiB");
    let (pattern, size) = request.split_once('/').ok_or_else(bad)?;
    let pattern = AllocPattern::from_id(pattern).ok_or_else(bad)?;
    let size = parse_bytes_id(size).filter(|s| *s > 0).ok_or_else(bad)?;
    Ok((pattern, size))
}

/// Observes `pattern` around `size` in a fresh child started by `observer`.
pub fn observe_in_child(
    observer: &Observer,
    pattern: AllocPattern,
    size: usize,
) -> Result<Observation, String> {
    let request = format!("{}/{}", pattern.id(), format_bytes_id(size));
    let output = Command::new(&observer.exe)
        .args(&observer.args)
        .env(OBSERVE_ENV, &request)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "starting {} to observe {request}: {e}",
                observer.exe.display()
            )
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines() {
        if let Some(json) = line.strip_prefix(&format!("{OBSERVATION_MARKER} ")) {
            return serde_json::from_str(json).map_err(|e| {
                format!("the observing child's result for {request} is not valid: {e}")
            });
        }
        if let Some(error) = line.strip_prefix(&format!("{OBSERVATION_ERROR_MARKER} ")) {
            return Err(format!("observing {request}: {error}"));
        }
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    Err(format!(
        "the observing child ({}) for {request} exited with {} and printed no observation; \
         last lines of its stderr: {}",
        observer.exe.display(),
        output.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    ))
}

/// Runs one warm-up round and one observed round of `pattern` in this process. Meant for
/// a fresh process (see the module docs): in a used one the heap figures are its history's.
pub fn observe(pattern: AllocPattern, size: usize) -> Result<Observation, String> {
    let program = pattern.program(size);
    program.check()?;
    let mut slots = Slots::new(program.slots);
    let peak_requested_bytes = program.peak_requested_bytes();
    let (live_blocks_at_probe, _) = program.live_at_probe();
    observe_platform(
        &program,
        &mut slots,
        peak_requested_bytes,
        live_blocks_at_probe,
    )
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn observe_platform(
    program: &Program,
    slots: &mut Slots,
    peak_requested_bytes: u64,
    live_blocks_at_probe: usize,
) -> Result<Observation, String> {
    slots.round(program)?;
    let why = "not exposed: this process's malloc is not glibc's (mallinfo2 and malloc_info \
               are glibc's), and it offers no free-list view";
    Ok(Observation {
        allocator: "the platform's malloc".into(),
        peak_requested_bytes,
        peak_allocated_bytes: None,
        peak_reserved_bytes: None,
        allocated_before_bytes: None,
        reserved_before_bytes: None,
        live_blocks_at_probe,
        mmapped_blocks_at_probe: None,
        total_free_bytes: None,
        largest_free_bytes: None,
        fragmentation: None,
        fragmentation_note: Some(why.into()),
        peaks_note: Some(why.into()),
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn observe_platform(
    program: &Program,
    slots: &mut Slots,
    peak_requested_bytes: u64,
    live_blocks_at_probe: usize,
) -> Result<Observation, String> {
    let mut report = glibc::ReportCapture::open(REPORT_CAPACITY)?;
    // Once before anything: whatever stdio or glibc sets up lazily happens here.
    report.capture()?;
    slots.round(program)?;
    let before = glibc::Stats::read();
    let (mut peak_allocated, mut peak_reserved) = (0u64, 0u64);
    let mut at_probe = None;
    for (i, op) in program.ops.iter().enumerate() {
        slots.apply(*op)?;
        let now = glibc::Stats::read();
        peak_allocated = peak_allocated.max(now.allocated());
        peak_reserved = peak_reserved.max(now.reserved());
        if i == program.probe_after {
            report.capture()?;
            at_probe = Some(now);
        }
    }
    let at_probe = at_probe.ok_or("the round never reached its probe point")?;
    let info = MallocInfo::parse(report.text()?).map_err(|e| e.to_string())?;
    if info.free_bytes() != at_probe.fordblks {
        return Err(format!(
            "malloc_info's free bytes ({}) differ from mallinfo2's ({}) at the same point: one \
             of the two readings is wrong",
            info.free_bytes(),
            at_probe.fordblks
        ));
    }
    let mmapped = at_probe.hblks.saturating_sub(before.hblks);
    let mut observation = Observation {
        allocator: format!("glibc malloc {}", glibc::version()),
        peak_requested_bytes,
        peak_allocated_bytes: Some(peak_allocated),
        peak_reserved_bytes: Some(peak_reserved),
        allocated_before_bytes: Some(before.allocated()),
        reserved_before_bytes: Some(before.reserved()),
        live_blocks_at_probe,
        mmapped_blocks_at_probe: Some(mmapped),
        total_free_bytes: Some(info.free_bytes()),
        largest_free_bytes: Some(info.largest_free_bytes()),
        fragmentation: None,
        fragmentation_note: None,
        peaks_note: Some(
            "the whole heap of the observing process (a fresh one: the runtime's few blocks and \
             what the warm-up round left, given as *_before_bytes) at its most during the \
             round; allocated = mallinfo2 uordblks + hblkhd (chunk headers and rounding \
             included), reserved = arena + hblkhd (what glibc holds from the OS)"
                .into(),
        ),
    };
    if mmapped >= live_blocks_at_probe as u64 {
        // The heap's free figures belong to the process, not the pattern: not reported.
        observation.total_free_bytes = None;
        observation.largest_free_bytes = None;
        observation.fragmentation_note = Some(format!(
            "not measured: every block live at the probe point ({live_blocks_at_probe}) was served \
             by its own mmap (glibc's mmap threshold starts at 128 KiB, rises to the size of \
             each mmapped block freed, up to 32 MiB; larger blocks are always mmapped) and goes \
             back to the OS when freed, so this pattern leaves no free blocks in the heap; the \
             heap's free space is the process's, not the pattern's"
        ));
    } else {
        observation.fragmentation =
            alloc::fragmentation(info.largest_free_bytes(), info.free_bytes())?;
        let mut note = String::from(
            "1 - largest free block / total free over every arena at the probe point \
             (malloc_info bins and top chunks; tcache-held chunks count as in use)",
        );
        if mmapped > 0 {
            note.push_str(&format!(
                "; {mmapped} of the {live_blocks_at_probe} live blocks were mmapped and are \
                 outside the heap"
            ));
        }
        observation.fragmentation_note = Some(note);
    }
    Ok(observation)
}

/// A pattern's live blocks, by slot.
struct Slots {
    ptrs: Vec<*mut libc::c_void>,
}

impl Slots {
    fn new(slots: usize) -> Slots {
        Slots {
            ptrs: vec![std::ptr::null_mut(); slots],
        }
    }

    /// One allocator call. A failed allocation is an error (the caller frees the rest).
    #[inline(always)]
    fn apply(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Alloc { slot, bytes } => {
                // SAFETY: malloc with a non-zero size; the result is checked before use.
                let ptr = std::hint::black_box(unsafe { libc::malloc(bytes) });
                if ptr.is_null() {
                    return Err(format!("malloc({bytes}) returned null"));
                }
                self.ptrs[slot] = ptr;
            }
            Op::Free { slot } => {
                let ptr = std::mem::replace(&mut self.ptrs[slot], std::ptr::null_mut());
                // SAFETY: the program is checked: the slot holds a block from malloc.
                unsafe { libc::free(std::hint::black_box(ptr)) };
            }
        }
        Ok(())
    }

    fn round(&mut self, program: &Program) -> Result<(), String> {
        for op in &program.ops {
            self.apply(*op)?;
        }
        Ok(())
    }

    /// Frees whatever a failed round left.
    fn release(&mut self) {
        for ptr in &mut self.ptrs {
            if !ptr.is_null() {
                // SAFETY: a non-null slot holds a live block from malloc.
                unsafe { libc::free(*ptr) };
                *ptr = std::ptr::null_mut();
            }
        }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        self.release();
    }
}

/// The host allocator timed on one pattern and size.
pub struct HostAllocWorkload {
    id: BenchId,
    pattern: AllocPattern,
    size: usize,
    program: Program,
    slots: Slots,
    observation: Option<Observation>,
    observation_note: Option<String>,
}

impl HostAllocWorkload {
    pub fn new(pattern: AllocPattern, size: usize) -> Result<HostAllocWorkload, BackendError> {
        let id = alloc::bench_id(BackendKind::Cpu.id(), pattern, size);
        let program = pattern.program(size);
        program
            .check()
            .map_err(|detail| BackendError::mismatch(&id, detail))?;
        let slots = Slots::new(program.slots);
        Ok(HostAllocWorkload {
            id,
            pattern,
            size,
            program,
            slots,
            observation: None,
            observation_note: None,
        })
    }

    fn device_error(&self, context: &str, message: String) -> BackendError {
        BackendError::Device {
            backend: BackendKind::Cpu,
            context: format!("{} {context}", self.id),
            message,
        }
    }

    /// One round with every block checked: non-null, aligned for any type, writable at
    /// both ends, and disjoint from every other live block.
    fn checked_round(&mut self) -> Result<(), BackendError> {
        let align = std::mem::align_of::<libc::max_align_t>();
        let mut sizes = vec![0usize; self.program.slots];
        for op in self.program.ops.clone() {
            self.slots
                .apply(op)
                .map_err(|m| self.device_error("verify", m))?;
            let Op::Alloc { slot, bytes } = op else {
                continue;
            };
            sizes[slot] = bytes;
            let ptr = self.slots.ptrs[slot] as usize;
            if !ptr.is_multiple_of(align) {
                let detail = format!("malloc({bytes}) returned {ptr:#x}, not {align}-aligned");
                return Err(BackendError::mismatch(&self.id, detail));
            }
            for (other, &p) in self.slots.ptrs.iter().enumerate() {
                let (p, len) = (p as usize, sizes[other]);
                if other != slot && p != 0 && ptr < p + len && p < ptr + bytes {
                    let detail = format!(
                        "block {slot} ({ptr:#x}, {bytes} bytes) overlaps live block {other} \
                         ({p:#x}, {len} bytes)"
                    );
                    return Err(BackendError::mismatch(&self.id, detail));
                }
            }
            // SAFETY: the block is `bytes` long and ours until freed.
            unsafe {
                let base = ptr as *mut u8;
                base.write_volatile(0xA5);
                base.add(bytes - 1).write_volatile(0x5A);
                if base.read_volatile() != 0xA5 || base.add(bytes - 1).read_volatile() != 0x5A {
                    return Err(BackendError::mismatch(
                        &self.id,
                        "a block did not hold its bytes",
                    ));
                }
            }
        }
        Ok(())
    }
}

impl TimedWorkload for HostAllocWorkload {
    fn verify(&mut self) -> Result<(), BackendError> {
        let checked = self.checked_round();
        self.slots.release();
        checked?;
        match OBSERVER.get() {
            Some(observer) => {
                let observation = observe_in_child(observer, self.pattern, self.size)
                    .map_err(|m| self.device_error("observing the heap", m))?;
                self.observation = Some(observation);
            }
            None => {
                self.observation_note =
                    Some("not observed: no observing process was set up (install_observer)".into());
            }
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let start = Instant::now();
        for _ in 0..iters {
            if let Err(message) = self.slots.round(&self.program) {
                self.slots.release();
                return Err(self.device_error("run", message));
            }
        }
        Ok(start.elapsed())
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut out = match &self.observation {
            Some(observation) => observation.notes(),
            None => BTreeMap::new(),
        };
        if let Some(why) = &self.observation_note {
            out.insert(notes::FRAGMENTATION_NOTE.into(), why.clone().into());
            out.insert(notes::PEAKS_NOTE.into(), why.clone().into());
        }
        out.insert(
            notes::CALLS_PER_ITERATION.into(),
            self.program.calls().into(),
        );
        out.entry(notes::ALLOCATOR.into())
            .or_insert_with(|| "the process's malloc".into());
        out.insert(
            "timed".into(),
            "malloc/free in the bench process; blocks untouched inside the timed window".into(),
        );
        out
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    /// `mallinfo2()`'s figures that the observation reads.
    #[derive(Clone, Copy, Debug)]
    pub struct Stats {
        pub arena: u64,
        pub hblks: u64,
        pub hblkhd: u64,
        pub uordblks: u64,
        pub fordblks: u64,
    }

    impl Stats {
        pub fn read() -> Stats {
            // SAFETY: mallinfo2 takes no arguments and returns a plain struct.
            let m = unsafe { libc::mallinfo2() };
            Stats {
                arena: m.arena as u64,
                hblks: m.hblks as u64,
                hblkhd: m.hblkhd as u64,
                uordblks: m.uordblks as u64,
                fordblks: m.fordblks as u64,
            }
        }

        pub fn allocated(&self) -> u64 {
            self.uordblks + self.hblkhd
        }

        pub fn reserved(&self) -> u64 {
            self.arena + self.hblkhd
        }
    }

    pub fn version() -> String {
        // SAFETY: returns a static NUL-terminated string.
        let text = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        text.to_string_lossy().into_owned()
    }

    /// A `malloc_info` report written into memory mapped before the round, outside the
    /// heap (a `Vec` of this size would be an mmapped malloc block, counted in the very
    /// figures being read).
    pub struct ReportCapture {
        buffer: *mut u8,
        capacity: usize,
        file: *mut libc::FILE,
        len: usize,
    }

    impl ReportCapture {
        pub fn open(capacity: usize) -> Result<ReportCapture, String> {
            // SAFETY: an anonymous private mapping; checked before use, unmapped in Drop.
            let buffer = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    capacity,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if buffer == libc::MAP_FAILED {
                return Err(format!("mmap: {}", std::io::Error::last_os_error()));
            }
            let buffer = buffer.cast::<u8>();
            // SAFETY: the mapping outlives the stream (closed in Drop before the unmap).
            let file = unsafe { libc::fmemopen(buffer.cast(), capacity, c"w".as_ptr()) };
            if file.is_null() {
                let error = std::io::Error::last_os_error();
                // SAFETY: mapped above, not used after.
                unsafe { libc::munmap(buffer.cast(), capacity) };
                return Err(format!("fmemopen: {error}"));
            }
            // Unbuffered: stdio would otherwise malloc a buffer at the first write, inside
            // the heap being read.
            // SAFETY: a fresh stream, before any I/O on it.
            if unsafe { libc::setvbuf(file, std::ptr::null_mut(), libc::_IONBF, 0) } != 0 {
                // SAFETY: the stream is open.
                unsafe { libc::fclose(file) };
                return Err("setvbuf(_IONBF) on the report stream failed".into());
            }
            Ok(ReportCapture {
                buffer,
                capacity,
                file,
                len: 0,
            })
        }

        /// Writes the current report over the previous one.
        pub fn capture(&mut self) -> Result<(), String> {
            // SAFETY: the stream is open and writes into `buffer`.
            unsafe {
                libc::rewind(self.file);
                if libc::malloc_info(0, self.file) != 0 {
                    return Err(format!("malloc_info: {}", std::io::Error::last_os_error()));
                }
                libc::fflush(self.file);
                let end = libc::ftell(self.file);
                if end < 0 {
                    return Err("ftell on the report stream failed".into());
                }
                self.len = end as usize;
            }
            if self.len + 1 >= self.capacity {
                return Err(format!(
                    "the malloc_info report filled its {}-byte buffer: it is cut off",
                    self.capacity
                ));
            }
            Ok(())
        }

        pub fn text(&self) -> Result<&str, String> {
            // SAFETY: `len` bytes of the mapping were written by the stream.
            let bytes = unsafe { std::slice::from_raw_parts(self.buffer, self.len) };
            std::str::from_utf8(bytes)
                .map_err(|e| format!("the malloc_info report is not UTF-8: {e}"))
        }
    }

    impl Drop for ReportCapture {
        fn drop(&mut self) {
            // SAFETY: opened and mapped in `open`, each released once, stream first.
            unsafe {
                libc::fclose(self.file);
                libc::munmap(self.buffer.cast(), self.capacity);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::alloc::KIB;

    #[test]
    fn requests_name_a_pattern_and_a_size_or_are_refused() {
        assert_eq!(
            parse_request("out_of_order/1MiB"),
            Ok((AllocPattern::OutOfOrder, 1 << 20))
        );
        for bad in [
            "",
            "steady",
            "steady/",
            "sideways/4KiB",
            "steady/4kb",
            "steady/0B",
        ] {
            let error = parse_request(bad).unwrap_err();
            assert!(
                error.contains(OBSERVE_ENV) && error.contains("<pattern>/<size>"),
                "{error}"
            );
        }
    }

    #[test]
    fn the_timed_rounds_allocate_and_free_for_real() {
        let mut workload = HostAllocWorkload::new(AllocPattern::OutOfOrder, 4 * KIB).unwrap();
        workload.verify().unwrap();
        workload.run(3).unwrap();
        assert!(
            workload.slots.ptrs.iter().all(|p| p.is_null()),
            "every round frees all"
        );
        let notes = workload.notes();
        assert_eq!(notes[notes::CALLS_PER_ITERATION], 3 * 64);
        // No observer in a unit test: the notes say so instead of inventing figures.
        assert!(!notes.contains_key(notes::FRAGMENTATION));
        assert!(
            notes[notes::FRAGMENTATION_NOTE]
                .as_str()
                .unwrap()
                .contains("not observed")
        );
    }

    #[test]
    fn a_child_that_prints_no_observation_is_an_error_with_its_stderr() {
        let observer = Observer {
            exe: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), "echo broken >&2; exit 3".into()],
        };
        let error = observe_in_child(&observer, AllocPattern::Steady, 4 * KIB).unwrap_err();
        assert!(
            error.contains("printed no observation") && error.contains("broken"),
            "{error}"
        );
        let garbled = Observer {
            exe: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), format!("echo '{OBSERVATION_MARKER} {{nope'")],
        };
        let error = observe_in_child(&garbled, AllocPattern::Steady, 4 * KIB).unwrap_err();
        assert!(error.contains("not valid"), "{error}");
        let refused = Observer {
            exe: PathBuf::from("/bin/sh"),
            args: vec![
                "-c".into(),
                format!("echo '{OBSERVATION_ERROR_MARKER} no heap'"),
            ],
        };
        let error = observe_in_child(&refused, AllocPattern::Steady, 4 * KIB).unwrap_err();
        assert!(error.contains("observing steady/4KiB: no heap"), "{error}");
    }
}
