package io.coord.spring;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.Deadline;
import io.coord.mutex.ReentrantMutex;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.common.PathUtils;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;
import org.springframework.integration.util.CheckedCallable;
import org.springframework.integration.util.CheckedRunnable;

/**
 * Spring Integration's lock registry on coord's {@link ReentrantMutex}: one mutex per key, at {@code <root>/<key>},
 * so aggregators, {@code LockRegistryLeaderInitiator} and {@code executeLocked} hold distributed locks with coord's
 * guarantees.
 *
 * <p>The locks follow {@link Lock}'s contract as {@link java.util.concurrent.locks.ReentrantLock} does: they are
 * reentrant per thread, {@link Lock#tryLock(long, TimeUnit)} waits at most that long (once the lock's queue has
 * been looked at: a timeout shorter than that look's round trip still gets it, as a zero timeout does), and {@link
 * Lock#unlock()} by a thread that does not hold the lock throws {@link IllegalMonitorStateException}. {@link
 * Lock#newCondition()} is unsupported.
 *
 * <p>A key is its {@code toString()}, used as the lock's znode name as it is: a key that is not a valid znode name
 * (empty, {@code .} or {@code ..}, containing {@code /} or characters ZooKeeper refuses) is rejected with an
 * {@link IllegalArgumentException} before anything is written. Keys are not encoded, so that the path of a lock is
 * the one an operator would guess, and coord or Curator clients outside Spring can share it.
 *
 * <p>A ZooKeeper lock has no time to live: it is held until it is released or its session ends. So {@link
 * #renewLock(Object)} has nothing to extend; it checks that the current thread holds the lock and that coord still
 * knows it to be held (not lost with the session, nor in doubt while the connection is down), and throws {@link
 * IllegalStateException} otherwise, which is what a caller renewing a lock wants to learn.
 *
 * <p>A hold lost while a thread has the lock (its session expired, or somebody deleted its node, which coord hears
 * as {@link io.coord.core.DistributedLock#forceRevocation} describes) ends then: the thread no longer holds the lock,
 * and another process may take it. The thread's unlocks still release what it
 * owes, and the outermost one then throws {@link IllegalStateException}, so that the caller of {@code unlock()} or
 * {@code executeLocked} learns that the work it guarded may have overlapped another holder's. Until then the thread
 * cannot take the key's lock again: {@code lock} and {@code tryLock} throw {@link IllegalStateException}, which tells a
 * caller such as {@code LockRegistryLeaderInitiator} that it no longer leads. An unlock while the connection is down
 * releases quietly: a hold merely in doubt may be fine, and {@link #renewLock(Object)} is the check for it.
 */
public final class CoordLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry {
    /** How many locks the registry keeps by default, as Spring Integration's own ZooKeeper registry does. */
    public static final int DEFAULT_CACHE_CAPACITY = 30_000;

    private final CuratorFramework client;
    private final String root;
    private final Map<String, KeyLock> locks = new ConcurrentHashMap<>();
    private volatile int cacheCapacity = DEFAULT_CACHE_CAPACITY;
    // The size past which current() trims: the capacity, or more while locks in use keep the registry over it.
    private volatile int trimAt = DEFAULT_CACHE_CAPACITY;
    private final AtomicBoolean trimming = new AtomicBoolean();
    // Each key's mutex, kept after its lock is forgotten for as long as anything refers to it (a thread waiting in, or
    // owing a release to, what mutex(key) returned): the key's next lock takes it over, so that one thread's holds
    // of a key are always one mutex's.
    private final Map<String, WeakReference<ReentrantMutex>> mutexes = new ConcurrentHashMap<>();

    /**
     * Locks under {@code root}, a valid absolute path other than {@code /}. Does no I/O.
     *
     * @throws NullPointerException if {@code client} is null
     * @throws IllegalArgumentException if {@code root} is null, not a valid path, or {@code /}
     */
    public CoordLockRegistry(CuratorFramework client, String root) {
        this.client = Arguments.client(client);
        this.root = Arguments.path(root);
    }

    /** The path the locks live under. */
    public String root() {
        return root;
    }

