//! Model sweeps (`models/<backend>/<model>-<precision>-<phase>/b<B>_s<S>`): which model runs
//! how fast, where, and in how much memory. The Python worker
//! (`scripts/components/models.py`) builds each model from a published config with random
//! weights and times one phase; this module says what is built and what it should cost:
//!
//! - [`catalogue`]: every model as published dimensions and the config dict they make;
//! - [`count`]: parameter counts, exact to what `transformers` builds;
//! - FLOPs per token, the size class and the predicted memory of a cell (here);
//! - [`plan`]: the sweep's axes, their validation, and the plan file the worker reads.
//!
//! FLOPs per token follow Kaplan et al. (2020): 2 x the weights a token is multiplied by
//! (lookup tables excluded, a tied head counted as the matmul it is, a MoE's inactive experts
//! excluded) plus the attention term 2 x n_layer x context x d_attn.

pub mod catalogue;
pub mod count;
pub mod plan;

pub use catalogue::{Arch, CATALOGUE, Dims, ModelSpec, find};
pub use plan::{Cell, PlanError, SweepAxes, SweepPlan};

use std::fmt;

/// What a model does with its input; decides its phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    Decoder,
    Encoder,
    EncoderDecoder,
    Vision,
    Speech,
}

impl Task {
    /// The name in the plan (`task`).
    pub fn id(self) -> &'static str {
        match self {
            Task::Decoder => "decoder",
            Task::Encoder => "encoder",
            Task::EncoderDecoder => "encoder_decoder",
            Task::Vision => "vision",
            Task::Speech => "speech",
        }
    }

    /// Whether this task generates tokens, so a request loop can serve it (`serve` cells).
    pub fn generates(self) -> bool {
        self.phases().contains(&Phase::Decode)
    }

    /// The phases a cell of this task times, in sweep order (`serve` is added by the plan
    /// only when the sweep has rates).
    pub fn phases(self) -> &'static [Phase] {
        match self {
            Task::Decoder => &[Phase::Prefill, Phase::Decode],
            Task::Encoder | Task::Vision => &[Phase::Forward],
            Task::EncoderDecoder | Task::Speech => &[Phase::Forward, Phase::Decode],
        }
    }

    /// Vision and speech inputs have a fixed size (the config's image, 30 s of audio): the
    /// sequence axis does not apply and their id value is `b<B>`.
    pub fn uses_seq(self) -> bool {
        !matches!(self, Task::Vision | Task::Speech)
    }
}

/// The one timed quantity of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// One forward over B x S prompt tokens (fills the KV cache of a decoder).
    Prefill,
    /// Prefill then `new_tokens` greedy cached steps: the whole generate call.
    Decode,
    /// One forward of an encoder, a vision model or a speech encoder.
    Forward,
    /// Requests arriving at a set rate (Poisson) into a request loop of at most B
    /// concurrent requests, each `new_tokens` long: throughput under load and goodput.
    /// Planned only when the sweep has rates, for the tasks that generate.
    Serve,
}

impl Phase {
    pub fn id(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Forward => "forward",
            Phase::Serve => "serve",
        }
    }
}

/// Declares a closed set of names with `id`, `ALL`, parsing and an error listing the valid
/// ones: precisions, backends and devices are all read from flags and config files.
macro_rules! named_set {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $id:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn id(self) -> &'static str {
                match self { $($name::$variant => $id),+ }
            }

            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.id() == text.trim())
            }

            /// Every valid name, comma-separated, for error messages.
            pub fn valid() -> String {
                $name::ALL.iter().map(|v| v.id()).collect::<Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.id())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.id())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "unknown {} '{text}' (valid: {})",
                        stringify!($name),
                        $name::valid()
                    ))
                })
            }
        }
    };
}

named_set!(
    /// The numeric precision a model runs in.
    Precision { Fp32 => "fp32", Bf16 => "bf16", Fp16 => "fp16", Int8 => "int8" }
);

