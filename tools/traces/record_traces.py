#!/usr/bin/env python3
"""Record PyTorch profiler (Kineto) traces of three AI workloads on a real GPU, for `dxpu model`.

    python3 tools/traces/record_traces.py --out traces/        # needs torch with CUDA

Writes <out>/resnet-train.json.gz, bert-infer.json.gz and llm-decode.json.gz: Chrome traces as
torch.profiler's export_chrome_trace writes them (traceEvents with cuda_runtime, kernel,
gpu_memcpy, gpu_memset and cuda_sync events), gzipped. `dxpu model FILE` reads them as they are.

The models are built here from torch.nn alone (no torchvision or transformers), small enough for
any CUDA GPU, shaped like the real thing where it matters to DxPU: how often the host waits, how
many kernels each wait covers, and how many bytes cross PCIe each way.

  resnet-train  a ResNet-style convolutional net (4 stages of 2 basic blocks), batch 64 of
                3x112x112 images copied from pinned memory each step, SGD; the loss read back
                every step (one synchronisation per step).
  bert-infer    a BERT-base-shaped encoder (12 layers, hidden 768, 12 heads), batch 8 of
                128 tokens; token IDs up, the pooled output down, every batch.
  llm-decode    a decoder-only transformer (8 layers, hidden 1024, 16 heads) with a KV cache,
                batch 1, greedy: each token's logits' argmax read back before the next token
                (one synchronisation per token, the latency-bound case).

Each workload runs warm-up steps first; the profiler records the steps after (schedule: wait 1,
warmup 2, active --steps). docs/perf-model.md says how the project's own traces were made when
no GPU was at hand.
"""
import argparse
import gzip
import os
import shutil
import sys
import tempfile


def resnet_train(torch, nn, device, steps):
    def block(cin, cout, stride):
        body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        skip = (nn.Identity() if stride == 1 and cin == cout else
                nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.body, self.skip = body, skip

            def forward(self, x):
                return torch.relu(self.body(x) + self.skip(x))
        return Block()

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [block(cin, cout, stride), block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    model = nn.Sequential(*layers).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(64, 3, 112, 112).pin_memory()
    labels = torch.randint(0, 1000, (64,)).pin_memory()

    def step():
        x = images.to(device, non_blocking=True)
        y = labels.to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def bert_infer(torch, nn, device, steps):
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
    embed = nn.Embedding(30522, 768).to(device)
    encoder = nn.TransformerEncoder(layer, 12).to(device).eval()
    tokens = torch.randint(0, 30522, (8, 128)).pin_memory()

    @torch.no_grad()
    def step():
        ids = tokens.to(device, non_blocking=True)
        pooled = encoder(embed(ids))[:, 0]
        return pooled.cpu()
    return step


def llm_decode(torch, nn, device, steps):
    hidden, heads, layers, vocab, tokens = 1024, 16, 8, 32000, 32
    head_dim = hidden // heads

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.out = nn.Linear(hidden, hidden)
            self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
            self.n1, self.n2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)

        def forward(self, x, cache, pos):
            q, k, v = self.qkv(self.n1(x)).view(1, 3, heads, head_dim).unbind(1)
            cache[0][:, pos], cache[1][:, pos] = k[0], v[0]
            keys, values = cache[0][:, :pos + 1], cache[1][:, :pos + 1]
            scores = torch.einsum("hd,htd->ht", q[0], keys) / head_dim ** 0.5
            ctx = torch.einsum("ht,htd->hd", scores.softmax(-1), values).reshape(1, hidden)
            x = x + self.out(ctx)
            return x + self.mlp(self.n2(x))

    embed = nn.Embedding(vocab, hidden).to(device)
    blocks = nn.ModuleList(Layer() for _ in range(layers)).to(device).eval()
    head = nn.Linear(hidden, vocab).to(device)

    @torch.no_grad()
    def step():
        caches = [(torch.zeros(heads, tokens, head_dim, device=device),
                   torch.zeros(heads, tokens, head_dim, device=device)) for _ in range(layers)]
        token = 1
        for pos in range(tokens):
            x = embed(torch.tensor([token], device=device))
            for block, cache in zip(blocks, caches):
                x = block(x, cache, pos)
            token = int(head(x).argmax())  # the host waits for every token
        return token
    return step


WORKLOADS = {"resnet-train": resnet_train, "bert-infer": bert_infer, "llm-decode": llm_decode}


def record(torch, name, make, device, steps, out_dir):
    from torch.profiler import ProfilerActivity, profile, schedule
    step = make(torch, torch.nn, device, steps)
    for _ in range(3):  # warm-up: cuDNN/cuBLAS autotuning and allocations outside the trace
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=2, active=steps)) as prof:
        for _ in range(1 + 2 + steps):
            step()
            prof.step()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, name + ".json")
        prof.export_chrome_trace(plain)
        target = os.path.join(out_dir, name + ".json.gz")
        with open(plain, "rb") as src, gzip.open(target, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    print(f"{name}: {target} ({os.path.getsize(target)} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="directory for the .json.gz traces")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps per workload (default 3)")
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="record only these")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("record_traces: PyTorch is not installed (pip install torch)")
    if not torch.cuda.is_available():
        sys.exit("record_traces: no CUDA GPU: the traces need ProfilerActivity.CUDA")
    os.makedirs(args.out, exist_ok=True)
    device = torch.device("cuda")
    print(f"recording on {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    for name in args.only or WORKLOADS:
        record(torch, name, WORKLOADS[name], device, args.steps, args.out)


if __name__ == "__main__":
    main()
