package io.coord.rwlock;

import io.coord.core.DistributedLock;
import io.coord.core.LeasePredicate;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.LeaseEngine;
import io.coord.core.internal.ThreadBoundLock;
import java.nio.charset.StandardCharsets;
import java.util.function.LongSupplier;
import org.apache.curator.framework.CuratorFramework;

/**
 * A read/write lock shared across processes. Readers share; a writer excludes everyone. Order is FIFO: a reader
 * queued behind a writer waits for it, so writers are never starved by a stream of later readers.
 *
 * <p>Nodes are {@code <path>/_c_<uuid>-R-<seq>} and {@code <path>/_c_<uuid>-W-<seq>}, in the parent's one sequence.
 * A reader watches the nearest writer before it and a writer its immediate predecessor.
 *
 * <p>Both locks are reentrant per thread. The write holder may take the read lock (downgrade): the read hold shares
 * the writer's node, so after the write lock is released the thread keeps reading and everyone queued behind it,
 * readers too, stays blocked until the read lock is released as well: the downgraded hold is still exclusive. A
 * thread holding only the read lock that asks for the write lock gets {@link IllegalStateException} at once instead
 * of deadlocking on itself. Both rules look at this instance's thread-bound holds only: a read lease from
 * {@code acquireAsync()}, or one held through another instance on the same path, is another holder, and a write lock
 * asked for past it waits for its release.
 *
 * <pre>{@code
 * ReadWriteMutex rw = new ReadWriteMutex(client, "/locks/catalog");
 * rw.readLock().acquire();
 * try {
 *     render(catalog);
 * } finally {
 *     rw.readLock().release();
 * }
 * }</pre>
 */
public final class ReadWriteMutex {
    static final String READ_PREFIX = "R-";
    static final String WRITE_PREFIX = "W-";

    private final ThreadBoundLock readLock;
    private final ThreadBoundLock writeLock;

    /** A read/write lock whose participant id is {@code pid@host}. */
    public ReadWriteMutex(CuratorFramework client, String path) {
        this(client, path, Arguments.defaultParticipantId());
    }

    /** A read/write lock whose nodes carry {@code participantId} as data. */
    public ReadWriteMutex(CuratorFramework client, String path, String participantId) {
        this(client, path, participantId, Deadline.SYSTEM_TICKER);
    }

    /** Times its deadlines with {@code ticker}, a nanosecond clock like {@link System#nanoTime()}. */
    ReadWriteMutex(CuratorFramework client, String path, String participantId, LongSupplier ticker) {
        byte[] id = Arguments.participantId(participantId).getBytes(StandardCharsets.UTF_8);
        this.readLock =
                new ThreadBoundLock(new LeaseEngine(client, path, READ_PREFIX, ReaderPredicate.INSTANCE, id, ticker));
        this.writeLock = new ThreadBoundLock(
                new LeaseEngine(client, path, WRITE_PREFIX, LeasePredicate.maxLeases(1), id, ticker));
        ThreadBoundLock.pair(readLock, writeLock);
    }

    /** The shared lock. Its {@code participants()} lists readers and writers in queue order. */
    public DistributedLock readLock() {
        return readLock;
    }

    /** The exclusive lock; its fencing tokens rise from one writer to the next. */
    public DistributedLock writeLock() {
        return writeLock;
    }

    @Override
    public String toString() {
        return "ReadWriteMutex[" + readLock.path() + "]";
    }
}
