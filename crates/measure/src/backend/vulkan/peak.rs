//! Measured peaks on the Vulkan device, vkpeak-style, for `stackbench info --measure`.
