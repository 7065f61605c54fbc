package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.core.SequenceNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.client.ConnectStringParser;

/**
 * A queue of EPHEMERAL_SEQUENTIAL znodes under one path, granted by a {@link LeasePredicate}. Every primitive is one
 * engine with its own node prefix and predicate.
 */
public final class LeaseEngine {
    // A transaction's request header and framing, with room to spare.
    private static final int REQUEST_OVERHEAD = 1024;

    private final CuratorFramework client;
    private final String path;
    private final String prefix;
    private final LeasePredicate predicate;
    private final byte[] nodeData;
    private final LongSupplier ticker;
    private final String primitive;
    private final PathRecord record; // null: a missing path is made as a container
    private volatile String participantId; // decoded from the node data on first report
    private volatile int maxNodesTogether; // measured on first use: 0 until then
    private volatile ClientContext context; // looked up on first use: constructors do no I/O and register nothing
    private volatile Object owner; // only held, never read: see keepReachable

    /** Checks its arguments and does no I/O. */
    public LeaseEngine(CuratorFramework client, String path, String prefix, LeasePredicate predicate, byte[] nodeData) {
        this(client, path, prefix, predicate, nodeData, Deadline.SYSTEM_TICKER);
    }

    /** Like the other constructor, timing its deadlines with {@code ticker} (nanoseconds, as System.nanoTime). */
    public LeaseEngine(
            CuratorFramework client,
            String path,
            String prefix,
            LeasePredicate predicate,
            byte[] nodeData,
            LongSupplier ticker) {
        this(client, path, prefix, predicate, nodeData, ticker, primitiveOf(prefix));
    }

    /** Like the other constructors, reporting itself to {@link Observations} as {@code primitive}. */
    public LeaseEngine(
            CuratorFramework client,
            String path,
            String prefix,
            LeasePredicate predicate,
            byte[] nodeData,
            LongSupplier ticker,
            String primitive) {
        this(client, path, prefix, predicate, nodeData, ticker, primitive, null);
    }

    /**
     * Like the other constructors, leaving the path to its primitive, which keeps {@code record} there: each attempt
     * waits for {@link PathRecord#check} before it enters, and a create that finds the path missing asks the record
     * to make it, then creates again, instead of making it as a container. The attempt fails with whatever either
     * future fails with, except that it answers an in-doubt {@link org.apache.zookeeper.KeeperException} from
     * {@link PathRecord#makePath} as a lost connection (a check must see such failures through itself). Null makes
     * the path as a container, as the other constructors do.
     */
    public LeaseEngine(
            CuratorFramework client,
            String path,
            String prefix,
            LeasePredicate predicate,
            byte[] nodeData,
            LongSupplier ticker,
            String primitive,
            PathRecord record) {
        this.record = record;
        this.primitive = Objects.requireNonNull(primitive, "primitive");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.client = Arguments.client(client);
        this.path = Arguments.path(path);
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.predicate = Objects.requireNonNull(predicate, "predicate");
        this.nodeData = Objects.requireNonNull(nodeData, "nodeData").clone();
    }

    /**
     * Keeps {@code primitive}, the object built on this engine, reachable for as long as the engine is: while any of
     * its attempts or leases lives, since the client's context holds those, and they the engine. A caller that let go
     * of the primitive, and looks it up again by a weak reference while it still waits or holds, so finds the same
     * object, with the same thread-bound holds.
     */
    public void keepReachable(Object primitive) {
        owner = primitive;
    }

    public String path() {
        return path;
    }

    public CuratorFramework client() {
        return client;
    }

    String prefix() {
        return prefix;
    }

