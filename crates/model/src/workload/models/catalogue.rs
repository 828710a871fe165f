//! The models a sweep can build, as their published dimensions: each [`ModelSpec`] holds the
//! dims of one architecture ([`Dims`]), the published parameter count with where it was
//! published, and the `transformers` config dict those dims make. The Python worker builds
//! the model from that dict with random weights (nothing downloaded), so this table is the
//! one source of truth for both sides.
//!
//! Every published model has a reduced `ci-` variant of the same architecture (fewer layers
//! and width, a 1,024-token vocabulary) that the CPU runs in seconds.

use serde_json::{Value, json};

/// The architecture family, which decides the parameter formula and the config class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Gpt2,
    Llama,
    Bert,
    T5,
    Vit,
    Whisper,
    Mixtral,
}

impl Arch {
    pub const ALL: [Arch; 7] = [
        Arch::Gpt2,
        Arch::Llama,
        Arch::Bert,
        Arch::T5,
        Arch::Vit,
        Arch::Whisper,
        Arch::Mixtral,
    ];

    /// The name in the plan (`arch`), which is also `config.json`'s `model_type`.
    pub fn id(self) -> &'static str {
        match self {
            Arch::Gpt2 => "gpt2",
            Arch::Llama => "llama",
            Arch::Bert => "bert",
            Arch::T5 => "t5",
            Arch::Vit => "vit",
            Arch::Whisper => "whisper",
            Arch::Mixtral => "mixtral",
        }
    }

    pub fn parse(model_type: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.id() == model_type)
    }

    /// What the model does with its input, which decides its phases.
    pub fn task(self) -> super::Task {
        use super::Task;
        match self {
            Arch::Gpt2 | Arch::Llama | Arch::Mixtral => Task::Decoder,
            Arch::Bert => Task::Encoder,
            Arch::T5 => Task::EncoderDecoder,
            Arch::Vit => Task::Vision,
            Arch::Whisper => Task::Speech,
        }
    }
}

/// GPT-2 (`GPT2LMHeadModel`): learned positions, biases everywhere, the head tied to `wte`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpt2Dims {
    pub vocab: u64,
    pub positions: u64,
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
}

/// Llama (`LlamaForCausalLM`) and, with experts, Mixtral: RoPE (no position parameters),
/// RMSNorm weights only, no biases, grouped-query attention, SwiGLU MLP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LlamaDims {
    pub vocab: u64,
    pub hidden: u64,
    pub intermediate: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub positions: u64,
    pub tied: bool,
}

/// Mixtral (`MixtralForCausalLM`): Llama's attention, each MLP replaced by `experts`
/// SwiGLU experts of which `top_k` run per token, chosen by a bias-free router.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MixtralDims {
    pub base: LlamaDims,
    pub experts: u64,
    pub top_k: u64,
}

/// BERT (`BertModel`, with its pooler): word, position and token-type embeddings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BertDims {
    pub vocab: u64,
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub intermediate: u64,
    pub positions: u64,
    pub type_vocab: u64,
}

/// T5 (`T5ForConditionalGeneration`, ReLU feed-forward): no biases, weight-only layer
/// norms, a relative-position bias in the first layer of each stack, everything tied to
/// the shared embedding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct T5Dims {
    pub vocab: u64,
    pub d_model: u64,
    pub d_kv: u64,
    pub d_ff: u64,
    pub layers: u64,
    pub decoder_layers: u64,
    pub heads: u64,
    pub buckets: u64,
}

/// ViT (`ViTModel`, with its pooler): a patch convolution, a class token, learned positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VitDims {
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub intermediate: u64,
    pub image: u64,
    pub patch: u64,
    pub channels: u64,
}

/// Whisper (`WhisperForConditionalGeneration`): two convolutions over the mel frames,
/// positions of both stacks as parameters, `k_proj` without bias, `proj_out` tied to the
/// decoder's token embedding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WhisperDims {
    pub vocab: u64,
    pub mel_bins: u64,
    pub d_model: u64,
    pub encoder_layers: u64,
    pub decoder_layers: u64,
    pub heads: u64,
    pub ffn: u64,
    pub source_positions: u64,
    pub target_positions: u64,
}

/// One architecture's dimensions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dims {
    Gpt2(Gpt2Dims),
    Llama(LlamaDims),
    Bert(BertDims),
    T5(T5Dims),
    Vit(VitDims),
    Whisper(WhisperDims),
    Mixtral(MixtralDims),
}

