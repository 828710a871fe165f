"""The model sweep's plan and models (scripts/components/models.py; design in issue 19).

The Rust side (crates/model/src/workload/models.rs) owns the catalogue: it writes a JSON plan and names
it in ``STACKBENCH_MODELS_PLAN``. This module reads and checks that plan (every error
names the file and the key), builds each model with ``transformers`` from the config dict
in it (random weights from a fixed seed, nothing downloaded) or from a user's local
directory as is, makes the inputs of a cell, and decodes greedily with a KV cache.

Parameters are counted as ``sum(p.numel() for p in model.parameters())`` on the model
class below for each task: tied weights (GPT-2's and T5's LM head, Whisper's output
projection) count once, buffers not at all. The Rust formula counts the same modules:

* decoder: ``AutoModelForCausalLM`` (LM head included; tied heads once);
* encoder: ``AutoModel`` (``BertModel``, pooler included);
* encoder_decoder: ``AutoModelForSeq2SeqLM``;
* vision: ``AutoModel`` (``ViTModel``, pooler included);
* speech: ``AutoModelForSpeechSeq2Seq``.

The plan reader imports only the standard library (the unit tests run it bare); torch and
transformers are passed in.
"""

import json
import os

# Set before transformers is first imported anywhere in the worker: the hub is never asked.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

PLAN_ENV = "STACKBENCH_MODELS_PLAN"
BACKEND_ENV = "STACKBENCH_MODELS_BACKEND"
BACKENDS = ("torch", "onnxruntime", "openvino", "vllm")
DEVICES = ("cpu", "cuda", "rocm", "mps", "qnn")
PRECISIONS = ("fp32", "bf16", "fp16", "int8")

# arch -> the transformers config class the plan's dict is passed to.
CONFIG_CLASSES = {
    "gpt2": "GPT2Config",
    "llama": "LlamaConfig",
    "mixtral": "MixtralConfig",
    "bert": "BertConfig",
    "t5": "T5Config",
    "vit": "ViTConfig",
    "whisper": "WhisperConfig",
}
# task -> (auto class, phases it offers). ``serve`` (requests at a rate, lib/serving.py) is
# planned for the tasks that generate, only when the sweep has rates.
TASKS = {
    "decoder": ("AutoModelForCausalLM", ("prefill", "decode", "serve")),
    "encoder": ("AutoModel", ("forward",)),
    "encoder_decoder": ("AutoModelForSeq2SeqLM", ("forward", "decode", "serve")),
    "vision": ("AutoModel", ("forward",)),
    "speech": ("AutoModelForSpeechSeq2Seq", ("forward", "decode", "serve")),
}
SERVE_SLO_METRICS = ("ttft", "tpot", "e2e")
# Vision and speech inputs have a fixed size from the config: their cells ignore ``seq``.
FIXED_INPUT_TASKS = ("vision", "speech")
SEED = 0


class PlanError(Exception):
    """The plan is missing or malformed; the message names the file and the key."""


def _fail(path, key, message):
    raise PlanError(f"model plan {path}: {key}: {message}")


