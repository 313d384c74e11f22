#!/usr/bin/env python3
"""Write a full-size DeepSeek-V4 checkpoint whose data regions are holes (sparse files).

The safetensors headers, the index and config.json are real; every tensor reads as zeros and the
whole directory takes only the header bytes on disk. The tensor list comes from
shared/tools/dsv4_tensor_schema.py (the official model.py schema, docs/dsv4-model.md section 2.2).

Shards follow the release layout: embed, one shard per layer, head/norm/hc_head, then the MTP
block, i.e. num_hidden_layers + 3 shards (46 for Flash, 64 for Pro).

Usage: make_sparse_checkpoint.py CONFIG_JSON OUT_DIR [--schema PATH]
"""
import argparse
import importlib.util
import json
import math
import os
import shutil
import struct
import sys

DTYPE_BYTES = {'F64': 8, 'F32': 4, 'F16': 2, 'BF16': 2, 'F8_E4M3': 1, 'F8_E8M0': 1, 'I64': 8,
               'I32': 4, 'I8': 1, 'U8': 1, 'BOOL': 1}

DEFAULT_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared',
                              'tools', 'dsv4_tensor_schema.py')


def load_schema_builder(path):
    """Import build() from the schema tool. Its module body runs a report loop over
    sys.argv[1:], so argv is emptied for the import and restored afterwards."""
    spec = importlib.util.spec_from_file_location('dsv4_tensor_schema', path)
    module = importlib.util.module_from_spec(spec)
    saved_argv = sys.argv
    sys.argv = [path]
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = saved_argv
    return module.build


def shard_key(name, num_layers):
    """Index (0-based) of the shard holding `name`."""
    if name == 'embed.weight':
        return 0
    if name.startswith('layers.'):
        return 1 + int(name.split('.')[1])
    if name.startswith('mtp.'):
        return num_layers + 2
    return num_layers + 1  # head.weight, norm.weight, hc_head_*


def write_sparse_shard(path, tensors):
    """tensors: sorted list of (name, dtype, shape). Returns the data bytes written."""
    header = {}
    offset = 0
    for name, dtype, shape in tensors:
        size = DTYPE_BYTES[dtype] * math.prod(shape)
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)  # keeps the data section 8-byte aligned
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text)
        # Extending by truncate leaves the data section as a hole: no blocks are allocated.
        f.truncate(8 + len(text) + offset)
    return offset


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('out_dir')
    parser.add_argument('--schema', default=DEFAULT_SCHEMA)
    args = parser.parse_args()

    with open(args.config) as f:
        cfg = json.load(f)
    tensors = load_schema_builder(args.schema)(cfg)
    num_layers = cfg['num_hidden_layers']
    num_shards = num_layers + 3

    shards = [[] for _ in range(num_shards)]
    for name, (dtype, shape) in tensors.items():
        shards[shard_key(name, num_layers)].append((name, dtype, list(shape)))

    os.makedirs(args.out_dir, exist_ok=True)
    weight_map = {}
    total = 0
    for i, shard in enumerate(shards):
        file = f'model-{i + 1:05d}-of-{num_shards:05d}.safetensors'
        shard.sort()
        total += write_sparse_shard(os.path.join(args.out_dir, file), shard)
        for name, _, _ in shard:
            weight_map[name] = file
    index = {'metadata': {'total_size': total}, 'weight_map': dict(sorted(weight_map.items()))}
    with open(os.path.join(args.out_dir, 'model.safetensors.index.json'), 'w') as f:
        json.dump(index, f, indent=2)
    shutil.copyfile(args.config, os.path.join(args.out_dir, 'config.json'))
    print(f'{args.out_dir}: {len(weight_map)} tensors, {total} bytes, {num_shards} shards')


if __name__ == '__main__':
    main()