/// A published parameter count and where it was published.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    pub params: u64,
    pub source: &'static str,
}

/// One model of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub dims: Dims,
    /// `None` for the `ci-` variants and the scaled-down Mixtral: nobody published them.
    pub published: Option<Published>,
}

const GPT2_SMALL: Gpt2Dims = Gpt2Dims {
    vocab: 50257,
    positions: 1024,
    hidden: 768,
    layers: 12,
    heads: 12,
};

const TINYLLAMA: LlamaDims = LlamaDims {
    vocab: 32000,
    hidden: 2048,
    intermediate: 5632,
    layers: 22,
    heads: 32,
    kv_heads: 4,
    positions: 2048,
    tied: false,
};

const BERT_BASE: BertDims = BertDims {
    vocab: 30522,
    hidden: 768,
    layers: 12,
    heads: 12,
    intermediate: 3072,
    positions: 512,
    type_vocab: 2,
};

const T5_SMALL: T5Dims = T5Dims {
    vocab: 32128,
    d_model: 512,
    d_kv: 64,
    d_ff: 2048,
    layers: 6,
    decoder_layers: 6,
    heads: 8,
    buckets: 32,
};

const VIT_B16: VitDims = VitDims {
    hidden: 768,
    layers: 12,
    heads: 12,
    intermediate: 3072,
    image: 224,
    patch: 16,
    channels: 3,
};

const WHISPER_TINY: WhisperDims = WhisperDims {
    vocab: 51865,
    mel_bins: 80,
    d_model: 384,
    encoder_layers: 4,
    decoder_layers: 4,
    heads: 6,
    ffn: 1536,
    source_positions: 1500,
    target_positions: 448,
};

/// Mixtral 8x7B's shape (mistralai/Mixtral-8x7B-v0.1 config.json): the formula is checked
/// against its published 46.7 B; the catalogue runs a scaled-down copy of it.
pub const MIXTRAL_8X7B: MixtralDims = MixtralDims {
    base: LlamaDims {
        vocab: 32000,
        hidden: 4096,
        intermediate: 14336,
        layers: 32,
        heads: 32,
        kv_heads: 8,
        positions: 32768,
        tied: false,
    },
    experts: 8,
    top_k: 2,
};

const MIXTRAL_SCALED: MixtralDims = MixtralDims {
    base: LlamaDims {
        vocab: 32000,
        hidden: 1024,
        intermediate: 3584,
        layers: 8,
        heads: 16,
        kv_heads: 4,
        positions: 4096,
        tied: false,
    },
    experts: 8,
    top_k: 2,
};

/// The CI variants share one small vocabulary: the embedding would otherwise dominate.
const CI_VOCAB: u64 = 1024;

