package io.coord.core.internal;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks one at a time, in the order they were given, on a shared pool. A lease or an election object has one,
 * so that its events and its listener deliveries keep their order without owning a thread, and without ever running
 * on ZooKeeper's event thread or under a lock of coord's.
 */
public final class SerialExecutor implements Executor {
    private static final Logger log = LoggerFactory.getLogger(SerialExecutor.class);

    private final Executor pool;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();

    SerialExecutor(Executor pool) {
        this.pool = pool;
    }

    /** A serial executor on coord's callback pool, the one executor policy of every module. */
    public static SerialExecutor onCallbacks() {
        return new SerialExecutor(Executors.USER);
    }

    /** Nothing queued and nothing running: a task given now would run at once, after nothing. */
    boolean isIdle() {
        return !scheduled.get() && tasks.isEmpty();
    }

    @Override
    public void execute(Runnable task) {
        tasks.add(task);
        schedule();
    }

    /**
     * Hands the queued tasks to the pool, if nothing runs them yet. A pool that refuses them, or fails in any other way
     * to take them, drops them all and throws, so that a pool shut down for good does not make the queue grow with
     * every task given after; a task given later is handed over afresh.
     */
    private void schedule() {
        Throwable refused = null;
        // Checked again each time the flag is released, here and in runAll(): a task added meanwhile saw it taken.
        while (!tasks.isEmpty() && scheduled.compareAndSet(false, true)) {
            try {
                pool.execute(this::runAll);
                break;
            } catch (RuntimeException | Error e) {
                tasks.clear();
                scheduled.set(false);
                refused = e;
            }
        }
        if (refused instanceof Error error) {
            throw error;
        }
        if (refused != null) {
            throw (RuntimeException) refused;
        }
    }

    private void runAll() {
        try {
            Runnable task;
            while ((task = tasks.poll()) != null) {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    log.error("coord event task {} failed", task, e);
                }
            }
        } finally {
            // Also after an Error a task let through: what is queued behind it still runs, later tasks too.
            scheduled.set(false);
            try {
                schedule();
            } catch (RuntimeException e) {
                log.warn("tasks given while the last ran were refused by {}", pool, e);
            }
        }
    }
}