    /**
     * The most locks the registry keeps, {@value #DEFAULT_CACHE_CAPACITY} by default. A service that locks one key per
     * invoice or message would otherwise keep a lock for every key it ever saw: past the capacity, the locks used
     * least recently are forgotten as {@link #expireUnusedOlderThan(long)} forgets them, never one that a thread of
     * this process holds, waits for or still owes an unlock.
     *
     * @throws IllegalArgumentException if {@code capacity} is less than 1
     */
    public void setCacheCapacity(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("cacheCapacity must be >= 1: " + capacity);
        }
        this.cacheCapacity = capacity;
        trimAt = capacity;
        if (locks.size() > capacity) {
            trim(null);
        }
    }

    /**
     * The lock for {@code lockKey}: the same object for the same key until {@link #expireUnusedOlderThan(long)}, or
     * the {@linkplain #setCacheCapacity(int) capacity}, drops it. An object kept across that still works: it uses the
     * key's current lock, so that it and later {@code obtain(key)} calls share one hold per thread.
     *
     * @throws IllegalArgumentException if the key is not a valid znode name
     */
    @Override
    public Lock obtain(Object lockKey) {
        KeyLock lock = current(keyName(lockKey));
        lock.touch();
        return lock;
    }

    /** The mutex behind {@code lockKey}'s lock, for coord's own API: its lease, fencing token and revocation. */
    public ReentrantMutex mutex(Object lockKey) {
        return ((KeyLock) obtain(lockKey)).mutex;
    }

    /**
     * Forgets the locks that no thread of this process holds, waits for or is about to unlock, and that were last used
     * more than {@code age} milliseconds ago. Their znodes need no cleanup: a released mutex leaves none. A thread
     * still using the {@link #mutex(Object)} of a forgotten lock (waiting in it, or owing it a release) goes on with
     * the same mutex, which the key's next lock takes over.
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.nanoTime();
        long ageNanos = TimeUnit.MILLISECONDS.toNanos(age);
        // Decided inside compute, so that an obtain() of the same key waits for the decision instead of racing it.
        for (String name : locks.keySet()) {
            locks.computeIfPresent(name, (key, lock) -> lock.retireIfUnused(now, ageNanos) ? null : lock);
        }
        mutexes.values().removeIf(kept -> kept.get() == null);
    }

    /**
     * Confirms that the current thread holds {@code lockKey}'s lock and that it is still held: ZooKeeper locks have
     * no time to live to extend.
     *
     * @throws IllegalStateException if the current thread does not hold the lock, or holds it while coord cannot
     *     confirm it (connection down) or knows it lost (session ended, node deleted)
     */
    @Override
    public void renewLock(Object lockKey) {
        String name = keyName(lockKey);
        KeyLock lock = locks.get(name);
        // After an expiry the key's mutex may outlive its lock: a thread holding it through mutex(key) holds the key.
        WeakReference<ReentrantMutex> kept = lock == null ? mutexes.get(name) : null;
        ReentrantMutex mutex = lock != null ? lock.mutex : kept == null ? null : kept.get();
        LeaseState state;
        IllegalMonitorStateException notHeld = null;
        try {
            // One look: the hold can end at any moment, and lease() says so with an IllegalMonitorStateException.
            state = mutex == null ? null : mutex.lease().state();
        } catch (IllegalMonitorStateException e) {
            state = null;
            notHeld = e;
        }
        if (state == null && lock != null && lock.lostByCurrentThread()) {
            throw new IllegalStateException(
                    "the lock of '" + name + "' under " + root
                            + " was lost while this thread held it (session expired or node deleted)",
                    notHeld);
        }
        if (state == null) {
            throw new IllegalStateException(
                    "the current thread does not hold the lock of '" + name + "' under " + root, notHeld);
        }
        if (state != LeaseState.HELD) {
            throw new IllegalStateException("the lock of '" + name + "' under " + root + " is " + state + ", not HELD");
        }
        if (lock != null) {
            lock.touch();
        }
    }

    /**
     * Runs {@code work} holding {@code lockKey}'s lock, taken as {@link Lock#lockInterruptibly()} takes it. Unlike
     * Spring's default, which unlocks in a {@code finally}, work that fails keeps its own exception: when the unlock
     * fails too (the hold was lost meanwhile, say), its exception is attached to the work's as suppressed, as
     * try-with-resources does. Work that succeeds on a hold lost meanwhile fails with the unlock's
     * {@link IllegalStateException}: the work may have overlapped another holder's.
     */
    @Override
    public <T, E extends Throwable> T executeLocked(Object lockKey, CheckedCallable<T, E> work)
            throws E, InterruptedException {
        Objects.requireNonNull(work, "work must not be null");
        Lock lock = obtain(lockKey);
        lock.lockInterruptibly();
        return callHolding(lock, work);
    }

    /** Like {@link #executeLocked(Object, CheckedCallable)}, for work with no result. */
    @Override
    public <E extends Throwable> void executeLocked(Object lockKey, CheckedRunnable<E> work)
            throws E, InterruptedException {
        executeLocked(lockKey, withNoResult(work));
    }

    /**
     * Like {@link #executeLocked(Object, CheckedCallable)}, waiting for the lock as {@link Lock#tryLock(long,
     * TimeUnit)} does for at most {@code waitLockDuration} (a zero or negative one still looks once).
     *
     * @throws TimeoutException if the lock was not acquired in time; the work has not run
     */
    @Override
    public <T, E extends Throwable> T executeLocked(
            Object lockKey, Duration waitLockDuration, CheckedCallable<T, E> work)
            throws E, InterruptedException, TimeoutException {
        Objects.requireNonNull(waitLockDuration, "waitLockDuration must not be null");
        Objects.requireNonNull(work, "work must not be null");
        Lock lock = obtain(lockKey);
        if (!lock.tryLock(Deadline.saturatedNanos(waitLockDuration), TimeUnit.NANOSECONDS)) {
            throw new TimeoutException("the lock for key '" + keyName(lockKey) + "' under " + root
                    + " was not acquired within " + waitLockDuration);
        }
        return callHolding(lock, work);
    }

    /** Like {@link #executeLocked(Object, Duration, CheckedCallable)}, for work with no result. */
    @Override
    public <E extends Throwable> void executeLocked(Object lockKey, Duration waitLockDuration, CheckedRunnable<E> work)
            throws E, InterruptedException, TimeoutException {
        executeLocked(lockKey, waitLockDuration, withNoResult(work));
    }

    private static <E extends Throwable> CheckedCallable<Void, E> withNoResult(CheckedRunnable<E> work) {
        Objects.requireNonNull(work, "work must not be null");
        return () -> {
            work.run();
            return null;
        };
    }

    /** Runs {@code work} on a held lock, then unlocks; a failing work's exception wins over a failing unlock's. */
    private static <T, E extends Throwable> T callHolding(Lock lock, CheckedCallable<T, E> work) throws E {
        T result;
        try {
            result = work.call();
        } catch (Throwable failed) {
            try {
                lock.unlock();
            } catch (RuntimeException unlockFailed) {
                failed.addSuppressed(unlockFailed);
            }
            throw failed;
        }
        lock.unlock();
        return result;
    }

    /** The live lock of a key, made on first use or after the last one was retired. */
    private KeyLock current(String name) {
        KeyLock live = locks.get(name);
        if (live != null && !live.isRetired()) {
            return live; // the usual case, without compute's lock on the bin
        }
        KeyLock made = locks.compute(name, (key, lock) -> lock == null || lock.isRetired() ? new KeyLock(key) : lock);
        if (locks.size() > trimAt) {
            trim(name);
        }
        return made;
    }

    /** One lock's name and when it was last used, as a trim found them: sorted on values that hold still. */
    private record Use(String name, long lastUsedNanos) {}

    /**
     * Forgets the least recently used locks that nothing uses, until a tenth of the capacity is free, but never the
     * lock of {@code spared} (the key a caller is making a lock for), nor one used since the trim began. One thread
     * trims at a time; the others go on. When locks in use keep the registry over its capacity, the next trim waits
     * for a tenth of the capacity more, so that a new key never pays for a sort that frees nothing.
     */
    private void trim(String spared) {
        if (!trimming.compareAndSet(false, true)) {
            return;
        }
        try {
            int capacity = cacheCapacity;
            long began = System.nanoTime();
            List<Use> byUse = new ArrayList<>(locks.size());
            locks.forEach((name, lock) -> {
                if (!name.equals(spared)) {
                    byUse.add(new Use(name, lock.lastUsedNanos));
                }
            });
            byUse.sort(Comparator.comparingLong(Use::lastUsedNanos));
            int target = capacity - capacity / 10;
            for (Use use : byUse) {
                if (locks.size() <= target) {
                    break;
                }
                // Retired only if unused since before the trim began: 0 is the age it must exceed.
                locks.computeIfPresent(use.name(), (key, lock) -> lock.retireIfUnused(began, 0) ? null : lock);
            }
            trimAt = Math.max(capacity, locks.size() + Math.max(1, capacity / 10));
            mutexes.values().removeIf(kept -> kept.get() == null);
        } finally {
            trimming.set(false);
        }
    }

    /** The key's mutex: the one still in use through a forgotten lock, or a new one. Inside {@code locks.compute}. */
    private ReentrantMutex mutexOf(String name) {
        WeakReference<ReentrantMutex> kept = mutexes.get(name);
        ReentrantMutex mutex = kept == null ? null : kept.get();
        if (mutex == null) {
            mutex = new ReentrantMutex(client, root + "/" + name);
            mutexes.put(name, new WeakReference<>(mutex));
        }
        return mutex;
    }

    /** How many locks the registry keeps now. */
    int size() {
        return locks.size();
    }

    private static String keyName(Object lockKey) {
        Objects.requireNonNull(lockKey, "lockKey must not be null");
        String name = lockKey.toString();
        if (name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('/') >= 0) {
            throw new IllegalArgumentException("lock key '" + name
                    + "' is not a valid znode name: it must be non-empty, not . or .., and contain no /");
        }
        try {
            PathUtils.validatePath("/" + name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "lock key '" + name + "' is not a valid znode name: " + e.getMessage(), e);
        }
        return name;
    }

    @Override
    public String toString() {
        return "CoordLockRegistry[" + root + "]";
    }

    /**
     * A key's lock: the mutex's thread-bound {@link Lock}, when it was last used, and the leases each thread holds it
     * with. Once retired by {@link #expireUnusedOlderThan}, it hands every call to the key's current lock.
     */
    private final class KeyLock implements Lock {
        private static final int RETIRED = -1;

        private final String name;
        private final ReentrantMutex mutex;
        private final Lock lock;
        private volatile long lastUsedNanos = System.nanoTime();
        // Calls under way on this lock, or RETIRED: it never counts up again once retired.
        private final AtomicInteger users = new AtomicInteger();
        // Each thread's nesting of lock() calls; only its own thread touches an entry.
        private final Map<Thread, Nesting> nestings = new ConcurrentHashMap<>();

        KeyLock(String name) {
            this.name = name;
            this.mutex = mutexOf(name);
            this.lock = mutex.asLock();
        }

        void touch() {
            lastUsedNanos = System.nanoTime();
        }

        boolean isRetired() {
            return users.get() == RETIRED;
        }

        /** Inside {@code locks.compute}: retires this lock if it is old, and nobody uses, holds or still owes it. */
        boolean retireIfUnused(long now, long ageNanos) {
            if (now - lastUsedNanos <= ageNanos || !users.compareAndSet(0, RETIRED)) {
                return false;
            }
            // Checked once no call can start here: a thread holds the lock only through a call that has returned.
            if (!nestings.isEmpty() || mutex.isAcquiredInThisProcess()) {
                users.set(0);
                return false;
            }
            return true;
        }

        /** This lock counted as in use, or the key's current one when this was retired. Pair with {@link #exit}. */
        private KeyLock enter() {
            KeyLock target = this;
            while (!target.tryEnter()) {
                target = current(name);
            }
            return target;
        }

        private boolean tryEnter() {
            for (int n = users.get(); n != RETIRED; n = users.get()) {
                if (users.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
            return false;
        }

        private void exit() {
            users.decrementAndGet();
            touch();
        }

        @Override
        public void lock() {
            KeyLock target = enter();
            try {
                target.refuseAfterLoss();
                target.lock.lock();
                target.entered();
            } finally {
                target.exit();
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            KeyLock target = enter();
            try {
                target.refuseAfterLoss();
                target.lock.lockInterruptibly();
                target.entered();
            } finally {
                target.exit();
            }
        }

        @Override
        public boolean tryLock() {
            KeyLock target = enter();
            try {
                target.refuseAfterLoss();
                boolean locked = target.lock.tryLock();
                if (locked) {
                    target.entered();
                } else {
                    // Lost between the look above and the lock: say so, as the look would have, rather than answer
                    // false to a caller that may never unlock what it owes (LockRegistryLeaderInitiator does not).
                    target.refuseAfterLoss();
                }
                return locked;
            } finally {
                target.exit();
            }
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            KeyLock target = enter();
            try {
                target.refuseAfterLoss();
                boolean locked = target.lock.tryLock(time, unit);
                if (locked) {
                    target.entered();
                } else {
                    // Lost between the look above and the lock: say so, as the look would have, rather than answer
                    // false to a caller that may never unlock what it owes (LockRegistryLeaderInitiator does not).
                    target.refuseAfterLoss();
                }
                return locked;
            } finally {
                target.exit();
            }
        }

        /**
         * Releases one hold. The outermost unlock throws {@link IllegalStateException} after releasing when a lease
         * the thread held the lock with during the nesting was lost: mutual exclusion may not have held.
         */
        @Override
        public void unlock() {
            KeyLock target = enter();
            try {
                target.exited();
            } finally {
                target.exit();
            }
        }

        /** The current thread just acquired or re-entered: counts the nesting and notes the lease it holds. */
        private void entered() {
            Thread me = Thread.currentThread();
            Lease lease;
            try {
                lease = mutex.lease();
            } catch (IllegalMonitorStateException e) {
                lease = null; // the hold ended already
            }
            Nesting nesting = nestings.get(me);
            if (nesting == null) {
                nestings.put(me, new Nesting(lease));
            } else {
                nesting.entered(lease);
            }
        }

        private void exited() {
            Thread me = Thread.currentThread();
            try {
                lock.unlock(); // throws IllegalMonitorStateException for a thread that owes nothing
            } catch (IllegalMonitorStateException e) {
                // It owes the mutex nothing (its releases went through mutex(key)): no nesting of this lock is left.
                nestings.remove(me);
                throw e;
            }
            Nesting nesting = nestings.get(me);
            if (nesting == null || --nesting.count > 0) {
                return;
            }
            nestings.remove(me);
            if (nesting.lost()) {
                throw new IllegalStateException("the lock for key '" + name + "' under " + root
                        + " was lost before unlock (session expired or node deleted); the work"
                        + " it guarded may have overlapped another holder");
            }
        }

        /** Whether the current thread still owes unlocks of a nesting in which its hold was lost. */
        boolean lostByCurrentThread() {
            Nesting nesting = nestings.get(Thread.currentThread());
            return nesting != null && nesting.lost();
        }

        /**
         * A thread whose hold was lost does not lock again before it has unlocked what it owes: its work may have
         * overlapped another holder's, and that unlock would release the new hold, not the lost one. A caller such as
         * Spring's {@code LockRegistryLeaderInitiator} learns here that it stopped leading.
         */
        private void refuseAfterLoss() {
            if (lostByCurrentThread()) {
                throw new IllegalStateException("the lock for key '" + name + "' under " + root
                        + " was lost while this thread held it (session expired or node deleted); unlock what it"
                        + " still owes before locking again");
            }
            // A loss between this look and the lock below is seen by the outermost unlock, as any loss is, or by a
            // tryLock that then answers false.
        }

        @Override
        public Condition newCondition() {
            return lock.newCondition();
        }

        @Override
        public String toString() {
            return "CoordLock[" + mutex.path() + "]";
        }
    }

    /** One thread's lock() calls on a key not yet matched by unlock(), and whether a lease they held was lost. */
    private static final class Nesting {
        int count = 1;
        private Lease lease;
        private boolean lostBefore;

        Nesting(Lease lease) {
            this.lease = lease;
            this.lostBefore = lease == null;
        }

        /** Re-entered, or acquired afresh with another lease after the last one ended. */
        void entered(Lease current) {
            count++;
            if (current != lease) {
                lostBefore |= lost();
                lease = current;
            }
        }

        boolean lost() {
            return lostBefore || lease == null || lease.state() == LeaseState.LOST;
        }
    }
}
