package io.coord.mutex;

import io.coord.testkit.ZooKeeperFixture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.RetryPolicy;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;

/**
 * Faults a network makes rare but possible, armed one at a time on the ZooKeeper handle of one client: a request the
 * server applies or never sees, whose answer is a lost connection. The connection is then really cut, so the client
 * reconnects on the same session as it would after a network fault. The client's retry policy gives up at once, as
 * any policy does once its retries run out.
 */
final class FaultyHandle {
    private final AtomicBoolean loseNextLockCreateReply = new AtomicBoolean();
    private final AtomicBoolean loseNextMulti = new AtomicBoolean();
    private final AtomicBoolean loseNextDelete = new AtomicBoolean();
    private final AtomicBoolean refuseMultis = new AtomicBoolean();
    private final AtomicInteger refusedMultis = new AtomicInteger();
    private final AtomicInteger answeredMultis = new AtomicInteger();
    private final AtomicBoolean holdNextWatchRemoval = new AtomicBoolean();
    private final AtomicReference<Runnable> heldRemoval = new AtomicReference<>();
    private final AtomicBoolean refuseNextWatchRemoval = new AtomicBoolean();
    private final AtomicInteger refusedRemovals = new AtomicInteger();
    private final AtomicBoolean holdNextWatchAdd = new AtomicBoolean();
    private final AtomicReference<Runnable> heldAdd = new AtomicReference<>();
    private final AtomicInteger watchesAdded = new AtomicInteger();
    private final AtomicReference<String> failNextSyncOf = new AtomicReference<>();
    private final AtomicReference<Handle> handle = new AtomicReference<>();

    /** A started client on {@code zk} whose handles this one's faults apply to. */
    CuratorFramework client(ZooKeeperFixture zk) throws InterruptedException {
        return zk.newCustomClient(b -> faulty(b).retryPolicy(new RetryNTimes(0, 0)));
    }

    /**
     * The same, with a retry policy that lets Curator send a request again after a lost connection, and a session that
     * outlives the reconnection however slow the machine.
     */
    CuratorFramework client(ZooKeeperFixture zk, RetryPolicy retries) throws InterruptedException {
        return zk.newCustomClient(b -> {
            ZooKeeperFixture.outageProof(b);
            faulty(b).retryPolicy(retries);
        });
    }

    private CuratorFrameworkFactory.Builder faulty(CuratorFrameworkFactory.Builder builder) {
        return builder.zookeeperFactory((connect, timeout, watcher, readOnly) -> {
            Handle made = new Handle(connect, timeout, watcher, readOnly);
            handle.set(made);
            return made;
        });
    }

    /** The next sequential create is applied, but its reply is lost with the connection. */
    void loseNextLockCreateReply() {
        loseNextLockCreateReply.set(true);
    }

    /** The next multi never reaches the server: the connection goes first. */
    void loseNextMulti() {
        loseNextMulti.set(true);
    }

    boolean multiLost() {
        return !loseNextMulti.get();
    }

    /** The next delete never reaches the server: the connection goes first. */
    void loseNextDelete() {
        loseNextDelete.set(true);
    }

    boolean deleteLost() {
        return !loseNextDelete.get();
    }

    /** Every multi from now on throws where it is called, as a handle does once its client is closing. */
    void refuseMultis() {
        refuseMultis.set(true);
    }

    int refusedMultis() {
        return refusedMultis.get();
    }

    /** Multis the server answered as a whole, successful or not: neither lost nor refused. */
    int answeredMultis() {
        return answeredMultis.get();
    }

    /**
     * The next removal of persistent recursive watches (a view's) is held back, unsent, until
     * {@link #answerHeldRemovalWithLostConnection}.
     */
    void holdNextWatchRemoval() {
        holdNextWatchRemoval.set(true);
    }

    boolean removalHeld() {
        return heldRemoval.get() != null;
    }

    /**
     * The handle refuses to send the next removal of persistent recursive watches, throwing as Curator's does when it
     * hands the caller a background error it queued.
     */
    void refuseNextWatchRemoval() {
        refuseNextWatchRemoval.set(true);
    }

    int refusedRemovals() {
        return refusedRemovals.get();
    }

    /** Cuts the connection, then answers the held removal as a lost connection answers it: in doubt. */
    void answerHeldRemovalWithLostConnection() {
        cutConnection();
        heldRemoval.getAndSet(null).run();
    }

    /**
     * The next add of a persistent recursive watch (a view's) is held back, unsent, until
     * {@link #answerHeldAddWithLostConnection}.
     */
    void holdNextWatchAdd() {
        holdNextWatchAdd.set(true);
    }

    boolean addHeld() {
        return heldAdd.get() != null;
    }

