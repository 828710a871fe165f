// One f32 element per word: `half_words.wgsl`'s interface for f32 arrays, so a kernel that
// reads and writes its buffers through it is one source for f32 and for f16 and bf16 (a
// module's `// #variant`s pick the include). `bf` is there for that interface alone.

// Elements per word.
const PER_WORD: u32 = 1u;

// The values of one word, as the arithmetic sees them.
alias Lanes = f32;

// The word that holds element i.
fn word_of(i: u32) -> u32 {
    return i;
}

// Element i, given the word that holds it.
fn element(w: f32, i: u32, bf: bool) -> f32 {
    return w;
}

fn unpack(w: f32, bf: bool) -> Lanes {
    return w;
}

fn pack(v: Lanes, bf: bool) -> f32 {
    return v;
}

// The sum and the largest of a word's values.
fn total(v: Lanes) -> f32 {
    return v;
}

fn largest(v: Lanes) -> f32 {
    return v;
}
