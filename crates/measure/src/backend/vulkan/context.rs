//! The Vulkan objects every workload shares: the loader (dlopen'ed at run time), one
//! instance, the chosen device with one compute queue, buffers named by an id (the
//! `RawBuffer::ptr` the shared GPU workloads pass back as kernel arguments), one command
//! buffer that launches are recorded into and that runs at the next synchronisation, the
//! compute pipelines (created on first use) and a timestamp query pair.

use super::select::{self, Candidate, QueueFamily};
use crate::backend::{BackendError, BackendKind};
use ash::vk;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;
use std::rc::Rc;

/// The loader's file name, tried when [`LIBRARY_ENV`] is unset.
pub const DEFAULT_LIBRARY: &str = "libvulkan.so.1";
/// Environment variable naming the Vulkan loader to load instead of [`DEFAULT_LIBRARY`].
pub const LIBRARY_ENV: &str = "STACKBENCH_VULKAN_LIBRARY";
pub use super::select::ALLOW_CPU_ENV;

static ALLOW_CPU: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets this process run the backend on a CPU driver, as [`ALLOW_CPU_ENV`] does, for a test
/// that must not set the environment of its other threads.
pub fn allow_cpu_driver() {
    ALLOW_CPU.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether a CPU driver may be chosen; a value of [`ALLOW_CPU_ENV`] that is not yes/no is
/// the reason no device is opened.
fn cpu_driver_allowed() -> Result<bool, String> {
    if ALLOW_CPU.load(std::sync::atomic::Ordering::SeqCst) {
        return Ok(true);
    }
    let value = std::env::var(ALLOW_CPU_ENV).ok();
    crate::system::yes_no(ALLOW_CPU_ENV, value.as_deref())
}

/// Wraps a Vulkan error with what was being done.
pub fn vk_error(context: impl Into<String>) -> impl FnOnce(vk::Result) -> BackendError {
    let context = context.into();
    move |result| BackendError::Device {
        backend: BackendKind::Vulkan,
        context,
        message: format!("{result:?}"),
    }
}

/// A device buffer and the memory bound to it.
struct BufferEntry {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    bytes: u64,
}

/// A compute pipeline and its layouts.
struct Pipeline {
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
}

/// Work recorded and not yet submitted.
struct Recorder {
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    recording: bool,
}

/// Everything the backend holds on the device. Dropped last, after every buffer (each
/// buffer's owner keeps an `Rc` of it).
pub struct Context {
    // Field order: `Drop` destroys the device and instance; `entry` (the loader) unloads
    // after, when the fields drop.
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub chosen: Candidate,
    pub library: String,
    pub properties: vk::PhysicalDeviceProperties,
    pub memory: vk::PhysicalDeviceMemoryProperties,
    pub subgroup_size: u32,
    pub driver_name: String,
    pub driver_info: String,
    recorder: RefCell<Recorder>,
    query_pool: vk::QueryPool,
    descriptor_pool: vk::DescriptorPool,
    buffers: RefCell<HashMap<u64, BufferEntry>>,
    next_id: Cell<u64>,
    pipelines: RefCell<HashMap<&'static str, Pipeline>>,
    /// Descriptor sets by kernel and the buffer ids bound, reused across launches.
    sets: RefCell<HashMap<(&'static str, Vec<u64>), vk::DescriptorSet>>,
}

/// The extension that brings the packed int8 dot product (SPIR-V's `OpSDot`, the int8 peak's)
/// to a Vulkan 1.2 instance.
const INTEGER_DOT_EXTENSION: &std::ffi::CStr = ash::khr::shader_integer_dot_product::NAME;

/// Why Vulkan cannot run here, or the context.
pub fn open() -> Result<Context, String> {
    let library = std::env::var(LIBRARY_ENV).unwrap_or_else(|_| DEFAULT_LIBRARY.to_owned());
    // SAFETY: loading the system's Vulkan loader runs its initialisers, as any Vulkan
    // application does; the library is kept alive by `entry` for the context's life.
    let entry = unsafe { ash::Entry::load_from(&library) }
        .map_err(|e| format!("the Vulkan loader {library} could not be loaded: {e}"))?;
    // SAFETY: `entry` holds a loaded loader.
    let loader_version = match unsafe { entry.try_enumerate_instance_version() } {
        Ok(Some(v)) => v,
        Ok(None) => vk::API_VERSION_1_0,
        Err(e) => return Err(format!("{library}: vkEnumerateInstanceVersion: {e:?}")),
    };
    if loader_version < vk::API_VERSION_1_2 {
        return Err(format!(
            "the Vulkan loader {library} offers Vulkan {}; stackbench needs 1.2 or newer",
            select::version_text(loader_version)
        ));
    }
    let app = vk::ApplicationInfo::default()
        .application_name(c"stackbench")
        .api_version(vk::API_VERSION_1_2);
    let create = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: the create info and what it points to live across the call.
    let instance = match unsafe { entry.create_instance(&create, None) } {
        Ok(instance) => instance,
        // The loader found no driver (ICD) at all.
        Err(vk::Result::ERROR_INCOMPATIBLE_DRIVER) => {
            return Err(no_device(&library));
        }
        Err(e) => return Err(format!("{library}: vkCreateInstance: {e:?}")),
    };
    match open_device(entry.clone(), instance.clone(), library.clone()) {
        Ok(context) => Ok(context),
        Err(reason) => {
            // SAFETY: no object of the instance remains (open_device destroyed what it made).
            unsafe { instance.destroy_instance(None) };
            Err(reason)
        }
    }
}

fn no_device(library: &str) -> String {
    format!(
        "the Vulkan loader ({library}) found no device: no driver (ICD) is installed, or \
         VK_ICD_FILENAMES / VK_DRIVER_FILES name none"
    )
}

/// What the selection needs to know of one physical device.
fn describe(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Candidate {
    // SAFETY: `physical` was enumerated from `instance`.
    let properties = unsafe { instance.get_physical_device_properties(physical) };
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
    let extensions: Vec<String> =
        unsafe { instance.enumerate_device_extension_properties(physical) }
            .unwrap_or_default()
            .iter()
            .filter_map(|e| e.extension_name_as_c_str().ok())
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
    let dot_extension = extensions
        .iter()
        .any(|e| e.as_bytes() == INTEGER_DOT_EXTENSION.to_bytes());
    let mut float16_int8 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
    let mut storage16 = vk::PhysicalDevice16BitStorageFeatures::default();
    let mut integer_dot = vk::PhysicalDeviceShaderIntegerDotProductFeatures::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut float16_int8)
        .push_next(&mut storage16);
    if dot_extension {
        features2 = features2.push_next(&mut integer_dot);
    }
    // SAFETY: the chain holds structures of Vulkan 1.2 (checked for below before any of it
    // is used; a 1.1 device leaves unknown structures untouched) and the integer dot
    // product's only where the device lists its extension.
    unsafe { instance.get_physical_device_features2(physical, &mut features2) };
    let float64 = features2.features.shader_float64 == vk::TRUE;
    let float16 = float16_int8.shader_float16 == vk::TRUE
        && storage16.storage_buffer16_bit_access == vk::TRUE
        && storage16.uniform_and_storage_buffer16_bit_access == vk::TRUE;
    let integer_dot = dot_extension && integer_dot.shader_integer_dot_product == vk::TRUE;
    Candidate {
        name: properties
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        device_type: select::DeviceType::from_vk(properties.device_type),
        api_version: properties.api_version,
        queue_families: families
            .iter()
            .map(|f| QueueFamily {
                compute: f.queue_flags.contains(vk::QueueFlags::COMPUTE),
                timestamp_bits: f.timestamp_valid_bits,
            })
            .collect(),
        timestamp_period: properties.limits.timestamp_period,
        float64,
        float16,
        integer_dot,
        extensions,
    }
}

fn open_device(
    entry: ash::Entry,
    instance: ash::Instance,
    library: String,
) -> Result<Context, String> {
    // SAFETY: the instance is live.
    let physicals = unsafe { instance.enumerate_physical_devices() }
        .map_err(|e| format!("{library}: vkEnumeratePhysicalDevices: {e:?}"))?;
    if physicals.is_empty() {
        return Err(no_device(&library));
    }
    let candidates: Vec<Candidate> = physicals.iter().map(|&p| describe(&instance, p)).collect();
    let wanted = select::device_index(std::env::var(select::DEVICE_ENV).ok().as_deref())?;
    let (index, family) = select::choose(&candidates, cpu_driver_allowed()?, wanted)?;
    let physical = physicals[index];
    let chosen = candidates[index].clone();

    let priorities = [1.0f32];
    let queue_info = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    // What the device has of what the kernels use: f64 (STREAM), f16 arithmetic with the
    // 16-bit storage naga declares beside it, and the integer dot product (the peaks).
    let features = vk::PhysicalDeviceFeatures::default().shader_float64(chosen.float64);
    let mut float16 =
        vk::PhysicalDeviceShaderFloat16Int8Features::default().shader_float16(chosen.float16);
    let mut storage16 = vk::PhysicalDevice16BitStorageFeatures::default()
        .storage_buffer16_bit_access(chosen.float16)
        .uniform_and_storage_buffer16_bit_access(chosen.float16);
    let mut integer_dot = vk::PhysicalDeviceShaderIntegerDotProductFeatures::default()
        .shader_integer_dot_product(chosen.integer_dot);
    let dot_extension = [INTEGER_DOT_EXTENSION.as_ptr()];
    let mut create = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queue_info)
        .enabled_features(&features)
        .push_next(&mut float16)
        .push_next(&mut storage16);
    if chosen.integer_dot {
        create = create
            .enabled_extension_names(&dot_extension)
            .push_next(&mut integer_dot);
    }
    // SAFETY: the create info and its arrays live across the call; the features enabled
    // are the ones the device reported, the extension one it listed.
    let device = unsafe { instance.create_device(physical, &create, None) }
        .map_err(|e| format!("{}: vkCreateDevice: {e:?}", chosen.name))?;
    let made = make_objects(&device, family);
    let (recorder, query_pool, descriptor_pool) = match made {
        Ok(objects) => objects,
        Err(e) => {
            // SAFETY: make_objects destroyed what it created; nothing else uses the device.
            unsafe { device.destroy_device(None) };
            return Err(format!("{}: {e}", chosen.name));
        }
    };
    // SAFETY: family `family` was created with one queue.
    let queue = unsafe { device.get_device_queue(family, 0) };
    let (properties, subgroup_size, driver_name, driver_info) =
        device_properties(&instance, physical);
    let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
    Ok(Context {
        entry,
        instance,
        physical,
        device,
        queue,
        chosen,
        library,
        properties,
        memory,
        subgroup_size,
        driver_name,
        driver_info,
        recorder: RefCell::new(recorder),
        query_pool,
        descriptor_pool,
        buffers: RefCell::new(HashMap::new()),
        next_id: Cell::new(1),
        pipelines: RefCell::new(HashMap::new()),
        sets: RefCell::new(HashMap::new()),
    })
}

/// The command pool, buffer and fence, the timestamp queries and the descriptor pool.
fn make_objects(
    device: &ash::Device,
    family: u32,
) -> Result<(Recorder, vk::QueryPool, vk::DescriptorPool), String> {
    fn text(what: &str) -> impl Fn(vk::Result) -> String + '_ {
        move |e| format!("{what}: {e:?}")
    }
    // SAFETY: every create info lives across its call; on an error the objects made
    // before it are destroyed before returning.
    unsafe {
        let pool = device
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
            .map_err(text("vkCreateCommandPool"))?;
        let cleanup_pool = |e: String| {
            device.destroy_command_pool(pool, None);
            e
        };
        let cmd = device
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
            .map_err(text("vkAllocateCommandBuffers"))
            .map_err(cleanup_pool)?[0];
        let fence = device
            .create_fence(&vk::FenceCreateInfo::default(), None)
            .map_err(text("vkCreateFence"))
            .map_err(cleanup_pool)?;
        let query_pool = match device.create_query_pool(
            &vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2),
            None,
        ) {
            Ok(q) => q,
            Err(e) => {
                device.destroy_fence(fence, None);
                return Err(cleanup_pool(text("vkCreateQueryPool")(e)));
            }
        };
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 4 * DESCRIPTOR_SETS,
        }];
        let descriptor_pool = match device.create_descriptor_pool(
            &vk::DescriptorPoolCreateInfo::default()
                .flags(vk::DescriptorPoolCreateFlags::FREE_DESCRIPTOR_SET)
                .max_sets(DESCRIPTOR_SETS)
                .pool_sizes(&sizes),
            None,
        ) {
            Ok(d) => d,
            Err(e) => {
                device.destroy_query_pool(query_pool, None);
                device.destroy_fence(fence, None);
                return Err(cleanup_pool(text("vkCreateDescriptorPool")(e)));
            }
        };
        let recorder = Recorder {
            pool,
            cmd,
            fence,
            recording: false,
        };
        Ok((recorder, query_pool, descriptor_pool))
    }
}

