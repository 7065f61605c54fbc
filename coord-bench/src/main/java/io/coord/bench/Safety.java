package io.coord.bench;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The invariants that ride along on every measured run, so that a fast wrong answer cannot pass: no more holders
 * than the limit, fencing tokens that only rise, no writer beside anyone, nothing lost or duplicated. A violation is
 * recorded, not thrown, so the run finishes and reports every one of them.
 */
public final class Safety {
    private final List<String> violations = new CopyOnWriteArrayList<>();

    /** A guard admitting at most {@code limit} holders at once. */
    public Guard guard(String what, int limit) {
        return new Guard(what, limit);
    }

    public ReadWriteGuard readWriteGuard(String what) {
        return new ReadWriteGuard(what);
    }

    /** Records {@code message} as a violation unless {@code holds}. */
    public void check(boolean holds, String message) {
        if (!holds) {
            violations.add(message);
        }
    }

    public List<String> violations() {
        return List.copyOf(violations);
    }

    /** Counts holders; call {@link #enter} right after a grant and {@link #exit} right before the release. */
    public final class Guard {
        private final String what;
        private final int limit;
        private final AtomicInteger holders = new AtomicInteger();
        private final AtomicInteger peak = new AtomicInteger();
        private final AtomicLong lastToken = new AtomicLong(Long.MIN_VALUE);

        private Guard(String what, int limit) {
            this.what = what;
            this.limit = limit;
        }

        public void enter() {
            int now = holders.incrementAndGet();
            peak.accumulateAndGet(now, Math::max);
            check(now <= limit, what + ": " + now + " holders at once, limit " + limit);
        }

        /**
         * Enters, and for an exclusive guard also checks that {@code fencingToken} is above every earlier holder's:
         * inside the guard the holders are serialized, so the tokens they see must rise.
         */
        public void enter(long fencingToken) {
            enter();
            long previous = lastToken.getAndSet(fencingToken);
            check(
                    limit != 1 || fencingToken > previous,
                    what + ": fencing token " + fencingToken + " after " + previous + ", not rising");
        }

        public void exit() {
            holders.decrementAndGet();
        }

        public int peak() {
            return peak.get();
        }

        public int holders() {
            return holders.get();
        }
    }

    /** Readers share; a writer is alone. */
    public final class ReadWriteGuard {
        private final String what;
        private final AtomicInteger readers = new AtomicInteger();
        private final AtomicInteger writers = new AtomicInteger();
        private final AtomicInteger peakReaders = new AtomicInteger();

        private ReadWriteGuard(String what) {
            this.what = what;
        }

        public void enterRead() {
            peakReaders.accumulateAndGet(readers.incrementAndGet(), Math::max);
            int w = writers.get();
            check(w == 0, what + ": a reader beside " + w + " writer(s)");
        }

        public void exitRead() {
            readers.decrementAndGet();
        }

        public void enterWrite() {
            int w = writers.incrementAndGet();
            int r = readers.get();
            check(w == 1 && r == 0, what + ": a writer beside " + (w - 1) + " writer(s) and " + r + " reader(s)");
        }

        public void exitWrite() {
            writers.decrementAndGet();
        }

        public int peakReaders() {
            return peakReaders.get();
        }
    }
}
