//! Which points a suite selects on a given machine, as a pure function of what the probe
//! says about it (cache sizes, GPUs present), so "does validate time a GPU GEMM on an H100
//! server?" is answered by a test without the server.
//!
//! The bench targets size some points from the machine (the CPU triad beyond the caches is
//! a power of two of at least 4x the LLC; a GPU's from its L2), so a suite that names one
//! fixed size selects nothing on the machines where that size is not generated. The
//! candidates here are what `benches/memory_bandwidth.rs` and `benches/gemm.rs` generate,
//! built from the same axis functions the backends call.

use crate::backend::cpu::stream_sizes_for;
use crate::config::ResolvedSuite;
use crate::workload::gemm::{self, GemmShape, in_quick_suite};
use crate::workload::transfer::{TRANSFER_BYTES, TransferKind};
use crate::workload::{BenchId, DType, StreamKernel, Suite, stream};
use std::collections::BTreeMap;

/// A GPU as far as the suite's points depend on it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuDescription {
    /// `cuda`, `rocm` or `vulkan`.
    pub backend: &'static str,
    pub l2_bytes: usize,
    pub memory_bytes: usize,
}

/// A machine as far as the suite's points depend on it.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineDescription {
    pub llc_bytes: u64,
    pub l2_total_bytes: Option<u64>,
    pub gpus: Vec<GpuDescription>,
}

/// What a validation needs of each backend present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Gemm,
    Triad,
    HostToDevice,
    DeviceToHost,
}

impl Role {
    fn of(id: &str) -> Option<Role> {
        let mut parts = id.split('/');
        let (family, _backend, function) = (parts.next()?, parts.next()?, parts.next()?);
        match (family, function) {
            ("gemm", "all") => None,
            ("gemm", _) => Some(Role::Gemm),
            ("memory_bandwidth", "triad") => Some(Role::Triad),
            ("memory_bandwidth", f) if f.starts_with("h2d_") => Some(Role::HostToDevice),
            ("memory_bandwidth", f) if f.starts_with("d2h_") => Some(Role::DeviceToHost),
            _ => None,
        }
    }

    /// The roles a backend must fill: GPUs also copy to and from the host.
    pub fn needed_by(backend: &str) -> &'static [Role] {
        if backend == "cpu" {
            &[Role::Gemm, Role::Triad]
        } else {
            &[
                Role::Gemm,
                Role::Triad,
                Role::HostToDevice,
                Role::DeviceToHost,
            ]
        }
    }
}

/// The GEMM and memory-bandwidth ids the bench targets generate on `machine` in `base`.
/// CPU GEMM is listed in f32 only, the precision every CPU runs; GPU GEMM in every
/// precision (a GPU runs each or records why not), so a level that times bf16 on GPUs only
/// is still seen to cover them.
pub fn candidate_ids(base: Suite, machine: &MachineDescription) -> Vec<String> {
    let mut ids = Vec::new();
    let gemms = |backend: &str, shapes: Vec<GemmShape>, ids: &mut Vec<String>| {
        let dtypes: &[DType] = if backend == "cpu" {
            &[DType::F32]
        } else {
            &DType::ALL
        };
        for shape in shapes {
            for &dtype in dtypes {
                if base.is_full() || in_quick_suite(dtype, shape) {
                    ids.push(gemm::bench_id(backend, dtype, shape).full());
                }
            }
        }
    };
    let streams = |backend: &str, sizes: Vec<usize>, ids: &mut Vec<String>| {
        for bytes in sizes {
            for kernel in StreamKernel::ALL {
                ids.push(stream::bench_id(backend, kernel, bytes).full());
            }
        }
    };
    gemms("cpu", gemm::cpu_shapes(base), &mut ids);
    streams(
        "cpu",
        stream_sizes_for(base, machine.llc_bytes, machine.l2_total_bytes),
        &mut ids,
    );
    for gpu in &machine.gpus {
        gemms(gpu.backend, gemm::gpu_shapes(base), &mut ids);
        let sizes = crate::backend::gpu::stream::sizes(base, gpu.l2_bytes, gpu.memory_bytes);
        streams(gpu.backend, sizes, &mut ids);
        for kind in TransferKind::ALL {
            let value = crate::workload::ids::format_bytes_id(TRANSFER_BYTES);
            ids.push(BenchId::new("memory_bandwidth", gpu.backend, kind.id(), value).full());
        }
    }
    ids.sort();
    ids.dedup();
    ids
}

