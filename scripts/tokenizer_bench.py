#!/usr/bin/env python3
"""Tokenizer throughput: dsv4 (C++) versus Hugging Face tokenizers, one thread each.

    /opt/textoracle/bin/python scripts/tokenizer_bench.py \
        --tokenizer tests/fixtures/text/deepseek_v4_tokenizer.json \
        --binary build/bench/text/bench_text_tokenizer

Builds a corpus (one JSON string per line) unless --corpus exists: the generating Python's
standard-library sources (code), /usr/share/common-licenses (English prose) and the oracle
fixture's multilingual strings grouped into documents. Both sides encode every document
separately with special-token matching on and nothing added at the ends, and print MB/s and an
FNV-1a checksum of all ids, which must agree.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import sysconfig
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tokenizers  # noqa: E402


def build_corpus(path, fixture):
    documents = []
    root = sysconfig.get_paths()["stdlib"]
    for name in sorted(glob.glob(os.path.join(root, "*.py")))[:200]:
        with open(name, encoding="utf-8", errors="replace") as f:
            documents.append(f.read())
    for name in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(name):
            with open(name, encoding="utf-8", errors="replace") as f:
                documents.append(f.read())
    if os.path.exists(fixture):
        texts = [json.loads(line)["text"] for line in open(fixture, encoding="utf-8")]
        for i in range(0, len(texts), 20):
            documents.append("\n".join(texts[i:i + 20]))
    with open(path, "w", encoding="utf-8") as out:
        for document in documents:
            out.write(json.dumps(document, ensure_ascii=False) + "\n")


def checksum(hash_value, ids):
    for i in ids:
        hash_value ^= i
        hash_value = (hash_value * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return hash_value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--binary", help="bench_text_tokenizer executable")
    parser.add_argument("--corpus", default="/tmp/dsv4_tokenizer_bench.jsonl")
    parser.add_argument("--fixture", default="tests/fixtures/text/deepseek_v4_oracle.jsonl")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    if not os.path.exists(args.corpus):
        build_corpus(args.corpus, args.fixture)
    documents = [json.loads(line) for line in open(args.corpus, encoding="utf-8")]
    size = sum(len(d.encode("utf-8")) for d in documents)
    tok = tokenizers.Tokenizer.from_file(args.tokenizer)
    print(f"hf tokenizers {tokenizers.__version__}: corpus {len(documents)} documents, "
          f"{size / 1e6:.2f} MB")
    for r in range(args.repeats):
        start = time.perf_counter()
        encodings = [tok.encode(d, add_special_tokens=False).ids for d in documents]
        seconds = time.perf_counter() - start
        hash_value = 1469598103934665603
        for ids in encodings:
            hash_value = checksum(hash_value, ids)
        tokens = sum(len(ids) for ids in encodings)
        print(f"hf: run {r}: {seconds:.3f} s, {size / 1e6 / seconds:.2f} MB/s, {tokens} tokens, "
              f"checksum {hash_value:016x}")
    if args.binary:
        sys.stdout.flush()
        subprocess.run([args.binary, args.tokenizer, args.corpus, str(args.repeats)], check=True)


if __name__ == "__main__":
    main()
