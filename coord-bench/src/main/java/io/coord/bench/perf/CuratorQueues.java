package io.coord.bench.perf;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;

/** Curator's two queues behind {@link BenchQueue}: SimpleDistributedQueue and the recipes' DistributedQueue. */
final class CuratorQueues {
    private static final Duration ITEM_TIMEOUT = Duration.ofSeconds(60);

    private static final QueueSerializer<byte[]> BYTES = new QueueSerializer<>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    private CuratorQueues() {}

    /** Offers are one create each; every poll reads all the children, so a drain costs O(n²) names. */
    static BenchQueue simple(CuratorFramework client, String path) {
        SimpleDistributedQueue queue = new SimpleDistributedQueue(client, path);
        return new BenchQueue() {
            @Override
            public String name() {
                return "Curator SimpleDistributedQueue";
            }

            @Override
            public void offer(byte[] item) throws Exception {
                if (!queue.offer(item)) {
                    throw new IllegalStateException("SimpleDistributedQueue refused an item on " + path);
                }
            }

            @Override
            public void flush() {}

            @Override
            public List<byte[]> drain(int count, Sample sample) throws Exception {
                List<byte[]> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
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

    /**
     * Puts go out in the background through a producer-only queue. The drain starts a consumer queue, which reads the
     * children once per batch and hands items to a callback; each item's time is the gap since the one before.
     */
    static BenchQueue distributed(CuratorFramework client, String path) throws Exception {
        DistributedQueue<byte[]> producer =
                QueueBuilder.builder(client, null, BYTES, path).buildQueue();
        producer.start();
        return new BenchQueue() {
            @Override
            public String name() {
                return "Curator DistributedQueue";
            }

            @Override
            public void offer(byte[] item) throws Exception {
                producer.put(item);
            }

            @Override
            public void flush() throws InterruptedException, TimeoutException {
                if (!producer.flushPuts(ITEM_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                    throw new TimeoutException("DistributedQueue puts on " + path + " did not finish");
                }
            }

            @Override
            public List<byte[]> drain(int count, Sample sample) throws Exception {
                BlockingQueue<byte[]> delivered = new LinkedBlockingQueue<>();
                QueueConsumer<byte[]> consumer = new QueueConsumer<>() {
                    @Override
                    public void consumeMessage(byte[] message) {
                        delivered.add(message);
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, ConnectionState newState) {}
                };
                DistributedQueue<byte[]> queue =
                        QueueBuilder.builder(client, consumer, BYTES, path).buildQueue();
                List<byte[]> items = new ArrayList<>(count);
                long last = System.nanoTime();
                queue.start();
                try {
                    for (int i = 0; i < count; i++) {
                        byte[] item = delivered.poll(ITEM_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                        long now = System.nanoTime();
                        if (item == null) {
                            break; // lost items: the caller's exactly-once check reports them
                        }
                        sample.record(now - last);
                        last = now;
                        items.add(item);
                    }
                } finally {
                    queue.close();
                }
                return items;
            }

            @Override
            public void close() throws IOException {
                producer.close();
            }
        };
    }
}
