// Included by `// #include workgroup_reductions` (build.rs pastes it in): the sum and the
// maximum of one f32 per lane over a 256-thread workgroup, through workgroup memory,
// returned to every lane. Call them in uniform control flow (they hold barriers).

var<workgroup> partial: array<f32, 256>;

// The sum of every lane's `v`, returned to every lane.
fn workgroup_sum(lane: u32, v: f32) -> f32 {
    partial[lane] = v;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (lane < half) {
            partial[lane] += partial[lane + half];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}

// The maximum of every lane's `v`, returned to every lane.
fn workgroup_max(lane: u32, v: f32) -> f32 {
    partial[lane] = v;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (lane < half) {
            partial[lane] = max(partial[lane], partial[lane + half]);
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}
