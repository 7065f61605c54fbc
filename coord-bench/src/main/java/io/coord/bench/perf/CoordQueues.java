package io.coord.bench.perf;

import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;

/**
 * coord's DistributedQueue behind {@link BenchQueue}: plain offers, and a drain by single polls or by drainTo
 * batches.
 */
final class CoordQueues {
    // Room for the largest drain with some to spare; far below what one getChildren reply can list.
    private static final int CAPACITY = 20_000;

    private CoordQueues() {}

    static BenchQueue create(CuratorFramework client, String path, int drainBatch) {
        DistributedQueue<byte[]> queue = DistributedQueue.builder(client, path, QueueSerializer.bytes())
                .capacity(CAPACITY)
                .build();
        return new BenchQueue() {
            @Override
            public String name() {
                return drainBatch > 0 ? "coord DistributedQueue.drainTo" : "coord DistributedQueue";
            }

            @Override
            public void offer(byte[] item) {
                if (!queue.offer(item)) {
                    throw new IllegalStateException("coord DistributedQueue on " + path + " is full");
                }
            }

            @Override
            public void flush() {}

            @Override
            public List<byte[]> drain(int count, Sample sample) {
                List<byte[]> items = new ArrayList<>(count);
                while (drainBatch > 0 && items.size() < count) {
                    long start = System.nanoTime();
                    int moved = queue.drainTo(items, Math.min(drainBatch, count - items.size()));
                    sample.record(System.nanoTime() - start);
                    if (moved == 0) {
                        return items; // fewer items than offered: the caller's exactly-once check reports it
                    }
                }
                for (int i = items.size(); i < count; i++) {
                    long start = System.nanoTime();
                    byte[] item = queue.poll();
                    sample.record(System.nanoTime() - start);
                    if (item == null) {
                        break; // fewer items than offered: the caller's exactly-once check reports it
                    }
                    items.add(item);
                }
                return items;
            }

            @Override
            public void close() {}
        };
    }
}
