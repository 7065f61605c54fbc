package io.coord.bench.perf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/** Drives operations and times each one into a {@link Sample}. */
final class Load {

    /** One timed operation: typically acquire, check the guard, release. */
    @FunctionalInterface
    interface Op {
        void run() throws Exception;
    }

    private Load() {}

    /** Runs {@code op} {@code times} times back to back on this thread, as one measured window. */
    static void sequential(BenchContext ctx, Sample sample, Op op, int times) throws Exception {
        Sample.Window window = sample.open(ctx.counters());
        for (int i = 0; i < times; i++) {
            long start = System.nanoTime();
            op.run();
            sample.record(System.nanoTime() - start);
        }
        window.close(times);
    }

    /**
     * Runs each op on its own thread, all released together, until {@code duration} is up, as one measured window.
     * The window ends when the last thread has finished its last operation, so throughput counts every operation
     * against the time it really took. The first failure stops every thread and is thrown.
     */
    static void concurrent(BenchContext ctx, Sample sample, List<Op> ops, Duration duration) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        LongAdder done = new LongAdder();
        AtomicReference<Exception> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        long[] deadline = new long[1];
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            Thread t = new Thread(
                    () -> {
                        try {
                            start.await();
                            while (System.nanoTime() < deadline[0] && failure.get() == null) {
                                long begin = System.nanoTime();
                                op.run();
                                sample.record(System.nanoTime() - begin);
                                done.increment();
                            }
                        } catch (Exception e) {
                            failure.compareAndSet(null, e);
                        }
                    },
                    "bench-load-" + i);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        Sample.Window window = sample.open(ctx.counters());
        deadline[0] = System.nanoTime() + duration.toNanos(); // published to the threads by the latch
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        window.close(done.sum());
        if (failure.get() != null) {
            throw failure.get();
        }
    }
}