named_set!(
    /// The runtime that executes the model: the id's second part, one worker each.
    SweepBackend { Torch => "torch", OnnxRuntime => "onnxruntime", OpenVino => "openvino", Vllm => "vllm" }
);

named_set!(
    /// Where the model runs. MPS (Apple GPUs) and QNN (Qualcomm NPUs) are real columns:
    /// a machine without them records every cell as skipped with the reason.
    SweepDevice { Cpu => "cpu", Cuda => "cuda", Rocm => "rocm", Mps => "mps", Qnn => "qnn" }
);

impl SweepBackend {
    /// Whether this sweep has a request loop for the backend (serve cells): vLLM's engine,
    /// and the worker's own loop over torch and ONNX Runtime. OpenVINO has none here.
    pub fn serves(self) -> bool {
        !matches!(self, SweepBackend::OpenVino)
    }
}

impl Precision {
    /// Bytes of one stored weight. INT8 is dynamic quantisation of the linear layers; the
    /// few float weights left (norms, embeddings) are ignored in this estimate.
    pub fn weight_bytes(self) -> u64 {
        match self {
            Precision::Fp32 => 4,
            Precision::Bf16 | Precision::Fp16 => 2,
            Precision::Int8 => 1,
        }
    }

    /// Bytes of one activation: dynamic INT8 quantises weights, activations stay float32.
    pub fn activation_bytes(self) -> u64 {
        match self {
            Precision::Fp32 | Precision::Int8 => 4,
            Precision::Bf16 | Precision::Fp16 => 2,
        }
    }

    /// The probe's peak table's precision for MFU; INT8 has no FLOP peak there.
    pub fn peak_dtype(self) -> Option<crate::workload::DType> {
        use crate::workload::DType;
        match self {
            Precision::Fp32 => Some(DType::F32),
            Precision::Bf16 => Some(DType::Bf16),
            Precision::Fp16 => Some(DType::F16),
            Precision::Int8 => None,
        }
    }
}

/// tiny < 100 M <= small < 1 B <= base < 10 B <= large < 100 B <= xl < 500 B <= xxl.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SizeClass {
    Tiny,
    Small,
    Base,
    Large,
    Xl,
    Xxl,
}

impl SizeClass {
    pub fn of(params: u64) -> SizeClass {
        match params {
            p if p < 100_000_000 => SizeClass::Tiny,
            p if p < 1_000_000_000 => SizeClass::Small,
            p if p < 10_000_000_000 => SizeClass::Base,
            p if p < 100_000_000_000 => SizeClass::Large,
            p if p < 500_000_000_000 => SizeClass::Xl,
            _ => SizeClass::Xxl,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            SizeClass::Tiny => "tiny",
            SizeClass::Small => "small",
            SizeClass::Base => "base",
            SizeClass::Large => "large",
            SizeClass::Xl => "xl",
            SizeClass::Xxl => "xxl",
        }
    }
}

/// The shape of one model the cost formulas need, whatever its architecture.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Geometry {
    /// Layers whose attention a token passes through (both stacks of an encoder-decoder).
    attention_layers: u64,
    /// Layers that keep a KV cache while decoding.
    cached_layers: u64,
    hidden: u64,
    heads: u64,
    /// Width of one cached key (or value) row: KV heads x head size.
    kv_width: u64,
    /// The widest intermediate activation of one layer.
    ffn: u64,
    vocab: u64,
    /// Positions of one sample when the input size is fixed (ViT patches, Whisper frames).
    fixed_tokens: Option<u64>,
    /// The longest sequence the position table allows (`None`: relative or rotary, no limit
    /// in the parameters).
    max_positions: Option<u64>,
}

