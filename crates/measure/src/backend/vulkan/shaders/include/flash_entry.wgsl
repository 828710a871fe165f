// One entry point of `attention_flash.wgsl`: `flash_<dt>_d<d>`, the name the backend
// launches, for element type `dt` (`bf` true for bf16) and head dimension `d`.

@compute @workgroup_size(128)
fn flash_${dt}_d$d(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) group: vec3<u32>) {
    flash(${d}u, $bf, t, group);
}