/// Descriptor sets alive at once (one per kernel and set of buffers in use).
const DESCRIPTOR_SETS: u32 = 1024;

/// The core properties, the subgroup size and the driver's name and version text.
fn device_properties(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
) -> (vk::PhysicalDeviceProperties, u32, String, String) {
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut properties2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut subgroup)
        .push_next(&mut driver);
    // SAFETY: the device is Vulkan 1.2 (checked by the selection), which has both structures.
    unsafe { instance.get_physical_device_properties2(physical, &mut properties2) };
    let properties = properties2.properties;
    let text = |c: Result<&CStr, _>| {
        c.map(|s: &CStr| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    (
        properties,
        subgroup.subgroup_size,
        text(driver.driver_name_as_c_str()),
        text(driver.driver_info_as_c_str()),
    )
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every object below was created from this device, none is in use after
        // the wait, and each is destroyed once. Errors cannot be handled in a drop.
        unsafe {
            let _ = self.device.device_wait_idle();
            for (_, pipeline) in self.pipelines.borrow_mut().drain() {
                self.device.destroy_pipeline(pipeline.pipeline, None);
                self.device.destroy_pipeline_layout(pipeline.layout, None);
                self.device
                    .destroy_descriptor_set_layout(pipeline.set_layout, None);
            }
            for (_, entry) in self.buffers.borrow_mut().drain() {
                self.device.destroy_buffer(entry.buffer, None);
                self.device.free_memory(entry.memory, None);
            }
            self.device
                .destroy_descriptor_pool(self.descriptor_pool, None);
            self.device.destroy_query_pool(self.query_pool, None);
            let recorder = self.recorder.borrow();
            self.device.destroy_fence(recorder.fence, None);
            self.device.destroy_command_pool(recorder.pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// Where a buffer's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// The device's own memory (`DEVICE_LOCAL`), where kernels read and write.
    Device,
    /// Host memory the device reads over the bus (`HOST_VISIBLE | HOST_COHERENT`, cached
    /// where offered): Vulkan's page-locked memory, the staging side of transfers.
    Host,
}

impl Context {
    /// Bytes of the largest device-local heap.
    pub fn device_memory_bytes(&self) -> u64 {
        let heaps = &self.memory.memory_heaps[..self.memory.memory_heap_count as usize];
        heaps
            .iter()
            .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .map(|h| h.size)
            .max()
            .unwrap_or(0)
    }

    fn memory_type(&self, bits: u32, memory: Memory) -> Option<u32> {
        let types = &self.memory.memory_types[..self.memory.memory_type_count as usize];
        let wanted: &[vk::MemoryPropertyFlags] = match memory {
            Memory::Device => &[vk::MemoryPropertyFlags::DEVICE_LOCAL],
            Memory::Host => &[
                vk::MemoryPropertyFlags::HOST_VISIBLE
                    | vk::MemoryPropertyFlags::HOST_COHERENT
                    | vk::MemoryPropertyFlags::HOST_CACHED,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            ],
        };
        wanted.iter().find_map(|&flags| {
            (0..types.len() as u32)
                .find(|&i| bits & (1 << i) != 0 && types[i as usize].property_flags.contains(flags))
        })
    }

    /// A new buffer of `bytes` (rounded up to 4) and its id. Not initialised.
    pub fn create_buffer(&self, bytes: usize, memory: Memory) -> Result<u64, BackendError> {
        let size = (bytes.max(4) as u64).div_ceil(4) * 4;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let what = format!("allocating {bytes} bytes");
        // SAFETY: the create info lives across the call; on an error what was made is
        // destroyed before returning.
        unsafe {
            let buffer = self
                .device
                .create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(size)
                        .usage(usage)
                        .sharing_mode(vk::SharingMode::EXCLUSIVE),
                    None,
                )
                .map_err(vk_error(what.clone()))?;
            let needs = self.device.get_buffer_memory_requirements(buffer);
            let Some(type_index) = self.memory_type(needs.memory_type_bits, memory) else {
                self.device.destroy_buffer(buffer, None);
                return Err(BackendError::unsupported(
                    BackendKind::Vulkan,
                    what,
                    format!("the device has no {memory:?} memory type for buffers"),
                ));
            };
            let allocated = self.device.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(needs.size)
                    .memory_type_index(type_index),
                None,
            );
            let memory = match allocated {
                Ok(m) => m,
                Err(e) => {
                    self.device.destroy_buffer(buffer, None);
                    return Err(vk_error(what)(e));
                }
            };
            if let Err(e) = self.device.bind_buffer_memory(buffer, memory, 0) {
                self.device.destroy_buffer(buffer, None);
                self.device.free_memory(memory, None);
                return Err(vk_error(what)(e));
            }
            let id = self.next_id.get();
            self.next_id.set(id + 1);
            self.buffers.borrow_mut().insert(
                id,
                BufferEntry {
                    buffer,
                    memory,
                    bytes: size,
                },
            );
            Ok(id)
        }
    }

    /// Frees buffer `id` after the work that uses it, and the descriptor sets naming it.
    pub fn destroy_buffer(&self, id: u64) {
        let _ = self.synchronize();
        let mut sets = self.sets.borrow_mut();
        let stale: Vec<_> = sets
            .keys()
            .filter(|(_, ids)| ids.contains(&id))
            .cloned()
            .collect();
        for key in stale {
            if let Some(set) = sets.remove(&key) {
                // SAFETY: the set came from this pool and no pending work uses it.
                let _ = unsafe {
                    self.device
                        .free_descriptor_sets(self.descriptor_pool, &[set])
                };
            }
        }
        if let Some(entry) = self.buffers.borrow_mut().remove(&id) {
            // SAFETY: no work uses the buffer after the synchronisation above.
            unsafe {
                self.device.destroy_buffer(entry.buffer, None);
                self.device.free_memory(entry.memory, None);
            }
        }
    }

    fn entry(&self, id: u64) -> Result<(vk::Buffer, u64), BackendError> {
        self.buffers
            .borrow()
            .get(&id)
            .map(|e| (e.buffer, e.bytes))
            .ok_or_else(|| BackendError::Device {
                backend: BackendKind::Vulkan,
                context: "finding a buffer".into(),
                message: format!("no buffer with id {id} (freed, or not a Vulkan buffer)"),
            })
    }

    /// The buffer's size in bytes.
    pub fn buffer_bytes(&self, id: u64) -> Result<u64, BackendError> {
        Ok(self.entry(id)?.1)
    }

    /// Maps a host-memory buffer for `f` to read or write.
    pub fn with_mapped<R>(
        &self,
        id: u64,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, BackendError> {
        let memory = self.buffers.borrow().get(&id).map(|e| (e.memory, e.bytes));
        let (memory, bytes) = memory.ok_or_else(|| BackendError::Device {
            backend: BackendKind::Vulkan,
            context: "mapping a buffer".into(),
            message: format!("no buffer with id {id}"),
        })?;
        // SAFETY: the memory is host-visible (callers map only `Memory::Host` buffers),
        // mapped once at a time, and unmapped before returning; coherent, so no flush.
        unsafe {
            let ptr = self
                .device
                .map_memory(memory, 0, bytes, vk::MemoryMapFlags::empty())
                .map_err(vk_error("mapping host memory"))?;
            let slice = std::slice::from_raw_parts_mut(ptr as *mut u8, bytes as usize);
            let out = f(slice);
            self.device.unmap_memory(memory);
            Ok(out)
        }
    }

    /// The command buffer being recorded, begun if it was not.
    pub fn cmd(&self) -> Result<vk::CommandBuffer, BackendError> {
        let mut recorder = self.recorder.borrow_mut();
        if !recorder.recording {
            // SAFETY: the buffer is not pending (synchronize waited for it) and was reset.
            unsafe {
                self.device.begin_command_buffer(
                    recorder.cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
            }
            .map_err(vk_error("beginning a command buffer"))?;
            recorder.recording = true;
        }
        Ok(recorder.cmd)
    }

    /// Makes the writes of everything recorded so far visible to what is recorded next.
    pub fn barrier(&self, cmd: vk::CommandBuffer) {
        let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
        let access = vk::AccessFlags::SHADER_READ
            | vk::AccessFlags::SHADER_WRITE
            | vk::AccessFlags::TRANSFER_READ
            | vk::AccessFlags::TRANSFER_WRITE;
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(access)
            .dst_access_mask(access)];
        // SAFETY: `cmd` is recording.
        unsafe {
            self.device.cmd_pipeline_barrier(
                cmd,
                stages,
                stages,
                vk::DependencyFlags::empty(),
                &barrier,
                &[],
                &[],
            )
        };
    }

    /// Submits what was recorded and waits for it.
    pub fn synchronize(&self) -> Result<(), BackendError> {
        let mut recorder = self.recorder.borrow_mut();
        if !recorder.recording {
            return Ok(());
        }
        recorder.recording = false;
        let cmd = [recorder.cmd];
        // SAFETY: the command buffer is recording and owned here; the fence is unsignalled
        // (reset after every wait); the queue is used from this thread only.
        unsafe {
            self.device
                .end_command_buffer(recorder.cmd)
                .map_err(vk_error("ending a command buffer"))?;
            let submit = [vk::SubmitInfo::default().command_buffers(&cmd)];
            let submitted = self
                .device
                .queue_submit(self.queue, &submit, recorder.fence)
                .map_err(vk_error("submitting work"));
            let waited = submitted.and_then(|()| {
                self.device
                    .wait_for_fences(&[recorder.fence], true, u64::MAX)
                    .map_err(vk_error("waiting for the device"))
            });
            let _ = self.device.reset_fences(&[recorder.fence]);
            let _ = self
                .device
                .reset_command_buffer(recorder.cmd, vk::CommandBufferResetFlags::empty());
            waited
        }
    }

    /// Records a copy of `bytes` from one buffer to another.
    pub fn copy(&self, from: u64, to: u64, bytes: u64) -> Result<(), BackendError> {
        let (src, _) = self.entry(from)?;
        let (dst, _) = self.entry(to)?;
        let cmd = self.cmd()?;
        let region = [vk::BufferCopy::default().size(bytes)];
        // SAFETY: both buffers hold at least `bytes` (callers size them); `cmd` is recording.
        unsafe { self.device.cmd_copy_buffer(cmd, src, dst, &region) };
        self.barrier(cmd);
        Ok(())
    }

    /// Records a fill of the whole buffer with a 32-bit pattern.
    pub fn fill(&self, id: u64, word: u32) -> Result<(), BackendError> {
        let (buffer, _) = self.entry(id)?;
        let cmd = self.cmd()?;
        // SAFETY: the buffer is live; WHOLE_SIZE covers it (its size is a multiple of 4).
        unsafe {
            self.device
                .cmd_fill_buffer(cmd, buffer, 0, vk::WHOLE_SIZE, word)
        };
        self.barrier(cmd);
        Ok(())
    }

    /// Records a timestamp (query 0 or 1) once the work recorded before it has finished.
    pub fn timestamp(&self, query: u32) -> Result<(), BackendError> {
        let cmd = self.cmd()?;
        // SAFETY: `cmd` is recording; the pool holds two queries.
        unsafe {
            if query == 0 {
                self.device.cmd_reset_query_pool(cmd, self.query_pool, 0, 2);
            }
            self.device.cmd_write_timestamp(
                cmd,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                self.query_pool,
                query,
            );
        }
        Ok(())
    }

    /// Nanoseconds between the two timestamps, after [`Context::synchronize`].
    pub fn elapsed_ns(&self) -> Result<f64, BackendError> {
        let mut ticks = [0u64; 2];
        // SAFETY: both queries were written by the work just waited for.
        unsafe {
            self.device.get_query_pool_results(
                self.query_pool,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(vk_error("reading the timestamps"))?;
        let bits = self.chosen.timestamp_bits();
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let delta = ticks[1].wrapping_sub(ticks[0]) & mask;
        Ok(delta as f64 * self.chosen.timestamp_period as f64)
    }

    /// Records `kernel` over `groups` workgroups with `buffers` bound in order and
    /// `immediates` as its push constants. The pipeline is made on first use.
    pub fn dispatch(
        &self,
        kernel: &'static str,
        spirv: &'static [u8],
        buffers: &[u64],
        immediates: &[u8],
        groups: (u32, u32, u32),
    ) -> Result<(), BackendError> {
        let limit = self.properties.limits.max_storage_buffer_range as u64;
        let mut handles = Vec::with_capacity(buffers.len());
        for &id in buffers {
            let (buffer, bytes) = self.entry(id)?;
            if bytes > limit {
                return Err(BackendError::unsupported(
                    BackendKind::Vulkan,
                    kernel,
                    format!(
                        "a buffer of {bytes} bytes is past this device's \
                         maxStorageBufferRange ({limit} bytes)"
                    ),
                ));
            }
            handles.push(buffer);
        }
        let max = self.properties.limits.max_compute_work_group_count;
        if groups.0 > max[0] || groups.1 > max[1] || groups.2 > max[2] {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                kernel,
                format!("{groups:?} workgroups is past this device's limit {max:?}"),
            ));
        }
        self.ensure_pipeline(kernel, spirv, buffers.len() as u32, immediates.len() as u32)?;
        let pipelines = self.pipelines.borrow();
        let pipeline = &pipelines[kernel];
        let set = self.descriptor_set(kernel, pipeline.set_layout, buffers, &handles)?;
        let cmd = self.cmd()?;
        // SAFETY: `cmd` is recording; the pipeline, set and push range match the kernel's
        // layout (made from the same argument list).
        unsafe {
            self.device
                .cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
            self.device.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                pipeline.layout,
                0,
                &[set],
                &[],
            );
            if !immediates.is_empty() {
                self.device.cmd_push_constants(
                    cmd,
                    pipeline.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    immediates,
                );
            }
            self.device.cmd_dispatch(cmd, groups.0, groups.1, groups.2);
        }
        self.barrier(cmd);
        Ok(())
    }

    fn descriptor_set(
        &self,
        kernel: &'static str,
        layout: vk::DescriptorSetLayout,
        ids: &[u64],
        buffers: &[vk::Buffer],
    ) -> Result<vk::DescriptorSet, BackendError> {
        let key = (kernel, ids.to_vec());
        if let Some(&set) = self.sets.borrow().get(&key) {
            return Ok(set);
        }
        let layouts = [layout];
        // SAFETY: the pool and layout are live; the writes name buffers that are live.
        let set = unsafe {
            self.device.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(self.descriptor_pool)
                    .set_layouts(&layouts),
            )
        }
        .map_err(vk_error(format!("a descriptor set for {kernel}")))?[0];
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = buffers
            .iter()
            .map(|&buffer| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(buffer)
                    .range(vk::WHOLE_SIZE)]
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(binding, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(binding as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: as above.
        unsafe { self.device.update_descriptor_sets(&writes, &[]) };
        self.sets.borrow_mut().insert(key, set);
        Ok(set)
    }

    fn ensure_pipeline(
        &self,
        kernel: &'static str,
        spirv: &'static [u8],
        bindings: u32,
        immediate_bytes: u32,
    ) -> Result<(), BackendError> {
        if self.pipelines.borrow().contains_key(kernel) {
            return Ok(());
        }
        let what = format!("creating the pipeline of {kernel}");
        let words = ash::util::read_spv(&mut std::io::Cursor::new(spirv)).map_err(|e| {
            BackendError::Device {
                backend: BackendKind::Vulkan,
                context: what.clone(),
                message: e.to_string(),
            }
        })?;
        let layout_bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(immediate_bytes)];
        let ranges: &[vk::PushConstantRange] = if immediate_bytes == 0 { &[] } else { &ranges };
        let name = std::ffi::CString::new(kernel).expect("kernel names have no NUL");
        // SAFETY: every create info lives across its call; objects made before an error
        // are destroyed before returning.
        unsafe {
            let module = self
                .device
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
                .map_err(vk_error(what.clone()))?;
            let set_layout = self
                .device
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&layout_bindings),
                    None,
                )
                .map_err(vk_error(what.clone()));
            let set_layout = match set_layout {
                Ok(l) => l,
                Err(e) => {
                    self.device.destroy_shader_module(module, None);
                    return Err(e);
                }
            };
            let set_layouts = [set_layout];
            let layout = self.device.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&set_layouts)
                    .push_constant_ranges(ranges),
                None,
            );
            let layout = match layout {
                Ok(l) => l,
                Err(e) => {
                    self.device.destroy_shader_module(module, None);
                    self.device.destroy_descriptor_set_layout(set_layout, None);
                    return Err(vk_error(what)(e));
                }
            };
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(&name);
            let create = [vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(layout)];
            let made =
                self.device
                    .create_compute_pipelines(vk::PipelineCache::null(), &create, None);
            self.device.destroy_shader_module(module, None);
            let pipeline = match made {
                Ok(p) => p[0],
                Err((_, e)) => {
                    self.device.destroy_pipeline_layout(layout, None);
                    self.device.destroy_descriptor_set_layout(set_layout, None);
                    return Err(vk_error(what)(e));
                }
            };
            self.pipelines.borrow_mut().insert(
                kernel,
                Pipeline {
                    pipeline,
                    layout,
                    set_layout,
                },
            );
        }
        Ok(())
    }
}

/// A buffer's owner inside a `RawBuffer`: frees it when the workload drops it.
pub struct OwnedBuffer {
    pub context: Rc<Context>,
    pub id: u64,
}

impl Drop for OwnedBuffer {
    fn drop(&mut self) {
        self.context.destroy_buffer(self.id);
    }
}