    /** Adds of persistent recursive watches the server answered OK, on any handle of the client. */
    int watchesAdded() {
        return watchesAdded.get();
    }

    /**
     * Answers the held add as a lost connection answers it: a client whose policy allows it sends the add again, on
     * whichever handle it has by then.
     */
    void answerHeldAddWithLostConnection() {
        heldAdd.getAndSet(null).run();
    }

    /**
     * The next sync of {@code path} fails without reaching the server, with SYSTEMERROR: not CONNECTIONLOSS, which
     * Curator would take for a suspended connection while it lasts.
     */
    void failNextSyncOf(String path) {
        failNextSyncOf.set(path);
    }

    boolean syncFailed() {
        return failNextSyncOf.get() == null;
    }

    /** Closes the handle's socket: the client reconnects on the same session. */
    void dropConnection() {
        cutConnection();
    }

    private void cutConnection() {
        try {
            handle.get().getTestable().closeSocket();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @SuppressWarnings("try") // ZooKeeper.close() throws InterruptedException; Curator closes the handle, not a try
    private final class Handle extends ZooKeeper {
        Handle(String connect, int timeout, Watcher watcher, boolean readOnly) throws IOException {
            super(connect, timeout, watcher, readOnly);
        }

        @Override
        public void create(
                String path,
                byte[] data,
                List<ACL> acl,
                CreateMode mode,
                AsyncCallback.Create2Callback callback,
                Object ctx,
                long ttl) {
            if (!mode.isSequential() || !loseNextLockCreateReply.compareAndSet(true, false)) {
                super.create(path, data, acl, mode, callback, ctx, ttl);
                return;
            }
            super.create(
                    path,
                    data,
                    acl,
                    mode,
                    (rc, p, c, name, stat) -> {
                        cutConnection();
                        callback.processResult(Code.CONNECTIONLOSS.intValue(), p, c, null, null);
                    },
                    ctx,
                    ttl);
        }

        @Override
        public void sync(String path, AsyncCallback.VoidCallback callback, Object ctx) {
            if (failNextSyncOf.compareAndSet(path, null)) {
                callback.processResult(Code.SYSTEMERROR.intValue(), path, ctx);
                return;
            }
            super.sync(path, callback, ctx);
        }

        @Override
        public void delete(String path, int version, AsyncCallback.VoidCallback callback, Object ctx) {
            if (!loseNextDelete.compareAndSet(true, false)) {
                super.delete(path, version, callback, ctx);
                return;
            }
            cutConnection();
            callback.processResult(Code.CONNECTIONLOSS.intValue(), path, ctx);
        }

        @Override
        public void multi(Iterable<Op> ops, AsyncCallback.MultiCallback callback, Object ctx) {
            if (refuseMultis.get()) {
                refusedMultis.incrementAndGet();
                throw new IllegalStateException("refused by the test");
            }
            if (!loseNextMulti.compareAndSet(true, false)) {
                super.multi(
                        ops,
                        (rc, path, c, results) -> {
                            if (results != null) {
                                answeredMultis.incrementAndGet();
                            }
                            callback.processResult(rc, path, c, results);
                        },
                        ctx);
                return;
            }
            cutConnection();
            callback.processResult(Code.CONNECTIONLOSS.intValue(), null, ctx, null);
        }

        @Override
        public void addWatch(
                String path, Watcher watcher, AddWatchMode mode, AsyncCallback.VoidCallback callback, Object ctx) {
            if (mode != AddWatchMode.PERSISTENT_RECURSIVE) {
                super.addWatch(path, watcher, mode, callback, ctx);
                return;
            }
            if (!holdNextWatchAdd.compareAndSet(true, false)) {
                AsyncCallback.VoidCallback counted = (rc, p, c) -> {
                    if (rc == Code.OK.intValue()) {
                        watchesAdded.incrementAndGet();
                    }
                    callback.processResult(rc, p, c);
                };
                super.addWatch(path, watcher, mode, counted, ctx);
                return;
            }
            heldAdd.set(() -> callback.processResult(Code.CONNECTIONLOSS.intValue(), path, ctx));
        }

        @Override
        public void removeAllWatches(
                String path, Watcher.WatcherType type, boolean local, AsyncCallback.VoidCallback callback, Object ctx) {
            if (type == Watcher.WatcherType.PersistentRecursive && refuseNextWatchRemoval.compareAndSet(true, false)) {
                refusedRemovals.incrementAndGet();
                throw new IllegalStateException("refused by the test");
            }
            if (type != Watcher.WatcherType.PersistentRecursive || !holdNextWatchRemoval.compareAndSet(true, false)) {
                super.removeAllWatches(path, type, local, callback, ctx);
                return;
            }
            heldRemoval.set(() -> callback.processResult(Code.CONNECTIONLOSS.intValue(), path, ctx));
        }
    }
}