/// Every model a sweep can name, published ones first, then their `ci-` variants.
pub const CATALOGUE: &[ModelSpec] = &[
    ModelSpec {
        name: "gpt2-small",
        description: "GPT-2 small (124 M): decoder LM, learned positions, tied head",
        dims: Dims::Gpt2(GPT2_SMALL),
        // The count of openai-community/gpt2 as `GPT2LMHeadModel(GPT2Config())` builds it
        // (Radford et al. 2019 round it to 117 M, which left out the positions and biases).
        published: Some(Published {
            params: 124_439_808,
            source: "Hugging Face openai-community/gpt2 model card: 124 M (124,439,808)",
        }),
    },
    ModelSpec {
        name: "tinyllama-1.1b",
        description: "TinyLlama 1.1B: Llama-2 architecture, grouped-query attention (4 KV heads)",
        dims: Dims::Llama(TINYLLAMA),
        published: Some(Published {
            params: 1_100_048_384,
            source: "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T model card: 1.1 B (1,100,048,384)",
        }),
    },
    ModelSpec {
        name: "bert-base",
        description: "BERT-base uncased (110 M): encoder, counted as BertModel with its pooler",
        dims: Dims::Bert(BERT_BASE),
        published: Some(Published {
            params: 109_482_240,
            source: "Devlin et al. 2019, Table: BERT-base 110 M; BertModel(bert-base-uncased) 109,482,240",
        }),
    },
    ModelSpec {
        name: "t5-small",
        description: "T5-small (60 M): encoder-decoder, relative positions, tied embeddings",
        dims: Dims::T5(T5_SMALL),
        published: Some(Published {
            params: 60_506_624,
            source: "Raffel et al. 2020: T5-small 60 M; google-t5/t5-small 60,506,624",
        }),
    },
    ModelSpec {
        name: "vit-b16",
        description: "ViT-B/16 at 224x224 (86 M): vision encoder, counted as ViTModel with its pooler",
        dims: Dims::Vit(VIT_B16),
        published: Some(Published {
            params: 86_389_248,
            source: "Dosovitskiy et al. 2021, Table 1: ViT-Base 86 M; ViTModel(google/vit-base-patch16-224-in21k) 86,389,248",
        }),
    },
    ModelSpec {
        name: "whisper-tiny",
        description: "Whisper tiny (39 M): speech encoder-decoder over 80 mel bins, 30 s windows",
        dims: Dims::Whisper(WHISPER_TINY),
        published: Some(Published {
            params: 37_760_640,
            source: "Radford et al. 2022, Table 1: tiny 39 M; openai/whisper-tiny 37,760,640",
        }),
    },
    ModelSpec {
        name: "mixtral-scaled",
        description: "Mixtral-style MoE scaled down by stackbench (8 experts, top-2, 8 layers, width 1024): \
                      Mixtral 8x7B's architecture, not its size",
        dims: Dims::Mixtral(MIXTRAL_SCALED),
        published: None,
    },
    ModelSpec {
        name: "ci-gpt2",
        description: "same architecture as gpt2-small, fewer layers and width (2 x 64)",
        dims: Dims::Gpt2(Gpt2Dims {
            vocab: CI_VOCAB,
            positions: 1024,
            hidden: 64,
            layers: 2,
            heads: 2,
        }),
        published: None,
    },
    ModelSpec {
        name: "ci-llama",
        description: "same architecture as tinyllama-1.1b, fewer layers and width (2 x 64, 2 KV heads)",
        dims: Dims::Llama(LlamaDims {
            vocab: CI_VOCAB,
            hidden: 64,
            intermediate: 176,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            positions: 2048,
            tied: false,
        }),
        published: None,
    },
    ModelSpec {
        name: "ci-bert",
        description: "same architecture as bert-base, fewer layers and width (2 x 64)",
        dims: Dims::Bert(BertDims {
            vocab: CI_VOCAB,
            hidden: 64,
            layers: 2,
            heads: 2,
            intermediate: 256,
            positions: 512,
            type_vocab: 2,
        }),
        published: None,
    },
    ModelSpec {
        name: "ci-t5",
        description: "same architecture as t5-small, fewer layers and width (2 + 2 x 64)",
        dims: Dims::T5(T5Dims {
            vocab: CI_VOCAB,
            d_model: 64,
            d_kv: 16,
            d_ff: 256,
            layers: 2,
            decoder_layers: 2,
            heads: 4,
            buckets: 32,
        }),
        published: None,
    },
    ModelSpec {
        name: "ci-vit",
        description: "same architecture as vit-b16, fewer layers and width (2 x 64, 32x32 images)",
        dims: Dims::Vit(VitDims {
            hidden: 64,
            layers: 2,
            heads: 2,
            intermediate: 256,
            image: 32,
            patch: 8,
            channels: 3,
        }),
        published: None,
    },
    ModelSpec {
        name: "ci-whisper",
        description: "same architecture as whisper-tiny, fewer layers and width (2 + 2 x 64)",
        dims: Dims::Whisper(WhisperDims {
            vocab: CI_VOCAB,
            mel_bins: 80,
            d_model: 64,
            encoder_layers: 2,
            decoder_layers: 2,
            heads: 2,
            ffn: 256,
            source_positions: 1500,
            target_positions: 448,
        }),
        published: None,
    },
    ModelSpec {
        name: "ci-mixtral",
        description: "same architecture as mixtral-scaled, fewer layers and width (2 x 64, 4 experts, top-2)",
        dims: Dims::Mixtral(MixtralDims {
            base: LlamaDims {
                vocab: CI_VOCAB,
                hidden: 64,
                intermediate: 128,
                layers: 2,
                heads: 4,
                kv_heads: 2,
                positions: 2048,
                tied: false,
            },
            experts: 4,
            top_k: 2,
        }),
        published: None,
    },
];

/// The model named `name`, if the catalogue has it.
pub fn find(name: &str) -> Option<&'static ModelSpec> {
    CATALOGUE.iter().find(|m| m.name == name)
}

