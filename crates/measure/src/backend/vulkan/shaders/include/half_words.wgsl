// Two 16-bit elements per u32 word, element 2w in the low half of word w: f16 converted
// with unpack2x16float / pack2x16float (core SPIR-V, no shaderFloat16), bf16 as the high
// half of an f32, stored rounded to nearest even (NaN kept). The 16-bit variants of
// `tensor_ops.wgsl`, `attention_flash.wgsl` and `attention_standard.wgsl` include it; their
// f32 variants include `f32_words.wgsl`, the same interface over f32 arrays.

// Elements per word.
const PER_WORD: u32 = 2u;

// The values of one word, as the arithmetic sees them.
alias Lanes = vec2<f32>;

fn bf16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return (b >> 16u) | 0x40u;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

fn unpack(w: u32, bf: bool) -> Lanes {
    if (bf) {
        return vec2<f32>(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u));
    }
    return unpack2x16float(w);
}

fn pack(v: Lanes, bf: bool) -> u32 {
    if (bf) {
        return bf16_bits(v.x) | (bf16_bits(v.y) << 16u);
    }
    return pack2x16float(v);
}

// The word that holds element i.
fn word_of(i: u32) -> u32 {
    return i / 2u;
}

// Element i of a packed array, given the word that holds it (word `word_of(i)`).
fn element(w: u32, i: u32, bf: bool) -> f32 {
    let pair = unpack(w, bf);
    return select(pair.x, pair.y, (i & 1u) == 1u);
}

// The sum and the largest of a word's values.
fn total(v: Lanes) -> f32 {
    return v.x + v.y;
}

fn largest(v: Lanes) -> f32 {
    return max(v.x, v.y);
}
