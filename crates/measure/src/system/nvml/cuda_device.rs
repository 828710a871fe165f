//! Which NVML device is the CUDA device a benchmark ran on.
//!
//! The device read is CUDA device `STACKBENCH_CUDA_DEVICE` (default 0) among those
//! `CUDA_VISIBLE_DEVICES` lets CUDA see. NVML ignores that variable and numbers every GPU
//! by PCI bus, so NVML index 0 is not CUDA device 0 on a machine where the variable is set
//! (by Slurm, for instance). [`nvml_index_for`] maps one to the other by PCI bus order or by
//! UUID, never by assuming the indices agree. Telemetry and clock locking both open the
//! device through [`open_cuda_device`], so they cannot disagree about which GPU it is.

use super::{Device, Nvml, nvml};

/// The variable choosing the CUDA device stackbench's CUDA backend opens (the same one
/// `backend::cuda::DEVICE_ENV` is: defined here, as `system` sits below the backends).
pub const CUDA_DEVICE_ENV: &str = "STACKBENCH_CUDA_DEVICE";

/// What NVML says about one of its devices, in NVML's index order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvmlDeviceId {
    /// `00000000:41:00.0`.
    pub pci_bus_id: String,
    /// `GPU-5f4b0f0e-...`.
    pub uuid: String,
    pub name: String,
}

/// A PCI bus id in one spelling: lower case, the domain as 8 hex digits (CUDA and NVML
/// write `00000000:41:00.0`, sysfs and HIP `0000:41:00.0`).
pub fn normalise_pci_bus_id(id: &str) -> String {
    let lower = id.trim().to_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) if rest.contains(':') => {
            let domain =
                u32::from_str_radix(domain, 16).map_or(domain.to_owned(), |d| format!("{d:08x}"));
            format!("{domain}:{rest}")
        }
        _ => lower,
    }
}

