#!/usr/bin/env python3
"""Writes the tokenizer oracle fixture: expected ids from Hugging Face `tokenizers`.

Usage (fixture generation only; never a runtime or test dependency):
    python3 -m venv /opt/textoracle && /opt/textoracle/bin/pip install tokenizers==0.23.3
    /opt/textoracle/bin/python scripts/tokenizer_make_fixture.py \
        --tokenizer tests/fixtures/text/deepseek_v4_tokenizer.json \
        --out tests/fixtures/text/deepseek_v4_oracle.jsonl \
        --decode-out tests/fixtures/text/deepseek_v4_decode_oracle.jsonl

Each output line is {"text": str, "ids": [int]} with ids from
Tokenizer.encode(text, add_special_tokens=False). With --decode-out it also writes decode cases:
{"ids": [int], "text": decode(ids), "text_skip_special": decode(ids, skip_special_tokens=True)}
for random id sequences and for slices of encodings that cut characters apart (U+FFFD rules).

The corpus is deterministic (fixed seed): hand written edge cases, every script the issue lists,
code and prose taken from the Python standard library sources of the generating interpreter and
/usr/share/common-licenses, and random mixtures of all of them.
"""
import argparse
import glob
import json
import os
import random
import sys
import sysconfig

import tokenizers

SPECIALS = [
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
    "<think>", "</think>", "｜DSML｜", "<｜latest_reminder｜>", "<｜action｜>", "<|EOT|>",
    "<｜tool▁calls▁begin｜>", "<dsml:", "</dsml:", "<｜place▁holder▁no▁7｜>",
    "<|place_holder_mm_span_0021|>", "<｜/table>｜",
]
# Near misses: must stay ordinary text.
NEAR_SPECIALS = ["<｜User", "<｜User|>", "<think", "think>", "｜DSML", "<|EOT|", "<｜Assistant｜",
                 "<<｜User｜>>", "<<think>>", "</think></think>"]

SCRIPTS = {
    "cjk": ["你好，世界！", "深度求索公司创造了这个模型。", "汉字和漢字", "鿦鿿㐀𠀀𰀀𱍐", "中文测试，数字１２３和ABC。"],
    "kana": ["こんにちは", "カタカナとひらがな", "ｶﾀｶﾅ半角", "東京都渋谷区", "ゟ゠ヿー"],
    "hangul": ["안녕하세요", "한국어 문장입니다.", "각 조합형", "서울특별시 강남구"],
    "arabic": ["مرحبا بالعالم", "اللغة العربية جميلة", "١٢٣٤٥٦٧٨٩٠ رقم", "كِتَابٌ مُشَكَّل"],
    "devanagari": ["नमस्ते दुनिया", "हिन्दी भाषा", "१२३४५६ संख्या", "क्षत्रिय"],
    "thai": ["สวัสดีครับ", "ภาษาไทยไม่มีช่องว่าง", "๑๒๓๔ ตัวเลข"],
    "cyrillic": ["Привет, мир!", "Съешь же ещё этих мягких французских булок"],
    "greek": ["Γειά σου Κόσμε", "αβγδε ΑΒΓΔΕ"],
    "hebrew": ["שלום עולם", "עִבְרִית"],
    "emoji": ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏿‍💻", "🇫🇷🇯🇵", "❤️‍🔥", "1️⃣", "🧑‍🤝‍🧑", "🫠🫨🪿"],
    "combining": ["é", "ñ", "Å", "ǅ", "z̴̢̛a̷l̸g̵o̶", "ẛ̣", "ग़", "각", "a\u0301\u0302\u0303"],
    "digits": ["1234567", "0", "12", "123", "1234", "٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵", "０１２３４５６７", "Ⅻ ⅻ", "²³¹ ½¾",
               "९८७६", "𝟘𝟙𝟚", "3.14159", "1,000,000", "v2.0.1-rc3", "0x7fffffff", "1e-10"],
    "space": [" ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\u00a0", "\u3000", "\u0085", "\ufeff",
              "\u2028", "\u2029", "\u200b", "\u180e", "\x0b", "\x0c", "\x1c", "\x1f", "\u2003\u2009",
              "    ", "\t\t", " \r\n\r\n  ", "\r", "\r\r\n"],
    "symbols": ["→", "∑∫√", "©®™", "€£¥₹", "§¶†‡", "«»“”‘’", "—–…", "♠♥♦♣", "⌘⌥⇧", "〜～",
                "【】《》", "。，、；：？！", "‽⁉", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ω≈ç√∫", "ﬁﬂ", "Ⓐⓑ"],
    # Unicode 15.0 (CJK Ext H, Kawi, emoji, Cyrillic Ext-D ...) and 15.1 (CJK Ext I U+2EBF0).
    "newer": ["\U00031350", "\U00011f04", "\U0001fae8", "\U0001fa77", "\U0002b739", "\U0001e030",
              "\u0cf3", "\U0002ebf0"],
}

EDGE_CASES = [
    "", "Hi", "Hello world", "hello  world", "a  \n  b", "1234567 apples", "你好，世界！こんにちは",
    "  leading", "trailing  ", "\n", " ", "\t\n", "x\u00a0y", "x\u3000y", "x\u0085y", "\ufeffBOM",
    "line1\r\nline2\r\n", "don't won't I'm you're we've they'll he'd", "DON'T", "'s 't 're",
    "<｜User｜>Hi<｜Assistant｜>", "<think>\nreasoning\n</think>\n\nanswer", "｜DSML｜invoke",
    "x<｜User｜>y", "<｜User｜><｜User｜>", "<｜User", "text<think>", "<think>text</think>",
    "a\U0001F600b", "🙂🙂🙂", "$$$", "...", "!!!???", "@user #tag", "http://example.com/a?b=c&d=e",
    "user@example.com", "C++ and C#", "foo_bar_baz", "fooBarBaz", "__init__", "x=1;y=2",
    "def f(x):\n    return x+1\n", "if (a && b) { return c; }", "<div class=\"x\">y</div>",
    "SELECT * FROM t WHERE id = 42;", "{\"key\": [1, 2.5, true, null]}", "$ ls -la | grep '.py'",
    "1+1=2", "3.14", "100%", "-42", "+1", "1e10", "2024-01-01T00:00:00Z", "12:34:56",
]


def stdlib_sources(limit):
    root = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(root, "*.py")))[:limit]
    texts = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError):
            pass
    return texts