def _positive_int(path, key, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _fail(path, key, f"expected a positive integer, got {value!r}")
    return value


def _one_of(path, key, value, allowed):
    if value not in allowed:
        _fail(path, key, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _check_model(path, name, model):
    key = f"models.{name}"
    if not isinstance(model, dict):
        _fail(path, key, f"expected an object, got {type(model).__name__}")
    if not name or "/" in name:
        _fail(path, key, "a model name must be non-empty and free of '/' (it is part of a benchmark id)")
    _one_of(path, f"{key}.arch", model.get("arch"), tuple(CONFIG_CLASSES))
    _one_of(path, f"{key}.task", model.get("task"), tuple(TASKS))
    config, local_dir = model.get("config"), model.get("local_dir")
    if (config is None) == (local_dir is None):
        _fail(path, key, "exactly one of config (an object) and local_dir (a directory) must be set")
    if config is not None and not isinstance(config, dict):
        _fail(path, f"{key}.config", f"expected an object of config kwargs, got {type(config).__name__}")
    if local_dir is not None and not os.path.isfile(os.path.join(str(local_dir), "config.json")):
        _fail(path, f"{key}.local_dir", f"{local_dir!r} has no config.json")
    if model.get("params_expected") is not None:
        _positive_int(path, f"{key}.params_expected", model["params_expected"])
    flops = model.get("flops_per_token")
    if flops is not None and (isinstance(flops, bool) or not isinstance(flops, (int, float)) or flops <= 0):
        _fail(path, f"{key}.flops_per_token", f"expected a positive number or null, got {flops!r}")


def _check_cell(path, index, cell, models):
    key = f"cells[{index}]"
    if not isinstance(cell, dict):
        _fail(path, key, f"expected an object, got {type(cell).__name__}")
    name = cell.get("model")
    if name not in models:
        _fail(path, f"{key}.model", f"{name!r} is not in models (have {', '.join(sorted(models))})")
    task = models[name]["task"]
    _one_of(path, f"{key}.precision", cell.get("precision"), PRECISIONS)
    _one_of(path, f"{key}.phase", cell.get("phase"), TASKS[task][1])
    _positive_int(path, f"{key}.batch", cell.get("batch"))
    # A fixed input size (an image, 30 s of audio) has no sequence axis: the Rust plan
    # writes 0 there, a hand-written plan may leave it out.
    if task in FIXED_INPUT_TASKS and cell.get("seq") in (None, 0):
        return
    _positive_int(path, f"{key}.seq", cell.get("seq"))
    rate = cell.get("rate")
    if cell["phase"] == "serve":
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            _fail(path, f"{key}.rate", f"a serve cell needs a positive rate in requests/s, got {rate!r}")
    elif rate is not None:
        _fail(path, f"{key}.rate", f"only a serve cell has a rate; this is a {cell['phase']} cell")


def _check_serve(path, serve):
    if not isinstance(serve, dict):
        _fail(path, "serve", f"serve cells need the serve settings (requests, seed, slos), got {serve!r}")
    _positive_int(path, "serve.requests", serve.get("requests"))
    seed = serve.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        _fail(path, "serve.seed", f"expected a non-negative integer, got {seed!r}")
    slos = serve.get("slos")
    if not isinstance(slos, list):
        _fail(path, "serve.slos", f"expected a list, got {type(slos).__name__}")
    for index, slo in enumerate(slos):
        key = f"serve.slos[{index}]"
        if not isinstance(slo, dict):
            _fail(path, key, f"expected an object, got {type(slo).__name__}")
        _one_of(path, f"{key}.metric", slo.get("metric"), SERVE_SLO_METRICS)
        bound = slo.get("bound_ns")
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound > 0:
            _fail(path, f"{key}.bound_ns", f"expected a positive number of ns, got {bound!r}")


def check_plan(plan, path):
    """Raises ``PlanError`` naming ``path`` and the first bad key; returns ``plan``."""
    if not isinstance(plan, dict):
        _fail(path, "(top level)", f"expected an object, got {type(plan).__name__}")
    if plan.get("version") != 1:
        _fail(path, "version", f"expected 1, got {plan.get('version')!r}")
    _one_of(path, "device", plan.get("device"), DEVICES)
    _positive_int(path, "new_tokens", plan.get("new_tokens"))
    models = plan.get("models")
    if not isinstance(models, dict) or not models:
        _fail(path, "models", "expected a non-empty object of model name -> model")
    for name, model in models.items():
        _check_model(path, name, model)
    cells = plan.get("cells")
    if not isinstance(cells, list):
        _fail(path, "cells", f"expected a list, got {type(cells).__name__}")
    seen = {}
    for index, cell in enumerate(cells):
        _check_cell(path, index, cell, models)
        ident = cell_id(cell, models[cell["model"]])
        if ident in seen:
            _fail(path, f"cells[{index}]", f"the same benchmark {'/'.join(ident)} as cells[{seen[ident]}]")
        seen[ident] = index
    if any(cell["phase"] == "serve" for cell in cells):
        _check_serve(path, plan.get("serve"))
    return plan


def read_plan(environ=None):
    """The checked plan the environment names; ``PlanError`` when it is missing or bad."""
    environ = os.environ if environ is None else environ
    path = environ.get(PLAN_ENV, "").strip()
    if not path:
        raise PlanError(f"{PLAN_ENV} is not set (the path of the sweep's JSON plan, written by `stackbench sweep`)")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise PlanError(f"model plan {path}: cannot read it: {error}") from None
    try:
        plan = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanError(f"model plan {path}: not JSON: {error}") from None
    return check_plan(plan, path)


def read_backend(environ=None):
    environ = os.environ if environ is None else environ
    backend = environ.get(BACKEND_ENV, "").strip()
    if backend not in BACKENDS:
        raise PlanError(f"{BACKEND_ENV}={backend!r} is not one of {', '.join(BACKENDS)}")
    return backend


def rate_text(rate):
    """A rate as the Rust side writes it in ids (its shortest float form: ``8``, ``0.5``);
    the plan's rates lie where Python's repr has no exponent either."""
    text = repr(float(rate))
    return text[:-2] if text.endswith(".0") else text


def cell_id(cell, model):
    """(benchmark, parameters): ``<model>-<precision>-<phase>`` and ``b<B>_s<S>`` (``b<B>``
    where the input size is fixed by the config; a serve cell adds ``_r<rate>``)."""
    benchmark = f"{cell['model']}-{cell['precision']}-{cell['phase']}"
    shape = f"b{cell['batch']}" if model["task"] in FIXED_INPUT_TASKS else f"b{cell['batch']}_s{cell['seq']}"
    if cell.get("rate") is not None:
        shape += f"_r{rate_text(cell['rate'])}"
    return benchmark, shape


def work_unit(task, phase):
    """``tokens`` or ``samples``: what one call's throughput counts."""
    if phase == "forward" and task in FIXED_INPUT_TASKS:
        return "samples"
    return "tokens"


def elements_per_call(cell, task, new_tokens):
    """Work per call: B·N new tokens for decode, B·S prompt tokens for prefill and token
    encoders, B samples for vision and speech forward passes, and N tokens for serve (one
    timed call of a serve cell is one request)."""
    if cell["phase"] == "serve":
        return new_tokens
    if cell["phase"] == "decode":
        return cell["batch"] * new_tokens
    if work_unit(task, cell["phase"]) == "samples":
        return cell["batch"]
    return cell["batch"] * cell["seq"]


# ---- building (torch and transformers passed in) ----


def hf_config(transformers, model):
    """The transformers config of a plan entry."""
    if model.get("local_dir"):
        return transformers.AutoConfig.from_pretrained(model["local_dir"], local_files_only=True)
    return getattr(transformers, CONFIG_CLASSES[model["arch"]])(**model["config"])


def has_weights(local_dir):
    names = os.listdir(local_dir)
    return any(n.endswith(".safetensors") or n in ("pytorch_model.bin", "pytorch_model.bin.index.json") for n in names)


def build_model(torch, transformers, model):
    """(fp32 model on the CPU in eval mode, how its weights were made)."""
    auto = getattr(transformers, TASKS[model["task"]][0])
    config = hf_config(transformers, model)
    local_dir = model.get("local_dir")
    if local_dir and has_weights(local_dir):
        built = auto.from_pretrained(local_dir, local_files_only=True, dtype=torch.float32)
        origin = f"weights from {local_dir}"
    else:
        torch.manual_seed(SEED)
        built = auto.from_config(config, dtype=torch.float32)
        origin = f"random weights, torch.manual_seed({SEED})" + (f", config from {local_dir}" if local_dir else "")
    return built.eval(), origin


def count_params(model):
    """Parameters of the built model; shared (tied) tensors count once."""
    return sum(p.numel() for p in model.parameters())


def count_params_meta(torch, transformers, model):
    """The same count without allocating weights (a model built on the meta device)."""
    auto = getattr(transformers, TASKS[model["task"]][0])
    with torch.device("meta"):
        built = auto.from_config(hf_config(transformers, model))
    return count_params(built)


def mel_frames(config):
    """Whisper's encoder takes exactly 2 × max_source_positions mel frames (3000 = 30 s)."""
    return 2 * config.max_source_positions


def make_inputs(torch, config, task, batch, seq, seed=1):
    """The inputs of one call as a dict of CPU tensors (token ids, pixels or mel frames)."""
    generator = torch.Generator().manual_seed(seed)
    if task == "vision":
        shape = (batch, config.num_channels, config.image_size, config.image_size)
        return {"pixel_values": torch.randn(shape, generator=generator)}
    if task == "speech":
        return {"input_features": torch.randn((batch, config.num_mel_bins, mel_frames(config)), generator=generator)}
    return {"input_ids": torch.randint(0, config.vocab_size, (batch, seq), generator=generator)}


def decoder_start(config):
    """The token an encoder–decoder's decoder starts from."""
    start = getattr(config, "decoder_start_token_id", None)
    if start is None or not 0 <= start < config.vocab_size:
        start = getattr(config, "pad_token_id", None)
    return start if start is not None and 0 <= start < config.vocab_size else 0


def cache_kwarg(model):
    """transformers 5.2x names the KV cache argument ``cache``; earlier releases
    ``past_key_values``."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def output_cache(output):
    fields = getattr(type(output), "__dataclass_fields__", {})
    return getattr(output, "cache" if "cache" in fields else "past_key_values")


def keeps_last_logits(model):
    import inspect

    return "logits_to_keep" in inspect.signature(model.forward).parameters


class GreedyDecoder:
    """Greedy decoding with the KV cache, N new tokens, no stop on EOS: the loop a serving
    engine runs. ``decode(on_first_token)`` calls ``on_first_token`` right after the first
    token is chosen (the TTFT mark) and returns the (B, N) tokens."""

    def __init__(self, torch, model, task, inputs, new_tokens, start_token):
        self.torch, self.model, self.task = torch, model, task
        self.inputs, self.new_tokens = inputs, new_tokens
        self.cache_name = cache_kwarg(model)
        self.seq2seq = task in ("encoder_decoder", "speech")
        self.last_only = {"logits_to_keep": 1} if keeps_last_logits(model) else {}
        batch = next(iter(inputs.values())).shape[0]
        device = next(iter(inputs.values())).device
        self.start = torch.full((batch, 1), start_token, dtype=torch.long, device=device)

    def first(self):
        """Prefill: (logits of the last position, cache, encoder outputs or None)."""
        if self.seq2seq:
            encoded = self.model.get_encoder()(**self.inputs)
            out = self.model(encoder_outputs=encoded, decoder_input_ids=self.start, use_cache=True)
            return out.logits[:, -1], output_cache(out), encoded
        out = self.model(**self.inputs, use_cache=True, **self.last_only)
        return out.logits[:, -1], output_cache(out), None

    def next(self, token, cache, encoded):
        kwargs = {self.cache_name: cache, "use_cache": True}
        if self.seq2seq:
            out = self.model(encoder_outputs=encoded, decoder_input_ids=token, **kwargs)
        else:
            out = self.model(input_ids=token, **kwargs, **self.last_only)
        return out.logits[:, -1], output_cache(out)

    def decode(self, on_first_token=None):
        with self.torch.inference_mode():
            logits, cache, encoded = self.first()
            token = logits.argmax(-1, keepdim=True)
            if on_first_token is not None:
                on_first_token()
            tokens = [token]
            for _ in range(1, self.new_tokens):
                logits, cache = self.next(token, cache, encoded)
                token = logits.argmax(-1, keepdim=True)
                tokens.append(token)
            return self.torch.cat(tokens, dim=1)

    def uncached_logits(self, tokens):
        """The reference: logits at every new position from one forward over the whole
        sequence without a cache (teacher-forced with ``tokens``). Up to the first
        disagreement this is exactly what a greedy decode that recomputes the sequence for
        each token sees, and it also gives the margin at a disagreement."""
        with self.torch.inference_mode():
            if self.seq2seq:
                encoded = self.model.get_encoder()(**self.inputs)
                sequence = self.torch.cat([self.start, tokens[:, :-1]], dim=1)
                return self.model(encoder_outputs=encoded, decoder_input_ids=sequence, use_cache=False).logits
            prompt = self.inputs["input_ids"]
            sequence = self.torch.cat([prompt, tokens[:, :-1]], dim=1)
            logits = self.model(input_ids=sequence, use_cache=False).logits
            return logits[:, prompt.shape[1] - 1 :]


def compare_greedy(torch, cached, reference_logits, tie_tolerance):
    """None when the cached tokens are the reference's argmax at every position, or differ
    only at a near-tie (the reference's best logit within ``tie_tolerance`` × max|logit|
    of the cached token's, where rounding may pick either); else the disagreement."""
    reference = reference_logits.float()
    want = reference.argmax(-1)
    if torch.equal(want.cpu(), cached.cpu()):
        return None
    scale = float(reference.abs().max()) or 1.0
    for row, position in (cached != want).nonzero().tolist():
        chosen = float(reference[row, position, cached[row, position]])
        best = float(reference[row, position, want[row, position]])
        if (best - chosen) / scale > tie_tolerance:
            return (
                f"request {row}, new token {position}: cached decode chose {int(cached[row, position])}, "
                f"an uncached recompute {int(want[row, position])} (logit margin {(best - chosen) / scale:.3g} "
                f"of max|logit|, above the near-tie bound {tie_tolerance:g})"
            )
        # Teacher forcing: later positions saw the cached token too, so they stay comparable.
    return None
