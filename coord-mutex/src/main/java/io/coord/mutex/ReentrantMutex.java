package io.coord.mutex;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.Participant;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.LeaseEngine;
import io.coord.core.internal.ThreadBoundLock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;
import java.util.function.LongSupplier;
import org.apache.curator.framework.CuratorFramework;

/**
 * A mutex shared across processes, reentrant per thread, with a handle-owned async path.
 *
 * <p>Nodes are {@code <path>/_c_<uuid>-lock-<seq>}, the layout of Curator's {@code InterProcessMutex}: the two
 * exclude each other on one path and queue in one FIFO order.
 *
 * <pre>{@code
 * ReentrantMutex mutex = new ReentrantMutex(client, "/locks/orders");
 * if (mutex.acquire(Duration.ofSeconds(5))) {
 *     try {
 *         process(mutex.lease().fencingToken());
 *     } finally {
 *         mutex.release();
 *     }
 * }
 * }</pre>
 */
public final class ReentrantMutex implements DistributedLock {
    static final String PREFIX = "lock-";

    private final ThreadBoundLock lock;

    /** A mutex whose participant id is {@code pid@host}. */
    public ReentrantMutex(CuratorFramework client, String path) {
        this(client, path, Arguments.defaultParticipantId());
    }

    /** A mutex whose nodes carry {@code participantId} as data, as {@link #participants()} reports it. */
    public ReentrantMutex(CuratorFramework client, String path, String participantId) {
        this(client, path, participantId, Deadline.SYSTEM_TICKER);
    }

    /** Times its deadlines with {@code ticker}, a nanosecond clock like {@link System#nanoTime()}. */
    ReentrantMutex(CuratorFramework client, String path, String participantId, LongSupplier ticker) {
        byte[] id = Arguments.participantId(participantId).getBytes(StandardCharsets.UTF_8);
        LeaseEngine engine = new LeaseEngine(client, path, PREFIX, LeasePredicate.maxLeases(1), id, ticker);
        this.lock = new ThreadBoundLock(engine);
        // While it waits or holds, as a registry that finds it again through a weak reference needs.
        engine.keepReachable(this);
    }

    @Override
    public String path() {
        return lock.path();
    }

    @Override
    public void acquire() throws InterruptedException {
        lock.acquire();
    }

    @Override
    public boolean acquire(Duration timeout) throws InterruptedException {
        return lock.acquire(timeout);
    }

    @Override
    public void release() {
        lock.release();
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return lock.isHeldByCurrentThread();
    }

    @Override
    public int holdCount() {
        return lock.holdCount();
    }

    @Override
    public boolean isAcquiredInThisProcess() {
        return lock.isAcquiredInThisProcess();
    }

    @Override
    public Lease lease() {
        return lock.lease();
    }

    @Override
    public CompletableFuture<Lease> acquireAsync() {
        return lock.acquireAsync();
    }

    @Override
    public List<Participant> participants() {
        return lock.participants();
    }

    @Override
    public boolean requestRevocation(Participant holder) {
        return lock.requestRevocation(holder);
    }

    @Override
    public boolean forceRevocation(Participant holder) {
        return lock.forceRevocation(holder);
    }

    @Override
    public Lock asLock() {
        return lock.asLock();
    }

    @Override
    public String toString() {
        return "ReentrantMutex[" + lock.path() + "]";
    }
}
