package io.coord.semaphore;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.Participant;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.LeaseEngine;
import io.coord.core.internal.MultiRead;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import org.apache.curator.framework.CuratorFramework;

/**
 * A counting semaphore shared across processes: never more than {@code maxLeases} permits are held at once, across
 * all clients, and waiters are served in FIFO order.
 *
 * <p>Each permit is one node {@code <path>/_c_<uuid>-lease-<seq>}. A request for several permits creates all its
 * nodes in one transaction, so they are queued and granted together: a holder never has part of what it asked for,
 * and two multi-permit waiters cannot deadlock. That transaction is one request, which must fit ZooKeeper's limit
 * ({@code jute.maxbuffer}): a request for more permits than that (several thousand by default, fewer under a long
 * path) is refused with {@link IllegalArgumentException} before anything is sent. A waiter watches its
 * {@code maxLeases} nearest predecessors, because permits come back in any order. Permits die with their session.
 *
 * <p>{@code maxLeases} is recorded as the data of {@code <path>} on first use; an instance whose limit disagrees is
 * refused with {@link IllegalStateException} rather than silently enforcing a different limit. An acquisition that
 * finds the path deleted makes it again with its record. An instance that outlives the deletion checks the record again
 * when it finds the path missing, or a path made since its last check: an acquisition is refused there if another
 * client made the path again with another limit. Permits held before that are not taken back: stop every instance of
 * the old limit before deleting the path.
 *
 * <pre>{@code
 * DistributedSemaphore pool = new DistributedSemaphore(client, "/limits/exports", 3);
 * try (Lease permit = pool.acquire()) {
 *     export(permit.fencingToken());
 * }
 * }</pre>
 */
public final class DistributedSemaphore {
    static final String PREFIX = "lease-";

    private final LeaseEngine engine;
    private final int maxLeases;
    private final LeasePredicate predicate;
    private final LimitRecord record;

    /** Checks its arguments and does no I/O. */
    public DistributedSemaphore(CuratorFramework client, String path, int maxLeases) {
        this(client, path, maxLeases, Deadline.SYSTEM_TICKER);
    }

    /** Times its deadlines with {@code ticker}, a nanosecond clock like {@link System#nanoTime()}. */
    DistributedSemaphore(CuratorFramework client, String path, int maxLeases, LongSupplier ticker) {
        Arguments.client(client);
        Arguments.path(path);
        if (maxLeases < 1) {
            throw new IllegalArgumentException("maxLeases must be >= 1: " + maxLeases);
        }
        byte[] id = Arguments.defaultParticipantId().getBytes(StandardCharsets.UTF_8);
        this.predicate = LeasePredicate.maxLeases(maxLeases);
        this.record = new LimitRecord(client, path, maxLeases);
        // Every attempt checks the record first. A create that finds the path missing has it made by a fresh check,
        // which records the limit, and never as a container without a record.
        this.engine = new LeaseEngine(client, path, PREFIX, predicate, id, ticker, "semaphore", record);
        this.maxLeases = maxLeases;
    }

    /** Blocks until one permit is held. */
    public Lease acquire() throws InterruptedException {
        return acquire(1);
    }

    /**
     * Blocks until all {@code permits} are held together.
     *
     * @throws IllegalArgumentException if {@code permits} is not between 1 and {@code maxLeases}, or more than one
     *     request can create (see the class description); unlike {@link java.util.concurrent.Semaphore}, 0 permits
     *     are refused, since a lease of none would hold nothing
     */
    public Lease acquire(int permits) throws InterruptedException {
        return acquire(permits, Deadline.forever());
    }

    /**
     * Waits up to {@code timeout} for all {@code permits}, the first use's check of the recorded limit included;
     * {@link Duration#ZERO} looks once, and answers empty at once while the client is disconnected, or as soon as the
     * look loses its connection. A timeout that runs out before that one look (one shorter than a round trip) still
     * gets it. {@code permits} as for {@link #acquire(int)}.
     */
    public Optional<Lease> tryAcquire(int permits, Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        return Optional.ofNullable(acquire(permits, engine.deadline(timeout)));
    }

