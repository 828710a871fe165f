//! Which Vulkan device stackbench runs on, and why a device is unsuitable: a pure function
//! of what each device reports, so the reasons are tested without the devices.

use ash::vk;

/// Vulkan's device types, in the order stackbench prefers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceType {
    Discrete,
    Integrated,
    Virtual,
    Other,
    /// A CPU behind a Vulkan driver (Mesa's lavapipe, SwiftShader): its figures describe
    /// the CPU, not a GPU.
    Cpu,
}

impl DeviceType {
    pub fn from_vk(t: vk::PhysicalDeviceType) -> DeviceType {
        match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            DeviceType::Discrete => "discrete_gpu",
            DeviceType::Integrated => "integrated_gpu",
            DeviceType::Virtual => "virtual_gpu",
            DeviceType::Other => "other",
            DeviceType::Cpu => "cpu",
        }
    }
}

/// One queue family: whether it runs compute and its timestamps' valid bits (0: none).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueFamily {
    pub compute: bool,
    pub timestamp_bits: u32,
}

/// What the selection knows of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub device_type: DeviceType,
    pub api_version: u32,
    pub queue_families: Vec<QueueFamily>,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period: f32,
    /// `shaderFloat64`: the STREAM kernels' f64 (Intel Arc has none: those ids skip).
    pub float64: bool,
    /// `shaderFloat16` (Vulkan 1.2) with `storageBuffer16BitAccess` and
    /// `uniformAndStorageBuffer16BitAccess` (naga declares all three for any f16 type): the
    /// f16 FMA peak's; the f16 GEMM and tensor ops do not need it (f16 packed in u32 words).
    pub float16: bool,
    /// `shaderIntegerDotProduct` through `VK_KHR_shader_integer_dot_product` (the instance
    /// is Vulkan 1.2, so the extension, not 1.3 core): the int8 dot-product peak's.
    pub integer_dot: bool,
    pub extensions: Vec<String>,
}

impl Candidate {
    /// The compute queue family with timestamps, if any.
    pub fn compute_family(&self) -> Option<u32> {
        self.queue_families
            .iter()
            .position(|f| f.compute && f.timestamp_bits > 0)
            .map(|i| i as u32)
    }

    /// Valid timestamp bits of the chosen queue family.
    pub fn timestamp_bits(&self) -> u32 {
        self.compute_family()
            .map(|f| self.queue_families[f as usize].timestamp_bits)
            .unwrap_or(0)
    }

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| e == name)
    }

    /// Why this device cannot time stackbench's kernels, or `None` when it can.
    pub fn unsuitable(&self) -> Option<String> {
        if self.api_version < vk::API_VERSION_1_2 {
            return Some(format!(
                "{} offers Vulkan {}; stackbench needs 1.2 or newer",
                self.name,
                version_text(self.api_version)
            ));
        }
        if !self.queue_families.iter().any(|f| f.compute) {
            return Some(format!("{} has no compute queue", self.name));
        }
        let period_ok = self.timestamp_period.is_finite() && self.timestamp_period > 0.0;
        if self.compute_family().is_none() || !period_ok {
            return Some(format!(
                "{} has no compute queue with timestamp queries, so nothing could be timed \
                 on the device",
                self.name
            ));
        }
        None
    }
}