    /**
     * The most nodes one acquisition may create together. Their creates go in one transaction, one request, and
     * ZooKeeper breaks the connection on a request larger than {@code jute.maxbuffer} ({@link MultiRead#maxBuffer}),
     * which Curator would only send again after every reconnect. Each create is measured as it is sent: under the
     * namespace, and under the connect string's chroot, which the ZooKeeper handle adds to every path.
     */
    public int maxNodesTogether() {
        int known = maxNodesTogether;
        if (known != 0) {
            return known;
        }
        String name = ZKPaths.makePath(path, OwnNodes.prefixOf(new UUID(0, 0).toString()) + prefix);
        try {
            CuratorOp create = TransactionOps.create(client, name, CreateMode.EPHEMERAL_SEQUENTIAL, nodeData);
            String chroot =
                    new ConnectStringParser(client.getZookeeperClient().getCurrentConnectionString()).getChrootPath();
            int perNode = TransactionOps.requestBytes(create)
                    + (chroot == null ? 0 : chroot.getBytes(StandardCharsets.UTF_8).length);
            known = Math.max(1, (MultiRead.maxBuffer() - REQUEST_OVERHEAD) / perNode);
        } catch (IllegalStateException e) {
            // Curator builds no operation on a client that is not started: the acquisition fails further on.
            return Integer.MAX_VALUE;
        }
        maxNodesTogether = known;
        return known;
    }

    /** What this engine is, as events and meters name it: mutex, read-lock, write-lock, semaphore, leader-latch... */
    public String primitive() {
        return primitive;
    }

    /** The participant id its nodes carry. */
    String participantId() {
        String id = participantId;
        if (id == null) {
            id = new String(nodeData, StandardCharsets.UTF_8);
            participantId = id;
        }
        return id;
    }

    /** The primitive each module's node prefix stands for; a selector, which shares the mutex's, names itself. */
    private static String primitiveOf(String prefix) {
        return switch (prefix) {
            case "lock-" -> "mutex";
            case "R-" -> "read-lock";
            case "W-" -> "write-lock";
            case "lease-" -> "semaphore";
            case "latch-" -> "leader-latch";
            default -> prefix;
        };
    }

    byte[] nodeData() {
        return nodeData;
    }

    /** What the primitive keeps at its path; null when creates make the path as a container. */
    PathRecord record() {
        return record;
    }

    /**
     * Queues without parking a thread. The future completes on coord's callback thread, never ZooKeeper's event
     * thread. Cancelling it, or completing it from outside, withdraws the request and deletes its znode.
     */
    public CompletableFuture<Lease> acquireAsync() {
        return acquireAsync(1, predicate, lease -> {});
    }

    /** Like {@link #acquireAsync()}, running {@code granted} with the lease before the future completes with it. */
    CompletableFuture<Lease> acquireAsync(Consumer<Lease> granted) {
        return acquireAsync(1, predicate, granted);
    }

    /**
     * Like {@link #acquireAsync()}, holding {@code nodes} znodes created together in one transaction and granted by
     * {@code grant}, which places the last of them.
     */
    public CompletableFuture<Lease> acquireAsync(int nodes, LeasePredicate grant) {
        return acquireAsync(nodes, grant, lease -> {});
    }

    private CompletableFuture<Lease> acquireAsync(int nodes, LeasePredicate grant, Consumer<Lease> granted) {
        Attempt attempt = start(new Attempt.Request(nodes, grant, false));
        Acquisition future = new Acquisition(attempt);
        attempt.result.whenComplete((lease, error) -> context().callbacks().execute(() -> {
            if (error != null) {
                future.fail(error);
            } else {
                granted.accept(lease);
                future.deliver(lease);
            }
        }));
        return future;
    }

    /**
     * The caller's future of an async acquisition. Cancelling it, or completing it from outside (as {@code orTimeout}
     * and {@code completeOnTimeout} do), withdraws the request on the calling thread before the future completes, so
     * that the stages the caller chained on it run after the withdrawal's deletes are sent, and whatever they send
     * lands after them (dependents run newest first: a withdrawal chained as one would run last).
     */
    private static final class Acquisition extends CompletableFuture<Lease> {
        private final Attempt attempt;
        // Set by whichever completes the future first, the engine or the caller, before the future is completed.
        private final AtomicBoolean claimed = new AtomicBoolean();

        Acquisition(Attempt attempt) {
            this.attempt = attempt;
            // Completions that cannot be intercepted here (obtrude*, completeAsync) still withdraw, as dependents.
            super.whenComplete((lease, error) -> {
                if (claimed.compareAndSet(false, true)) {
                    giveUp(attempt, why(error));
                }
            });
        }

