package io.coord.semaphore;

import io.coord.core.CoordinationException;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.ClientContext.SessionEvent;
import io.coord.core.internal.PathRecord;
import io.coord.core.internal.ResultCodes;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;

/**
 * The semaphore's {@code maxLeases}, kept as the decimal data of its path, so that every client enforces one limit.
 * Checked before an instance's first acquisition, again whenever an acquisition finds the path missing (then the check
 * makes it, with the record), and again when an acquisition learns its queue from a path made since the last check
 * (its {@code czxid} differs: deleted and made again, perhaps by a client of another limit). Concurrent callers share
 * one check.
 *
 * <p>The path is created PERSISTENT, not as a container like the engine's parents: the server reaps an idle
 * container, and a record that vanished with it would let the next client record a different limit while this one
 * goes on enforcing its own. Retiring a semaphore, or changing its limit, means deleting the path by hand.
 */
final class LimitRecord implements PathRecord {
    private final CuratorFramework client;
    private final String path;
    private final int maxLeases;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private Check check;

    LimitRecord(CuratorFramework client, String path, int maxLeases) {
        this.client = client;
        this.path = path;
        this.maxLeases = maxLeases;
    }

    boolean isVerified() {
        return checkedOn() != 0;
    }

    /**
     * For a revocation, which judges who holds by this instance's limit: reads the record and writes nothing. False
     * if the path is missing, where nothing can hold; true if it records this limit or none.
     *
     * @throws IllegalStateException if it records another limit, or data that is no record
     */
    boolean readForRevoking() throws Exception {
        byte[] data;
        try {
            data = client.getData().forPath(path);
        } catch (KeeperException.NoNodeException e) {
            return false;
        }
        if (data != null && data.length > 0) {
            IllegalStateException refused = refusal(data);
            if (refused != null) {
                throw refused;
            }
        }
        return true;
    }

    @Override
    public CompletableFuture<Boolean> check(boolean oneLook) {
        return isVerified() ? null : answer(join(false), oneLook);
    }

    @Override
    public CompletableFuture<Boolean> checkAgain(boolean oneLook) {
        return answer(join(true), oneLook);
    }

    @Override
    public long checkedOn() {
        CompletableFuture<Long> done = current().done;
        return done.isDone() && !done.isCompletedExceptionally() ? done.join() : 0;
    }

    /**
     * True once the record matches, however long the connection is lost meanwhile; with {@code oneLook}, false as
     * soon as the connection drops while the check is under way (not only once Curator's retries of it run out): the
     * check goes on in the background, and the next caller joins it.
     */
    private CompletableFuture<Boolean> answer(Check c, boolean oneLook) {
        if (oneLook && ClientContext.of(client).isConnected()) {
            c.resumed(); // connected again, though the news of it may not have reached the check yet
        }
        return c.answer(oneLook);
    }

    /**
     * Checks again, whatever an earlier check found: the path went missing, and is made with the record if it still
     * is. Fails with CONNECTIONLOSS as soon as the check meets a lost connection, as a create would.
     */
    @Override
    public CompletableFuture<Void> makePath() {
        return join(true)
                .answer(true)
                .thenCompose(verified -> verified
                        ? CompletableFuture.completedFuture(null)
                        : CompletableFuture.failedFuture(KeeperException.create(Code.CONNECTIONLOSS, path)));
    }

    /** The check in flight or passed, or a new one; {@code again} passes over one that passed. */
    private Check join(boolean again) {
        Check started;
        lock.lock();
        try {
            if (check != null && !check.done.isCompletedExceptionally() && !(again && check.done.isDone())) {
                return check;
            }
            check = started = new Check();
        } finally {
            lock.unlock();
        }
        Checks.of(ClientContext.of(client)).add(started);
        read(started);
        return started;
    }

    private Check current() {
        lock.lock();
        try {
            return check == null ? Check.NONE : check;
        } finally {
            lock.unlock();
        }
    }

