//! Parameter counts from dimensions, exactly as `transformers` builds each architecture
//! (what `sum(p.numel() for p in model.parameters())` reports, tied weights once), and the
//! split the FLOP formula needs: lookup tables (token, position and type embeddings, T5's
//! relative-position bias) against the weights every token is multiplied by.

use super::catalogue::{
    BertDims, Dims, Gpt2Dims, LlamaDims, MixtralDims, T5Dims, VitDims, WhisperDims,
};

/// A count split by what the FLOP formula does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamCount {
    /// Every parameter the model holds (tied weights once).
    pub total: u64,
    /// Lookup tables: read, never multiplied (token, position, type embeddings, relative
    /// position biases, ViT's class token).
    pub lookup: u64,
    /// A tied output head: held once in `lookup` (the token embedding), but every token's
    /// logits are a matmul with it, so the FLOP formula counts it as a layer.
    pub tied_head: u64,
    /// Expert weights that a token does not run through (MoE: the unchosen experts).
    pub inactive_experts: u64,
}

impl ParamCount {
    /// The weights one token is multiplied by: everything but the lookup tables, the tied
    /// head counted as the matmul it is, and only the active experts.
    pub fn active_matmul(&self) -> u64 {
        self.total - self.lookup + self.tied_head - self.inactive_experts
    }
}

/// The count of the model `dims` describes.
pub fn count(dims: &Dims) -> ParamCount {
    match dims {
        Dims::Gpt2(d) => gpt2(d),
        Dims::Llama(d) => llama(d),
        Dims::Mixtral(d) => mixtral(d),
        Dims::Bert(d) => bert(d),
        Dims::T5(d) => t5(d),
        Dims::Vit(d) => vit(d),
        Dims::Whisper(d) => whisper(d),
    }
}

/// A linear layer's weight and, optionally, its bias.
fn linear(inputs: u64, outputs: u64, bias: bool) -> u64 {
    inputs * outputs + if bias { outputs } else { 0 }
}

/// A LayerNorm with weight and bias.
fn layer_norm(width: u64) -> u64 {
    2 * width
}

fn gpt2(d: &Gpt2Dims) -> ParamCount {
    let h = d.hidden;
    let layer = layer_norm(h)
        + linear(h, 3 * h, true) // c_attn (Conv1D: q, k, v)
        + linear(h, h, true) // attn.c_proj
        + layer_norm(h)
        + linear(h, 4 * h, true) // mlp.c_fc (n_inner = 4 x n_embd)
        + linear(4 * h, h, true); // mlp.c_proj
    let wte = d.vocab * h;
    let wpe = d.positions * h;
    ParamCount {
        total: wte + wpe + d.layers * layer + layer_norm(h),
        lookup: wte + wpe,
        // lm_head is wte (GPT2LMHeadModel ties them).
        tied_head: wte,
        inactive_experts: 0,
    }
}

fn llama_attention(d: &LlamaDims) -> u64 {
    let head_dim = d.hidden / d.heads;
    let kv = d.kv_heads * head_dim;
    linear(d.hidden, d.hidden, false) // q_proj
        + 2 * linear(d.hidden, kv, false) // k_proj, v_proj
        + linear(d.hidden, d.hidden, false) // o_proj
}

/// One SwiGLU MLP (gate, up, down), as a Llama MLP or one Mixtral expert.
fn swiglu(hidden: u64, intermediate: u64) -> u64 {
    3 * linear(hidden, intermediate, false)
}

/// Embedding, final RMSNorm and, unless tied, the head: (total, lookup, tied head).
fn llama_ends(d: &LlamaDims) -> (u64, u64, u64) {
    let embed = d.vocab * d.hidden;
    let head = if d.tied { 0 } else { embed };
    let tied_head = if d.tied { embed } else { 0 };
    (embed + head + d.hidden, embed, tied_head)
}

fn llama(d: &LlamaDims) -> ParamCount {
    // Two RMSNorms (weight only) per layer.
    let layer = llama_attention(d) + swiglu(d.hidden, d.intermediate) + 2 * d.hidden;
    let (ends, lookup, tied_head) = llama_ends(d);
    ParamCount {
        total: d.layers * layer + ends,
        lookup,
        tied_head,
        inactive_experts: 0,
    }
}

fn mixtral(m: &MixtralDims) -> ParamCount {
    let d = &m.base;
    let expert = swiglu(d.hidden, d.intermediate);
    let router = linear(d.hidden, m.experts, false);
    let layer = llama_attention(d) + router + m.experts * expert + 2 * d.hidden;
    let (ends, lookup, tied_head) = llama_ends(d);
    ParamCount {
        total: d.layers * layer + ends,
        lookup,
        tied_head,
        inactive_experts: d.layers * (m.experts - m.top_k.min(m.experts)) * expert,
    }
}

/// One post-norm encoder layer with biases everywhere (BERT's and ViT's).
fn biased_encoder_layer(hidden: u64, intermediate: u64) -> u64 {
    4 * linear(hidden, hidden, true) // query, key, value, attention output
        + 2 * layer_norm(hidden)
        + linear(hidden, intermediate, true)
        + linear(intermediate, hidden, true)
}

fn bert(d: &BertDims) -> ParamCount {
    let lookup = (d.vocab + d.positions + d.type_vocab) * d.hidden;
    let embeddings = lookup + layer_norm(d.hidden);
    let pooler = linear(d.hidden, d.hidden, true);
    ParamCount {
        total: embeddings + d.layers * biased_encoder_layer(d.hidden, d.intermediate) + pooler,
        lookup,
        tied_head: 0,
        inactive_experts: 0,
    }
}

