package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.LeaseState;
import io.coord.core.internal.LeaseEngine;
import io.coord.testkit.ZooKeeperFixture;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A term request withdrawn at the moments a candidacy cannot bring about on purpose: the grant never takes. */
@Timeout(60)
class TermRequestTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    /** An owner's lock that runs a step once, right after it is taken for the {@code n}th time. */
    private static final class SteppedLock extends ReentrantLock {
        private static final long serialVersionUID = 1L;
        private transient int taken;
        private transient int at;
        private transient Runnable step;

        void onTake(int n, Runnable step) {
            this.at = n;
            this.step = step;
        }

        @Override
        public void lock() {
            super.lock();
            if (++taken == at) {
                step.run();
            }
        }
    }

    private final List<Lease> granted = new CopyOnWriteArrayList<>();

    private Runnable take(Lease lease, Throwable error) {
        granted.add(lease);
        return () -> {};
    }

    private static LeaseEngine engine(String path) throws InterruptedException {
        return new LeaseEngine(zk.newClient(), path, LeaderLatch.PREFIX, LeasePredicate.maxLeases(1), new byte[0]);
    }

    @Test
    void aWithdrawalBetweenTheEnginesQueueingAndTheRequestBecomingPendingWithdrawsIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("withdrawn-while-sent");
        SteppedLock lock = new SteppedLock();
        TermRequest request = new TermRequest(engine(path), lock);
        // The send looks under the lock before it queues and again after: the withdrawal comes in between.
        lock.onTake(2, request::withdraw);

        request.send(() -> true, Runnable::run, this::take);

        lock.lock();
        try {
            assertFalse(request.isPending(), "the withdrawn send did not become pending");
        } finally {
            lock.unlock();
        }
        zk.assertNoLeaks(path); // its node, granted or not, is deleted
        assertEquals(List.of(), granted, "a withdrawn send grants nothing");
    }

    @Test
    void aGrantAnsweredAfterItsWithdrawalIsReleased() throws Exception {
        String path = ZooKeeperFixture.uniquePath("granted-after-withdrawal");
        SteppedLock lock = new SteppedLock();
        TermRequest request = new TermRequest(engine(path), lock);
        List<Runnable> delivered = new CopyOnWriteArrayList<>();

        request.send(() -> true, delivered::add, this::take);
        await().until(() -> !delivered.isEmpty()); // the grant waits for the owner's events
        CompletableFuture<Lease> withdrawn;
        lock.lock();
        try {
            withdrawn = request.withdraw();
        } finally {
            lock.unlock();
        }
        withdrawn.cancel(false); // as an owner does once its lock is released: too late, the grant is in
        delivered.forEach(Runnable::run);

        assertEquals(List.of(), granted, "the grant found itself unwanted");
        Lease lease = withdrawn.getNow(null);
        assertTrue(lease != null && lease.state() == LeaseState.RELEASED, "the late grant's lease is released");
        zk.assertNoLeaks(path);
        lock.lock();
        try {
            assertNull(request.withdraw(), "nothing pending after a withdrawal");
        } finally {
            lock.unlock();
        }
    }
}
