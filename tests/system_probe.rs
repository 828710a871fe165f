//! The system probe on recorded `/proc` and sysfs trees from several machines: a Zen 4 VM
//! (recorded on the development machine), a two-socket Sapphire Rapids with an H100, two
//! ARM servers (Neoverse-N1, Grace/Neoverse-V2 with an H200) and a container with no sysfs.

use stackbench::probe::SystemProbe;
use stackbench::workload::DType;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/system")
        .join(name)
}

fn probe(name: &str) -> SystemProbe {
    SystemProbe::collect_from(&fixture(name), false)
}

fn theoretical(probe: &SystemProbe, dtype: DType) -> Option<f64> {
    probe
        .peaks
        .iter()
        .find(|p| p.dtype == Some(dtype))
        .and_then(|p| p.theoretical)
}

#[test]
fn zen4_vm() {
    let p = probe("x86_64-epyc-zen4-vm");
    let cpu = &p.cpu;
    assert_eq!(cpu.architecture, "x86_64");
    assert_eq!(cpu.model.as_deref(), Some("AMD EPYC"));
    assert_eq!(cpu.vendor.as_deref(), Some("AuthenticAMD"));
    assert_eq!(
        (cpu.sockets, cpu.physical_cores, cpu.logical_cpus),
        (Some(1), Some(2), Some(2))
    );
    assert_eq!(cpu.llc_bytes(), Some(32 << 20));
    for feature in ["avx2", "fma", "avx512f", "avx512_bf16"] {
        assert!(cpu.has(feature), "{feature} in {:?}", cpu.features);
    }
    assert!(!cpu.has("amx_tile"));
    // No cpufreq in the VM: the clock comes from /proc/cpuinfo's "cpu MHz".
    assert!(cpu.max_mhz.is_none());
    let mhz = cpu.base_mhz.expect("cpu MHz");
    // Zen 4 runs AVX-512 on 256-bit pipes: 16 f64 FLOP/cycle per core.
    assert_eq!(theoretical(&p, DType::F64), Some(16.0 * 2.0 * mhz * 1e6));
    assert_eq!(theoretical(&p, DType::F32), Some(32.0 * 2.0 * mhz * 1e6));
    assert!(
        p.fingerprint.starts_with("cpu=AMD EPYC x2;gpu="),
        "{}",
        p.fingerprint
    );
    assert_eq!(p.host.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
}

#[test]
fn two_socket_sapphire_rapids_with_an_h100() {
    let p = probe("x86_64-xeon-spr-2s");
    let cpu = &p.cpu;
    assert_eq!(
        cpu.model.as_deref(),
        Some("Intel(R) Xeon(R) Platinum 8480+")
    );
    assert_eq!(
        (cpu.sockets, cpu.physical_cores, cpu.logical_cpus),
        (Some(2), Some(4), Some(8))
    );
    // One 105 MiB L3 per socket, shared by that socket's four threads.
    assert_eq!(cpu.llc_bytes(), Some(2 * (107520 << 10)));
    assert_eq!((cpu.base_mhz, cpu.max_mhz), (Some(2000.0), Some(3800.0)));
    for feature in ["amx_tile", "amx_bf16", "avx512_fp16", "avx512f"] {
        assert!(cpu.has(feature), "{feature}");
    }
    // Two 512-bit FMA pipes: 32 f64 FLOP/cycle x 4 cores x 3.8 GHz.
    assert_eq!(theoretical(&p, DType::F64), Some(32.0 * 4.0 * 3800e6));
    assert_eq!(p.memory_total_bytes, Some(1056562356 * 1024));
    assert_eq!(p.gpus.len(), 1, "the NIC is not a GPU");
    assert_eq!(p.gpus[0].describe(), "NVIDIA H100 SXM5 80GB");
    assert_eq!(p.gpus[0].pci_address, "0000:18:00.0");
    assert!(
        p.fingerprint.ends_with("gpu=NVIDIA H100 SXM5 80GB"),
        "{}",
        p.fingerprint
    );
}

#[test]
fn arm_neoverse_n1() {
    let p = probe("aarch64-neoverse-n1");
    let cpu = &p.cpu;
    assert_eq!(cpu.architecture, "aarch64");
    assert_eq!(cpu.model.as_deref(), Some("ARM Neoverse-N1"));
    assert_eq!(cpu.vendor.as_deref(), Some("ARM"));
    // ARM prints no physical id / core id: topology comes from sysfs.
    assert_eq!(
        (cpu.sockets, cpu.physical_cores, cpu.logical_cpus),
        (Some(1), Some(4), Some(4))
    );
    assert!(cpu.has("neon") && cpu.has("asimddp") && !cpu.has("sve"));
    assert_eq!(cpu.llc_bytes(), Some(32 << 20));
    assert_eq!(theoretical(&p, DType::F64), Some(8.0 * 4.0 * 2500e6));
    assert_eq!(p.host.os.as_deref(), Some("Amazon Linux 2023"));
}

#[test]
fn arm_grace_with_sve2_and_an_h200() {
    let p = probe("aarch64-grace-v2");
    let cpu = &p.cpu;
    assert_eq!(cpu.model.as_deref(), Some("ARM Neoverse-V2"));
    for feature in ["sve", "sve2", "bf16", "i8mm", "neon"] {
        assert!(cpu.has(feature), "{feature}");
    }
    assert_eq!(theoretical(&p, DType::F64), Some(16.0 * 4.0 * 3375e6));
    assert_eq!(p.gpus[0].describe(), "NVIDIA H200 SXM 141GB");
    assert!(
        p.notes.iter().any(|n| n.contains("os-release")),
        "{:?}",
        p.notes
    );
}

#[test]
fn container_without_sysfs_degrades_to_notes() {
    let p = probe("x86_64-container-no-sysfs");
    let cpu = &p.cpu;
    assert_eq!(
        cpu.model.as_deref(),
        Some("Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz")
    );
    assert_eq!((cpu.physical_cores, cpu.logical_cpus), (Some(2), Some(2)));
    assert!(cpu.caches.is_empty() && cpu.llc_bytes().is_none());
    assert!(p.memory_total_bytes.is_none());
    assert!(p.gpus.is_empty());
    for needle in ["sysfs CPU topology", "/proc/meminfo", "pci"] {
        assert!(
            p.notes.iter().any(|n| n.contains(needle)),
            "{needle} in {:?}",
            p.notes
        );
    }
    // AVX2 + FMA without cpufreq: 16 f64 FLOP/cycle at the cpuinfo clock.
    assert_eq!(theoretical(&p, DType::F64), Some(16.0 * 2.0 * 3400e6));
}

#[test]
fn nothing_readable_still_yields_a_probe() {
    let p = SystemProbe::collect_from(Path::new("/nonexistent-stackbench-root"), false);
    assert!(p.cpu.model.is_none());
    assert!(p.notes.len() >= 4, "{:?}", p.notes);
    assert!(p.fingerprint.starts_with("cpu=unknown"));
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["schema"], "stackbench.system.v1");
}