/// "1.3.230" for a packed Vulkan version.
pub fn version_text(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

/// `1` (or `true`, `yes`, `on`) lets the backend run on a CPU behind a Vulkan driver
/// (lavapipe), which it otherwise refuses with the reason ([`refusal`]).
pub const ALLOW_CPU_ENV: &str = "STACKBENCH_VULKAN_ALLOW_CPU";

/// Why `candidate` is not chosen: [`Candidate::unsuitable`], or, unless `allow_cpu`, that
/// it is a CPU behind a Vulkan driver. Such a device (lavapipe, SwiftShader) measures this
/// machine's CPU, which the `cpu` backend measures directly and faster: left in, it took 185
/// of a 295 s quick suite on the project's 2-core VM and printed a CPU's figures under a
/// GPU's name. [`ALLOW_CPU_ENV`] opts in (CI does, on lavapipe).
pub fn refusal(candidate: &Candidate, allow_cpu: bool) -> Option<String> {
    candidate.unsuitable().or_else(|| {
        (!allow_cpu && candidate.device_type == DeviceType::Cpu).then(|| {
            format!(
                "{} is a CPU behind a Vulkan driver: its figures would describe this CPU, \
                 which the cpu backend measures; {}=1 measures it anyway",
                candidate.name, ALLOW_CPU_ENV
            )
        })
    })
}

/// `STACKBENCH_VULKAN_DEVICE`: the index of the device to run on, in the order the loader
/// enumerates them (`vulkaninfo --summary` lists them so); unset, stackbench chooses.
pub const DEVICE_ENV: &str = "STACKBENCH_VULKAN_DEVICE";

/// [`DEVICE_ENV`]'s value: `None` when unset or empty, the index, or an error naming the
/// variable and the value.
pub fn device_index(value: Option<&str>) -> Result<Option<usize>, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse::<usize>().map(Some).map_err(|_| {
            format!("{DEVICE_ENV}={v} is not a device index (0, 1, …, as vulkaninfo lists them)")
        }),
    }
}

