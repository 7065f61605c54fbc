package io.coord.queue;

import java.util.concurrent.locks.Lock;
import java.util.function.Supplier;

/** A step run under a lock, which is released however the step ends: how the queue's classes guard their state. */
final class Locked {
    private Locked() {}

    static <T> T get(Lock lock, Supplier<T> step) {
        lock.lock();
        try {
            return step.get();
        } finally {
            lock.unlock();
        }
    }

    static void run(Lock lock, Runnable step) {
        lock.lock();
        try {
            step.run();
        } finally {
            lock.unlock();
        }
    }
}
