#!/usr/bin/env python3
"""Write a large synthetic Kineto trace for measuring `dxpu model` itself (issue 35 item 4).

    python3 tools/traces/make_big_trace.py --events 1000000 --out big.json.gz

Per step: a cudaLaunchKernel call and its kernel (20 kernel names in turn), 10 us apart; a
cudaStreamSynchronize every 50 steps. Written as it goes (gzipped), so any size fits.
"""
import argparse
import gzip
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="events to write (at least)")
    ap.add_argument("--out", required=True, help="the .json.gz to write")
    a = ap.parse_args()
    written = 0
    t = 0.0
    corr = 0
    step = 0
    with gzip.open(a.out, "wt") as f:
        f.write('{"traceEvents": [\n')

        def event(e):
            nonlocal written
            f.write(("" if written == 0 else ",\n") + json.dumps(e))
            written += 1

        while written < a.events:
            corr += 1
            event({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": round(t, 3), "dur": 2.5, "args": {"correlation": corr}})
            event({"ph": "X", "cat": "kernel", "name": "gemm_kernel_%d" % (step % 20), "pid": 0,
                   "tid": 7, "ts": round(t + 4.0, 3), "dur": 8.0,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
            t += 10.0
            step += 1
            if step % 50 == 0:
                corr += 1
                event({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                       "pid": 1, "tid": 1, "ts": round(t, 3), "dur": 5.0,
                       "args": {"correlation": corr}})
                t += 6.0
        f.write("\n]}\n")
    print(f"{written} events -> {a.out}")


if __name__ == "__main__":
    main()
