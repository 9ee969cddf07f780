#!/usr/bin/python3
"""gradscope's training step beside PyTorch's eager one, on one thread, measured in one run.

The same model at the same two sizes as build/bin/bench_train_step: a Pre-LN TransformerLM with 6
layers, 4 heads, d_ff = 4 d, learned positions, a head with a bias, GELU (erf), LayerNorm eps 1e-5, and
one AdamW update; one fixed random batch. The figure is the CPU time of one step (forward, backward,
update), the median of --reps after two warm-up steps, as bench_train_step measures its own.

  bench/vs_pytorch.py                          gradscope (build/) against PyTorch float64 and float32
  bench/vs_pytorch.py --f32-build build/release-f32   also gradscope's float32 build

PyTorch is optional (Debian: python3-torch). Without it the script says so and prints gradscope's
figures alone. The ratios compare figures of this run only.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread, as gradscope's bench
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# (batch, seq, d_model, heads, layers, vocab): bench_train_step's "large" and "small"
SIZES = {"large": (8, 128, 128, 4, 6, 96), "small": (16, 32, 64, 4, 6, 64)}


def gradscope_step(binary, size, reps):
    """(step ms, GEMM floor ms) from bench_train_step's output for one size."""
    out = subprocess.run([binary, "--size", size, "--reps", str(reps)], check=True, capture_output=True,
                         text=True).stdout
    step = re.search(r"training step \(forward \+ backward \+ AdamW\)\s+([0-9.]+) ms", out)
    floor = re.search(r"GEMM floor .*?\)\s+([0-9.]+) ms", out)
    if not step or not floor:
        sys.exit(f"vs_pytorch: {binary} --size {size} printed no step time:\n{out}")
    return float(step.group(1)), float(floor.group(1))


def torch_step(size, dtype, reps):
    """The median CPU time in ms of one PyTorch eager training step of the same model."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(1)
    B, T, C, H, L, V = SIZES[size]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.q, self.k, self.v, self.o = (nn.Linear(C, C) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

        def attention(self, x):  # (B, T, C) -> (B, T, C), causal, H heads
            split = lambda y: y.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, C/H)
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            att = (q @ k.transpose(-2, -1)) / (C // H) ** 0.5
            att = att.masked_fill(self.mask, float("-inf")).softmax(-1)
            return self.o((att @ v).transpose(1, 2).reshape(B, T, C))

        def forward(self, x):
            x = x + self.attention(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(V, C), nn.Parameter(0.02 * torch.randn(T, C))
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f, self.head = nn.LayerNorm(C), nn.Linear(C, V)

        def forward(self, ids):
            x = self.tok(ids) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    model = LM().to(dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids, targets = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))

    def step():
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(ids).view(-1, V), targets.view(-1)).backward()
        optimizer.step()

    times = []
    for i in range(reps + 2):
        start = time.process_time()
        step()
        if i >= 2:
            times.append(1000.0 * (time.process_time() - start))
    return statistics.median(times)


def build_precision(folder):
    """f64 or f32: GRADSCOPE_PRECISION in the build's CMakeCache.txt (f64 when it is not set there)."""
    try:
        with open(os.path.join(folder, "CMakeCache.txt")) as cache:
            for line in cache:
                if line.startswith("GRADSCOPE_PRECISION:"):
                    return line.strip().split("=", 1)[1]
    except OSError:
        pass
    return "f64"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="gradscope's build folder (float64; default build)")
    parser.add_argument("--f32-build", help="a float32 build folder (cmake --preset release-f32) to measure too")
    parser.add_argument("--reps", type=int, default=10, help="timed steps per figure (the median is reported)")
    args = parser.parse_args()
    if args.reps < 1:
        sys.exit(f"vs_pytorch: --reps {args.reps} must be at least 1")
    binaries = {"f64": os.path.join(args.build, "bin", "bench_train_step")}
    if args.f32_build:
        binaries["f32"] = os.path.join(args.f32_build, "bin", "bench_train_step")
    for name, path in binaries.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"vs_pytorch: {path} is missing: build the bench_train_step target first ({name})")
        folder = args.build if name == "f64" else args.f32_build
        if build_precision(folder) != name:
            flag = "--build" if name == "f64" else "--f32-build"
            sys.exit(f"vs_pytorch: {flag} {folder} is a {build_precision(folder)} build; {flag} takes a {name} one")
    try:
        import torch
        have_torch = f"PyTorch {torch.__version__}, eager, {torch.get_num_threads()} thread(s)"
    except ImportError:
        have_torch = None
        print("vs_pytorch: PyTorch is not installed (Debian: apt-get install python3-torch): gradscope's figures only")
    print(f"one training step (forward + backward + AdamW), CPU time, median of {args.reps}, one thread"
          + (f"; {have_torch}" if have_torch else ""))
    for size, (B, T, C, H, L, V) in SIZES.items():
        print(f"\nB={B} T={T} d={C} H={H} L={L} V={V} (pre-LN)")
        step64, floor64 = gradscope_step(binaries["f64"], size, args.reps)
        print(f"  gradscope float64              {step64:8.2f} ms   {step64 / floor64:.2f}x its GEMM floor ({floor64:.2f} ms)")
        step32 = None
        if "f32" in binaries:
            step32, floor32 = gradscope_step(binaries["f32"], size, args.reps)
            print(f"  gradscope float32              {step32:8.2f} ms   {step32 / floor32:.2f}x its GEMM floor ({floor32:.2f} ms)")
        if have_torch:
            t64 = torch_step(size, torch.float64, args.reps)
            t32 = torch_step(size, torch.float32, args.reps)
            print(f"  PyTorch float64                {t64:8.2f} ms   gradscope float64 / it: {step64 / t64:.2f}x")
            print(f"  PyTorch float32                {t32:8.2f} ms   gradscope float64 / it: {step64 / t32:.2f}x"
                  + (f", gradscope float32 / it: {step32 / t32:.2f}x (target: 0.9x or less)" if step32 else ""))


if __name__ == "__main__":
    main()
