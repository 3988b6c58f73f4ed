"""One training step of a model from a well-known library, built with random weights (no download): nothing here is
ours but the loop, so the profiling cost and the advice are measured on code nobody in this project wrote.

    python3 library_step.py [--model gpt2|resnet] [--compile] [--steps 3] [--layers 2] [--batch 4] [--seq 256]

--model gpt2 (default): `transformers.GPT2LMHeadModel` from a `GPT2Config` (--layers blocks; --size tiny: d_model
256, 4 heads, vocabulary 8192; --size small: GPT-2 small's 768, 12 heads, 50257; dropout 0), its own causal-LM loss on random tokens. --model resnet: `timm.create_model('resnet18',
pretrained=False)` on random 3x64x64 images, cross-entropy. Both: forward, backward, `torch.optim.AdamW` (PyTorch's
default foreach implementation), gradients set to None.
--compile: the model through `torch.compile` (default Inductor backend): its kernels are the Triton code PyTorch's
Inductor generates for this model, public code nobody here wrote; the first warm-up step compiles.
--steps N: N - 1 warm-up steps, then one measured step inside the NVTX ranges "step" (push/pop) and
"step_all_threads" (process-wide: it also holds the backward kernels, which autograd launches from its own thread;
select it with `ncu --nvtx --nvtx-include step_all_threads`). Prints one line with the measured step time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_timing import measured_step  # noqa: E402


# --size: (d_model, heads, vocabulary); "small" is GPT-2 small's (the released 124M model's) width and vocabulary
GPT2_SIZES = {"tiny": (256, 4, 8192), "small": (768, 12, 50257)}


def gpt2(args: argparse.Namespace):
    from transformers import GPT2Config, GPT2LMHeadModel

    width, heads, vocab = GPT2_SIZES[args.size]
    cfg = GPT2Config(
        n_layer=args.layers,
        n_embd=width,
        n_head=heads,
        vocab_size=vocab,
        n_positions=max(1024, args.seq),
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(cfg).cuda().train()
    tokens = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")
    return model, lambda m: m(input_ids=tokens, labels=tokens).loss


def resnet(args: argparse.Namespace):
    import timm

    model = timm.create_model("resnet18", pretrained=False, num_classes=100).cuda().train()
    images = torch.randn(args.batch, 3, 64, 64, device="cuda")
    labels = torch.randint(0, 100, (args.batch,), device="cuda")
    return model, lambda m: torch.nn.functional.cross_entropy(m(images), labels)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("gpt2", "resnet"), default="gpt2")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (Inductor's Triton kernels)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2, help="GPT-2 blocks")
    ap.add_argument("--size", choices=tuple(GPT2_SIZES), default="tiny", help="GPT-2 width and vocabulary")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256, help="GPT-2 tokens per sequence")
    args = ap.parse_args()
    torch.manual_seed(0)
    model, loss_of = (gpt2 if args.model == "gpt2" else resnet)(args)
    run = torch.compile(model) if args.compile else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> torch.Tensor:
        loss = loss_of(run)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    loss, ms, warmup_s = measured_step(step, args.steps)
    print(
        f"library_step model={args.model} compile={args.compile} size={args.size} layers={args.layers} batch={args.batch} "
        f"seq={args.seq} warmup_steps={max(1, args.steps) - 1}: step_ms={ms:.3f} warmup_s={warmup_s:.2f} "
        f"loss={loss.item():.6f} torch={torch.__version__}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
