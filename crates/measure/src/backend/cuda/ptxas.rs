//! What `ptxas -v` says about each compiled kernel: registers, spills, stack and shared
//! memory. CI assembles NVRTC's PTX with ptxas (no GPU needed; `examples/nvrtc_check.rs`)
//! and fails when a kernel meant to be bandwidth-bound spills: a spill there adds local
//! memory traffic to exactly the bytes the benchmark claims to measure; likewise for the
//! tensor-core attention kernels, whose tiles are sized to live in registers.
//!
//! The output is text meant for people and its wording moves between CUDA releases, so the
//! parser keys on the few phrases that have been stable since CUDA 10 and is tested on
//! logs from ptxas 12.9 and 13.2.

use std::fmt::Write as _;

/// One kernel's resources for one architecture.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelResources {
    pub kernel: String,
    pub arch: String,
    pub registers: u32,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
    pub stack_bytes: u64,
    pub shared_bytes: u64,
}

impl KernelResources {
    pub fn spills(&self) -> bool {
        self.spill_store_bytes > 0 || self.spill_load_bytes > 0
    }
}

/// The kernels whose time is meant to be memory traffic only: STREAM and the elementwise
/// ops. (Reductions, softmax, layer norm and attention keep more in registers by design.)
pub fn is_bandwidth_bound(kernel: &str) -> bool {
    kernel.starts_with("stream_")
        || ["add_", "mul_", "relu_", "gelu_"]
            .iter()
            .any(|prefix| kernel.starts_with(prefix))
}

/// Parses `ptxas -v` output: a record starts at "Compiling entry function 'NAME' for
/// 'ARCH'" and collects the stack/spill line and the "Used N registers" line after it.
pub fn parse_verbose(log: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let mut quoted = rest.split('\'');
            let kernel = quoted.next().unwrap_or_default().to_owned();
            let arch = quoted.nth(1).unwrap_or_default().to_owned();
            out.push(KernelResources {
                kernel,
                arch,
                ..Default::default()
            });
            continue;
        }
        let Some(current) = out.last_mut() else {
            continue;
        };
        if line.contains("bytes stack frame") {
            current.stack_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
            current.spill_store_bytes = number_before(line, "bytes spill stores").unwrap_or(0);
            current.spill_load_bytes = number_before(line, "bytes spill loads").unwrap_or(0);
        } else if line.contains("Used ") && line.contains(" registers") {
            current.registers = number_after(line, "Used ").unwrap_or(0) as u32;
            current.shared_bytes = number_before(line, "bytes smem").unwrap_or(0);
        }
    }
    out
}

/// The integer right before `phrase` ("24 bytes spill stores" → 24).
fn number_before(line: &str, phrase: &str) -> Option<u64> {
    let head = &line[..line.find(phrase)?];
    head.trim_end().rsplit([' ', ',', ':']).next()?.parse().ok()
}

/// The integer right after `phrase` ("Used 32 registers" → 32).
fn number_after(line: &str, phrase: &str) -> Option<u64> {
    let tail = &line[line.find(phrase)? + phrase.len()..];
    tail.split_whitespace().next()?.parse().ok()
}

/// The tensor-core attention kernels: their fragments and accumulators are sized to stay in
/// registers, and a spill would put the operands of the inner `mma` loop in local memory,
/// which is the slowdown the kernel exists to avoid.
pub fn is_register_tiled(kernel: &str) -> bool {
    kernel.starts_with("flash_tc_")
}

/// "kernel (arch)" for every kernel that spills where it must not: the bandwidth-bound
/// ones and the register-tiled ones.
pub fn forbidden_spills(resources: &[KernelResources]) -> Vec<String> {
    resources
        .iter()
        .filter(|r| (is_bandwidth_bound(&r.kernel) || is_register_tiled(&r.kernel)) && r.spills())
        .map(|r| {
            format!(
                "{} ({}: {} B stores, {} B loads)",
                r.kernel, r.arch, r.spill_store_bytes, r.spill_load_bytes
            )
        })
        .collect()
}

