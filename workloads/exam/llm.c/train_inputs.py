"""The inputs of llm.c's GPT-2 training program (train/train_gpt2.cu) with nothing downloaded: random token
shards for its data loader (-i, -j) and a random-init bf16 model file (-e) of any depth.

    python3 workloads/exam/llm.c/train_inputs.py OUT_DIR [--layers 3] [--tokens 32769]

writes OUT_DIR/train_000000.bin, OUT_DIR/val_000000.bin and OUT_DIR/model_d{L}_bf16.bin, in the formats the program
reads (llmc/dataloader.h, gpt2_build_from_checkpoint in train_gpt2.cu):
- a token shard: 256 int32 (magic 20240520, version 1, the token count), then the tokens as uint16, each < 50257;
- a model file: 256 int32 (magic 20240326, version 5 = bf16 with padded vocabulary, max_seq_len, vocab_size,
  num_layers, num_heads, channels, padded_vocab_size), then the 16 parameter tensors in the program's order, bf16,
  initialised as its own `-e dN` descriptor initialises them (weights N(0, 0.02), the two projections into the
  residual stream N(0, 0.02/sqrt(2L)), layernorm weights 1, biases 0, the padded vocabulary rows 0).
The model file is what lets the depth go below the descriptor's smallest (d6: 6 layers, C=384); the program itself is
untouched. Existing files are never overwritten (one line, exit code 2)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

DATA_MAGIC, DATA_VERSION = 20240520, 1
MODEL_MAGIC, MODEL_VERSION_BF16 = 20240326, 5
VOCAB, PADDED_VOCAB = 50257, 50304  # GPT-2's tokenizer; padded to 128 as gpt_build_from_descriptor pads it


def header(*values: int) -> bytes:
    h = np.zeros(256, dtype="<i4")
    h[: len(values)] = values
    return h.tobytes()


def shard(n_tokens: int, rng: np.random.Generator) -> bytes:
    tokens = rng.integers(0, VOCAB, size=n_tokens, dtype=np.uint16)
    return header(DATA_MAGIC, DATA_VERSION, n_tokens) + tokens.astype("<u2").tobytes()


def bf16(x: np.ndarray) -> bytes:
    """float32 -> bfloat16 bits, rounded to nearest even (as the program's (floatX) cast of a float rounds)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()


def model(layers: int, channels: int, heads: int, max_seq_len: int, rng: np.random.Generator) -> bytes:
    """The header and the 16 tensors of fill_in_parameter_sizes, in its order."""
    L, C = layers, channels
    std, proj_std = 0.02, 0.02 / (2.0 * L) ** 0.5

    def normal(n: int, s: float) -> np.ndarray:
        return rng.standard_normal(n, dtype=np.float32) * np.float32(s)

    wte = np.zeros(PADDED_VOCAB * C, dtype=np.float32)
    wte[: VOCAB * C] = normal(VOCAB * C, std)
    ones, zeros = np.ones, np.zeros
    tensors = [
        wte,  # wte
        normal(max_seq_len * C, std),  # wpe
        ones(L * C, np.float32),  # ln1w
        zeros(L * C, np.float32),  # ln1b
        normal(L * 3 * C * C, std),  # qkvw
        zeros(L * 3 * C, np.float32),  # qkvb
        normal(L * C * C, proj_std),  # attprojw
        zeros(L * C, np.float32),  # attprojb
        ones(L * C, np.float32),  # ln2w
        zeros(L * C, np.float32),  # ln2b
        normal(L * 4 * C * C, std),  # fcw
        zeros(L * 4 * C, np.float32),  # fcb
        normal(L * C * 4 * C, proj_std),  # fcprojw
        zeros(L * C, np.float32),  # fcprojb
        ones(C, np.float32),  # lnfw
        zeros(C, np.float32),  # lnfb
    ]
    head = header(MODEL_MAGIC, MODEL_VERSION_BF16, max_seq_len, VOCAB, L, heads, C, PADDED_VOCAB)
    return head + b"".join(bf16(t) for t in tensors)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the folder the three files go to (made if missing)")
    ap.add_argument("--layers", type=int, default=3, help="transformer blocks (the program's -e dN has 6 at least)")
    ap.add_argument("--channels", type=int, default=384, help="C (d6's: 384)")
    ap.add_argument("--heads", type=int, default=6, help="attention heads (d6's: 6)")
    ap.add_argument("--max-seq-len", type=int, default=1024, help="the position table's length (GPT-2's: 1024)")
    ap.add_argument("--tokens", type=int, default=32 * 1024 + 1, help="tokens in the train shard (val: a quarter)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)
    if args.layers < 1 or args.heads < 1 or args.channels % args.heads or args.tokens < 2:
        print("train_inputs: --layers and --heads must be positive, --channels a multiple of --heads", file=sys.stderr)
        return 2
    files = {
        "train_000000.bin": lambda rng: shard(args.tokens, rng),
        "val_000000.bin": lambda rng: shard(max(2, args.tokens // 4), rng),
        f"model_d{args.layers}_bf16.bin": lambda rng: model(
            args.layers, args.channels, args.heads, args.max_seq_len, rng
        ),
    }
    taken = [name for name in files if (args.out / name).exists()]
    if taken:
        print(f"train_inputs: {args.out / taken[0]} exists: not overwriting it (give another folder)", file=sys.stderr)
        return 2
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"train_inputs: cannot make {args.out}: {exc.strerror}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    for name, make in files.items():
        (args.out / name).write_bytes(make(rng))
        print(f"{args.out / name}: {(args.out / name).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
