//! How a vendor backend finds and opens its device, said once for CUDA and ROCm: both load
//! their libraries at run time through crates (cudarc, rocmrc) that panic when a library or
//! symbol is missing, both choose the device by an ordinal in an environment variable, and
//! both read the numbers they keep from the probe's properties.

use crate::backend::{Availability, DeviceInfo};
use std::panic::UnwindSafe;

/// Runs `f`, turning a panic inside the vendor libraries into an error that says `context`
/// and the panic's message: a driver too old for a symbol is a reason, not a crash.
pub(crate) fn unpanicked<T>(
    context: &str,
    f: impl FnOnce() -> Result<T, String> + UnwindSafe,
) -> Result<T, String> {
    std::panic::catch_unwind(f)
        .unwrap_or_else(|panic| Err(format!("{context}: {}", panic_text(&panic))))
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// A probe that never panics: the devices `probe_devices` found, or why there are none.
pub(crate) fn probe(
    context: &str,
    probe_devices: impl FnOnce() -> Result<Vec<DeviceInfo>, String> + UnwindSafe,
) -> Availability {
    match unpanicked(context, probe_devices) {
        Ok(devices) => Availability::Available { devices },
        Err(reason) => Availability::Unavailable { reason },
    }
}

/// The device the variable `env` names (default 0) among those `probed`, with its ordinal;
/// the error is the reason the backend's benchmarks are skipped. `device` names one device
/// in that reason ("CUDA device", "AMD GPU").
pub(crate) fn select(
    probed: Availability,
    env: &str,
    device: &str,
) -> Result<(usize, DeviceInfo), String> {
    select_by(probed, env, std::env::var(env).ok().as_deref(), device)
}

/// [`select`] with the variable's `value` given (as read from the environment).
fn select_by(
    probed: Availability,
    env: &str,
    value: Option<&str>,
    device: &str,
) -> Result<(usize, DeviceInfo), String> {
    let devices = match probed {
        Availability::Available { devices } => devices,
        Availability::Unavailable { reason } => return Err(reason),
    };
    let ordinal = crate::system::device::device_ordinal(env, value)?;
    let info = devices
        .into_iter()
        .nth(ordinal)
        .ok_or_else(|| format!("{env}={ordinal}: no such {device}"))?;
    Ok((ordinal, info))
}

/// A number the probe stored in the device's properties, 0 when it did not.
pub(crate) fn property_u64(info: &DeviceInfo, key: &str) -> u64 {
    info.properties
        .get(key)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// Pushes a kernel's [`Arg`](super::Arg)s onto a vendor launch builder and returns the
/// vendor's launch configuration for a [`Grid`](super::Grid): cudarc's and rocmrc's
/// builders and configs have the same methods and fields but no common trait, so the
/// mapping is written here once as a macro.
macro_rules! vendor_launch {
    ($builder:expr, $config:ident, $grid:expr, $args:expr) => {{
        for arg in $args {
            match arg {
                $crate::backend::gpu::Arg::Ptr(v) | $crate::backend::gpu::Arg::U64(v) => {
                    $builder.arg(v)
                }
                $crate::backend::gpu::Arg::I32(v) => $builder.arg(v),
                $crate::backend::gpu::Arg::F32(v) => $builder.arg(v),
                $crate::backend::gpu::Arg::F64(v) => $builder.arg(v),
            };
        }
        $config {
            grid_dim: $grid.blocks,
            block_dim: ($grid.threads, 1, 1),
            shared_mem_bytes: 0,
        }
    }};
}
pub(crate) use vendor_launch;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;

    fn devices(n: usize) -> Availability {
        Availability::Available {
            devices: (0..n)
                .map(|i| DeviceInfo {
                    backend: BackendKind::Cuda,
                    name: format!("gpu {i}"),
                    properties: [("sm_count".to_owned(), (i as u64 + 10).into())].into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_panic_in_the_libraries_is_a_reason() {
        let got = probe("the X libraries failed while probing", || {
            panic!("no symbol cuFoo")
        });
        assert_eq!(
            got,
            Availability::Unavailable {
                reason: "the X libraries failed while probing: no symbol cuFoo".into()
            }
        );
    }

    #[test]
    fn the_variable_picks_the_device_and_a_missing_one_is_named() {
        // An unset variable is device 0; the variable's name is made up so no test
        // environment sets it, and lies outside STACKBENCH_, whose every name
        // docs/reference/environment.md must document.
        let env = "GPU_OPEN_TEST_NO_SUCH_VARIABLE";
        let (ordinal, info) = select(devices(2), env, "test GPU").unwrap();
        assert_eq!((ordinal, info.name.as_str()), (0, "gpu 0"));
        assert_eq!(property_u64(&info, "sm_count"), 10);
        assert_eq!(property_u64(&info, "l2_bytes"), 0);
        let none = select(devices(0), env, "test GPU").unwrap_err();
        assert_eq!(none, format!("{env}=0: no such test GPU"));
        let reason = Availability::Unavailable {
            reason: "no driver".into(),
        };
        assert_eq!(select(reason, env, "test GPU").unwrap_err(), "no driver");
        // A set variable picks its device; one past the last, or no number, is named.
        let (ordinal, info) = select_by(devices(2), env, Some("1"), "test GPU").unwrap();
        assert_eq!((ordinal, info.name.as_str()), (1, "gpu 1"));
        let past = select_by(devices(2), env, Some("2"), "test GPU").unwrap_err();
        assert_eq!(past, format!("{env}=2: no such test GPU"));
        let word = select_by(devices(2), env, Some("first"), "test GPU").unwrap_err();
        assert_eq!(word, format!("{env}=first is not a device number"));
    }
}