/// "0: llvmpipe (cpu), 1: Arc A770 (discrete_gpu)": every device with its index, for an
/// error that asks the user to pick one.
fn listing(candidates: &[Candidate]) -> String {
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{i}: {} ({})", c.name, c.device_type.id()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The device to run on and its compute queue family; or why none will do, naming every
/// device and its reason. With `wanted` (from [`DEVICE_ENV`]) that device or an error:
/// an index past the last device, or a device refused for its reason (a CPU driver still
/// needs [`ALLOW_CPU_ENV`]). Without it: a discrete GPU first, a CPU driver last, and that
/// only when `allow_cpu`.
pub fn choose(
    candidates: &[Candidate],
    allow_cpu: bool,
    wanted: Option<usize>,
) -> Result<(usize, u32), String> {
    if let Some(index) = wanted {
        let Some(c) = candidates.get(index) else {
            return Err(format!(
                "{DEVICE_ENV}={index}, but the loader has {} device(s): {}",
                candidates.len(),
                listing(candidates)
            ));
        };
        return match refusal(c, allow_cpu) {
            None => Ok((index, c.compute_family().expect("suitable"))),
            Some(reason) => Err(format!(
                "{DEVICE_ENV}={index} names a device stackbench refuses: {reason}"
            )),
        };
    }
    let best = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| refusal(c, allow_cpu).is_none())
        .min_by_key(|(i, c)| (c.device_type, *i));
    match best {
        Some((index, c)) => Ok((index, c.compute_family().expect("suitable"))),
        None => Err(format!(
            "no suitable Vulkan device: {}",
            candidates
                .iter()
                .filter_map(|c| refusal(c, allow_cpu))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(name: &str, device_type: DeviceType) -> Candidate {
        Candidate {
            name: name.into(),
            device_type,
            api_version: vk::make_api_version(0, 1, 3, 0),
            queue_families: vec![QueueFamily {
                compute: true,
                timestamp_bits: 64,
            }],
            timestamp_period: 1.0,
            float64: true,
            float16: true,
            integer_dot: true,
            extensions: vec![],
        }
    }

    #[test]
    fn a_gpu_is_chosen_before_a_cpu_driver() {
        let devices = [
            device("llvmpipe", DeviceType::Cpu),
            device("Arc A770", DeviceType::Discrete),
        ];
        assert_eq!(choose(&devices, true, None), Ok((1, 0)));
        assert_eq!(choose(&devices, false, None), Ok((1, 0)));
        assert_eq!(choose(&devices[..1], true, None), Ok((0, 0)));
    }

    #[test]
    fn a_cpu_driver_alone_is_refused_unless_asked_for() {
        let lavapipe = [device("llvmpipe (LLVM 15.0.6, 256 bits)", DeviceType::Cpu)];
        let err = choose(&lavapipe, false, None).unwrap_err();
        assert!(
            err.contains("llvmpipe (LLVM 15.0.6, 256 bits) is a CPU behind a Vulkan driver"),
            "{err}"
        );
        assert!(err.contains("STACKBENCH_VULKAN_ALLOW_CPU=1"), "{err}");
        assert_eq!(choose(&lavapipe, true, None), Ok((0, 0)));
    }

    #[test]
    fn an_unsuitable_device_is_named_with_its_reason() {
        let mut old = device("old", DeviceType::Discrete);
        old.api_version = vk::make_api_version(0, 1, 1, 0);
        let mut graphics_only = device("graphics only", DeviceType::Integrated);
        graphics_only.queue_families[0].compute = false;
        let mut untimed = device("untimed", DeviceType::Integrated);
        untimed.queue_families[0].timestamp_bits = 0;
        let err = choose(&[old, graphics_only, untimed.clone()], true, None).unwrap_err();
        assert!(err.contains("old offers Vulkan 1.1.0"), "{err}");
        assert!(err.contains("graphics only has no compute queue"), "{err}");
        assert!(
            err.contains("untimed has no compute queue with timestamp"),
            "{err}"
        );
        // A second family with timestamps rescues the device.
        untimed.queue_families.push(QueueFamily {
            compute: true,
            timestamp_bits: 36,
        });
        assert_eq!(choose(&[untimed.clone()], true, None), Ok((0, 1)));
        assert_eq!(untimed.timestamp_bits(), 36);
        assert!(choose(&[], true, None).is_err());
    }

    #[test]
    fn a_device_asked_for_by_index_is_taken_even_behind_a_preferred_one() {
        let devices = [
            device("Arc A770", DeviceType::Discrete),
            device("UHD 770", DeviceType::Integrated),
        ];
        assert_eq!(choose(&devices, false, Some(1)), Ok((1, 0)));
        assert_eq!(choose(&devices, false, Some(0)), Ok((0, 0)));
    }

    #[test]
    fn an_index_past_the_last_device_or_on_a_refused_one_is_an_error_naming_it() {
        let devices = [
            device("llvmpipe", DeviceType::Cpu),
            device("Arc A770", DeviceType::Discrete),
        ];
        let past = choose(&devices, true, Some(2)).unwrap_err();
        assert!(past.contains("STACKBENCH_VULKAN_DEVICE=2"), "{past}");
        assert!(
            past.contains("2 device(s): 0: llvmpipe (cpu), 1: Arc A770 (discrete_gpu)"),
            "{past}"
        );
        // A CPU driver asked for by index still needs the CPU opt-in, and says so.
        let cpu = choose(&devices, false, Some(0)).unwrap_err();
        assert!(
            cpu.contains(
                "STACKBENCH_VULKAN_DEVICE=0 names a device stackbench refuses: llvmpipe is a CPU"
            ),
            "{cpu}"
        );
        assert!(cpu.contains("STACKBENCH_VULKAN_ALLOW_CPU=1"), "{cpu}");
        assert_eq!(choose(&devices, true, Some(0)), Ok((0, 0)));
        let mut old = device("old", DeviceType::Discrete);
        old.api_version = vk::make_api_version(0, 1, 1, 0);
        let refused = choose(&[old], true, Some(0)).unwrap_err();
        assert!(
            refused.contains("stackbench needs 1.2 or newer"),
            "{refused}"
        );
    }

    #[test]
    fn the_device_variable_takes_an_index_and_names_anything_else() {
        assert_eq!(device_index(None), Ok(None));
        assert_eq!(device_index(Some("")), Ok(None));
        assert_eq!(device_index(Some(" 1 ")), Ok(Some(1)));
        let bad = device_index(Some("gpu0")).unwrap_err();
        assert!(
            bad.contains("STACKBENCH_VULKAN_DEVICE=gpu0 is not a device index"),
            "{bad}"
        );
        assert!(device_index(Some("-1")).is_err());
    }
}
