//! `cargo bench --bench attention`: forward scaled dot-product attention, the standard kernel
//! (scores materialised) against the fused online-softmax (flash-style) one, causal and not,
//! over sequence lengths. Ids `attention/<backend>/<kernel>[_causal]_<dtype>/b<B>_h<H>_s<S>_d<D>`;
//! throughput 4·B·S²·H·D FLOPs (half when causal). Each record notes the kernel's memory.
//! The family is `stackbench_measure::family::attention`.

fn main() -> std::process::ExitCode {
    stackbench_measure::run(&stackbench_measure::family::attention::Attention)
}
