package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.integration.util.CheckedRunnable;

@ZooKeeperTest
class CoordLockRegistryTest {
    static ZooKeeperEnsemble zk;
    private final ExecutorService other = Executors.newSingleThreadExecutor();

    @AfterEach
    void stopThreads() {
        other.shutdownNow();
    }

    @Test
    void aKeyIsOneLockObjectAndOneZnodeNameUnderTheRoot() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock lock = registry.obtain("order-7");
        assertThat(registry.obtain("order-7")).isSameAs(lock);
        assertThat(registry.mutex("order-7").path()).isEqualTo("/locks/order-7");
        assertThat(lock).hasToString("CoordLock[/locks/order-7]");
    }

    @Test
    void locksAreReentrantPerThreadAndExcludeOtherThreads() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock lock = registry.obtain("reentrant");
        lock.lock();
        lock.lock();
        assertThat(other.submit(() -> lock.tryLock()).get()).isFalse();
        lock.unlock();
        assertThat(other.submit(() -> lock.tryLock()).get()).isFalse();
        lock.unlock();
        assertThat(other.submit(() -> {
                            boolean got = lock.tryLock();
                            lock.unlock();
                            return got;
                        })
                        .get())
                .isTrue();
        zk.assertNoLeaksUnder("/locks/reentrant");
    }

    @Test
    void registriesOnTwoClientsExcludeEachOtherAndTryLockWaitsAtMostItsTimeout() throws Exception {
        Lock mine = new CoordLockRegistry(zk.newClient(), "/locks").obtain("shared");
        Lock theirs = new CoordLockRegistry(zk.newClient(), "/locks").obtain("shared");
        assertThat(mine.tryLock(1, TimeUnit.SECONDS)).isTrue();

        assertThat(other.submit(() -> theirs.tryLock(200, TimeUnit.MILLISECONDS))
                        .get())
                .isFalse();
        CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return theirs.tryLock(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                other);
        mine.unlock();
        assertThat(waiting.get(20, TimeUnit.SECONDS)).isTrue();
        other.submit(theirs::unlock).get();
        zk.assertNoLeaksUnder("/locks/shared");
    }

    @Test
    void unlockByAThreadThatDoesNotHoldTheLockThrows() throws Exception {
        Lock lock = new CoordLockRegistry(zk.newClient(), "/locks").obtain("owned");
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        lock.lock();
        try {
            assertThat(other.submit(() -> {
                                try {
                                    lock.unlock();
                                    return null;
                                } catch (IllegalMonitorStateException e) {
                                    return e;
                                }
                            })
                            .get())
                    .isInstanceOf(IllegalMonitorStateException.class);
        } finally {
            lock.unlock();
        }
        assertThatThrownBy(lock::newCondition).isInstanceOf(UnsupportedOperationException.class);
        zk.assertNoLeaksUnder("/locks/owned");
    }

    @Test
    void executeLockedRunsUnderTheLock() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        String result = registry.executeLocked("callable", () -> {
            assertThat(registry.mutex("callable").isHeldByCurrentThread()).isTrue();
            return "done";
        });
        assertThat(result).isEqualTo("done");
        assertThat(registry.mutex("callable").isAcquiredInThisProcess()).isFalse();
        zk.assertNoLeaksUnder("/locks/callable");
    }

    @Test
    void executeLockedKeepsTheWorksOwnExceptionWithALostHoldAttachedAndTimesOutWithoutRunningIt() throws Exception {
        CuratorFramework client = zk.newClient();
        CoordLockRegistry registry = new CoordLockRegistry(client, "/locks");
        IOException declined = new IOException("payment declined");
        assertThatThrownBy(() -> registry.executeLocked("paid", (CheckedRunnable<Exception>) () -> {
                    Lease lease = registry.mutex("paid").lease();
                    zk.expireSession(client);
                    await().until(() -> lease.state() == LeaseState.LOST);
                    throw declined;
                }))
                .isSameAs(declined);
        assertThat(declined.getSuppressed())
                .singleElement()
                .isInstanceOf(IllegalStateException.class)
                .extracting(Throwable::getMessage)
                .asString()
                .startsWith("the lock for key 'paid' under /locks was lost before unlock");
        assertThat(registry.mutex("paid").isAcquiredInThisProcess()).isFalse();

        // On a clean hold the work's exception goes alone, and the lock is released.
        IllegalArgumentException refused = new IllegalArgumentException("no such invoice");
        assertThatThrownBy(() -> registry.executeLocked(
                        "paid", Duration.ofSeconds(5), (CheckedRunnable<RuntimeException>) () -> {
                            throw refused;
                        }))
                .isSameAs(refused)
                .hasNoSuppressedExceptions();
        assertThat(registry.mutex("paid").isAcquiredInThisProcess()).isFalse();

        Lock held = registry.obtain("paid");
        held.lock();
        try {
            AtomicBoolean ran = new AtomicBoolean();
            assertThat(other.submit(() -> {
                                try {
                                    registry.executeLocked(
                                            "paid", Duration.ofMillis(50), (CheckedRunnable<RuntimeException>)
                                                    () -> ran.set(true));
                                    return "ran";
                                } catch (TimeoutException e) {
                                    return e.getMessage();
                                }
                            })
                            .get())
                    .isEqualTo("the lock for key 'paid' under /locks was not acquired within PT0.05S");
            assertThat(ran).isFalse();
        } finally {
            held.unlock();
        }
        zk.assertNoLeaksUnder("/locks/paid");
    }

    @Test
    void expiringForgetsOnlyLocksNobodyHolds() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock held = registry.obtain("held");
        Lock idle = registry.obtain("idle");
        held.lock();
        try {
            registry.expireUnusedOlderThan(0);
            assertThat(registry.size()).isEqualTo(1);
            assertThat(registry.obtain("held")).isSameAs(held);
            assertThat(registry.obtain("idle")).isNotSameAs(idle);
            registry.expireUnusedOlderThan(TimeUnit.HOURS.toMillis(1));
            assertThat(registry.size()).isEqualTo(2);
        } finally {
            held.unlock();
        }
    }

    @Test
    void renewingConfirmsAHoldAndFailsForAThreadWithoutOneOrALostOne() throws Exception {
        CuratorFramework client = zk.newClient();
        CoordLockRegistry registry = new CoordLockRegistry(client, "/locks");
        assertThatThrownBy(() -> registry.renewLock("renewed"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the current thread does not hold the lock of 'renewed' under /locks");
        Lock lock = registry.obtain("renewed");
        lock.lock();
        registry.renewLock("renewed");
        Lease lease = registry.mutex("renewed").lease();
        assertThat(other.submit(() -> {
                            try {
                                registry.renewLock("renewed");
                                return null;
                            } catch (IllegalStateException e) {
                                return e.getMessage();
                            }
                        })
                        .get())
                .isEqualTo("the current thread does not hold the lock of 'renewed' under /locks");

        zk.expireSession(client);

        // A hold ends with its lease: the thread holds nothing to renew any more, and is told how it ended.
        await().until(() -> lease.state() == LeaseState.LOST);
        assertThatThrownBy(() -> registry.renewLock("renewed"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the lock of 'renewed' under /locks was lost while this thread held it (session expired"
                        + " or node deleted)")
                .cause()
                .hasMessageEndingWith("; its lease ended LOST");
        // The usual finally block releases what the thread owes, and says that mutual exclusion may have failed.
        assertThatThrownBy(lock::unlock)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the lock for key 'renewed' under /locks was lost before unlock (session expired or node"
                        + " deleted); the work it guarded may have overlapped another holder");
        assertThat(registry.mutex("renewed").isAcquiredInThisProcess()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
    }

    @Test
    void aLockLostInsideANestingFailsOnlyTheOutermostUnlockAndExecuteLocked() throws Exception {
        CuratorFramework client = zk.newClient();
        CoordLockRegistry registry = new CoordLockRegistry(client, "/locks");
        Lock lock = registry.obtain("nested");
        lock.lock();
        String inner = registry.executeLocked("nested", () -> {
            Lease lease = registry.mutex("nested").lease();
            zk.expireSession(client);
            await().until(() -> lease.state() == LeaseState.LOST);
            return "inner unlock is quiet";
        });
        assertThat(inner).isEqualTo("inner unlock is quiet");
        assertThatThrownBy(lock::unlock)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("the lock for key 'nested' under /locks was lost before unlock");

        // A thread whose hold was lost does not lock again before it has unlocked what it owes.
        assertThatThrownBy(() -> registry.executeLocked("nested", () -> {
                    Lease lease = registry.mutex("nested").lease();
                    zk.expireSession(client);
                    await().until(() -> lease.state() == LeaseState.LOST);
                    assertThatThrownBy(lock::lock)
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessage("the lock for key 'nested' under /locks was lost while this thread held it"
                                    + " (session expired or node deleted); unlock what it still owes before locking"
                                    + " again");
                    assertThatThrownBy(() -> lock.tryLock(1, TimeUnit.SECONDS))
                            .isInstanceOf(IllegalStateException.class);
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("the lock for key 'nested' under /locks was lost before unlock");
        assertThat(registry.mutex("nested").isAcquiredInThisProcess()).isFalse();
        assertThat(registry.executeLocked("nested", () -> "a clean hold unlocks quietly"))
                .isEqualTo("a clean hold unlocks quietly");
        zk.assertNoLeaksUnder("/locks/nested");
    }

    @Test
    void aLockObjectKeptAcrossAnExpiryStillSharesTheKeysHold() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock kept = registry.obtain("kept");
        registry.expireUnusedOlderThan(0);
        assertThat(registry.size()).isZero();

        kept.lock();
        try {
            registry.renewLock("kept");
            Lock fresh = registry.obtain("kept");
            assertThat(fresh.tryLock()).isTrue(); // the same hold, entered again
            fresh.unlock();
            assertThat(other.submit(() -> fresh.tryLock()).get()).isFalse();
            registry.expireUnusedOlderThan(0);
            assertThat(registry.obtain("kept")).isSameAs(fresh); // held: not retired
        } finally {
            kept.unlock();
        }
        assertThat(registry.mutex("kept").isAcquiredInThisProcess()).isFalse();
        zk.assertNoLeaksUnder("/locks/kept");
    }

    @Test
    void pastItsCapacityTheRegistryForgetsTheLeastRecentlyUsedLocksButNeverAHeldOne() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock held = registry.obtain("capacity-held");
        held.lock();
        try {
            for (int i = 0; i < CoordLockRegistry.DEFAULT_CACHE_CAPACITY + 10_000; i++) {
                registry.obtain("invoice-" + i); // no I/O: a lock is made on first use of its key
            }
            assertThat(registry.size()).isLessThanOrEqualTo(CoordLockRegistry.DEFAULT_CACHE_CAPACITY);
            assertThat(registry.obtain("capacity-held")).isSameAs(held);

            registry.setCacheCapacity(100);
            assertThat(registry.size()).isLessThanOrEqualTo(100);
            Lock recent = registry.obtain("recent");
            for (int i = 0; i < 50; i++) {
                registry.obtain("more-" + i);
            }
            assertThat(registry.obtain("recent")).isSameAs(recent);
            assertThat(registry.obtain("capacity-held")).isSameAs(held);
            registry.renewLock("capacity-held");
        } finally {
            held.unlock();
        }
        assertThatThrownBy(() -> registry.setCacheCapacity(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cacheCapacity must be >= 1: 0");
        zk.assertNoLeaksUnder("/locks/capacity-held");
    }

    @Test
    @Timeout(60) // a trim that took the new lock away would have it spin
    void aRegistryThatLocksInUseKeepOverItsCapacityStillMakesANewKeysLock() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        registry.setCacheCapacity(1);
        Lock first = registry.obtain("over-capacity-a");
        first.lock();
        try {
            Lock second = registry.obtain("over-capacity-b"); // the capacity is taken by a lock in use
            assertThat(second.tryLock()).isTrue();
            second.unlock();
            assertThat(registry.obtain("over-capacity-a")).isSameAs(first);
        } finally {
            first.unlock();
        }
        zk.assertNoLeaksUnder("/locks/over-capacity-a");
        zk.assertNoLeaksUnder("/locks/over-capacity-b");
    }

    @Test
    void aHoldThroughTheMutexOfAForgottenLockIsStillRenewed() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        ReentrantMutex mutex = registry.mutex("renewed-after-expiry");
        registry.expireUnusedOlderThan(0);
        assertThat(registry.size()).isZero();

        mutex.acquire();
        try {
            registry.renewLock("renewed-after-expiry");
        } finally {
            mutex.release();
        }
        assertThatThrownBy(() -> registry.renewLock("renewed-after-expiry"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the current thread does not hold the lock of 'renewed-after-expiry' under /locks");
        zk.assertNoLeaksUnder("/locks/renewed-after-expiry");
    }

    @Test
    void aThreadWaitingInTheMutexOfAForgottenLockHoldsTheKeysNextLockToo() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        CoordLockRegistry elsewhere = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock theirs = elsewhere.obtain("waited");
        theirs.lock();
        CompletableFuture<Boolean> nested = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        registry.mutex("waited").acquire(); // waits behind the other process
                        try {
                            Lock again = registry.obtain("waited");
                            boolean entered = again.tryLock(1, TimeUnit.SECONDS);
                            if (entered) {
                                again.unlock();
                            }
                            return entered;
                        } finally {
                            registry.mutex("waited").release();
                        }
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                other);
        await().until(() -> elsewhere.mutex("waited").participants().size() == 2);
        registry.expireUnusedOlderThan(0); // nothing of the registry's own says the lock is in use

        theirs.unlock();
        assertThat(nested.get(30, TimeUnit.SECONDS))
                .as("the thread queued behind its own hold")
                .isTrue();
        assertThat(registry.mutex("waited").isAcquiredInThisProcess()).isFalse();
        zk.assertNoLeaksUnder("/locks/waited");
    }

    @Test
    void theMutexOfAForgottenLockStaysTheKeysWhileItsAcquisitionIsUnderWayThoughNobodyRefersToIt() throws Exception {
        CoordLockRegistry registry = new CoordLockRegistry(zk.newClient(), "/locks");
        CoordLockRegistry elsewhere = new CoordLockRegistry(zk.newClient(), "/locks");
        Lock theirs = elsewhere.obtain("unreferenced");
        theirs.lock();
        // Asked for asynchronously, so that no frame of a waiting thread refers to the mutex either.
        WeakReference<ReentrantMutex> asked = new WeakReference<>(registry.mutex("unreferenced"));
        CompletableFuture<Lease> pending = asked.get().acquireAsync();
        await().until(() -> elsewhere.mutex("unreferenced").participants().size() == 2);
        registry.expireUnusedOlderThan(0); // nothing of the registry's own says the lock is in use
        for (int i = 0; i < 3; i++) {
            System.gc(); // a collection would clear the registry's weak reference to an unreachable mutex
        }

        ReentrantMutex found = registry.mutex("unreferenced");
        assertThat(found).as("the mutex whose acquisition is under way").isSameAs(asked.get());
        theirs.unlock();
        Lease lease = pending.get(30, TimeUnit.SECONDS);
        assertThat(registry.mutex("unreferenced").isAcquiredInThisProcess()).isTrue();
        lease.close();
        zk.assertNoLeaksUnder("/locks/unreferenced");
    }

    @Test
    void aLeaderInitiatorOnTheRegistryRevokesWhenItsHoldIsLostAndLeadsAgainOnTheNewSession() throws Exception {
        CuratorFramework client = zk.newClient();
        CoordLockRegistry registry = new CoordLockRegistry(client, "/lrli");
        List<String> heard = new CopyOnWriteArrayList<>();
        LockRegistryLeaderInitiator initiator =
                new LockRegistryLeaderInitiator(registry, new DefaultCandidate("only", "reports") {
                    @Override
                    public void onGranted(Context context) {
                        heard.add("granted");
                    }

                    @Override
                    public void onRevoked(Context context) {
                        heard.add("revoked");
                    }
                });
        initiator.setHeartBeatMillis(100);
        initiator.setBusyWaitMillis(50);
        initiator.start();
        try {
            await().until(() -> heard.equals(List.of("granted")));
            zk.expireSession(client);

            await().atMost(Duration.ofSeconds(20))
                    .until(() ->
                            heard.size() >= 3 && heard.subList(0, 3).equals(List.of("granted", "revoked", "granted")));
        } finally {
            initiator.stop();
        }
        await().until(() -> !registry.mutex("reports").isAcquiredInThisProcess());
        zk.assertNoLeaksUnder("/lrli/reports");
    }

    @Test
    void badKeysAndRootsAreRefusedBeforeAnythingIsWritten() throws Exception {
        CuratorFramework client = zk.newClient();
        CoordLockRegistry registry = new CoordLockRegistry(client, "/refusing");
        assertThatThrownBy(() -> registry.obtain("a/b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "lock key 'a/b' is not a valid znode name: it must be non-empty, not . or .., and contain no /");
        assertThatThrownBy(() -> registry.obtain(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("lock key '' is not a valid znode name");
        assertThatThrownBy(() -> registry.obtain(".."))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("lock key '..' is not a valid znode name");
        assertThatThrownBy(() -> registry.obtain("bad\u0000key"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("lock key 'bad\u0000key' is not a valid znode name: ");
        assertThatThrownBy(() -> registry.obtain(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("lockKey must not be null");
        assertThatThrownBy(() -> new CoordLockRegistry(client, "locks"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("invalid ZooKeeper path \"locks\"");
        assertThatThrownBy(() -> new CoordLockRegistry(client, "/"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("path must not be the root");
        assertThatThrownBy(() -> new CoordLockRegistry(null, "/locks"))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("client must not be null");
        assertThat(client.checkExists().forPath("/refusing")).isNull();
    }
}
