# SPDX-License-Identifier: GPL-2.0
"""py-threads.py THREADS ITEMS - a threaded Python workload for the real
programs' benchmark (tests/programs/run.sh, bench_metric py-threads).

CPython's own locks are what tofutex-run replaces here: the GIL is a
pthread mutex and condition variable, handed between the threads at every
switch interval and every blocking call, and threading.Lock, Condition
and queue.Queue wait on it. Three stages, THREADS worker threads each:

- a pipeline: one producer puts ITEMS numbers into a queue.Queue of 64
  slots; the workers take them, transform them and put the results into
  a 16-slot buffer built on threading.Condition (wait/notify); one
  collector sums what comes out;
- a thread pool (concurrent.futures) maps a CRC over ITEMS / 10 chunks;
- the workers count ITEMS / 10 increments under one threading.Lock.

It prints "py-threads items=N checksum=C": C depends only on THREADS and
ITEMS (every sum is order-independent), so a run under tofutex-run must
print the same line as a stock run.
"""
import concurrent.futures
import queue
import sys
import threading
import zlib


class Bounded:
    """A bounded buffer on one Condition: put waits while full, get while
    empty; each notifies the other side."""

    def __init__(self, size):
        self.items = []
        self.size = size
        self.cond = threading.Condition()

    def put(self, item):
        with self.cond:
            while len(self.items) >= self.size:
                self.cond.wait()
            self.items.append(item)
            self.cond.notify_all()

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            item = self.items.pop(0)
            self.cond.notify_all()
            return item


def pipeline(threads, items):
    q = queue.Queue(64)
    out = Bounded(16)
    total = [0]

    def worker():
        while True:
            i = q.get()
            if i is None:
                out.put(None)
                return
            out.put((i * i + 7) % 1000003)

    def collector():
        ended = 0
        while ended < threads:
            v = out.get()
            if v is None:
                ended += 1
            else:
                total[0] += v

    ws = [threading.Thread(target=worker) for _ in range(threads)]
    c = threading.Thread(target=collector)
    for t in ws + [c]:
        t.start()
    for i in range(items):
        q.put(i)
    for _ in ws:
        q.put(None)
    for t in ws + [c]:
        t.join()
    return total[0]


def crc(i):
    return zlib.crc32(i.to_bytes(8, "little") * 64)


def pool(threads, chunks):
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        return sum(ex.map(crc, range(chunks)))


def counter(threads, n):
    lock = threading.Lock()
    count = [0]

    def inc():
        for _ in range(n // threads):
            with lock:
                count[0] += 1

    ts = [threading.Thread(target=inc) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return count[0]


def main():
    threads, items = int(sys.argv[1]), int(sys.argv[2])
    a = pipeline(threads, items)
    b = pool(threads, items // 10)
    c = counter(threads, items // 10)
    checksum = (a * 31 + b) * 31 + c
    print(f"py-threads items={items} checksum={checksum}")


if __name__ == "__main__":
    main()
