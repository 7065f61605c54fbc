package io.coord.it;

import io.coord.core.Lease;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Watches one critical section that many workers share, and records every breach of the mutex's two promises.
 *
 * <p>The guarantee under test is "at most one VALID holder", not "at most one thread that believes it holds". A
 * client learns that its session expired only when the news reaches it, so a holder whose session the servers have
 * just ended may still see its lease as HELD for a moment while the next holder is already granted. That is why
 * every holder checks {@link Lease#isValid()} before it acts and stops acting once the lease turns SUSPECT or LOST,
 * and why the fencing token, not the local view, is what a guarded resource must trust. The checker therefore counts
 * an overlap only when two holders are inside at once and both of their leases are valid at that instant, checked
 * when either of them enters and when either leaves. Every check runs under one lock, so that the checks form a
 * single timeline.
 */
final class ExclusionChecker {
    /** One worker inside the critical section. */
    record Holder(String worker, Lease lease, long sessionId, long enteredNanos) {
        @Override
        public String toString() {
            return worker + " (session 0x" + Long.toHexString(sessionId) + ", " + lease + ")";
        }
    }

    private record Violation(long nanos, String what) {}

    private static final int REPORTED = 3;
    private static final Duration CONTEXT = Duration.ofSeconds(2);
    private static final int CONTEXT_EVENTS = 60;

    private final Timeline timeline;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final List<Holder> inside = new ArrayList<>();
    private final Set<List<Holder>> reportedOverlaps = new HashSet<>();
    private final List<Violation> violations = new ArrayList<>();
    private final List<Long> entryTimes = new ArrayList<>();
    private Holder highestTokenHolder;
    private int entries;
    private int refusals;

    ExclusionChecker(Timeline timeline) {
        this.timeline = timeline;
    }

    /**
     * Admits a worker whose lease is valid, checking its token and who else is inside. Empty when the lease is no
     * longer valid: the worker must then not act.
     */
    Optional<Holder> enter(String worker, Lease lease, long sessionId) {
        lock.lock();
        try {
            long now = System.nanoTime();
            if (!lease.isValid()) {
                refusals++;
                timeline.add(worker + " does not act, its lease is no longer valid: " + lease);
                return Optional.empty();
            }
            Holder me = new Holder(worker, lease, sessionId, now);
            if (highestTokenHolder != null
                    && lease.fencingToken() <= highestTokenHolder.lease().fencingToken()) {
                violations.add(new Violation(
                        now, "token did not rise: " + me + " entered after " + highestTokenHolder + " had entered"));
            }
            if (highestTokenHolder == null
                    || lease.fencingToken() > highestTokenHolder.lease().fencingToken()) {
                highestTokenHolder = me;
            }
            timeline.add(worker + " enters with " + lease);
            checkOverlaps(me, "entered", now);
            inside.add(me);
            entries++;
            entryTimes.add(now);
            return Optional.of(me);
        } finally {
            lock.unlock();
        }
    }

    void exit(Holder me) {
        lock.lock();
        try {
            long now = System.nanoTime();
            inside.remove(me);
            timeline.add(me.worker() + " leaves, lease " + me.lease().state());
            checkOverlaps(me, "left", now);
        } finally {
            lock.unlock();
        }
    }

    int entries() {
        lock.lock();
        try {
            return entries;
        } finally {
            lock.unlock();
        }
    }

    int refusals() {
        lock.lock();
        try {
            return refusals;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The longest stretch between {@code startNanos} and {@code endNanos} in which nobody entered, as {start, end}.
     */
    long[] longestStall(long startNanos, long endNanos) {
        lock.lock();
        try {
            long[] longest = {startNanos, startNanos};
            long previous = startNanos;
            for (long t : entryTimes) {
                long to = Math.min(t, endNanos);
                if (to - previous > longest[1] - longest[0]) {
                    longest = new long[] {previous, to};
                }
                previous = Math.max(previous, to);
            }
            if (endNanos - previous > longest[1] - longest[0]) {
                longest = new long[] {previous, endNanos};
            }
            return longest;
        } finally {
            lock.unlock();
        }
    }

    int violationCount() {
        lock.lock();
        try {
            return violations.size();
        } finally {
            lock.unlock();
        }
    }

    /** The first few violations, each with the events around it. */
    String report() {
        lock.lock();
        try {
            StringBuilder report = new StringBuilder();
            violations.stream()
                    .limit(REPORTED)
                    .forEach(v -> report.append("\nat ")
                            .append(timeline.at(v.nanos()))
                            .append(": ")
                            .append(v.what())
                            .append('\n')
                            .append(timeline.around(v.nanos(), CONTEXT, CONTEXT_EVENTS)));
            if (violations.size() > REPORTED) {
                report.append("\n... and ").append(violations.size() - REPORTED).append(" more");
            }
            return report.toString();
        } finally {
            lock.unlock();
        }
    }

    private void checkOverlaps(Holder me, String how, long now) {
        if (!me.lease().isValid()) {
            return;
        }
        for (Holder other : inside) {
            if (other != me && other.lease().isValid() && reportedOverlaps.add(List.of(other, me))) {
                reportedOverlaps.add(List.of(me, other));
                violations.add(new Violation(
                        now,
                        "two valid holders: " + me + " " + how + " while " + other + " was inside since "
                                + timeline.at(other.enteredNanos())));
            }
        }
    }
}
