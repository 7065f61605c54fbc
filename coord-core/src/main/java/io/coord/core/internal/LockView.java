package io.coord.core.internal;

import io.coord.core.DistributedLock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/** A {@link DistributedLock} seen as a {@link Lock}, bound to threads like its acquire and release. */
final class LockView implements Lock {
    private final DistributedLock lock;

    LockView(DistributedLock lock) {
        this.lock = lock;
    }

    @Override
    public void lock() {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    lock.acquire();
                    return;
                } catch (InterruptedException e) {
                    interrupted = true; // Lock.lock() is not interruptible: keep waiting, restore the flag after
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock.acquire();
    }

    @Override
    public boolean tryLock() {
        try {
            return lock.acquire(Duration.ZERO);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return lock.acquire(Duration.ofNanos(Math.max(0, unit.toNanos(time))));
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