    /**
     * One check of the record: it goes on through lost connections until it answers, and tells of each one. Its callers
     * hear in the order they came, so that their attempts enter the queue in that order, first come first served: the
     * dependents of one future would run newest first.
     */
    private static final class Check {
        static final Check NONE = new Check();

        // The czxid of the path found to record our limit.
        final CompletableFuture<Long> done = new CompletableFuture<>();
        private final ReentrantLock lock = new ReentrantLock();
        // Guarded by lock: callers not answered yet, oldest first.
        private final List<Waiter> waiters = new ArrayList<>();
        // Guarded by lock: the check met a lost connection and has not gone on since.
        private boolean lost;

        private record Waiter(CompletableFuture<Boolean> answer, boolean oneLook) {}

        Check() {
            done.whenComplete((czxid, error) -> answerAll(error));
        }

        /** True when the record matches; with {@code oneLook}, false if the connection is lost first. */
        CompletableFuture<Boolean> answer(boolean oneLook) {
            CompletableFuture<Boolean> answer = new CompletableFuture<>();
            lock.lock();
            try {
                if (!done.isDone() && !(oneLook && lost)) {
                    waiters.add(new Waiter(answer, oneLook));
                    return answer;
                }
            } finally {
                lock.unlock();
            }
            if (done.isDone()) {
                settle(answer, done.handle((czxid, error) -> error).join());
            } else {
                answer.complete(false);
            }
            return answer;
        }

        void connectionLost() {
            List<Waiter> told = new ArrayList<>();
            lock.lock();
            try {
                lost = true;
                waiters.removeIf(w -> w.oneLook() && told.add(w));
            } finally {
                lock.unlock();
            }
            told.forEach(w -> w.answer().complete(false));
        }

        void resumed() {
            lock.lock();
            try {
                lost = false;
            } finally {
                lock.unlock();
            }
        }

        private void answerAll(Throwable error) {
            List<Waiter> told;
            lock.lock();
            try {
                told = List.copyOf(waiters);
                waiters.clear();
            } finally {
                lock.unlock();
            }
            told.forEach(w -> settle(w.answer(), error));
        }

        /** As a dependent of {@code done} would be completed: the failure wrapped as a completion's. */
        private static void settle(CompletableFuture<Boolean> answer, Throwable error) {
            if (error == null) {
                answer.complete(true);
            } else {
                answer.completeExceptionally(
                        error instanceof CompletionException ? error : new CompletionException(error));
            }
        }
    }

    /** The checks under way on one client, told as its connection drops and comes back. */
    private static final class Checks implements ClientContext.SessionListener {
        private final ClientContext context;
        private final Set<Check> underWay = ConcurrentHashMap.newKeySet();

        private Checks(ClientContext context) {
            this.context = context;
        }

        static Checks of(ClientContext context) {
            return context.shared(Checks.class.getName(), key -> {
                Checks checks = new Checks(context);
                context.addSessionListener(checks);
                return checks;
            });
        }

        void add(Check c) {
            underWay.add(c);
            c.done.whenComplete((ok, error) -> underWay.remove(c));
            if (!context.isConnected()) {
                c.connectionLost(); // dropped before it was added: no news of that is on its way
            }
        }

        @Override
        public void sessionChanged(SessionEvent event) {
            switch (event) {
                case SUSPENDED, SESSION_ENDED -> underWay.forEach(Check::connectionLost);
                case RECONNECTED, NEW_SESSION -> underWay.forEach(Check::resumed);
                case CLOSED -> {} // the check fails
            }
        }
    }

    private void read(Check c) {
        run(
                c.done,
                () -> client.getData()
                        .inBackground((cf, event) -> {
                            switch (Code.get(event.getResultCode())) {
                                case OK -> check(event, c);
                                case NONODE -> create(c);
                                default -> fail(event, c);
                            }
                        })
                        .forPath(path));
    }