#[test]
fn the_live_probe_measures_a_cpu_peak() {
    let p = SystemProbe::collect();
    let f64_peak = p
        .peaks
        .iter()
        .find(|p| p.dtype == Some(DType::F64))
        .unwrap();
    // Only "it ran real FMAs": a debug build on a loaded machine is slow, and speed is the
    // business of `stackbench info` in release, not of a test.
    assert!(
        f64_peak.measured.is_some_and(|m| m.is_finite() && m > 1e5),
        "{f64_peak:?}"
    );
    assert!(
        p.backends.values().next().is_some_and(|a| a.is_available()),
        "the CPU backend is always there"
    );
    // The live probe names the CPU BLAS, or why there is none, in its JSON and its table.
    let blas = p
        .cpu_blas
        .as_ref()
        .expect("the live probe looks for a CPU BLAS");
    let json = serde_json::to_value(&p).unwrap();
    let status = json["cpu_blas"]["status"].as_str().unwrap();
    assert!(status == "found" || status == "missing", "{json:#}");
    let row = p.to_text();
    let row = row
        .lines()
        .find(|l| l.contains("cpu blas"))
        .unwrap_or_default();
    assert!(row.contains(&blas.describe()), "{row}");
}

#[test]
fn a_probe_of_another_root_names_no_blas_and_older_probes_load() {
    let p = probe("x86_64-epyc-zen4-vm");
    assert!(
        p.cpu_blas.is_none(),
        "a library here says nothing of that root"
    );
    let mut json = serde_json::to_value(&p).unwrap();
    assert!(json.get("cpu_blas").is_none(), "absent, not null: {json:#}");
    // A probe written before the field existed loads; one with it round-trips.
    let old: SystemProbe = serde_json::from_value(json.clone()).unwrap();
    assert!(old.cpu_blas.is_none());
    json["cpu_blas"] = serde_json::json!({"status": "missing", "reason": "no CPU BLAS found"});
    let with: SystemProbe = serde_json::from_value(json).unwrap();
    assert!(
        with.cpu_blas
            .unwrap()
            .describe()
            .contains("no CPU BLAS found")
    );
}

/// The DIMMs from raw SMBIOS type-17 records (written by
/// tests/fixtures/system/make_dmi_entries.py): 16 of 32 slots, eight DDR5 channels per socket
/// named by the slots, and the bandwidth they allow becomes the CPU's memory peak.
#[test]
fn dimms_from_raw_smbios_records_give_the_memory_peak() {
    use stackbench::system::memory::{MemoryReading, channels::ChannelBasis};
    use stackbench::system::peak::PeakMetric;
    let p = probe("x86_64-xeon-spr-2s");
    let MemoryReading::Read(m) = &p.memory_config else {
        panic!("{:?}", p.memory_config);
    };
    assert_eq!((m.slots, m.dimms.len()), (32, 16));
    assert_eq!((m.channels, m.channels_from), (16, ChannelBasis::Locators));
    assert_eq!(
        (m.transfer_rate_mts, m.data_width_bits),
        (Some(4400), Some(64))
    );
    assert_eq!(m.rate_basis, "configured speed");
    assert_eq!(m.dimms[0].locator.as_deref(), Some("CPU0_DIMM_A1"));
    assert_eq!(m.dimms[0].size_bytes, Some(64 << 30));
    assert_eq!(m.dimms[0].memory_type.as_deref(), Some("DDR5"));
    let peak = 16.0 * 4400e6 * 8.0;
    assert_eq!(m.theoretical_bytes_per_s, Some(peak));
    let memory = p
        .peaks
        .iter()
        .find(|k| k.metric == PeakMetric::BytesPerSecond)
        .expect("a CPU memory peak");
    assert_eq!(memory.theoretical, Some(peak));
    assert!(memory.source.contains("563.2 GB/s"), "{}", memory.source);
    assert!(
        p.to_text()
            .contains("16 of 32 slots populated (DDR5), 16 channel(s)")
    );

    // The VM exposes no DMI: the reading says so instead of guessing.
    let vm = probe("x86_64-epyc-zen4-vm");
    match &vm.memory_config {
        MemoryReading::Unavailable { reason } => assert!(reason.contains("is absent"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(
        !vm.peaks
            .iter()
            .any(|k| k.metric == PeakMetric::BytesPerSecond)
    );
}
