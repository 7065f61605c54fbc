package io.coord.core.internal;

import io.coord.core.DistributedLock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/** A {@link DistributedLock} seen as a {@link Lock}, bound to threads like its acquire and release. */
final class LockView implements Lock {
    private final ThreadBoundLock lock;

    LockView(ThreadBoundLock lock) {
        this.lock = lock;
    }

    /** Keeps its place in the queue however often interrupted, and restores the flag once it holds. */
    @Override
    public void lock() {
        lock.acquireUninterruptibly();
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock.acquire(); // which, as Lock says, throws if interrupted even when the thread holds the lock already
    }

    /**
     * Takes a free lock whatever the interrupt flag says, as ReentrantLock's tryLock() does. A write lock whose read
     * lock the thread holds answers false, as ReentrantReadWriteLock's does: it could only wait behind itself.
     */
    @Override
    public boolean tryLock() {
        return !lock.wouldWaitBehindItself() && lock.tryAcquireUninterruptibly();
    }

    /** Like {@link #tryLock()}; false at once where that answers false without a look. */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        checkInterrupt();
        return !lock.wouldWaitBehindItself() && lock.acquire(Duration.ofNanos(Math.max(0, unit.toNanos(time))));
    }

    private static void checkInterrupt() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
    }

    @Override
    public void unlock() {
        lock.release();
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("a distributed lock has no conditions: " + lock.path());
    }
}
