package io.coord.spring;

import io.coord.core.LeaseState;
import io.coord.core.internal.Arguments;
import io.coord.mutex.ReentrantMutex;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.common.PathUtils;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * Spring Integration's lock registry on coord's {@link ReentrantMutex}: one mutex per key, at {@code <root>/<key>},
 * so aggregators, {@code LockRegistryLeaderInitiator} and {@code executeLocked} hold distributed locks with coord's
 * guarantees.
 *
 * <p>The locks follow {@link Lock}'s contract as {@link java.util.concurrent.locks.ReentrantLock} does: they are
 * reentrant per thread, {@link Lock#tryLock(long, TimeUnit)} waits at most that long, and {@link Lock#unlock()} by a
 * thread that does not hold the lock throws {@link IllegalMonitorStateException}. {@link Lock#newCondition()} is
 * unsupported.
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
 */
public final class CoordLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry {
    private final CuratorFramework client;
    private final String root;
    private final Map<String, KeyLock> locks = new ConcurrentHashMap<>();

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
     * The lock for {@code lockKey}: the same object for the same key until {@link #expireUnusedOlderThan(long)}
     * drops it.
     *
     * @throws IllegalArgumentException if the key is not a valid znode name
     */
    @Override
    public Lock obtain(Object lockKey) {
        String name = keyName(lockKey);
        KeyLock lock = locks.computeIfAbsent(name, key -> new KeyLock(new ReentrantMutex(client, root + "/" + key)));
        lock.touch();
        return lock;
    }

    /** The mutex behind {@code lockKey}'s lock, for coord's own API: its lease, fencing token and revocation. */
    public ReentrantMutex mutex(Object lockKey) {
        return ((KeyLock) obtain(lockKey)).mutex;
    }

    /**
     * Forgets the locks that no thread of this process holds or waits for and that were last used more than {@code
     * age} milliseconds ago. Their znodes need no cleanup: a released mutex leaves none.
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.nanoTime();
        long ageNanos = TimeUnit.MILLISECONDS.toNanos(age);
        locks.values().removeIf(lock -> lock.unusedFor(now) > ageNanos && !lock.inUse());
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
        if (lock == null || !lock.mutex.isHeldByCurrentThread()) {
            throw new IllegalStateException(
                    "the current thread does not hold the lock of '" + name + "' under " + root);
        }
        LeaseState state = lock.mutex.lease().state();
        if (state != LeaseState.HELD) {
            throw new IllegalStateException("the lock of '" + name + "' under " + root + " is " + state + ", not HELD");
        }
        lock.touch();
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

    /** A key's lock: the mutex's thread-bound {@link Lock}, and when it was last used. */
    private static final class KeyLock implements Lock {
        private final ReentrantMutex mutex;
        private final Lock lock;
        private volatile long lastUsedNanos = System.nanoTime();
        private final AtomicInteger entering = new AtomicInteger();

        KeyLock(ReentrantMutex mutex) {
            this.mutex = mutex;
            this.lock = mutex.asLock();
        }

        void touch() {
            lastUsedNanos = System.nanoTime();
        }

        long unusedFor(long now) {
            return now - lastUsedNanos;
        }

        boolean inUse() {
            return entering.get() > 0 || mutex.isAcquiredInThisProcess();
        }

        @Override
        public void lock() {
            entering.incrementAndGet();
            try {
                lock.lock();
            } finally {
                entering.decrementAndGet();
                touch();
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            entering.incrementAndGet();
            try {
                lock.lockInterruptibly();
            } finally {
                entering.decrementAndGet();
                touch();
            }
        }

        @Override
        public boolean tryLock() {
            entering.incrementAndGet();
            try {
                return lock.tryLock();
            } finally {
                entering.decrementAndGet();
                touch();
            }
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            entering.incrementAndGet();
            try {
                return lock.tryLock(time, unit);
            } finally {
                entering.decrementAndGet();
                touch();
            }
        }

        @Override
        public void unlock() {
            lock.unlock();
            touch();
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
}