/// The NVML index of the device CUDA calls `ordinal`, given `CUDA_VISIBLE_DEVICES`
/// (`visible`, unset = every GPU), `CUDA_DEVICE_ORDER` (`order`) and NVML's devices.
///
/// A visible entry `GPU-<uuid prefix>` names a device by UUID, as CUDA accepts it. A
/// number is an index into CUDA's own enumeration: in PCI bus order under
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID`, and "fastest first" otherwise, which CUDA leaves
/// unspecified among equals. Among identical GPUs that is PCI order in practice; among
/// different ones it cannot be told from here, so the error says how to make it certain.
pub fn nvml_index_for(
    ordinal: usize,
    visible: Option<&str>,
    order: Option<&str>,
    devices: &[NvmlDeviceId],
) -> Result<usize, String> {
    let mut by_pci: Vec<usize> = (0..devices.len()).collect();
    by_pci.sort_by_key(|&i| normalise_pci_bus_id(&devices[i].pci_bus_id));
    let pci_order_holds = order.is_some_and(|o| o.trim() == "PCI_BUS_ID")
        || devices.iter().all(|d| d.name == devices[0].name);
    let by_number = |k: usize| -> Result<usize, String> {
        if !pci_order_holds {
            return Err(format!(
                "cannot tell which GPU CUDA numbers {k} among different models: set \
                 CUDA_DEVICE_ORDER=PCI_BUS_ID or name the GPU by UUID in CUDA_VISIBLE_DEVICES"
            ));
        }
        by_pci
            .get(k)
            .copied()
            .ok_or_else(|| format!("NVML sees {} GPUs, none numbered {k}", devices.len()))
    };
    let Some(visible) = visible.filter(|v| !v.trim().is_empty()) else {
        return by_number(ordinal);
    };
    let entry = visible
        .split(',')
        .map(str::trim)
        .nth(ordinal)
        .ok_or_else(|| format!("CUDA_VISIBLE_DEVICES={visible} has no device {ordinal}"))?;
    if entry.to_lowercase().starts_with("mig-") {
        return Err(format!(
            "CUDA device {ordinal} is a MIG instance ({entry}): NVML's GPU readings would be \
             the whole GPU's"
        ));
    }
    if entry.to_lowercase().starts_with("gpu-") {
        let wanted = entry.to_lowercase();
        let matches: Vec<usize> = (0..devices.len())
            .filter(|&i| devices[i].uuid.to_lowercase().starts_with(&wanted))
            .collect();
        return match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!("no GPU with UUID {entry}")),
            _ => Err(format!("UUID prefix {entry} matches several GPUs")),
        };
    }
    let k = entry.parse::<usize>().map_err(|_| {
        format!("CUDA_VISIBLE_DEVICES entry {entry:?} is neither a number nor a UUID")
    })?;
    by_number(k)
}

/// The GPU this process's CUDA benchmarks run on, as NVML knows it, with what NVML says
/// about it; the error says why not (no driver, a device that cannot be told apart).
pub fn open_cuda_device() -> Result<(Device<'static>, NvmlDeviceId), String> {
    let ordinal = crate::system::device::device_ordinal_from_env(CUDA_DEVICE_ENV)?;
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let order = std::env::var("CUDA_DEVICE_ORDER").ok();
    let nvml = nvml().map_err(|e| e.to_string())?;
    cuda_device_of(nvml, ordinal, visible.as_deref(), order.as_deref())
}

fn cuda_device_of<'n>(
    nvml: &'n Nvml,
    ordinal: usize,
    visible: Option<&str>,
    order: Option<&str>,
) -> Result<(Device<'n>, NvmlDeviceId), String> {
    let devices = nvml
        .devices()
        .map_err(|e| format!("NVML could not describe its devices: {e}"))?;
    let index = nvml_index_for(ordinal, visible, order, &devices)
        .map_err(|why| format!("NVML: which GPU CUDA device {ordinal} is: {why}"))?;
    let device = nvml
        .device_by_index(index as u32)
        .map_err(|e| format!("NVML has no device {index} ({e})"))?;
    Ok((device, devices[index].clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(pci: &str, uuid: &str, name: &str) -> NvmlDeviceId {
        NvmlDeviceId {
            pci_bus_id: pci.into(),
            uuid: uuid.into(),
            name: name.into(),
        }
    }

    /// NVML lists by PCI bus; these are given out of order to show the mapping sorts.
    fn four_h100s() -> Vec<NvmlDeviceId> {
        vec![
            gpu(
                "00000000:C1:00.0",
                "GPU-cccc0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
            gpu(
                "00000000:18:00.0",
                "GPU-aaaa0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
            gpu(
                "00000000:41:00.0",
                "GPU-bbbb0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
            gpu(
                "00000000:E1:00.0",
                "GPU-dddd0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
        ]
    }

    #[test]
    fn cuda_devices_map_to_nvml_by_pci_order_and_by_uuid_not_by_index() {
        let gpus = four_h100s();
        // No CUDA_VISIBLE_DEVICES: CUDA device 0 is the lowest PCI bus, NVML's entry 1 here.
        assert_eq!(nvml_index_for(0, None, None, &gpus), Ok(1));
        assert_eq!(nvml_index_for(2, None, Some("PCI_BUS_ID"), &gpus), Ok(0));
        // Slurm gave this job GPUs 2 and 3: CUDA device 0 is the third by PCI bus.
        assert_eq!(nvml_index_for(0, Some("2,3"), None, &gpus), Ok(0));
        assert_eq!(nvml_index_for(1, Some("2,3"), None, &gpus), Ok(3));
        // By UUID, including the prefix CUDA accepts.
        assert_eq!(
            nvml_index_for(0, Some("GPU-dddd0000-1111"), None, &gpus),
            Ok(3)
        );
        assert_eq!(
            nvml_index_for(1, Some("GPU-aaaa,GPU-bbbb"), None, &gpus),
            Ok(2)
        );
    }

    #[test]
    fn a_device_that_cannot_be_told_apart_is_an_error_never_index_0() {
        let gpus = four_h100s();
        assert!(nvml_index_for(0, Some("GPU-ffff"), None, &gpus).is_err());
        assert!(nvml_index_for(2, Some("0,1"), None, &gpus).is_err());
        assert!(
            nvml_index_for(0, Some("MIG-1234"), None, &gpus)
                .unwrap_err()
                .contains("MIG")
        );
        assert!(nvml_index_for(0, Some("x"), None, &gpus).is_err());
        // Two models: "fastest first" decides CUDA's numbers, unknowable here...
        let mixed = vec![
            gpu("00000000:18:00.0", "GPU-a", "NVIDIA L4"),
            gpu("00000000:41:00.0", "GPU-b", "NVIDIA H100 80GB HBM3"),
        ];
        let error = nvml_index_for(0, None, None, &mixed).unwrap_err();
        assert!(error.contains("CUDA_DEVICE_ORDER=PCI_BUS_ID"), "{error}");
        // ...unless the order is set or the GPU is named.
        assert_eq!(nvml_index_for(0, None, Some("PCI_BUS_ID"), &mixed), Ok(0));
        assert_eq!(nvml_index_for(0, Some("GPU-b"), None, &mixed), Ok(1));
    }

    #[test]
    fn pci_bus_ids_compare_in_one_spelling() {
        assert_eq!(normalise_pci_bus_id("0000:41:00.0"), "00000000:41:00.0");
        assert_eq!(normalise_pci_bus_id("00000000:C1:00.0"), "00000000:c1:00.0");
    }

    #[test]
    fn a_device_number_that_is_not_one_is_an_error_naming_the_variable() {
        use crate::system::device::device_ordinal;
        assert_eq!(device_ordinal(CUDA_DEVICE_ENV, None), Ok(0));
        assert_eq!(device_ordinal(CUDA_DEVICE_ENV, Some(" 2 ")), Ok(2));
        let error = device_ordinal(CUDA_DEVICE_ENV, Some("first")).unwrap_err();
        assert!(
            error.contains(CUDA_DEVICE_ENV) && error.contains("first"),
            "{error}"
        );
    }
}
