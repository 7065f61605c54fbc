package io.coord.core.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The threads coord runs on besides ZooKeeper's: none of them exists while there is nothing to do. */
public final class Executors {
    private static final AtomicInteger IDS = new AtomicInteger();

    /**
     * Completes user-facing futures, so that their dependent stages never run on ZooKeeper's event thread. A cached
     * pool: one thread while completions are quick, and another whenever user code blocks in a dependent stage, so
     * that such code can never starve a later completion.
     */
    static final Executor USER = new ThreadPoolExecutor(
            0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(), daemon("coord-completions-"));

    /** Times what waits on the clock alone, such as an unused view's linger; runs only quick, non-blocking tasks. */
    static final ScheduledThreadPoolExecutor TIMER = timer();

    private Executors() {}

    /** Runs {@code task} on coord's completion pool once {@code delay} has passed (the timer itself only hands it on). */
    public static void later(Runnable task, Duration delay) {
        TIMER.schedule(() -> USER.execute(task), Deadline.saturatedNanos(delay), TimeUnit.NANOSECONDS);
    }

    /**
     * A future that completes once {@code delay} has passed, on coord's completion pool. Completing or cancelling it
     * first takes its timer off the clock, so that a wait given up holds on to nothing.
     */
    public static CompletableFuture<Void> after(Duration delay) {
        CompletableFuture<Void> due = new CompletableFuture<>();
        ScheduledFuture<?> timer = TIMER.schedule(
                () -> USER.execute(() -> due.complete(null)), Deadline.saturatedNanos(delay), TimeUnit.NANOSECONDS);
        due.whenComplete((done, error) -> timer.cancel(false));
        return due;
    }

    private static ScheduledThreadPoolExecutor timer() {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, daemon("coord-timer-"));
        timer.setKeepAliveTime(10, TimeUnit.SECONDS);
        timer.allowCoreThreadTimeOut(true);
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }

    /** One thread for coord's own retries of a client; no user code ever runs on it. */
    static ThreadPoolExecutor internal() {
        ThreadPoolExecutor executor = new ThreadPoolExecutor(
                1, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), daemon("coord-retries-"));
        executor.allowCoreThreadTimeOut(true);
        return executor;
    }

    private static ThreadFactory daemon(String prefix) {
        return r -> {
            Thread t = new Thread(r, prefix + IDS.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