def license_texts():
    texts = []
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        try:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError, IsADirectoryError):
            pass
    return texts


def make_corpus(seed, count):
    rng = random.Random(seed)
    corpus = list(EDGE_CASES)
    fragments = [s for group in SCRIPTS.values() for s in group]
    corpus += fragments
    corpus += SPECIALS + NEAR_SPECIALS

    code = stdlib_sources(120)
    prose = license_texts() or code

    def slice_of(texts, max_len):
        text = rng.choice(texts)
        if not text:
            return ""
        start = rng.randrange(len(text))
        return text[start:start + rng.randint(1, max_len)]

    # Code and prose slices of varied length (whole-line and mid-line cuts).
    for _ in range(1200):
        corpus.append(slice_of(code, 400))
    for _ in range(800):
        corpus.append(slice_of(prose, 400))
    # Every script alone, with spaces, digits and punctuation around it.
    for _ in range(1200):
        group = rng.choice(list(SCRIPTS))
        parts = []
        for _ in range(rng.randint(1, 6)):
            parts.append(rng.choice(SCRIPTS[group]))
            parts.append(rng.choice(["", " ", "  ", "\n", ", ", ".", "\u00a0", "\u3000", "123", "!"]))
        corpus.append("".join(parts))
    # Random mixtures of everything, including added-token text next to ordinary text.
    pools = [fragments, SPECIALS, NEAR_SPECIALS, EDGE_CASES, SCRIPTS["space"], SCRIPTS["digits"]]
    while len(corpus) < count:
        parts = []
        for _ in range(rng.randint(1, 10)):
            roll = rng.random()
            if roll < 0.15:
                parts.append(slice_of(code, 60))
            elif roll < 0.25:
                parts.append(slice_of(prose, 60))
            else:
                parts.append(rng.choice(rng.choice(pools)))
        corpus.append("".join(parts))
    # Digit runs of every length up to 20 in several number systems.
    for digits in ("0123456789", "٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "०१२३४५६७८९"):
        for n in range(1, 21):
            corpus.append("".join(rng.choice(digits) for _ in range(n)))
            corpus.append("x" + "".join(rng.choice(digits) for _ in range(n)) + " y")
    # Whitespace runs of every kind and length before words.
    for ws in SCRIPTS["space"]:
        for n in range(1, 5):
            corpus.append("a" + ws * n + "b")
            corpus.append(ws * n + "word")
            corpus.append("word" + ws * n)
    # Deduplicate, keep order.
    seen, unique = set(), []
    for text in corpus:
        if text not in seen:
            seen.add(text)
            unique.append(text)
    return unique


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--decode-out")
    parser.add_argument("--count", type=int, default=5200)
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()

    tok = tokenizers.Tokenizer.from_file(args.tokenizer)
    corpus = make_corpus(args.seed, args.count)
    with open(args.out, "w", encoding="utf-8", newline="\n") as out:
        for text in corpus:
            ids = tok.encode(text, add_special_tokens=False).ids
            out.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False) + "\n")
    print(f"{len(corpus)} strings, tokenizers {tokenizers.__version__}", file=sys.stderr)
    if args.decode_out:
        write_decode_cases(tok, corpus, args.seed, args.decode_out)


def write_decode_cases(tok, corpus, seed, path):
    rng = random.Random(seed + 1)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    cases = []
    for _ in range(300):  # random ids, special ones included
        cases.append([rng.randrange(vocab_size) for _ in range(rng.randint(1, 12))])
    for _ in range(700):  # slices of real encodings: starts and ends inside characters
        ids = tok.encode(rng.choice(corpus), add_special_tokens=False).ids
        if not ids:
            continue
        begin = rng.randrange(len(ids))
        cases.append(ids[begin:begin + rng.randint(1, 16)])
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for ids in cases:
            row = {"ids": ids, "text": tok.decode(ids, skip_special_tokens=False),
                   "text_skip_special": tok.decode(ids, skip_special_tokens=True)}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(cases)} decode cases", file=sys.stderr)


if __name__ == "__main__":
    main()