fn geometry(dims: &Dims) -> Geometry {
    let base = |layers, hidden, heads, ffn, vocab| Geometry {
        attention_layers: layers,
        cached_layers: layers,
        hidden,
        heads,
        kv_width: hidden,
        ffn,
        vocab,
        fixed_tokens: None,
        max_positions: None,
    };
    match *dims {
        Dims::Gpt2(d) => Geometry {
            max_positions: Some(d.positions),
            ..base(d.layers, d.hidden, d.heads, 4 * d.hidden, d.vocab)
        },
        Dims::Llama(d) | Dims::Mixtral(catalogue::MixtralDims { base: d, .. }) => Geometry {
            kv_width: d.kv_heads * (d.hidden / d.heads),
            max_positions: Some(d.positions),
            ..base(d.layers, d.hidden, d.heads, d.intermediate, d.vocab)
        },
        Dims::Bert(d) => Geometry {
            max_positions: Some(d.positions),
            ..base(d.layers, d.hidden, d.heads, d.intermediate, d.vocab)
        },
        Dims::T5(d) => Geometry {
            // Decoder self and cross attention beside the encoder's.
            attention_layers: d.layers + 2 * d.decoder_layers,
            cached_layers: 2 * d.decoder_layers,
            kv_width: d.heads * d.d_kv,
            ..base(d.layers, d.d_model, d.heads, d.d_ff, d.vocab)
        },
        Dims::Vit(d) => Geometry {
            fixed_tokens: Some(count::vit_tokens(&d)),
            ..base(d.layers, d.hidden, d.heads, d.intermediate, 0)
        },
        Dims::Whisper(d) => Geometry {
            cached_layers: 2 * d.decoder_layers,
            fixed_tokens: Some(d.source_positions),
            max_positions: Some(d.target_positions),
            ..base(d.encoder_layers, d.d_model, d.heads, d.ffn, d.vocab)
        },
    }
}

impl ModelSpec {
    /// Every parameter the built model holds.
    pub fn params(&self) -> u64 {
        count::count(&self.dims).total
    }

    pub fn arch(&self) -> Arch {
        self.dims.arch()
    }

    pub fn task(&self) -> Task {
        self.arch().task()
    }

    pub fn size_class(&self) -> SizeClass {
        SizeClass::of(self.params())
    }

    /// Forward FLOPs per token at context 0: 2 x the weights a token is multiplied by
    /// (what the plan's `flops_per_token` carries). Whisper's forward is its encoder alone.
    pub fn flops_per_token(&self) -> u64 {
        if let Dims::Whisper(d) = &self.dims {
            let (encoder, lookup) = count::whisper_encoder(d);
            return 2 * (encoder - lookup);
        }
        2 * count::count(&self.dims).active_matmul()
    }

    /// FLOPs per token at a context of `context` tokens: the attention term
    /// 2 x n_layer x context x d_attn added to [`Self::flops_per_token`].
    pub fn flops_per_token_at(&self, context: u64) -> u64 {
        let g = geometry(&self.dims);
        self.flops_per_token() + 2 * g.attention_layers * context * g.hidden
    }

    /// Tokens one sample of a fixed-size input holds (ViT patches + class token, Whisper's
    /// encoder frames); `None` for text.
    pub fn tokens_per_sample(&self) -> Option<u64> {
        geometry(&self.dims).fixed_tokens
    }

    /// The longest sequence (prompt plus new tokens) the model's position table holds.
    pub fn max_positions(&self) -> Option<u64> {
        geometry(&self.dims).max_positions
    }

    /// FLOPs per element of a cell's throughput (a token, or a sample for vision and
    /// speech), at the cell's context: what MFU multiplies by elements per second. A decode
    /// cell counts its new tokens at their mean context; the prompt's prefill inside the
    /// generate call is left out, so a decode MFU is a lower bound.
    pub fn flops_per_element(&self, cell: &Cell, new_tokens: u64) -> u64 {
        match (self.tokens_per_sample(), cell.phase) {
            (Some(tokens), Phase::Forward) => tokens * self.flops_per_token_at(tokens),
            (_, Phase::Decode | Phase::Serve) => {
                let context = if self.task().uses_seq() { cell.seq } else { 0 };
                self.flops_per_token_at(context + new_tokens / 2)
            }
            _ => self.flops_per_token_at(cell.seq),
        }
    }