/// Per backend present and role it needs, the ids `suite` selects on `machine`.
pub fn coverage(
    suite: &ResolvedSuite,
    machine: &MachineDescription,
) -> BTreeMap<(String, Role), Vec<String>> {
    let mut covered: BTreeMap<(String, Role), Vec<String>> = BTreeMap::new();
    let backends = std::iter::once("cpu").chain(machine.gpus.iter().map(|g| g.backend));
    for backend in backends {
        for role in Role::needed_by(backend) {
            covered.entry((backend.to_owned(), *role)).or_default();
        }
    }
    for id in candidate_ids(suite.base, machine) {
        let backend = id.split('/').nth(1).unwrap_or("").to_owned();
        let Some(role) = Role::of(&id) else {
            continue;
        };
        if suite.selects(&id)
            && let Some(ids) = covered.get_mut(&(backend, role))
        {
            ids.push(id);
        }
    }
    covered
}

/// "cuda: no GEMM" for each backend present and role it needs that `suite` leaves empty.
pub fn missing(suite: &ResolvedSuite, machine: &MachineDescription) -> Vec<String> {
    coverage(suite, machine)
        .into_iter()
        .filter(|(_, ids)| ids.is_empty())
        .map(|((backend, role), _)| format!("{backend}: no {role:?} point"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn h100_server(llc_bytes: u64) -> MachineDescription {
        MachineDescription {
            llc_bytes,
            l2_total_bytes: Some(96 << 20),
            gpus: vec![GpuDescription {
                backend: "cuda",
                l2_bytes: 50 << 20,
                memory_bytes: 80 << 30,
            }],
        }
    }

    /// The case the issue found: an LLC of 256 MiB (the CPU triad is then 1 GiB, not the
    /// 256 MiB the suite once named) and one CUDA device (whose quick GEMM axis lacks 2048³).
    #[test]
    fn pre_installation_times_gemm_triad_and_copies_on_every_backend_present() {
        let suite = Config::default().suite("pre-installation").unwrap();
        let machine = h100_server(256 << 20);
        let covered = coverage(&suite, &machine);
        for backend in ["cpu", "cuda"] {
            for role in Role::needed_by(backend) {
                let ids = &covered[&(backend.to_owned(), *role)];
                assert!(!ids.is_empty(), "{backend} {role:?}: nothing selected");
            }
        }
        assert_eq!(
            covered[&("cpu".to_owned(), Role::Triad)],
            vec!["memory_bandwidth/cpu/triad/1GiB"]
        );
        assert!(missing(&suite, &machine).is_empty());
    }

    /// Every validate level covers every role on every backend present; level 1 times one
    /// GEMM per backend, level 2 the headline precisions on the GPU.
    #[test]
    fn every_level_covers_each_role_on_every_backend_present() {
        let config = Config::default();
        for llc_mib in [8u64, 32, 256] {
            let machine = h100_server(llc_mib << 20);
            for level in ["level-1", "level-2", "level-3"] {
                let suite = config.suite(level).unwrap();
                assert!(
                    missing(&suite, &machine).is_empty(),
                    "{level}, LLC {llc_mib} MiB: {:?}",
                    missing(&suite, &machine)
                );
            }
            let one = coverage(&config.suite("level-1").unwrap(), &machine);
            assert_eq!(
                one[&("cpu".to_owned(), Role::Gemm)],
                vec!["gemm/cpu/f32/512x512x512"]
            );
            assert_eq!(
                one[&("cuda".to_owned(), Role::Gemm)],
                vec!["gemm/cuda/bf16/4096x4096x4096"]
            );
            let two = coverage(&config.suite("level-2").unwrap(), &machine);
            assert_eq!(two[&("cuda".to_owned(), Role::Gemm)].len(), 6);
        }
    }

    /// A GPU that only Vulkan reaches (an Intel Arc: 16 MiB of L2, 16 GiB) is covered like
    /// CUDA's: every role at every level, one f32 GEMM at level 1, f32 and f16 at level 2.
    #[test]
    fn every_level_covers_a_vulkan_gpu_as_it_covers_cuda() {
        let config = Config::default();
        let machine = MachineDescription {
            gpus: vec![GpuDescription {
                backend: "vulkan",
                l2_bytes: 16 << 20,
                memory_bytes: 16 << 30,
            }],
            ..h100_server(32 << 20)
        };
        for level in ["level-1", "level-2", "level-3"] {
            let suite = config.suite(level).unwrap();
            let covered = coverage(&suite, &machine);
            for role in Role::needed_by("vulkan") {
                assert!(
                    !covered[&("vulkan".to_owned(), *role)].is_empty(),
                    "{level}: vulkan {role:?}"
                );
            }
            assert!(missing(&suite, &machine).is_empty(), "{level}");
        }
        let one = coverage(&config.suite("level-1").unwrap(), &machine);
        assert_eq!(
            one[&("vulkan".to_owned(), Role::Gemm)],
            vec!["gemm/vulkan/f32/4096x4096x4096"]
        );
        let two = coverage(&config.suite("level-2").unwrap(), &machine);
        assert_eq!(
            two[&("vulkan".to_owned(), Role::Gemm)],
            vec![
                "gemm/vulkan/f16/8192x8192x8192",
                "gemm/vulkan/f32/8192x8192x8192"
            ]
        );
    }

    /// Whatever the LLC, exactly one CPU triad is selected, and it is the one past the caches.
    #[test]
    fn the_cpu_triad_beyond_the_caches_is_selected_for_every_llc() {
        let suite = Config::default().suite("pre-installation").unwrap();
        for llc_mib in [1u64, 8, 32, 64, 65, 96, 128, 256, 384, 512, 1152, 4096] {
            let machine = MachineDescription {
                gpus: Vec::new(),
                ..h100_server(llc_mib << 20)
            };
            let triads = &coverage(&suite, &machine)[&("cpu".to_owned(), Role::Triad)];
            assert_eq!(triads.len(), 1, "LLC {llc_mib} MiB: {triads:?}");
            let size = triads[0].rsplit('/').next().unwrap();
            let bytes = crate::workload::ids::parse_bytes_id(size).unwrap() as u64;
            assert!(bytes >= 4 * (llc_mib << 20), "LLC {llc_mib} MiB: {size}");
        }
    }

    /// The suite as it was (a fixed 256 MiB CPU triad, 2048³ GEMM everywhere; no GPU triad
    /// here) leaves those roles empty on the H100 server: what the test above guards.
    #[test]
    fn a_fixed_size_the_machine_lacks_is_reported_missing() {
        let config = Config::parse(
            "[suites.old]\ntargets = [\"memory_bandwidth\", \"gemm\"]\ninclude = ['^memory_bandwidth/cpu/triad/256MiB$', '^gemm/[^/]+/[^/]+/2048x2048x2048$', '^memory_bandwidth/[^/]+/(h2d|d2h)_pinned/']\n",
            std::path::Path::new("stackbench.toml"),
        )
        .unwrap();
        let missing = missing(&config.suite("old").unwrap(), &h100_server(256 << 20));
        assert_eq!(
            missing,
            vec![
                "cpu: no Triad point",
                "cuda: no Gemm point",
                "cuda: no Triad point"
            ]
        );
    }
}