    /**
     * Queues for {@code permits} without blocking a thread. Cancelling the future withdraws the request and deletes
     * its nodes; permits granted after that are returned at once. {@code permits} as for {@link #acquire(int)}; the
     * future behaves as {@link io.coord.core.DistributedLock#acquireAsync()}'s does.
     */
    public CompletableFuture<Lease> acquireAsync(int permits) {
        checkPermits(permits);
        return engine.acquireAsync(permits, predicate);
    }

    /** Null when the deadline passes first. */
    private Lease acquire(int permits, Deadline deadline) throws InterruptedException {
        checkPermits(permits);
        return engine.acquire(deadline, permits, predicate);
    }

    public int maxLeases() {
        return maxLeases;
    }

    /** Holders and waiters in queue order; a multi-permit request appears once per permit. */
    public List<Participant> participants() {
        return engine.participants();
    }

    /**
     * Asks the lease that {@code holder} belongs to to let go, as {@link io.coord.core.DistributedLock#requestRevocation}
     * does for a lock: the request is written on the lease's first node, which its holder hears through {@link
     * Lease#onRevocationRequested}. A multi-permit lease is asked once, whichever of its permits names it.
     *
     * @return whether the request was written; false when that participant holds no permit (any more)
     * @throws NullPointerException if {@code holder} is null
     * @throws IllegalArgumentException if {@code holder} names no permit node of this semaphore
     * @throws IllegalStateException if the path records another maxLeases than this instance's (read before each
     *     revocation until an acquisition of this instance has checked it)
     * @throws CoordinationException if ZooKeeper refused or could not be reached, naming the node
     */
    public boolean requestRevocation(Participant holder) {
        return mayRevoke(holder, false) && engine.requestRevocation(holder);
    }

    /**
     * Evicts the lease that {@code holder} belongs to: deletes all its nodes in one transaction, so its permits are
     * free at once and its lease turns LOST, as {@link io.coord.core.DistributedLock#forceRevocation} describes.
     * Only safe when what the permits protect checks fencing tokens.
     *
     * @return whether its nodes were deleted; false when that participant holds no permit (any more)
     * @throws NullPointerException if {@code holder} is null
     * @throws IllegalArgumentException if {@code holder} names no permit node of this semaphore
     * @throws IllegalStateException if the path records another maxLeases than this instance's (read before each
     *     revocation until an acquisition of this instance has checked it)
     * @throws CoordinationException if ZooKeeper refused or could not be reached, naming the path
     */
    public boolean forceRevocation(Participant holder) {
        return mayRevoke(holder, true) && engine.forceRevocation(holder);
    }

    /**
     * Who holds is judged by this instance's limit, so it must be the recorded one: an instance built with another
     * would take a waiter for a holder, or a holder for a waiter. Bad input is refused before the record is read; false
     * if the path is missing, where nothing holds. Nothing is written: a revocation never makes the path again.
     */
    private boolean mayRevoke(Participant holder, boolean force) {
        engine.checkRevocable(holder, force);
        if (record.isVerified()) {
            return true;
        }
        try {
            return record.readForRevoking();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CoordinationException(
                    "interrupted while reading the maxLeases record of " + engine.path() + " before revoking", e);
        } catch (IllegalStateException e) {
            engine.checkRevocable(holder, force); // closed meanwhile: Curator says so with IllegalStateException
            throw e; // the record's refusal
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new CoordinationException(
                    "cannot read the maxLeases record of " + engine.path() + " before revoking: " + e, e);
        }
    }

    @Override
    public String toString() {
        return "DistributedSemaphore[" + engine.path() + ", maxLeases=" + maxLeases + "]";
    }

    private void checkPermits(int permits) {
        if (permits < 1 || permits > maxLeases) {
            throw new IllegalArgumentException(
                    "permits must be between 1 and maxLeases (" + maxLeases + "): " + permits);
        }
        int together = engine.maxNodesTogether();
        if (permits > together) {
            throw new IllegalArgumentException("permits must be at most " + together + " under " + engine.path()
                    + ": more would not fit the one ZooKeeper request that creates them (jute.maxbuffer "
                    + MultiRead.maxBuffer() + " bytes): " + permits);
        }
    }
}
