#!/usr/bin/env python3
"""Writes the seed corpus fuzz/corpus/* (the checked-in files came from this;
libFuzzer adds its own finds to a scratch corpus, not here).
Opcodes (api_fuzz.c step): 0 open, 1 close, 2 release, 3 lookup, 4 submit,
5 batch, 6 submit_wait, 7 sync, 8 reserve, 9 unreserve, 10 set_priority,
11 stats, 12 burst, 13 strerror, 14 submit_ex, 15 cancel."""
import os, random

def op_open(sl, b=0, prio=1, budget=0, depth=0):
    return [0, sl, b, prio, budget, depth]

def seeds():
    s = {}
    base = op_open(0) + op_open(1, 8, 25, 10, 2) + op_open(2, 0, 1, 0, 1) + op_open(3, 0, 250, 4, 8)
    s['open_submit_close'] = [0] + base + [4, 0, 0, 0, 4, 1, 1, 2, 4, 2, 2, 1, 1, 0, 0, 1, 1, 1]
    s['bad_opens'] = [0] + op_open(0, 0x80) + op_open(0, 1) + op_open(0, 2) + op_open(0, 4) + op_open(0, 0x10) + op_open(0) + op_open(0)
    s['batch_nullfn'] = [0] + base + [5, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 4, 9, 0, 1, 2, 3]
    s['submit_wait_sync'] = [0] + base + [6, 0, 2, 2, 6, 1, 1, 0, 7, 0, 1, 7, 1, 0]
    s['budget'] = [0] + base + [8, 1, 0, 0x10, 0, 0, 8, 1, 0, 0x01, 0, 0, 9, 1, 0, 0x02, 0, 0, 9, 1, 0xff, 0xff, 0, 0, 8, 2, 0xff, 0xff, 0, 0]
    s['prio_storm'] = [0] + base + sum(([10, i % 4, (i * 37) % 256] for i in range(30)), [])
    s['close_inside'] = [0] + base + [4, 0, 4, 2, 4, 0, 0, 2, 4, 1, 5, 2, 4, 1, 0, 2, 1, 0, 0, 1, 1, 0]
    s['deadlk_inside'] = [0] + base + [4, 0, 6, 2, 4, 0, 6, 0, 7, 0, 1]
    s['full_ring'] = [0] + base + [12, 2, 12, 2, 12, 1, 4, 2, 0, 0, 4, 2, 0, 1, 4, 2, 0, 3]
    s['lookup_release'] = [2] + base + [3, 0, 2, 3, 1, 0, 3, 2, 1, 2, 0, 3, 0, 2, 1, 0, 0, 0, 0]
    s['null_handles'] = [0] + [4, 0, 0, 0, 5, 0, 3, 0, 0, 6, 0, 0, 0, 7, 0, 1, 8, 0, 0, 0, 0, 1, 10, 0, 3, 11, 0, 1, 0, 2, 2, 0]
    s['destroy_with_open'] = [0] + base + [12, 0, 12, 1, 12, 2, 12, 3, 4, 3, 7, 2]
    s['release_all'] = [2] + base + [12, 0, 12, 1, 2, 0, 2, 1]
    s['reopen_same_id'] = [0] + base + [1, 0, 0, 0, 0, 0, 1, 0, 0, 4, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 2, 0]
    s['timeouts'] = [0] + base + [4, 2, 0, 1, 4, 2, 0, 3, 4, 2, 0, 6, 5, 2, 8, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 2, 0, 6]
    s['strerror'] = [0, 13, 0, 0xff, 0xff, 0xff, 0xf5, 13, 0, 0, 0, 0, 5, 13, 0, 0x80, 0, 0, 0]
    # two threads: split in the middle (byte 0 >> 1 = 63)
    th = base + [4, 0, 0, 0, 4, 1, 1, 0, 12, 2, 10, 3, 9, 7, 0, 1]
    helper = [3, 0, 2, 3, 1, 2, 4, 0, 0, 0, 12, 1, 1, 0, 1, 10, 0, 40, 11, 1, 0, 7, 0, 1, 2, 0]
    s['two_threads'] = [126] + th + helper + [0] * max(0, len(th) - len(helper))
    s['two_threads_close'] = [127] + base + [12, 0, 12, 0, 1, 0, 1] + [3, 0, 2, 12, 0, 1, 0, 0, 7, 0, 1] * 2
    # submit_ex: [14, entry, b (deadline b&3: none/past/far/near, b&4 ticket,
    # b&8 invalid), kind, timeout(, near: 1 us units)]; cancel: [15, entry,
    # ticket index (0x80: a zero ticket, 0xC0: NULL)]
    ex = ([14, 0, 6, 0, 2] + [14, 0, 5, 0, 2] + [14, 0, 7, 7, 2, 50] +
          [14, 1, 4, 1, 0] + [14, 0, 8, 0, 2] + [14, 2, 0, 0, 2])
    s['cancel'] = [0] + base + ex + [15, 0, 0, 15, 0, 1, 15, 0, 2, 15, 1, 3,
                                     15, 0, 0x80, 15, 0, 0xC0, 15, 0, 0,
                                     1, 0, 1, 15, 0, 0, 7, 1, 1]
    s['cancel_burst'] = [0] + base + [12, 3] + [14, 3, 6, 7, 2] * 6 + \
        sum(([15, 3, i] for i in range(6)), []) + [7, 3, 1]
    th = base + [14, 0, 6, 7, 2] * 4 + [15, 0, 0, 15, 0, 1, 1, 0, 0]
    helper = [3, 0, 2] + [14, 0, 7, 0, 2, 9] * 4 + [15, 0, 4, 15, 0, 5, 2, 0, 15, 0, 6]
    s['cancel_two_threads'] = [126] + th + helper + [0] * max(0, len(th) - len(helper))
    rnd = random.Random(7)
    for i in range(6):
        s[f'random_{i}'] = [rnd.randrange(256)] + base + [rnd.randrange(256) for _ in range(200)]
    return s

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, 'corpus')
os.makedirs(out, exist_ok=True)
for name, data in seeds().items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(bytes(b & 0xff for b in data))
print(f'{len(seeds())} seeds in {out}')
