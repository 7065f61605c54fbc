package io.coord.core;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.apache.curator.framework.api.transaction.CuratorOp;

/** A granted hold on a coordination primitive, backed by one znode of this client's session. */
public interface Lease extends AutoCloseable {

    /** Full path of the znode that backs the lease. */
    String path();

    /**
     * The znode's creation zxid. Successive holders of an exclusive primitive always see a larger token, even when
     * the parent znode was removed and recreated in between. Pass it to the resource you protect and have it reject
     * writes that carry a smaller token than one it has already seen.
     */
    long fencingToken();

    LeaseState state();

    /** {@code state() == HELD}. */
    boolean isValid();

    /**
     * Completes once, with {@link LeaseState#LOST} or {@link LeaseState#RELEASED}; after {@link #close()} has sent its
     * deletes, so that what a dependent stage sends (a new acquisition, say) reaches the server after them.
     */
    CompletableFuture<LeaseState> ended();

    /**
     * Calls {@code listener} with every state this lease enters after the call, on {@code executor}; one added after
     * the lease ended is called once, with its final state. A listener that
     * throws is logged and otherwise ignored. With a direct executor ({@code Runnable::run}) the listener runs on the
     * lease's own delivery thread: while it blocks, the lease's other listeners wait for it (though coord's own
     * reactions, such as an election interrupting its task, do not).
     */
    void addStateListener(Consumer<LeaseState> listener, Executor executor);

    /**
     * A transaction operation that succeeds only while the lease's znode still exists, so that a write can be made
     * conditional on still holding: {@code client.transaction().forOperations(lease.fencedCheck(), write)}. A lease of
     * several znodes (a multi-permit semaphore lease) is checked on its first, {@link #path()}, which every release,
     * revocation and session end of the lease deletes first or with the rest.
     */
    CuratorOp fencedCheck();

    /**
     * Opts this hold in to cooperative revocation: runs {@code action} on {@code executor} each time somebody asks the
     * holder to let go, with {@code requestRevocation} on the primitive or Curator's {@code Revoker.attemptRevoke} on
     * {@link #path()}. A request made before the call is heard at once. Nothing is released for you: the action
     * decides, typically by finishing its work and closing the lease. An action that throws is logged and otherwise
     * ignored; on a lease that has ended the call does nothing.
     *
     * <p>The request is heard through the client's view of the path when it has one, and otherwise through a data
     * watch on the lease's node that this call sets (one request). Registering also makes the lease notice a
     * {@linkplain DistributedLock#forceRevocation forced revocation} at once, whichever way the client queues.
     */
    void onRevocationRequested(Runnable action, Executor executor);

    /**
     * Releases the lease. Idempotent, and a no-op on a lost lease. A delete that cannot reach the server is retried
     * in the background until it succeeds or the session ends, so no znode is left behind.
     */
    @Override
    void close();
}
