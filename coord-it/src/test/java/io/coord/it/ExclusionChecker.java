package io.coord.it;

import io.coord.core.Lease;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Watches one shared resource that many workers use, and records every breach of its promises: an exclusive holder
 * (a mutex or write-lock holder, a leader) is never alongside another holder, the permits held never pass the
 * capacity (a semaphore's maxLeases), and the fencing tokens of successive exclusive holders only rise.
 *
 * <p>The guarantee under test is about VALID holders, not threads that believe they hold. A client learns that its
 * session ended only when the news reaches it, so a holder whose session the servers have just ended may still see
 * its lease as HELD for a moment while the next holder is already granted. That is why every holder checks
 * {@link Lease#isValid()} before it acts and stops acting once the lease turns SUSPECT or LOST, and why the fencing
 * token, not the local view, is what a guarded resource must trust. The checker therefore counts a holder only while
 * its lease is valid, checked at the instant any holder enters or leaves. Every check runs under one lock, so that
 * the checks form a single timeline.
 *
 * <p>Short turns rarely meet that window; a leader, or a long hold (see {@link Turns}), meets it whenever the servers
 * end its session. With a {@link StaleHolders.Referee}, a breach is therefore judged once more against the servers: a
 * holder whose znode is already gone is stale, not counted, and must stop holding within {@link StaleHolders#LIMIT}.
 * Without one, every breach counts.
 */
final class ExclusionChecker {
    /** How a holder uses the resource: the permits it takes, and whether it shuts out everyone else. */
    record Mode(String name, int permits, boolean exclusive) {
        static final Mode EXCLUSIVE = exclusive("exclusive");

        /** Alone when valid, with fencing tokens that rise from one exclusive holder to the next. */
        static Mode exclusive(String name) {
            return new Mode(name, 1, true);
        }

        /** Alongside other shared holders, as long as the permits of all of them fit the capacity. */
        static Mode shared(String name, int permits) {
            return new Mode(name, permits, false);
        }
    }

    /** One worker inside, in one mode. */
    record Holder(String worker, Mode mode, Lease lease, long sessionId, long enteredNanos) {
        @Override
        public String toString() {
            return worker + " as " + mode.name() + " (session 0x" + Long.toHexString(sessionId) + ", " + lease + ")";
        }
    }

    private record Violation(long nanos, String what) {}

    private static final int REPORTED = 3;
    private static final Duration CONTEXT = Duration.ofSeconds(2);
    private static final int CONTEXT_EVENTS = 60;
    // Turns crowd faults out of the nearest events, so these are shown apart, from further around.
    private static final Duration FAULT_CONTEXT = Duration.ofSeconds(5);

    private final Timeline timeline;
    private final int capacity;
    private final StaleHolders stale;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final List<Holder> inside = new ArrayList<>();
    private final Set<Set<Holder>> judged = new HashSet<>();
    private final List<Violation> violations = new ArrayList<>();
    private final List<Long> entryTimes = new ArrayList<>();
    private final Map<Mode, Integer> entriesByMode = new HashMap<>();
    private final Map<Mode, Integer> peakByMode = new HashMap<>();
    private Holder highestTokenHolder;
    private int peakHolders;
    private int refusals;

    /**
     * A checker that also counts the permits of valid holders against {@code capacity}, and asks {@code referee}
     * (if not null) about the holders in a breach.
     */
    ExclusionChecker(Timeline timeline, int capacity, StaleHolders.Referee referee) {
        this.timeline = timeline;
        this.capacity = capacity;
        this.stale = new StaleHolders(timeline, referee);
    }

    /**
     * Admits a worker whose lease is valid, checking its token and who else is inside. Empty when the lease is no
     * longer valid: the worker must then not act.
     */
    Optional<Holder> enter(String worker, Mode mode, Lease lease, long sessionId) {
        lock.lock();
        try {
            long now = System.nanoTime();
            if (!lease.isValid()) {
                refusals++;
                timeline.add(worker + " does not act as " + mode.name() + ", its lease is no longer valid: " + lease);
                return Optional.empty();
            }
            Holder me = new Holder(worker, mode, lease, sessionId, now);
            if (mode.exclusive()) {
                checkToken(me, now);
            }
            timeline.add(worker + " enters as " + mode.name() + " with " + lease);
            inside.add(me);
            check(me, "entered", now);
            entriesByMode.merge(mode, 1, Integer::sum);
            entryTimes.add(now);
            List<Holder> valid = validInside();
            peakHolders = Math.max(peakHolders, valid.size());
            int sameMode =
                    (int) valid.stream().filter(h -> h.mode().equals(mode)).count();
            peakByMode.merge(mode, sameMode, Math::max);
            return Optional.of(me);
        } finally {
            lock.unlock();
        }
    }

    void exit(Holder me) {
        lock.lock();
        try {
            long now = System.nanoTime();
            timeline.add(me.worker() + " leaves as " + me.mode().name() + ", lease "
                    + me.lease().state());
            // Checked before it goes: its lease may have turned valid again while it was inside.
            check(me, "left", now);
            inside.remove(me);
            stale.left(me, now).ifPresent(what -> violations.add(new Violation(now, what)));
        } finally {
            lock.unlock();
        }
    }

    /** The holder acts on the resource: judged, as at an entry, against every valid holder inside. */
    void act(Holder me) {
        lock.lock();
        try {
            check(me, "acted", System.nanoTime());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Whether {@code holder}'s znode is gone from the servers; from then on it is stale (see {@link StaleHolders}).
     * The servers are asked outside the lock, so that nobody's turn waits for their answer.
     */
    boolean isStale(Holder holder) {
        if (locked(() -> stale.isMarked(holder))) {
            return true;
        }
        long asked = System.nanoTime();
        if (!stale.isGone(holder)) {
            return false;
        }
        lock.lock();
        try {
            if (!inside.contains(holder)) {
                return false; // it left meanwhile: nothing to mark
            }
            stale.mark(holder, asked);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Turns taken, in every mode. */
    int entries() {
        return locked(() ->
                entriesByMode.values().stream().mapToInt(Integer::intValue).sum());
    }

    /** Turns taken in {@code mode}. */
    int entries(Mode mode) {
        return locked(() -> entriesByMode.getOrDefault(mode, 0));
    }

    /** The most valid holders in {@code mode} that were inside at once, seen whenever one entered. */
    int peak(Mode mode) {
        return locked(() -> peakByMode.getOrDefault(mode, 0));
    }

    /** The most valid holders, in any mode, that were inside at once. */
    int peakHolders() {
        return locked(() -> peakHolders);
    }

    /** Holders turned away because their lease was no longer valid when they came to act. */
    int refusals() {
        return locked(() -> refusals);
    }

    /** Holders found in a breach whose znode was already gone, and so not counted. */
    int staleHolders() {
        return locked(stale::found);
    }

    /** The longest a stale holder that has left went on holding. */
    Duration longestStale() {
        return locked(stale::longest);
    }

    /** Turns per mode, for run summaries. */
    String describeEntries() {
        return locked(() -> entriesByMode.entrySet().stream()
                .sorted(Map.Entry.comparingByKey(Comparator.comparing(Mode::name)))
                .map(e -> e.getValue() + " " + e.getKey().name())
                .collect(Collectors.joining(", ")));
    }

    /**
     * The longest stretch between {@code startNanos} and {@code endNanos} in which nobody entered, as {start, end},
     * each stretch counted from the last of {@code faultEnds} (the times at which faults were over) within it: faults
     * that follow one another hold turns up for as long as they go on.
     */
    long[] longestStall(long startNanos, long endNanos, List<Long> faultEnds) {
        lock.lock();
        try {
            long[] longest = {startNanos, startNanos};
            long previous = startNanos;
            for (long t : entryTimes) {
                long to = Math.min(t, endNanos);
                longest = longer(longest, stall(previous, to, faultEnds));
                previous = Math.max(previous, to);
            }
            return longer(longest, stall(previous, endNanos, faultEnds));
        } finally {
            lock.unlock();
        }
    }

    /** The stretch from {@code from} to {@code to}, begun again at the last fault's end within it. */
    private static long[] stall(long from, long to, List<Long> faultEnds) {
        long start = from;
        for (long end : faultEnds) {
            if (end > start && end <= to) {
                start = end;
            }
        }
        return new long[] {start, Math.max(start, to)};
    }

    private static long[] longer(long[] a, long[] b) {
        return b[1] - b[0] > a[1] - a[0] ? b : a;
    }

    /** Breaches so far, including stale holders still inside past {@link StaleHolders#LIMIT}. */
    int violationCount() {
        return locked(() -> {
            flagOverdueStaleHolders();
            return violations.size();
        });
    }

    /** The first few violations, each with the events around it. */
    String report() {
        return locked(() -> {
            flagOverdueStaleHolders();
            StringBuilder report = new StringBuilder();
            violations.stream()
                    .limit(REPORTED)
                    .forEach(v -> report.append("\nat ")
                            .append(timeline.at(v.nanos()))
                            .append(": ")
                            .append(v.what())
                            .append('\n')
                            .append(timeline.around(v.nanos(), CONTEXT, CONTEXT_EVENTS))
                            .append("\n  with the faults and connection changes around it:\n")
                            .append(timeline.around(
                                    v.nanos(), FAULT_CONTEXT, CONTEXT_EVENTS, ExclusionChecker::isFault)));
            if (violations.size() > REPORTED) {
                report.append("\n... and ").append(violations.size() - REPORTED).append(" more");
            }
            return report.toString();
        });
    }

    /**
     * A later exclusive lease must carry a larger token. The same lease may come back (a term that turned SUSPECT and
     * was confirmed HELD again), but only while no later one has entered. A holder whose znode is already gone is
     * stale, not a breach: its session ended a moment before it entered, any resource that checks tokens refuses its
     * lower one, and it must stop within the stale limit.
     */
    private void checkToken(Holder me, long now) {
        if (highestTokenHolder != null) {
            long highest = highestTokenHolder.lease().fencingToken();
            long mine = me.lease().fencingToken();
            if (mine < highest || (mine == highest && me.lease() != highestTokenHolder.lease())) {
                if (!stale.among(List.of(me), now).isEmpty()) {
                    return;
                }
                violations.add(new Violation(
                        now, "token did not rise: " + me + " entered after " + highestTokenHolder + " had entered"));
                return;
            }
        }
        highestTokenHolder = me;
    }

    /** Judges the valid holders inside now that {@code me} came or goes, once per set of them. */
    private void check(Holder me, String how, long now) {
        if (!me.lease().isValid()) {
            return;
        }
        List<Holder> valid = validInside();
        for (Holder other : valid) {
            if (other != me
                    && (me.mode().exclusive() || other.mode().exclusive())
                    && judged.add(Set.of(me, other))
                    && stale.among(List.of(me, other), now).isEmpty()) {
                violations.add(new Violation(
                        now,
                        "two valid holders: " + me + " " + how + " while " + other + " was inside since "
                                + timeline.at(other.enteredNanos())));
            }
        }
        if (permits(valid) > capacity && judged.add(Set.copyOf(valid))) {
            List<Holder> counted = new ArrayList<>(valid);
            counted.removeAll(stale.among(valid, now));
            if (permits(counted) > capacity) {
                violations.add(new Violation(
                        now,
                        permits(counted) + " permits held by valid leases, over the capacity of " + capacity + ", when "
                                + me + " " + how + ": " + counted));
            }
        }
    }

    private void flagOverdueStaleHolders() {
        long now = System.nanoTime();
        stale.overdue(now).forEach(what -> violations.add(new Violation(now, what)));
    }

    private static boolean isFault(String what) {
        return what.startsWith("chaos:")
                || what.contains(" is stale:")
                || what.contains(" is SUSPENDED,")
                || what.contains(" is LOST,")
                || what.contains(" is RECONNECTED,");
    }

    private List<Holder> validInside() {
        return inside.stream().filter(h -> h.lease().isValid()).toList();
    }

    private static long permits(List<Holder> holders) {
        return holders.stream().mapToLong(h -> h.mode().permits()).sum();
    }

    private <T> T locked(Supplier<T> read) {
        lock.lock();
        try {
            return read.get();
        } finally {
            lock.unlock();
        }
    }
}