    /// Bytes a cell needs on its device: weights at the cell's precision, the KV cache of a
    /// decoding phase, and the activations of the largest layer (hidden states, the
    /// intermediate, one layer's attention scores, the logits). The runtime's own memory
    /// (hundreds of MiB for torch) is not in it: the prediction only refuses cells that
    /// cannot fit; the worker still confirms an out-of-memory on what it tries.
    pub fn predicted_memory_bytes(&self, cell: &Cell, new_tokens: u64) -> u64 {
        let g = geometry(&self.dims);
        let act = cell.precision.activation_bytes();
        let batch = u64::from(cell.batch);
        let weights = self.params() * cell.precision.weight_bytes();
        let tokens = g.fixed_tokens.unwrap_or(cell.seq).max(1);
        // A serve cell holds at most B requests at once, each decoding like a decode cell.
        let decoding = matches!(cell.phase, Phase::Decode | Phase::Serve);
        let cached = match (self.task(), cell.phase) {
            (Task::Decoder, _) => cell.seq + if decoding { new_tokens } else { 0 },
            (_, Phase::Decode | Phase::Serve) => tokens + new_tokens,
            _ => 0,
        };
        let kv_cache = 2 * g.cached_layers * batch * cached * g.kv_width * act;
        let layer = batch * tokens * (4 * g.hidden + g.ffn) * act;
        let scores = batch * g.heads * tokens * tokens * act;
        let logit_rows = if decoding { 1 } else { tokens };
        let logits = match self.task() {
            Task::Decoder | Task::EncoderDecoder => batch * logit_rows * g.vocab * act,
            _ => 0,
        };
        weights + kv_cache + layer + scores + logits
    }
}

impl ModelSpec {
    /// Bytes one decode step must read from device memory, for MBU (decode is bound by
    /// memory, not compute: each step multiplies B token vectors by every weight): the
    /// weights ([`count::ParamCount::active_matmul`]: all but the lookup tables, which
    /// read only B rows; the tied head counted as the matmul it is) at the cell's
    /// precision, plus the whole KV cache at the step's context, keys and values of every
    /// cached layer for each of the B sequences. The context is the mean over the cell's
    /// `new_tokens` steps (prompt + N/2, as [`Self::flops_per_element`] takes it). `None`
    /// for a phase that does not decode or a task that does not generate.
    pub fn decode_step_bytes(&self, cell: &Cell, new_tokens: u64) -> Option<u64> {
        if !matches!(cell.phase, Phase::Decode | Phase::Serve) || !self.task().generates() {
            return None;
        }
        let g = geometry(&self.dims);
        let weights = count::count(&self.dims).active_matmul() * cell.precision.weight_bytes();
        let prompt = match self.task() {
            Task::Decoder => cell.seq,
            _ => g.fixed_tokens.unwrap_or(cell.seq),
        };
        let context = prompt + new_tokens / 2;
        let kv = 2
            * g.cached_layers
            * u64::from(cell.batch)
            * context
            * g.kv_width
            * cell.precision.activation_bytes();
        Some(weights + kv)
    }
}