/// One row per kernel (sorted by name), one column group per architecture: registers, spill bytes
/// (stores/loads) and static shared memory.
pub fn markdown_table(resources: &[KernelResources]) -> String {
    let mut archs: Vec<&str> = Vec::new();
    let mut kernels: Vec<&str> = Vec::new();
    for r in resources {
        if !archs.contains(&r.arch.as_str()) {
            archs.push(&r.arch);
        }
        if !kernels.contains(&r.kernel.as_str()) {
            kernels.push(&r.kernel);
        }
    }
    kernels.sort_unstable();
    let mut out = String::from("| kernel |");
    for arch in &archs {
        let _ = write!(out, " {arch} regs | {arch} spill B | {arch} smem B |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(3 * archs.len()));
    out.push('\n');
    for kernel in kernels {
        let _ = write!(out, "| `{kernel}` |");
        for arch in &archs {
            match resources
                .iter()
                .find(|r| r.kernel == kernel && r.arch == *arch)
            {
                Some(r) => {
                    let _ = write!(
                        out,
                        " {} | {}/{} | {} |",
                        r.registers, r.spill_store_bytes, r.spill_load_bytes, r.shared_bytes
                    );
                }
                None => out.push_str(" – | – | – |"),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shapes of real `ptxas -v` output (13.2 reports barriers; older ones do not).
    const LOG: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'stream_copy' for 'sm_90'
ptxas info    : Function properties for stream_copy
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compile time = 2.113 ms
ptxas info    : Compiling entry function 'flash_f32_d128' for 'sm_90'
ptxas info    : Function properties for flash_f32_d128
    8 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 41472 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'add_f16' for 'sm_80'
ptxas info    : Function properties for add_f16
    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, 384 bytes cmem[0]
";

    #[test]
    fn parses_registers_spills_and_shared_memory_per_kernel() {
        let r = parse_verbose(LOG);
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0],
            KernelResources {
                kernel: "stream_copy".into(),
                arch: "sm_90".into(),
                registers: 12,
                ..Default::default()
            }
        );
        assert_eq!(
            (r[1].registers, r[1].shared_bytes, r[1].stack_bytes),
            (255, 41472, 8)
        );
        assert_eq!((r[1].spill_store_bytes, r[1].spill_load_bytes), (24, 16));
        assert_eq!(
            (r[2].arch.as_str(), r[2].registers, r[2].shared_bytes),
            ("sm_80", 40, 0)
        );
    }

    #[test]
    fn only_bandwidth_bound_and_register_tiled_spills_fail() {
        let r = parse_verbose(LOG);
        // flash spills too, but it is compute-bound by design: only add_f16 is reported.
        let spills = forbidden_spills(&r);
        assert_eq!(spills.len(), 1, "{spills:?}");
        assert!(spills[0].starts_with("add_f16 (sm_80"));
        assert!(is_bandwidth_bound("stream_triad") && !is_bandwidth_bound("softmax_f32"));
        // The tensor-core flash kernel must not spill either; the SIMT one may.
        let tiled = KernelResources {
            kernel: "flash_tc_bf16_d128".into(),
            arch: "sm_90".into(),
            spill_store_bytes: 8,
            ..Default::default()
        };
        assert_eq!(forbidden_spills(&[tiled]).len(), 1);
        assert!(!is_register_tiled("flash_bf16_d128"));
    }

    #[test]
    fn the_table_has_a_column_group_per_arch_and_marks_gaps() {
        let table = markdown_table(&parse_verbose(LOG));
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("sm_90 regs") && lines[0].contains("sm_80 smem B"));
        assert_eq!(lines[2], "| `add_f16` | – | – | – | 40 | 4/4 | 0 |");
        assert!(lines[3].contains("| 255 | 24/16 | 41472 |"));
        assert_eq!(lines[4], "| `stream_copy` | 12 | 0/0 | 0 | – | – | – |");
    }

    #[test]
    fn garbage_yields_nothing_rather_than_a_panic() {
        assert!(parse_verbose("ptxas fatal   : Unresolved extern function 'x'\n").is_empty());
        assert!(parse_verbose("Used 7 registers\n").is_empty());
    }
}
