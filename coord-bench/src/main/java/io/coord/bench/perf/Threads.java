package io.coord.bench.perf;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Platform threads for Curator's blocking waiters, and the live thread count that scenario 8 reports. */
final class Threads {
    private Threads() {}

    static int live() {
        return ManagementFactory.getThreadMXBean().getThreadCount();
    }

    /**
     * One daemon thread per task: Curator's one-thread-per-waiter model. {@link #shutdown()} interrupts them and waits
     * until every one has died, so a later scenario's thread count never includes them.
     */
    static final class WaiterPool {
        // Each blocked waiter needs little stack; a small one keeps 1,000 of them cheap to create.
        private static final long STACK_BYTES = 256 * 1024;

        private final ThreadPoolExecutor executor;
        private final List<Thread> threads = new CopyOnWriteArrayList<>();

        WaiterPool(String name, int size) {
            AtomicInteger n = new AtomicInteger();
            this.executor =
                    new ThreadPoolExecutor(size, size, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
                        Thread t = new Thread(null, task, name + "-" + n.incrementAndGet(), STACK_BYTES);
                        t.setDaemon(true);
                        threads.add(t);
                        return t;
                    });
        }

        void execute(Runnable task) {
            executor.execute(task);
        }

        /** Interrupts the waiters (a Curator waiter deletes its node on interrupt) and joins every thread. */
        void shutdown() throws InterruptedException {
            executor.shutdownNow();
            for (Thread t : threads) {
                t.join(TimeUnit.MINUTES.toMillis(1));
            }
        }
    }
}
