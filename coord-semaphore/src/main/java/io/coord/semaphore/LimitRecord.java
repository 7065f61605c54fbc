package io.coord.semaphore;

import io.coord.core.CoordinationException;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.ResultCodes;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;

/**
 * The semaphore's {@code maxLeases}, kept as the decimal data of its path, so that every client enforces one limit.
 * Checked once per instance, before its first acquisition; concurrent first acquisitions share one check.
 *
 * <p>The path is created PERSISTENT, not as a container like the engine's parents: the server reaps an idle
 * container, and a record that vanished with it would let the next client record a different limit while this one
 * goes on enforcing its own. Retiring a semaphore, or changing its limit, means deleting the path by hand.
 */
final class LimitRecord {
    private final CuratorFramework client;
    private final String path;
    private final int maxLeases;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private CompletableFuture<Void> check;

    LimitRecord(CuratorFramework client, String path, int maxLeases) {
        this.client = client;
        this.path = path;
        this.maxLeases = maxLeases;
    }

    boolean isVerified() {
        CompletableFuture<Void> c = current();
        return c != null && c.isDone() && !c.isCompletedExceptionally();
    }

    /**
     * Completes when the record matches ours, writing it first if there is none. A check in flight is shared; a
     * failed one is tried again by the next caller.
     */
    CompletableFuture<Void> verify() {
        CompletableFuture<Void> started;
        lock.lock();
        try {
            if (check != null && !check.isCompletedExceptionally()) {
                return check;
            }
            check = started = new CompletableFuture<>();
        } finally {
            lock.unlock();
        }
        read(started);
        return started;
    }

    private CompletableFuture<Void> current() {
        lock.lock();
        try {
            return check;
        } finally {
            lock.unlock();
        }
    }

    private void read(CompletableFuture<Void> done) {
        run(
                done,
                () -> client.getData()
                        .inBackground((c, event) -> {
                            switch (Code.get(event.getResultCode())) {
                                case OK -> check(event, done);
                                case NONODE -> create(done);
                                default -> fail(event, done);
                            }
                        })
                        .forPath(path));
    }

    private void check(CuratorEvent event, CompletableFuture<Void> done) {
        byte[] data = event.getData();
        if (data == null || data.length == 0) {
            // The path exists without a record (made as a bare parent): claim it, unless someone else just did.
            run(
                    done,
                    () -> client.setData()
                            .withVersion(event.getStat().getVersion())
                            .inBackground((c, e) -> {
                                Code rc = Code.get(e.getResultCode());
                                if (rc == Code.OK) {
                                    done.complete(null);
                                } else if (rc == Code.BADVERSION) {
                                    read(done);
                                } else {
                                    fail(e, done);
                                }
                            })
                            .forPath(path, encoded()));
            return;
        }
        String text = new String(data, StandardCharsets.UTF_8);
        int recorded;
        try {
            recorded = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            done.completeExceptionally(new IllegalStateException(
                    "the data of " + path + " is not a maxLeases record: \"" + abbreviate(text) + "\""));
            return;
        }
        if (recorded != maxLeases) {
            done.completeExceptionally(new IllegalStateException("semaphore " + path + " records maxLeases " + recorded
                    + ", but this instance was built with maxLeases " + maxLeases));
            return;
        }
        done.complete(null);
    }

    private void create(CompletableFuture<Void> done) {
        run(
                done,
                () -> client.create()
                        .creatingParentContainersIfNeeded()
                        .withMode(CreateMode.PERSISTENT)
                        .inBackground((c, event) -> {
                            Code rc = Code.get(event.getResultCode());
                            if (rc == Code.OK) {
                                done.complete(null);
                            } else if (rc == Code.NODEEXISTS) {
                                read(done);
                            } else {
                                fail(event, done);
                            }
                        })
                        .forPath(path, encoded()));
    }

    private void fail(CuratorEvent event, CompletableFuture<Void> done) {
        Code rc = Code.get(event.getResultCode());
        if (ResultCodes.isInDoubt(rc)) {
            // The connection went for longer than Curator's retries: check again once it is back, from the read,
            // which shows whatever a write in doubt did. A closed client fails the check.
            ClientContext.of(client).connected().whenComplete((connected, closed) -> {
                if (closed != null) {
                    done.completeExceptionally(closed);
                } else {
                    read(done);
                }
            });
            return;
        }
        done.completeExceptionally(new CoordinationException(
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

    private static void run(CompletableFuture<Void> done, Call call) {
        try {
            call.run();
        } catch (Exception e) {
            done.completeExceptionally(new CoordinationException("cannot reach ZooKeeper: " + e, e));
        }
    }
}