        // A wait for the grant on the thread that must deliver it would never end, and leave a grant nobody takes.

        @Override
        public Lease get() throws InterruptedException, ExecutionException {
            refuseWaitHere();
            return super.get();
        }

        @Override
        public Lease get(long timeout, TimeUnit unit)
                throws InterruptedException, ExecutionException, TimeoutException {
            if (timeout > 0) {
                refuseWaitHere(); // a zero timeout only looks
            }
            return super.get(timeout, unit);
        }

        @Override
        public Lease join() {
            refuseWaitHere();
            return super.join();
        }

        /**
         * On ZooKeeper's event thread or Curator's background thread, a wait for a future not yet complete gives the
         * acquisition up and throws, as the synchronous calls refuse to start there: nothing is left queued or held.
         * A future that completed meanwhile answers as usual.
         */
        private void refuseWaitHere() {
            if (!isDone() && BackgroundRequests.onCallbackThread() && cancel(false)) {
                BackgroundRequests.refuseOnEventThread("waiting on the future of acquiring", attempt.path());
            }
        }

        // Once another completion has claimed the future, each of these waits for that one to complete it (the
        // engine with its lease, or the first caller to give up, after its withdrawal), and answers as the JDK's would.

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return withdrawThen(Observer.AcquireOutcome.CANCELLED, () -> super.cancel(mayInterruptIfRunning))
                    || isCancelled();
        }

        @Override
        public boolean complete(Lease value) {
            return withdrawThen(Observer.AcquireOutcome.CANCELLED, () -> super.complete(value));
        }

        @Override
        public boolean completeExceptionally(Throwable error) {
            return withdrawThen(why(error), () -> super.completeExceptionally(error));
        }

        /** The engine's grant: released at once if the caller gave up first. */
        void deliver(Lease lease) {
            if (!claimed.compareAndSet(false, true) || !super.complete(lease)) {
                lease.close();
            }
        }

        /** The engine's failure: the attempt has withdrawn itself. */
        void fail(Throwable error) {
            if (claimed.compareAndSet(false, true)) {
                super.completeExceptionally(error);
            }
        }

        /**
         * Claims the future for a caller that gives up: withdraws, then completes it with {@code completion}, even if
         * the withdrawal throws. False once another completion had claimed it, when that one has completed it.
         */
        private boolean withdrawThen(Observer.AcquireOutcome why, BooleanSupplier completion) {
            if (!claimed.compareAndSet(false, true)) {
                super.handle((lease, error) -> null).join(); // the claimant completes it at once
                return false;
            }
            try {
                giveUp(attempt, why);
            } catch (RuntimeException | Error e) {
                completion.getAsBoolean();
                throw e;
            }
            return completion.getAsBoolean();
        }