fn t5(d: &T5Dims) -> ParamCount {
    let inner = d.heads * d.d_kv;
    let attention = 4 * linear(d.d_model, inner, false) + d.d_model; // q, k, v, o + norm
    let feed_forward = 2 * linear(d.d_model, d.d_ff, false) + d.d_model; // wi, wo + norm
    let relative_bias = d.buckets * d.heads; // first layer of each stack
    let encoder = d.layers * (attention + feed_forward) + relative_bias + d.d_model;
    let decoder = d.decoder_layers * (2 * attention + feed_forward) + relative_bias + d.d_model;
    let shared = d.vocab * d.d_model;
    ParamCount {
        total: shared + encoder + decoder,
        lookup: shared + 2 * relative_bias,
        // Both stacks' embed_tokens and lm_head are `shared` (tie_word_embeddings).
        tied_head: shared,
        inactive_experts: 0,
    }
}

/// Positions (patches plus the class token) of one image.
pub fn vit_tokens(d: &VitDims) -> u64 {
    (d.image / d.patch).pow(2) + 1
}

fn vit(d: &VitDims) -> ParamCount {
    let patch_conv = d.channels * d.patch * d.patch * d.hidden + d.hidden;
    let class_and_positions = d.hidden + vit_tokens(d) * d.hidden;
    let pooler = linear(d.hidden, d.hidden, true);
    ParamCount {
        total: patch_conv
            + class_and_positions
            + d.layers * biased_encoder_layer(d.hidden, d.intermediate)
            + layer_norm(d.hidden)
            + pooler,
        lookup: class_and_positions,
        tied_head: 0,
        inactive_experts: 0,
    }
}

/// Whisper's attention: q, v, out with bias, k without.
fn whisper_attention(d_model: u64) -> u64 {
    3 * linear(d_model, d_model, true) + linear(d_model, d_model, false) + layer_norm(d_model)
}

/// Whisper's encoder alone, the part a `forward` cell runs: (total, lookup).
pub fn whisper_encoder(d: &WhisperDims) -> (u64, u64) {
    let h = d.d_model;
    let feed_forward = linear(h, d.ffn, true) + linear(d.ffn, h, true) + layer_norm(h);
    let convs = (d.mel_bins * h * 3 + h) + (h * h * 3 + h);
    let positions = d.source_positions * h;
    let layer = whisper_attention(h) + feed_forward;
    (
        convs + positions + d.encoder_layers * layer + layer_norm(h),
        positions,
    )
}

fn whisper(d: &WhisperDims) -> ParamCount {
    let h = d.d_model;
    let feed_forward = linear(h, d.ffn, true) + linear(d.ffn, h, true) + layer_norm(h);
    let (encoder, encoder_lookup) = whisper_encoder(d);
    let tokens = d.vocab * h;
    let positions = d.target_positions * h;
    let decoder_layer = 2 * whisper_attention(h) + feed_forward; // self and cross attention
    let decoder = tokens + positions + d.decoder_layers * decoder_layer + layer_norm(h);
    ParamCount {
        total: encoder + decoder,
        lookup: encoder_lookup + tokens + positions,
        // proj_out is the decoder's embed_tokens.
        tied_head: tokens,
        inactive_experts: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::catalogue::{CATALOGUE, MIXTRAL_8X7B, find};
    use super::*;

    fn total(name: &str) -> u64 {
        count(&find(name).unwrap().dims).total
    }

    #[test]
    fn the_formulas_give_what_transformers_builds_for_the_published_configs() {
        // Each figure is sum(p.numel()) of the transformers class named in the catalogue
        // built from the published config (tied weights once).
        assert_eq!(total("gpt2-small"), 124_439_808);
        assert_eq!(total("tinyllama-1.1b"), 1_100_048_384);
        assert_eq!(total("bert-base"), 109_482_240);
        assert_eq!(total("t5-small"), 60_506_624);
        assert_eq!(total("vit-b16"), 86_389_248);
        assert_eq!(total("whisper-tiny"), 37_760_640);
    }

    #[test]
    fn every_published_count_is_met_within_one_percent() {
        let mut checked = 0;
        for spec in CATALOGUE {
            let Some(published) = spec.published else {
                continue;
            };
            let counted = count(&spec.dims).total as f64;
            let off = (counted - published.params as f64).abs() / published.params as f64;
            assert!(
                off <= 0.01,
                "{}: {counted} vs {} ({})",
                spec.name,
                published.params,
                published.source
            );
            checked += 1;
        }
        assert_eq!(checked, 6);
    }

    #[test]
    fn mixtral_8x7b_has_its_published_total_and_active_counts() {
        // Mistral AI's announcement: 46.7 B parameters, 12.9 B used per token.
        let mixtral = count(&Dims::Mixtral(MIXTRAL_8X7B));
        assert_eq!(mixtral.total, 46_702_792_704);
        let active = mixtral.total - mixtral.inactive_experts;
        assert!((active as f64 / 12.9e9 - 1.0).abs() < 0.01, "{active}");
    }

    #[test]
    fn lookups_and_tied_heads_are_split_out() {
        let gpt2 = count(&find("gpt2-small").unwrap().dims);
        assert_eq!(gpt2.lookup, (50257 + 1024) * 768);
        assert_eq!(gpt2.tied_head, 50257 * 768);
        // The 85 M of the 12 blocks, the final norm, and the head's matmul.
        assert_eq!(
            gpt2.active_matmul(),
            12 * (12 * 768 * 768 + 13 * 768) + 2 * 768 + 50257 * 768
        );
        let llama = count(&find("tinyllama-1.1b").unwrap().dims);
        assert_eq!((llama.lookup, llama.tied_head), (32000 * 2048, 0));
        assert_eq!(llama.active_matmul(), llama.total - 32000 * 2048);
    }
}