/// Every model name, for "unknown model" errors.
pub fn names() -> Vec<&'static str> {
    CATALOGUE.iter().map(|m| m.name).collect()
}

impl Dims {
    pub fn arch(&self) -> Arch {
        match self {
            Dims::Gpt2(_) => Arch::Gpt2,
            Dims::Llama(_) => Arch::Llama,
            Dims::Bert(_) => Arch::Bert,
            Dims::T5(_) => Arch::T5,
            Dims::Vit(_) => Arch::Vit,
            Dims::Whisper(_) => Arch::Whisper,
            Dims::Mixtral(_) => Arch::Mixtral,
        }
    }

    /// The keyword arguments of the architecture's `transformers` config class
    /// (`GPT2Config`, `LlamaConfig`, ...). Token ids are set inside a reduced vocabulary
    /// so a `ci-` model's special tokens exist in it.
    pub fn hf_config(&self) -> Value {
        match *self {
            Dims::Gpt2(d) => json!({
                "vocab_size": d.vocab, "n_positions": d.positions, "n_embd": d.hidden,
                "n_layer": d.layers, "n_head": d.heads, "tie_word_embeddings": true,
                "bos_token_id": d.vocab - 1, "eos_token_id": d.vocab - 1,
            }),
            Dims::Llama(d) => llama_config(&d),
            Dims::Mixtral(m) => {
                let mut config = llama_config(&m.base);
                config["num_local_experts"] = json!(m.experts);
                config["num_experts_per_tok"] = json!(m.top_k);
                config["rope_theta"] = json!(1e6);
                config
            }
            Dims::Bert(d) => json!({
                "vocab_size": d.vocab, "hidden_size": d.hidden, "num_hidden_layers": d.layers,
                "num_attention_heads": d.heads, "intermediate_size": d.intermediate,
                "max_position_embeddings": d.positions, "type_vocab_size": d.type_vocab,
            }),
            Dims::T5(d) => json!({
                "vocab_size": d.vocab, "d_model": d.d_model, "d_kv": d.d_kv, "d_ff": d.d_ff,
                "num_layers": d.layers, "num_decoder_layers": d.decoder_layers,
                "num_heads": d.heads, "relative_attention_num_buckets": d.buckets,
                "relative_attention_max_distance": 128, "feed_forward_proj": "relu",
                "tie_word_embeddings": true, "decoder_start_token_id": 0,
                "pad_token_id": 0, "eos_token_id": 1,
            }),
            Dims::Vit(d) => json!({
                "hidden_size": d.hidden, "num_hidden_layers": d.layers,
                "num_attention_heads": d.heads, "intermediate_size": d.intermediate,
                "image_size": d.image, "patch_size": d.patch, "num_channels": d.channels,
                "qkv_bias": true,
            }),
            Dims::Whisper(d) => whisper_config(&d),
        }
    }
}

fn llama_config(d: &LlamaDims) -> Value {
    json!({
        "vocab_size": d.vocab, "hidden_size": d.hidden, "intermediate_size": d.intermediate,
        "num_hidden_layers": d.layers, "num_attention_heads": d.heads,
        "num_key_value_heads": d.kv_heads, "max_position_embeddings": d.positions,
        "tie_word_embeddings": d.tied, "hidden_act": "silu", "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2,
    })
}

fn whisper_config(d: &WhisperDims) -> Value {
    // The published special tokens sit at the end of the 51,865-token vocabulary; a
    // reduced one gets its own, and nothing suppressed that is not in it.
    let published = d.vocab == WHISPER_TINY.vocab;
    let (start, end) = if published { (50258, 50257) } else { (2, 1) };
    let mut config = json!({
        "vocab_size": d.vocab, "num_mel_bins": d.mel_bins, "d_model": d.d_model,
        "encoder_layers": d.encoder_layers, "decoder_layers": d.decoder_layers,
        "encoder_attention_heads": d.heads, "decoder_attention_heads": d.heads,
        "encoder_ffn_dim": d.ffn, "decoder_ffn_dim": d.ffn,
        "max_source_positions": d.source_positions, "max_target_positions": d.target_positions,
        "decoder_start_token_id": start, "bos_token_id": end, "eos_token_id": end,
        "pad_token_id": end,
    });
    if !published {
        config["suppress_tokens"] = json!([]);
        config["begin_suppress_tokens"] = json!([]);
    }
    config
}