        private static Observer.AcquireOutcome why(Throwable error) {
            return isTimeout(error) ? Observer.AcquireOutcome.TIMED_OUT : Observer.AcquireOutcome.CANCELLED;
        }
    }

    /** Withdraws the attempt; one granted meanwhile, and not delivered, is released here. Idempotent. */
    private static void giveUp(Attempt attempt, Observer.AcquireOutcome why) {
        if (!attempt.giveUp(why) && !attempt.result.isCompletedExceptionally()) {
            // Granted, and not delivered yet: released on this thread, so that the release is sent before anything
            // the caller sends next (the delivery's own close finds it done).
            attempt.result.join().close();
        }
    }

    /** A deadline {@code timeout} from now on this engine's ticker; null waits for ever, ZERO looks once. */
    public Deadline deadline(Duration timeout) {
        return Deadline.after(timeout, ticker);
    }

    /**
     * Blocks until granted. With a timeout, returns null when it runs out; {@link Duration#ZERO} looks at the queue
     * once. A null timeout waits for ever, and so does one too long to count in nanoseconds.
     */
    public Lease acquire(Duration timeout) throws InterruptedException {
        return acquire(deadline(timeout), 1, predicate);
    }

    /** Like {@link #acquire(Duration)}, for {@code nodes} znodes granted together by {@code grant}. */
    public Lease acquire(Deadline deadline, int nodes, LeasePredicate grant) throws InterruptedException {
        BackgroundRequests.refuseOnEventThread("acquiring", path);
        checkNotInterrupted();
        boolean tryOnce = !deadline.allowsWaiting();
        Attempt attempt = start(new Attempt.Request(nodes, grant, tryOnce));
        try {
            // A one-look attempt always ends by itself, granted or refused.
            return tryOnce ? attempt.result.get() : awaitOrLookOnce(attempt, deadline);
        } catch (TimeoutException e) {
            return cancelOrTake(attempt, Observer.AcquireOutcome.TIMED_OUT);
        } catch (ExecutionException e) {
            throw rethrow(e.getCause()); // the attempt failed and withdrew itself
        } catch (InterruptedException | RuntimeException | Error e) {
            withdraw(attempt, e);
            throw e;
        }
    }

    /**
     * Waits for the attempt until the deadline; then, if it has not looked at the queue once yet (its create, say,
     * was still unanswered), for that one look, which ends by itself as a one-look attempt does.
     */
    private static LeaseImpl awaitOrLookOnce(Attempt attempt, Deadline deadline)
            throws InterruptedException, ExecutionException, TimeoutException {
        try {
            return deadline.await(attempt.result);
        } catch (TimeoutException e) {
            if (!attempt.lookOnceMore()) {
                throw e;
            }
            return attempt.result.get();
        }
    }

    /** Throws, clearing the flag, if the thread was interrupted before an acquisition that an interrupt ends. */
    void checkNotInterrupted() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquiring " + path);
        }
    }

    /**
     * Blocks until granted, keeping its place in the queue whatever interrupts arrive, as {@code Lock.lock()} does; the
     * interrupt flag is restored before it returns. With {@code tryOnce}, looks once instead, and returns null if
     * refused: an interrupt does not undo a grant, as it would if the look were given up and sent again.
     */
    Lease acquireUninterruptibly(boolean tryOnce) {
        BackgroundRequests.refuseOnEventThread("acquiring", path);
        Attempt attempt = start(new Attempt.Request(1, predicate, tryOnce));
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                try {
                    return attempt.result.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } catch (ExecutionException e) {
            throw rethrow(e.getCause()); // the attempt failed and withdrew itself
        } catch (RuntimeException | Error e) {
            withdraw(attempt, e);
            throw e;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Runs {@code reaction} with every state that {@code lease}, granted by this engine, enters from now on: on the
     * thread that moves it, in no set order between threads, and never held back by the user's listeners. For
     * coord's own quick reactions only, such as interrupting a task.
     *
     * @throws IllegalArgumentException if this engine did not grant the lease
     */
    public void onEveryState(Lease lease, Consumer<LeaseState> reaction) {
        grantedHere(lease).react(reaction);
    }

    /**
     * Whether {@code lease}'s node was seen as its session's at or after the grant, or the lease ended. Not so only
     * after a predecessor-watch grant, whose queue cannot show that nobody deleted our node meanwhile; an election
     * leads only once this is true.
     */
    public boolean isConfirmed(Lease lease) {
        return grantedHere(lease).isConfirmed();
    }

    /**
     * Runs {@code action} once {@link #isConfirmed} is true, at once if it is. For a grant that was not seen it takes a
     * read of the node, which {@link Lease#onRevocationRequested} sends: call that too.
     */
    public void whenConfirmed(Lease lease, Runnable action) {
        grantedHere(lease).whenConfirmed(action);
    }

    /**
     * Whether {@code lease} ended before its node was seen as its session's: a grant that {@link #isConfirmed} settled
     * by its end, on a node that may have been gone already. An election treats it as never made.
     */
    public boolean endedUnconfirmed(Lease lease) {
        return grantedHere(lease).endedUnseen();
    }

    private LeaseImpl grantedHere(Lease lease) {
        if (!(lease instanceof LeaseImpl granted) || granted.engine() != this) {
            throw new IllegalArgumentException("not a lease granted by the engine of " + path() + ": " + lease);
        }
        return granted;
    }

    public List<Participant> participants() {
        return Participants.read(client, path);
    }

    /**
     * Asks {@code holder} to let go if the queue says it holds (see {@link Revocations}); false, writing nothing, if it
     * does not.
     */
    public boolean requestRevocation(Participant holder) {
        return revoke(holder, false);
    }

    /** Deletes {@code holder}'s nodes if the queue says it holds; false, deleting nothing, if it does not. */
    public boolean forceRevocation(Participant holder) {
        return revoke(holder, true);
    }

    private boolean revoke(Participant holder, boolean force) {
        checkRevocable(holder, force);
        return Revocations.revoke(client, path, prefix, predicate, holder, force);
    }

    /**
     * Throws what a revocation of {@code holder} ({@code force}d or asked) would throw before sending anything: {@link
     * NullPointerException}, {@link IllegalArgumentException} if it names no node of this engine's kind, what {@link
     * #checkUsable} throws, or {@link IllegalStateException} on ZooKeeper's event thread, where its answers would never
     * come.
     */
    public void checkRevocable(Participant holder, boolean force) {
        SequenceNode node = Revocations.target(path, prefix, holder);
        checkUsable(force ? "forcing a revocation under" : "requesting a revocation under");
        BackgroundRequests.refuseOnEventThread(
                force ? "forcing the revocation of" : "requesting the revocation of", node.name() + " under " + path);
    }

    /**
     * Throws what an acquisition would throw on a client that cannot serve it: {@link IllegalStateException} if it
     * was never started, {@link io.coord.core.CoordinationException} if it is closed.
     */
    public void checkUsable() {
        checkUsable("acquiring");
    }

    private void checkUsable(String doing) {
        CuratorFrameworkState state = client.getState();
        if (state == CuratorFrameworkState.LATENT) {
            throw new IllegalStateException("the client must be started before " + doing + " " + path);
        }
        if (state == CuratorFrameworkState.STOPPED) {
            throw new CoordinationException("the client was closed before " + doing + " " + path);
        }
    }

    /** Whether the client is connected now, so that a one-look call can answer without waiting. */
    public boolean isConnected() {
        return context().isConnected();
    }

    private Attempt start(Attempt.Request request) {
        if (request.nodes() < 1) {
            throw new IllegalArgumentException("nodes must be >= 1: " + request.nodes());
        }
        Objects.requireNonNull(request.predicate(), "predicate");
        checkUsable();
        Attempt attempt = new Attempt(this, context(), request);
        attempt.start();
        return attempt;
    }

    private ClientContext context() {
        ClientContext c = context;
        if (c == null) {
            c = ClientContext.of(client);
            context = c;
        }
        return c;
    }

    /**
     * Withdraws an attempt whose caller stops waiting on {@code e}, anything but the attempt's own failure: a node left
     * queued would become the head and block the lock for as long as this client lives. A lease granted meanwhile is
     * released.
     */
    private static void withdraw(Attempt attempt, Throwable e) {
        try {
            LeaseImpl granted = cancelOrTake(attempt, Observer.AcquireOutcome.CANCELLED);
            if (granted != null) {
                granted.close();
            }
        } catch (RuntimeException cleanup) {
            if (cleanup != e) {
                e.addSuppressed(cleanup);
            }
        }
    }

    /** Withdraws the attempt, unless it was granted in the meantime: then the lease is the caller's. */
    private static LeaseImpl cancelOrTake(Attempt attempt, Observer.AcquireOutcome why) {
        if (attempt.giveUp(why)) {
            return null;
        }
        try {
            return attempt.result.join();
        } catch (CancellationException e) {
            return null;
        } catch (RuntimeException e) {
            throw rethrow(e.getCause() == null ? e : e.getCause());
        }
    }

    /** Whether a caller completed the future with a timeout, as {@code orTimeout} does. */
    private static boolean isTimeout(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        return cause instanceof TimeoutException;
    }

    private static RuntimeException rethrow(Throwable cause) {
        if (cause instanceof RuntimeException re) {
            return re;
        }
        if (cause instanceof Error error) {
            throw error;
        }
        return new CoordinationException("acquisition failed: " + cause, cause);
    }
}