/// Bytes as GiB with one decimal, for skip reasons.
pub fn gib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(phase: Phase, precision: Precision, batch: u32, seq: u64) -> Cell {
        Cell {
            model: "m".into(),
            precision,
            phase,
            batch,
            seq,
            rate: None,
        }
    }

    #[test]
    fn size_classes_have_their_stated_bounds() {
        assert_eq!(SizeClass::of(99_999_999), SizeClass::Tiny);
        assert_eq!(SizeClass::of(100_000_000), SizeClass::Small);
        assert_eq!(SizeClass::of(999_999_999), SizeClass::Small);
        assert_eq!(SizeClass::of(1_000_000_000), SizeClass::Base);
        assert_eq!(SizeClass::of(10_000_000_000), SizeClass::Large);
        assert_eq!(SizeClass::of(100_000_000_000), SizeClass::Xl);
        assert_eq!(SizeClass::of(499_999_999_999), SizeClass::Xl);
        assert_eq!(SizeClass::of(500_000_000_000), SizeClass::Xxl);
        let class = |name| find(name).unwrap().size_class();
        assert_eq!(class("gpt2-small"), SizeClass::Small);
        assert_eq!(class("tinyllama-1.1b"), SizeClass::Base);
        assert_eq!(class("t5-small"), SizeClass::Tiny);
        assert_eq!(class("mixtral-scaled"), SizeClass::Small);
        for spec in CATALOGUE.iter().filter(|m| m.name.starts_with("ci-")) {
            assert_eq!(spec.size_class(), SizeClass::Tiny, "{}", spec.name);
            assert!(spec.description.starts_with("same architecture as "));
        }
    }

    #[test]
    fn every_published_model_has_a_ci_variant_of_its_architecture() {
        for spec in CATALOGUE.iter().filter(|m| !m.name.starts_with("ci-")) {
            let ci = CATALOGUE
                .iter()
                .find(|m| m.name.starts_with("ci-") && m.arch() == spec.arch());
            assert!(ci.is_some(), "{} has no ci- variant", spec.name);
            assert!(ci.unwrap().description.contains(spec.name));
        }
    }

    #[test]
    fn flops_per_token_is_twice_the_multiplied_weights_plus_attention() {
        let gpt2 = find("gpt2-small").unwrap();
        let per_token = 2 * count::count(&gpt2.dims).active_matmul();
        assert_eq!(gpt2.flops_per_token(), per_token);
        // Kaplan: 2 x n_layer x n_ctx x d_attn on top.
        assert_eq!(
            gpt2.flops_per_token_at(1024),
            per_token + 2 * 12 * 1024 * 768
        );
        // About 2 x 124 M: the 85 M of blocks plus the 38.6 M head matmul.
        assert!((gpt2.flops_per_token() as f64 / 2.47e8 - 1.0).abs() < 0.01);
    }

    #[test]
    fn a_moe_counts_only_its_active_experts() {
        let moe = find("mixtral-scaled").unwrap();
        let all = count::count(&moe.dims);
        assert!(all.inactive_experts > 0);
        assert_eq!(
            moe.flops_per_token(),
            2 * (all.total - all.lookup - all.inactive_experts)
        );
        // 6 of 8 experts idle in each of 8 layers (3 x 1024 x 3584 weights each).
        assert_eq!(all.inactive_experts, 8 * 6 * 3 * 1024 * 3584);
    }

    #[test]
    fn vision_and_speech_count_per_sample() {
        let vit = find("vit-b16").unwrap();
        assert_eq!(vit.tokens_per_sample(), Some(197));
        let forward = cell(Phase::Forward, Precision::Fp32, 1, 0);
        assert_eq!(
            vit.flops_per_element(&forward, 16),
            197 * vit.flops_per_token_at(197)
        );
        let whisper = find("whisper-tiny").unwrap();
        assert_eq!(whisper.tokens_per_sample(), Some(1500));
        // The encoder alone: far below the whole model's 2 x 37.8 M per token.
        assert!(whisper.flops_per_token() < 2 * 10_000_000);
    }

    #[test]
    fn a_decode_step_reads_the_matmul_weights_and_the_kv_cache_at_its_mean_context() {
        let llama = find("tinyllama-1.1b").unwrap();
        // TinyLlama: 22 layers, hidden 2048, FFN 5632, 32 heads with 4 KV heads of 64,
        // vocabulary 32000, untied head. Per layer q,o 2048², k,v 2048x256, gate/up/down
        // 3 x 2048x5632, two RMSNorm weights of 2048; plus the final norm and the head
        // 32000x2048 (the embedding table is a lookup: B rows, left out).
        let per_layer = 2 * 2048 * 2048 + 2 * 2048 * 256 + 3 * 2048 * 5632 + 2 * 2048;
        let matmul = 22 * per_layer + 2048 + 32000 * 2048;
        let decode = cell(Phase::Decode, Precision::Bf16, 1, 512);
        // 16 new tokens: mean context 512 + 8; keys and values, 22 layers, 256 wide, bf16.
        let kv = 2 * 22 * 520 * 256 * 2;
        assert_eq!(llama.decode_step_bytes(&decode, 16), Some(matmul * 2 + kv));
        // Batch 8 reads the weights once and eight caches; fp32 doubles every byte.
        let eight = cell(Phase::Decode, Precision::Bf16, 8, 512);
        assert_eq!(
            llama.decode_step_bytes(&eight, 16),
            Some(matmul * 2 + 8 * kv)
        );
        let fp32 = cell(Phase::Decode, Precision::Fp32, 1, 512);
        assert_eq!(
            llama.decode_step_bytes(&fp32, 16),
            Some(matmul * 4 + 2 * kv)
        );
        // A prefill is compute-bound and has no step; a vision model never decodes.
        let prefill = cell(Phase::Prefill, Precision::Bf16, 1, 512);
        assert_eq!(llama.decode_step_bytes(&prefill, 16), None);
        let vit = find("vit-b16").unwrap();
        assert_eq!(
            vit.decode_step_bytes(&cell(Phase::Forward, Precision::Fp32, 1, 0), 16),
            None
        );
    }

    #[test]
    fn memory_is_weights_plus_kv_cache_plus_activations() {
        let llama = find("tinyllama-1.1b").unwrap();
        let prefill = cell(Phase::Prefill, Precision::Bf16, 1, 512);
        let decode = cell(Phase::Decode, Precision::Bf16, 1, 512);
        let p = llama.predicted_memory_bytes(&prefill, 16);
        let d = llama.predicted_memory_bytes(&decode, 16);
        let weights = llama.params() * 2;
        // KV: 2 x 22 layers x 528 positions x 256 wide (4 KV heads of 64) x 2 bytes.
        let kv_decode = 2 * 22 * 528 * 256 * 2;
        assert!(p > weights && d > weights);
        assert!(p - weights > 2 * 22 * 512 * 256 * 2, "{p}");
        // Decode keeps one row of logits where prefill keeps 512.
        assert!(d < p && d - weights > kv_decode);
        // fp32 doubles the weights; batch grows the rest.
        let fp32 = cell(Phase::Prefill, Precision::Fp32, 1, 512);
        assert!(llama.predicted_memory_bytes(&fp32, 16) > 2 * weights);
        let big = cell(Phase::Prefill, Precision::Bf16, 32, 2048);
        assert!(llama.predicted_memory_bytes(&big, 16) > 10 * (p - weights) + weights);
        assert_eq!(gib(3 << 29), "1.5");
    }

    #[test]
    fn names_parse_and_list_the_valid_ones() {
        assert_eq!(Precision::parse("bf16"), Some(Precision::Bf16));
        assert_eq!(Precision::parse("fp8"), None);
        assert_eq!(Precision::valid(), "fp32, bf16, fp16, int8");
        assert_eq!(SweepBackend::valid(), "torch, onnxruntime, openvino, vllm");
        assert_eq!(SweepDevice::parse("qnn"), Some(SweepDevice::Qnn));
        assert_eq!(Task::Speech.phases(), &[Phase::Forward, Phase::Decode]);
        assert!(!Task::Vision.uses_seq() && Task::EncoderDecoder.uses_seq());
    }
}