    private void check(CuratorEvent event, Check c) {
        byte[] data = event.getData();
        if (data == null || data.length == 0) {
            if (event.getStat().getVersion() == -1) {
                // Wrapped there after 2^32 writes: a conditional write at -1 matches any version, so two claims of
                // different limits could both land, each believing its own.
                c.done.completeExceptionally(new IllegalStateException("the data of " + path + " is empty at data"
                        + " version -1, where ZooKeeper cannot tell a claim of it from an overwrite (-1 matches any"
                        + " version): write the limit (" + maxLeases + ") into " + path + " by hand, or use another"
                        + " path"));
                return;
            }
            // The path exists without a record (made as a bare parent): claim it, unless someone else just did.
            run(
                    c.done,
                    () -> client.setData()
                            .withVersion(event.getStat().getVersion())
                            .inBackground((cf, e) -> {
                                Code rc = Code.get(e.getResultCode());
                                if (rc == Code.OK) {
                                    c.done.complete(e.getStat().getCzxid());
                                } else if (rc == Code.BADVERSION) {
                                    read(c);
                                } else {
                                    fail(e, c);
                                }
                            })
                            .forPath(path, encoded()));
            return;
        }
        IllegalStateException refused = refusal(data);
        if (refused != null) {
            c.done.completeExceptionally(refused);
            return;
        }
        c.done.complete(event.getStat().getCzxid());
    }

    /** Why a record refuses this instance: null if it records this limit. */
    private IllegalStateException refusal(byte[] data) {
        String text = new String(data, StandardCharsets.UTF_8);
        int recorded;
        try {
            recorded = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            return new IllegalStateException("the data of " + path + " is not a maxLeases record: \""
                    + abbreviate(text) + "\". A semaphore records its limit in its path's data, and claims an existing"
                    + " path only if its data is empty (Curator's create() stores the local address unless given"
                    + " data): empty the data, or use another path");
        }
        if (recorded != maxLeases) {
            return new IllegalStateException("semaphore " + path + " records maxLeases " + recorded
                    + ", but this instance was built with maxLeases " + maxLeases);
        }
        return null;
    }

    private void create(Check c) {
        run(
                c.done,
                () -> client.create()
                        .creatingParentContainersIfNeeded()
                        .withMode(CreateMode.PERSISTENT)
                        .inBackground((cf, event) -> {
                            Code rc = Code.get(event.getResultCode());
                            if (rc == Code.OK) {
                                c.done.complete(event.getStat().getCzxid());
                            } else if (rc == Code.NODEEXISTS) {
                                read(c);
                            } else {
                                fail(event, c);
                            }
                        })
                        .forPath(path, encoded()));
    }

    private void fail(CuratorEvent event, Check c) {
        Code rc = Code.get(event.getResultCode());
        if (ResultCodes.isInDoubt(rc) || rc == Code.NOTREADONLY) {
            // The connection went for longer than Curator's retries, or is to a server cut off from its quorum, which
            // takes no write: check again once one takes writes, from the read, which shows whatever a write in doubt
            // did. A closed client fails the check.
            c.connectionLost();
            ClientContext context = ClientContext.of(client);
            CompletableFuture<Void> back = rc == Code.NOTREADONLY ? context.writable() : context.connected();
            back.whenComplete((connected, closed) -> {
                if (closed != null) {
                    c.done.completeExceptionally(closed);
                } else {
                    c.resumed();
                    read(c);
                }
            });
            return;
        }
        c.done.completeExceptionally(new CoordinationException(
                "cannot check the maxLeases record of " + path + ": " + rc, KeeperException.create(rc, path)));
    }

    private byte[] encoded() {
        return Integer.toString(maxLeases).getBytes(StandardCharsets.UTF_8);
    }

    private static String abbreviate(String text) {
        return text.length() <= 40 ? text : text.substring(0, 40) + "...";
    }

    /** A Curator builder chain, which declares {@code throws Exception}. */
    private interface Call {
        void run() throws Exception;
    }

    private static void run(CompletableFuture<Long> done, Call call) {
        try {
            call.run();
        } catch (Exception e) {
            done.completeExceptionally(new CoordinationException("cannot reach ZooKeeper: " + e, e));
        }
    }
}
