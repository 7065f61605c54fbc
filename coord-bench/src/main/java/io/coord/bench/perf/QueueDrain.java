package io.coord.bench.perf;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;

/**
 * Scenario 6: producers offer n items, then one consumer drains them, through coord's queue and both of
 * Curator's. coord's consumer reads the children once and takes from that list until it runs out, so a drain costs
 * O(n) requests; SimpleDistributedQueue reads every child name for every item. coord drains twice over: with single
 * polls, and with {@code drainTo} in batches of {@value #DRAIN_BATCH}. Every drain is checked: each offered item
 * comes out exactly once.
 */
final class QueueDrain implements Scenario {
    /** Builds the coord queue on a session, draining by polls (batch 0) or drainTo; supplied by coord-queue's user. */
    @FunctionalInterface
    interface CoordFactory {
        BenchQueue create(CuratorFramework client, String path, int drainBatch) throws Exception;
    }

    private static final int PRODUCERS = 8;
    static final int DRAIN_BATCH = 100;

    private final CoordFactory coordQueue;

    QueueDrain(CoordFactory coordQueue) {
        this.coordQueue = coordQueue;
    }

    @Override
    public String id() {
        return "6";
    }

    @Override
    public String title() {
        return "queue: offer then drain (vs SimpleDistributedQueue, DistributedQueue)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        CuratorFramework client = ctx.sessions(1).get(0);
        // coord by polls first, so that each row compares coord's sample with Curator's two; drainTo last.
        List<BenchQueue.Factory> impls = List.of(
                path -> coordQueue.create(client, path, 0),
                path -> CuratorQueues.simple(client, path),
                path -> CuratorQueues.distributed(client, path),
                path -> coordQueue.create(client, path, DRAIN_BATCH));
        List<Row> rows = new ArrayList<>();
        for (int items : ctx.plan().queueItems()) {
            List<Sample> offers = new ArrayList<>();
            List<Sample> drains = new ArrayList<>();
            // The big drain is long enough on its own, and --quick runs each size once.
            int rounds = items >= 10_000 || ctx.plan().quick() ? 1 : ctx.plan().rounds();
            for (int round = 1; round <= rounds; round++) {
                for (int i = 0; i < impls.size(); i++) {
                    String path = ctx.path("s6", "q" + i, String.valueOf(items), String.valueOf(round));
                    try (BenchQueue queue = impls.get(i).create(path)) {
                        if (offers.size() <= i) {
                            offers.add(new Sample(queue.name()));
                            drains.add(new Sample(queue.name()));
                        }
                        ctx.progress("6 queue, " + Format.count(items) + " items: " + queue.name() + ", round " + round
                                + "/" + rounds);
                        offerAll(ctx, queue, items, offers.get(i));
                        List<byte[]> drained = drainAll(ctx, queue, items, drains.get(i));
                        checkExactlyOnce(ctx, queue.name(), items, drained);
                    }
                }
            }
            String size = Format.count(items) + " items";
            rows.add(new Row(id(), title(), "offer " + size, offers.get(0).figures(), curator(offers)));
            rows.add(new Row(id(), title(), "drain " + size, drains.get(0).figures(), curator(drains)));
            rows.add(new Row(
                    id(),
                    title(),
                    "drainTo " + size + " (batch " + DRAIN_BATCH + ")",
                    drains.get(3).figures(),
                    curator(drains)));
        }
        ctx.note("scenario 6: " + PRODUCERS + " producer threads offer, one consumer drains; Curator's"
                + " DistributedQueue.put returns before its write (it creates in the background), so its offer latency is"
                + " the call's and its throughput runs until flushPuts confirms every write");
        return rows;
    }

    /** Curator's two samples, for comparison. */
    private static List<Figures> curator(List<Sample> samples) {
        return samples.subList(1, 3).stream().map(Sample::figures).toList();
    }

    /**
     * {@value #PRODUCERS} producer threads on the one session share the items, so the offers overlap in flight as a
     * real producer side's would; the drain that the target is about stays a single consumer.
     */
    private static void offerAll(BenchContext ctx, BenchQueue queue, int items, Sample sample) throws Exception {
        AtomicReference<Exception> failure = new AtomicReference<>();
        List<Thread> producers = new ArrayList<>();
        Sample.Window window = sample.open(ctx.counters());
        for (int p = 0; p < PRODUCERS; p++) {
            int first = p;
            Thread t = new Thread(
                    () -> {
                        try {
                            for (int i = first; i < items && failure.get() == null; i += PRODUCERS) {
                                byte[] item = Integer.toString(i).getBytes(StandardCharsets.UTF_8);
                                long start = System.nanoTime();
                                queue.offer(item);
                                sample.record(System.nanoTime() - start);
                            }
                        } catch (Exception e) {
                            failure.compareAndSet(null, e);
                        }
                    },
                    "bench-producer-" + p);
            t.setDaemon(true);
            producers.add(t);
            t.start();
        }
        for (Thread t : producers) {
            t.join();
        }
        if (failure.get() != null) {
            throw failure.get();
        }
        queue.flush();
        window.close(items);
    }

    private static List<byte[]> drainAll(BenchContext ctx, BenchQueue queue, int items, Sample sample)
            throws Exception {
        Sample.Window window = sample.open(ctx.counters());
        List<byte[]> drained = queue.drain(items, sample);
        window.close(items);
        return drained;
    }

    /** Every item 0..n-1 came out, and none twice. */
    static void checkExactlyOnce(BenchContext ctx, String impl, int items, List<byte[]> drained) {
        BitSet seen = new BitSet(items);
        int duplicates = 0;
        int strangers = 0;
        for (byte[] bytes : drained) {
            int i;
            try {
                i = Integer.parseInt(new String(bytes, StandardCharsets.UTF_8));
            } catch (NumberFormatException e) {
                strangers++;
                continue;
            }
            if (i < 0 || i >= items) {
                strangers++;
            } else if (seen.get(i)) {
                duplicates++;
            } else {
                seen.set(i);
            }
        }
        int lost = items - seen.cardinality();
        ctx.safety()
                .check(
                        lost == 0 && duplicates == 0 && strangers == 0,
                        "6 " + impl + ": " + lost + " lost, " + duplicates + " duplicated, " + strangers
                                + " unknown of " + items + " items");
    }
}
